// Issue 31, item 4: a 503 refused at the readiness step says when to retry (CONTRACT §3: "an open
// breaker knows its next probe: say it"). The real admission chain over real MariaDB and Redis:
//   - the resolver's breaker open (its server is a closed loopback port): Retry-After is the time
//     to its next probe, in whole seconds, at least 1;
//   - a worker lane down past its restart grace: Retry-After is the documented 5 s;
// and the value is the one the service itself acts on: a retry after it finds the resolver probed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startHarness, type Harness } from '../helpers/harness.ts';
import { fundedTenant } from '../helpers/jobs.ts';
import { freePort } from '../helpers/processes.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { LAB_SPECIAL_USE } from '../lab/addresses.ts';
import { LANE_DOWN_RETRY_AFTER_MS } from '../../src/products/kit/readiness.ts';

describe('Retry-After on readiness 503s', () => {
  describe('the resolver breaker open', () => {
    let h: Harness;
    beforeAll(async () => {
      const closed = await freePort(); // nothing listens: every question fails at once (ICMP)
      h = await startHarness({ DNS_SERVERS: `[127.0.0.1]:${closed}`, DNS_TIMEOUT_MS: '300' });
    });
    afterAll(async () => {
      await h.close();
    });

    it('capability_unavailable carries the time to the next probe, in whole seconds', async () => {
      const t = await fundedTenant(h, 100);
      const resolver = h.deps.runtime.services.resolver!;
      // Each lookup is 8 questions failing at the socket level: 20 in a row open the breaker.
      for (let i = 0; i < 3 && resolver.readiness() === 'ready'; i++)
        await client(h.app, t.key).post('/v2/lookups/dns', { value: 'example.com' });
      expect(resolver.readiness()).toBe('down');

      for (const [path, body] of [
        ['/v2/lookups/dns', { value: 'example.com' }],
        ['/v2/lookups/ip', { value: '192.0.2.1', reverseDns: true }],
      ] as const) {
        const res = await client(h.app, t.key).post(path, body);
        if (path === '/v2/lookups/ip') {
          // reverse_dns is optional: the ip lookup is still served, partial (no Retry-After to give).
          expect(res.status).toBe(200);
          continue;
        }
        expect(res.status).toBe(503);
        expect(res.body.error).toMatchObject({ code: 'capability_unavailable', retryable: true });
        const retryAfter = res.headers['retry-after'];
        expect(retryAfter, 'Retry-After sent').toMatch(/^[1-9]\d*$/);
        // The breaker probes about once a second (±20 %): the next probe is at most 1.2 s away.
        expect(Number(retryAfter)).toBeLessThanOrEqual(2);
        expect(Number(retryAfter)).toBeGreaterThanOrEqual(Math.ceil((resolver.retryAfterMs?.() ?? 0) / 1000) - 1);
      }
    });
  });

  describe('a worker lane down past its restart grace', () => {
    let lab: LabDns;
    let h: Harness;
    beforeAll(async () => {
      lab = await startLabDns();
      h = await startHarness({
        DNS_SERVERS: lab.address,
        DNS_TIMEOUT_MS: '400',
        ALLOW_SPECIAL_USE_DOMAINS: LAB_SPECIAL_USE,
        LANE_RESTART_GRACE_MS: '0',
      });
    });
    afterAll(async () => {
      await h.close();
      await lab.close();
    });

    it(`capability_unavailable and scan_profile_unavailable carry ${LANE_DOWN_RETRY_AFTER_MS / 1000} s`, async () => {
      const t = await fundedTenant(h, 1000, { acceptResponsibleUse: h.config.RESPONSIBLE_USE_VERSION });
      expect(h.deps.runtime.services.resolver!.readiness()).toBe('ready');
      const domain = await client(h.app, t.key).post('/v2/lookups/domain', { value: 'lab.test' });
      expect(domain.status).toBe(503);
      expect(domain.body.error.code).toBe('capability_unavailable');
      expect(domain.headers['retry-after']).toBe(String(LANE_DOWN_RETRY_AFTER_MS / 1000));
      const scan = await client(h.app, t.key).post('/v2/scans', {
        profile: 'quick',
        target: { type: 'domain_name', value: 'lab.test' },
        options: { active: false, maxCredits: 10 },
      });
      expect(scan.status, JSON.stringify(scan.body)).toBe(503);
      expect(scan.body.error.code).toBe('scan_profile_unavailable');
      expect(scan.headers['retry-after']).toBe(String(LANE_DOWN_RETRY_AFTER_MS / 1000));
    });
  });
});
