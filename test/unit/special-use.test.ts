// No view into the deployment's own network (issue 18 item 4): which names are special-use (the
// IANA registries, the reverse zones of non-global ranges, TLDs outside the public suffix list),
// what ALLOW_SPECIAL_USE_DOMAINS and ALLOW_PRIVATE_TARGETS let through, that the product runtime's
// resolver never sends such a question, and the "may we ask this PTR" predicate. Also the public
// suffix list read with its private section, which every scope decision uses.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/config.ts';
import { icannParts, isPublicSuffix, suffixParts } from '../../src/contract/public-suffix.ts';
import { presence } from '../../src/dns/presence.ts';
import type { QueryResult, RecordType, Resolver } from '../../src/dns/types.ts';
import { mayAskReverse, reversePrefix, specialUseOf, type SpecialUsePolicy } from '../../src/net/special-use.ts';
import { refuseSpecialUse } from '../../src/net/special-use-resolver.ts';
import { nameParts } from '../../src/products/kit/name-parts.ts';
import { createProductRuntime } from '../../src/products/kit/runtime.ts';

const NONE: SpecialUsePolicy = { allowSuffixes: [], allowCidrs: [] };
const reason = (name: string, policy = NONE) => specialUseOf(name, policy)?.reason ?? null;

describe('the public suffix list, private section included', () => {
  it.each([
    ['alice.github.io', 'alice.github.io', 'github.io', 'private'],
    ['www.alice.github.io', 'alice.github.io', 'github.io', 'private'],
    ['github.io', null, 'github.io', 'private'],
    ['s3.amazonaws.com', null, 's3.amazonaws.com', 'private'],
    ['herokuapp.com', null, 'herokuapp.com', 'private'],
    ['blogspot.com', null, 'blogspot.com', 'private'],
    ['co.uk', null, 'co.uk', 'icann'],
    ['shop.example.co.uk', 'example.co.uk', 'co.uk', 'icann'],
    ['lab.test', 'lab.test', 'test', 'unlisted'],
  ])('%s → registrable %s, suffix %s (%s)', (name, registrable, suffix, section) => {
    expect(suffixParts(name)).toEqual({ registrable, suffix, section });
    expect(isPublicSuffix(name)).toBe(registrable === null);
  });

  it('the ICANN view stays what registries register (RDAP, delegation)', () => {
    expect(icannParts('alice.github.io')).toEqual({ registrable: 'github.io', suffix: 'io' });
  });

  it("the domain lookup's projection says which section matched, beside the ICANN registration", () => {
    expect(nameParts('www.alice.github.io')).toMatchObject({
      registrableDomain: 'github.io',
      publicSuffix: 'io',
      suffixSection: 'private',
      privateSuffix: 'github.io',
      privateRegistrableDomain: 'alice.github.io',
    });
    expect(nameParts('github.io')).toMatchObject({
      registrableDomain: 'github.io',
      suffixSection: 'private',
      privateSuffix: 'github.io',
      privateRegistrableDomain: null,
    });
    expect(nameParts('www.example.co.uk')).toMatchObject({
      registrableDomain: 'example.co.uk',
      suffixSection: 'icann',
      privateSuffix: null,
      privateRegistrableDomain: null,
    });
    expect(nameParts('lab.test').suffixSection).toBe('unlisted');
  });
});

describe('special-use names', () => {
  it.each([
    'localhost',
    'db.localhost',
    'x.invalid',
    'lab.test',
    'www.example',
    'printer.local',
    'kubernetes.default.svc.cluster.local',
    'abcdef.onion',
    'x.alt',
    'router.home.arpa',
    'ipv4only.arpa',
    'resolver.arpa',
    'x.service.arpa',
    'x.6tisch.arpa',
    'x.eap-noob.arpa',
    'empty.as112.arpa',
    'db.internal',
    'intranet.corp',
    'nas.home',
    'x.mail',
    'LOCALHOST.',
  ])('%s is refused as a special-use domain', (name) => {
    expect(reason(name)).toBe('special_use_domain');
  });

  // Every reverse row of the IANA Special-Use and Locally-Served registries, refused by one rule
  // (the prefix is wholly non-global), as is any other non-global range's reverse zone.
  const registryReverseZones = [
    '10.in-addr.arpa',
    ...Array.from({ length: 16 }, (_, i) => `${16 + i}.172.in-addr.arpa`),
    '168.192.in-addr.arpa',
    '170.0.0.192.in-addr.arpa',
    '171.0.0.192.in-addr.arpa',
    '254.169.in-addr.arpa',
    '0.in-addr.arpa',
    '127.in-addr.arpa',
    '255.255.255.255.in-addr.arpa',
    '2.0.192.in-addr.arpa',
    '100.51.198.in-addr.arpa',
    '113.0.203.in-addr.arpa',
    ...Array.from({ length: 64 }, (_, i) => `${64 + i}.100.in-addr.arpa`),
    'd.f.ip6.arpa',
    'c.f.ip6.arpa',
    '8.b.d.0.1.0.0.2.ip6.arpa',
    '8.e.f.ip6.arpa',
    '9.e.f.ip6.arpa',
    'a.e.f.ip6.arpa',
    'b.e.f.ip6.arpa',
    `${'0.'.repeat(32)}ip6.arpa`,
    `1.${'0.'.repeat(31)}ip6.arpa`,
  ];
  it('every reverse zone of the registries, and names below them, are refused', () => {
    for (const zone of registryReverseZones) {
      expect(reason(zone), zone).toBe('non_global_reverse_zone');
      expect(specialUseOf(zone, NONE)!.suffix, zone).toBe(zone);
    }
    expect(specialUseOf('7.0.0.10.in-addr.arpa', NONE)).toEqual({
      reason: 'non_global_reverse_zone',
      suffix: '7.0.0.10.in-addr.arpa',
    });
    // Labels that are not octets stop the prefix where they start: still under 10/8.
    expect(reason('_foo.10.in-addr.arpa')).toBe('non_global_reverse_zone');
    // IPv4-mapped and NAT64 reverse names are judged by the IPv4 address they carry.
    expect(reason(`a.0.0.0.0.0.0.0.f.f.f.f.${'0.'.repeat(20)}ip6.arpa`)).toBe('non_global_reverse_zone');
  });

  it('reverse zones that hold globally reachable addresses are ordinary names', () => {
    for (const name of [
      'in-addr.arpa',
      'ip6.arpa',
      '192.in-addr.arpa', // 192/8 is mostly public
      '8.8.8.8.in-addr.arpa',
      '14.215.184.93.in-addr.arpa',
      '2.ip6.arpa',
      '0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.7.4.6.0.6.2.ip6.arpa',
      'arpa',
    ])
      expect(reason(name), name).toBeNull();
  });

  it('a TLD in neither section of the public suffix list is refused: only a local resolver answers it', () => {
    for (const name of ['nas.lan', 'x.lab', 'printer.zz', 'lan'])
      expect(specialUseOf(name, NONE), name).toMatchObject({ reason: 'unlisted_tld' });
    for (const name of ['example.com', 'example.org', 'example.net', 'www.example.co.uk', 'alice.github.io', 'nic.io'])
      expect(reason(name), name).toBeNull();
  });

  it('ALLOW_SPECIAL_USE_DOMAINS lets a suffix (and everything below it) through; ALLOW_PRIVATE_TARGETS the reverse zones of its ranges', () => {
    const lab: SpecialUsePolicy = { allowSuffixes: ['test', 'corp.internal'], allowCidrs: ['127.0.0.0/8'] };
    expect(reason('lab.test', lab)).toBeNull();
    expect(reason('test', lab)).toBeNull();
    expect(reason('db.corp.internal', lab)).toBeNull();
    expect(reason('db.other.internal', lab)).toBe('special_use_domain');
    expect(reason('1.0.0.127.in-addr.arpa', lab)).toBeNull();
    expect(reason('127.in-addr.arpa', lab)).toBeNull();
    expect(reason(`1.0.0.0.0.0.f.7.f.f.f.f.${'0.'.repeat(20)}ip6.arpa`, lab)).toBeNull(); // ::ffff:127.0.0.1
    expect(reason('7.0.0.10.in-addr.arpa', lab)).toBe('non_global_reverse_zone');
    expect(reason('in-addr.arpa.', lab)).toBeNull();
  });

  it('reads reverse names as prefixes', () => {
    expect(reversePrefix('7.0.0.10.in-addr.arpa')).toMatchObject({ bits: 32, zone: '7.0.0.10.in-addr.arpa' });
    expect(reversePrefix('d.f.ip6.arpa')).toMatchObject({ bits: 8, zone: 'd.f.ip6.arpa' });
    expect(reversePrefix('example.com')).toBeNull();
  });
});

describe('may the service ask this PTR?', () => {
  it('only for addresses outbound checks may reach', () => {
    for (const ip of ['8.8.8.8', '2606:4700::1', '::ffff:8.8.8.8']) expect(mayAskReverse(ip, []), ip).toBe(true);
    for (const ip of ['10.0.0.7', '127.0.0.1', '::1', 'fd00::1', '::ffff:10.0.0.7', '169.254.169.254', '100.64.0.1'])
      expect(mayAskReverse(ip, []), ip).toBe(false);
    expect(mayAskReverse('127.0.0.1', ['127.0.0.0/8'])).toBe(true);
    expect(mayAskReverse('::ffff:127.0.0.1', ['127.0.0.0/8'])).toBe(true);
  });
});

describe("the products' resolver never sends a special-use question", () => {
  class Recording implements Resolver {
    asked: string[] = [];
    async query(name: string, type: RecordType): Promise<QueryResult> {
      this.asked.push(`${name} ${type}`);
      return {
        name,
        type,
        outcome: 'nxdomain',
        rcode: 'NXDOMAIN',
        answers: [],
        flags: { aa: false, ad: false, tc: false, ra: true },
        transport: 'udp',
        durationMs: 1,
      };
    }
    readiness() {
      return 'ready' as const;
    }
  }

  it('answers it locally as indeterminate (never an absence), saying why; other names go through', async () => {
    const inner = new Recording();
    const r = refuseSpecialUse(inner, { allowSuffixes: ['test'], allowCidrs: [] });
    for (const name of ['db.internal', 'x.svc.cluster.local', '7.0.0.10.in-addr.arpa', 'nas.lan', 'localhost.']) {
      const res = await r.query(name, 'A');
      expect(res.outcome, name).toBe('error');
      expect(res.notAsked, name).toBeTruthy();
      expect(presence(res), name).toBe('indeterminate');
    }
    await r.query('lab.test', 'A');
    await r.query('example.com', 'MX');
    expect(inner.asked).toEqual(['lab.test A', 'example.com MX']);
    expect(r.readiness()).toBe('ready');
  });

  it('is the resolver of every product runtime (lookups, lanes, the outbound guard)', async () => {
    // A dead loopback resolver: a question that went out would time out, not come back at once.
    const config = parseConfig({
      DATABASE_URL: 'mysql://x',
      REDIS_URL: 'redis://x',
      KEY_PEPPER: 'x'.repeat(32),
      CURSOR_SECRET: 'y'.repeat(32),
      WEBHOOK_SECRET_KEY: 'w'.repeat(32),
      DNS_SERVERS: '[127.0.0.1]:9',
      DNS_TIMEOUT_MS: '2000',
    });
    const rt = createProductRuntime(config, pino({ level: 'silent' }));
    const t0 = performance.now();
    const res = await rt.services.resolver!.query('kubernetes.default.svc.cluster.local', 'A');
    expect(res).toMatchObject({ outcome: 'error', transport: null, notAsked: expect.stringContaining('local') });
    await expect(rt.services.outbound!.resolve('metadata.internal')).rejects.toMatchObject({ kind: 'dns_failure' });
    expect(performance.now() - t0).toBeLessThan(500);
  });
});

describe('ALLOW_SPECIAL_USE_DOMAINS', () => {
  const base = {
    DATABASE_URL: 'mysql://x',
    REDIS_URL: 'redis://x',
    KEY_PEPPER: 'x'.repeat(32),
    CURSOR_SECRET: 'y'.repeat(32),
    WEBHOOK_SECRET_KEY: 'w'.repeat(32),
  };
  it('is a comma list of domain suffixes, normalised; empty by default', () => {
    expect(parseConfig(base).ALLOW_SPECIAL_USE_DOMAINS).toEqual([]);
    expect(
      parseConfig({ ...base, ALLOW_SPECIAL_USE_DOMAINS: 'test, Corp.Internal.,' }).ALLOW_SPECIAL_USE_DOMAINS,
    ).toEqual(['test', 'corp.internal']);
  });
  it('refuses an entry that is not a domain name, at start', () => {
    expect(() => parseConfig({ ...base, ALLOW_SPECIAL_USE_DOMAINS: 'test,bad name' })).toThrow(
      /ALLOW_SPECIAL_USE_DOMAINS\.1: must be a domain suffix/,
    );
  });
});
