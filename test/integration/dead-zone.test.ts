// Issue 31, item 1, through the real service: one tenant's dead zone must not take DNS away from
// everyone. The app, an orchestrator and a domain lane worker over real MariaDB and Redis, the
// loopback DNS lab answering every zone but `stalled.test` (silent for every name and type).
// Tenant A sends a burst of DNS lookups and domain lookups of names under the dead zone; tenant B
// looks up the healthy zone during and after the burst. Before the fix, A's timeouts opened the
// web process's resolver breaker (20 in a row; one DNS lookup is 8 questions) and B got 503
// capability_unavailable on every DNS-backed product.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/harness.ts';
import { startServiceStack, type ServiceStack } from '../helpers/service-stack.ts';
import { labNames as n } from '../lab/zones.ts';

type Tenant = Awaited<ReturnType<ServiceStack['tenant']>>;

let stack: ServiceStack;
let a: Tenant;
let b: Tenant;

beforeAll(async () => {
  // The service's default per-zone backoff (the test harness turns it off for every other file).
  stack = await startServiceStack({ DNS_TIMEOUT_MS: '400', DNS_ZONE_BACKOFF_MS: '10000' });
  a = await stack.tenant({ credits: 1000 });
  b = await stack.tenant({ credits: 1000 });
});

afterAll(async () => {
  await stack?.close();
});

async function pollTerminal(key: string, jobRef: string, timeoutMs = 30_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await client(stack.h.app, key).get(`/v2/jobs/${jobRef}`);
    expect(res.status).toBe(200);
    if (res.body.terminal) return res.body;
    if (Date.now() > until) throw new Error(`job ${jobRef} not terminal: ${JSON.stringify(res.body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("a tenant's dead zone", () => {
  it("never gives another tenant's lookups of a healthy zone a 503, during or after the burst", async () => {
    const web = stack.h.deps.runtime.services.resolver!;
    // Tenant B, during A's burst: DNS lookups of the healthy zone, one after another.
    let bursting = true;
    const during: Array<{ status: number; envelope: string | undefined }> = [];
    const bLoop = (async () => {
      while (bursting) {
        const res = await client(stack.h.app, b.key).post('/v2/lookups/dns', { value: n.apex });
        during.push({ status: res.status, envelope: res.body.status });
      }
    })();

    // Tenant A: 3 waves of 10 DNS lookups of different names under the dead zone (240 questions
    // that all time out) and 3 domain lookups there.
    const aDns: Array<{ status: number; body: any }> = [];
    const aDomain: Array<{ status: number; body: any }> = [];
    try {
      for (let wave = 0; wave < 3; wave++) {
        const [dns, domain] = await Promise.all([
          Promise.all(
            Array.from({ length: 10 }, (_, i) =>
              client(stack.h.app, a.key).post('/v2/lookups/dns', { value: `w${wave}-${i}.${n.stalled}` }),
            ),
          ),
          client(stack.h.app, a.key).post('/v2/lookups/domain', { value: `d${wave}.${n.stalled}` }),
        ]);
        aDns.push(...dns);
        aDomain.push(domain);
      }
    } finally {
      bursting = false;
      await bLoop;
    }
    expect(during.length).toBeGreaterThan(0);
    expect(during.filter((r) => r.status !== 200 || r.envelope !== 'completed')).toEqual([]);
    for (const res of aDns) {
      // The dead zone is the target's fact: a 200 partial with every type indeterminate.
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.status).toBe('partial');
      expect(res.body.coverage.complete).toBe(false);
      for (const rows of Object.values(res.body.result.records) as Array<{ outcome: string }>)
        expect(rows.outcome).toBe('timeout');
      expect(res.body.limitations.filter((l: { code: string }) => l.code === 'dns_indeterminate')).toHaveLength(8);
    }
    for (const res of aDomain) expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(web.readiness()).toBe('ready');

    // After the burst: B's DNS lookup and B's domain lookup (the async product) are admitted and answered.
    const dns = await client(stack.h.app, b.key).post('/v2/lookups/dns', { value: n.apex });
    expect(dns.status).toBe(200);
    expect(dns.body.result.records.A.answers[0]).toMatchObject({ data: '127.0.0.10' });
    const accepted = await client(stack.h.app, b.key).post('/v2/lookups/domain', { value: n.apex });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    const done = await pollTerminal(b.key, accepted.body.jobRef);
    expect(done.status).toBe('completed');
    expect(done.result.result.registrableDomain).toBe(n.apex);

    // A's domain jobs end, indeterminate where the zone was silent, never a 503 and never stuck.
    for (const res of aDomain) {
      const job = await pollTerminal(a.key, res.body.jobRef);
      expect(['partial', 'unavailable', 'completed']).toContain(job.status);
    }
    const products = await client(stack.h.app, b.key).get('/v2/products');
    const readiness = Object.fromEntries(
      (products.body.products as Array<{ product: string; readiness: string }>).map((p) => [p.product, p.readiness]),
    );
    expect(readiness['lookup.dns.v1']).toBe('available');
    expect(readiness['lookup.domain.v1']).toBe('available');
  });
});
