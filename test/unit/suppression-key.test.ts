// Suppression keys (CONTRACT §15): the forms a key may take, and what a suppression covers: the
// same key; below a `*.suffix` pattern (never the name itself); a URL or a service by its host.
import { describe, expect, it } from 'vitest';
import {
  normalizeSuppressionKey,
  SuppressionMatcher,
  type SuppressionRule,
} from '../../src/jobs/suppressions/suppression-key.ts';
import { qRange, reversedHost } from '../../src/jobs/inventory/inventory-keys.ts';

const rule = (id: number, code: string, key: string, product: string | null = null): SuppressionRule => ({
  id,
  publicId: `sup_${String(id).padStart(26, '0')}`,
  code,
  key,
  product,
  reason: 'accepted_risk',
  expiresAt: null,
});

describe('suppression keys', () => {
  it('normalizes names, patterns, URLs, addresses, digests and services; refuses the rest', () => {
    const ok = (k: string) => {
      const r = normalizeSuppressionKey(k);
      return r.ok ? r.key : `!${r.message}`;
    };
    expect(ok('WWW.Example.COM.')).toBe('www.example.com');
    expect(ok('*.Example.com')).toBe('*.example.com');
    expect(ok('https://WWW.example.com')).toBe('https://www.example.com/');
    expect(ok('192.0.2.7')).toBe('192.0.2.7');
    expect(ok('2001:DB8::1')).toBe('2001:db8::1');
    expect(ok('A'.repeat(64))).toBe('a'.repeat(64));
    expect(ok('Mail.example.com:25/tcp')).toBe('mail.example.com:25/tcp');
    for (const bad of ['', 'not a key', '*.com', '*.', 'https://u:p@example.com/', 'ftp://example.com/', 'x:99999/tcp'])
      expect(ok(bad), bad).toMatch(/^!/);
  });

  it('matches the same key; below a pattern but not the name itself; URLs and services by host', () => {
    const m = new SuppressionMatcher(
      [rule(2, 'web_nosniff_missing', '*.example.com'), rule(1, 'dmarc_policy_none', 'example.com')],
      'scan.recursive.v1',
    );
    expect(m.match('dmarc_policy_none', 'example.com')?.id).toBe(1);
    expect(m.match('dmarc_policy_none', 'www.example.com')).toBeNull();
    expect(m.match('web_nosniff_missing', 'example.com')).toBeNull();
    expect(m.match('web_nosniff_missing', 'a.b.example.com')?.id).toBe(2);
    expect(m.match('web_nosniff_missing', 'https://www.example.com/login')?.id).toBe(2);
    expect(m.match('web_nosniff_missing', 'https://example.com/')).toBeNull();
    expect(m.match('web_nosniff_missing', 'notexample.com')).toBeNull();
    expect(m.match('web_nosniff_missing', 'www.example.com:443/tcp')?.id).toBe(2);
    const byHost = new SuppressionMatcher([rule(3, 'web_nosniff_missing', 'www.example.com')], 'lookup.web.v1');
    expect(byHost.match('web_nosniff_missing', 'https://www.example.com/')?.id).toBe(3);
  });

  it('a product-bound suppression applies to that product only; of two that match, the older', () => {
    const rules = [
      rule(5, 'dmarc_policy_none', '*.example.com'),
      rule(4, 'dmarc_policy_none', '*.b.example.com', 'lookup.mail.v1'),
    ];
    expect(new SuppressionMatcher(rules, 'lookup.mail.v1').match('dmarc_policy_none', 'a.b.example.com')?.id).toBe(4);
    expect(new SuppressionMatcher(rules, 'scan.recursive.v1').match('dmarc_policy_none', 'a.b.example.com')?.id).toBe(
      5,
    );
  });
});

describe('inventory q ranges', () => {
  it('a name and every name below it are one range of reversed hosts; URLs by host', () => {
    const r = qRange('Example.com')!;
    const within = (key: string) => {
      const h = reversedHost(key);
      return h >= r.from && h < r.to;
    };
    expect(within('example.com')).toBe(true);
    expect(within('www.example.com')).toBe(true);
    expect(within('https://a.b.example.com/x')).toBe(true);
    expect(within('notexample.com')).toBe(false);
    expect(within('example.com.evil.test')).toBe(false);
    expect(within('example.co')).toBe(false);
    const ip = qRange('192.0.2.7')!;
    expect(reversedHost('http://192.0.2.7/') >= ip.from && reversedHost('http://192.0.2.7/') < ip.to).toBe(true);
    expect(reversedHost('192.0.2.70') < ip.to && reversedHost('192.0.2.70') >= ip.from).toBe(false);
  });
});
