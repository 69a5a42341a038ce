// The job-scoped DNS answer cache (src/dns/answer-cache.ts) over the project's stub resolver and the
// lab DNS server, which counts the questions it receives: a name asked again within its TTL in the
// same scope is not sent again (concurrent askers share one question), another scope (job, tenant)
// asks for itself, SERVFAIL and timeouts are never kept (asked again every time: never absence by
// memory), NXDOMAIN/NODATA are kept, expiry and the entry bound hold.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnswerCache } from '../../src/dns/answer-cache.ts';
import { StubResolver } from '../../src/dns/stub-resolver.ts';
import { parseServer } from '../../src/config/dns-servers.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import type { Zone } from '../lab/zones.ts';

const zone: Zone = {
  origin: 'cache.lab.test',
  records: [
    {
      name: '@',
      type: 'SOA',
      data: { mname: 'ns1.lab.test', rname: 'h.lab.test', serial: 1, refresh: 1, retry: 1, expire: 1, minimum: 1 },
    },
    { name: 'www', type: 'A', data: '127.0.0.90', ttl: 120 },
    { name: 'short', type: 'A', data: '127.0.0.91', ttl: 1 },
    // Issue 45 item 7: a 20 KB TXT set (never kept) and three small ones of ~1 KB.
    ...Array.from({ length: 80 }, (_, i) => ({
      name: 'bigtxt',
      type: 'TXT',
      data: [`${i} ${'b'.repeat(250)}`],
      ttl: 120,
    })),
    ...['t1', 't2', 't3'].map((name) => ({
      name,
      type: 'TXT',
      data: Array.from({ length: 4 }, () => 't'.repeat(250)),
      ttl: 120,
    })),
  ],
  behaviours: [
    { name: 'broken', behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } },
    { name: 'silent', behaviour: { kind: 'silent' } },
  ],
};

describe('AnswerCache: DNS answers shared by the checks of one job', () => {
  let dns: LabDns;
  let resolver: StubResolver;
  let clock = 1_000_000;
  const asked = (q: string) => dns.asked.get(q) ?? 0;

  beforeAll(async () => {
    dns = await startLabDns({ zones: [zone] });
    resolver = new StubResolver({ servers: [parseServer(dns.address)!], timeoutMs: 300 });
  });
  afterAll(async () => {
    resolver.close?.();
    await dns.close();
  });

  const cache = (maxEntries = 100) => new AnswerCache({ maxEntries, maxTtlS: 300, negativeTtlS: 60, now: () => clock });

  it('asks a name once per scope within its TTL, concurrent askers included; another scope asks for itself', async () => {
    const c = cache();
    const job1 = c.scoped('ws1:10', resolver);
    const first = await Promise.all([job1.query('www.cache.lab.test', 'A'), job1.query('WWW.cache.lab.test.', 'A')]);
    expect(first.map((r) => r.outcome)).toEqual(['answer', 'answer']);
    expect(asked('www.cache.lab.test A')).toBe(1);
    expect(first[0]!.answers[0]?.ttl).toBe(120);
    clock += 100_000; // within the record's 120 s
    const kept = await job1.query('www.cache.lab.test', 'A');
    expect(kept.answers[0]?.data).toBe('127.0.0.90');
    // Its TTL counts down as a resolver cache's does: a reader of it (the scan's dns task, for how
    // long its web task may use the addresses) never counts from a later moment than the answer's.
    expect(kept.answers[0]?.ttl).toBe(20);
    expect(asked('www.cache.lab.test A')).toBe(1);
    // Another job (and so any other tenant) never reads this job's answers.
    await c.scoped('ws2:11', resolver).query('www.cache.lab.test', 'A');
    expect(asked('www.cache.lab.test A')).toBe(2);
    clock += 30_000; // past the TTL: asked again
    await job1.query('www.cache.lab.test', 'A');
    expect(asked('www.cache.lab.test A')).toBe(3);
  });

  it('never keeps an indeterminate answer; keeps authoritative absence for the negative TTL', async () => {
    const job = cache().scoped('ws1:12', resolver);
    for (let i = 0; i < 2; i++) expect((await job.query('broken.cache.lab.test', 'A')).outcome).toBe('servfail');
    expect(asked('broken.cache.lab.test A')).toBeGreaterThanOrEqual(2);
    const silentBefore = asked('silent.cache.lab.test A');
    for (let i = 0; i < 2; i++) expect((await job.query('silent.cache.lab.test', 'A')).outcome).toBe('timeout');
    expect(asked('silent.cache.lab.test A')).toBeGreaterThanOrEqual(silentBefore + 2);
    // NXDOMAIN and NODATA are facts: kept for the negative TTL.
    for (let i = 0; i < 2; i++) expect((await job.query('gone.cache.lab.test', 'A')).outcome).toBe('nxdomain');
    for (let i = 0; i < 2; i++) expect((await job.query('www.cache.lab.test', 'MX')).outcome).toBe('nodata');
    expect([asked('gone.cache.lab.test A'), asked('www.cache.lab.test MX')]).toEqual([1, 1]);
    clock += 61_000;
    await job.query('gone.cache.lab.test', 'A');
    expect(asked('gone.cache.lab.test A')).toBe(2);
  });

  it('counts bytes, not only entries: an answer over maxEntryBytes is never kept, and the total stays under maxBytes (issue 45 item 7)', async () => {
    const c = new AnswerCache({
      maxEntries: 100,
      maxBytes: 2500,
      maxEntryBytes: 4096,
      maxTtlS: 300,
      negativeTtlS: 60,
      now: () => clock,
    });
    const job = c.scoped('ws1:14', resolver);
    const big = asked('bigtxt.cache.lab.test TXT');
    await job.query('bigtxt.cache.lab.test', 'TXT');
    const once = asked('bigtxt.cache.lab.test TXT') - big; // over UDP (truncated), then TCP
    await job.query('bigtxt.cache.lab.test', 'TXT');
    expect(asked('bigtxt.cache.lab.test TXT')).toBe(big + 2 * once);
    expect(c.size).toBe(0);
    for (const n of ['t1', 't2', 't3']) await job.query(`${n}.cache.lab.test`, 'TXT');
    expect(c.bytes).toBeLessThanOrEqual(2500);
    expect(c.size).toBe(2); // the first of three ~1 KB answers made room for the third
    const t1 = asked('t1.cache.lab.test TXT');
    await job.query('t1.cache.lab.test', 'TXT');
    expect(asked('t1.cache.lab.test TXT')).toBe(t1 + 1);
    await job.query('t3.cache.lab.test', 'TXT');
  });

  it('holds at most maxEntries answers, the least recently used dropped first', async () => {
    const c = cache(1);
    const job = c.scoped('ws1:13', resolver);
    const before = asked('www.cache.lab.test AAAA');
    await job.query('www.cache.lab.test', 'AAAA');
    await job.query('short.cache.lab.test', 'AAAA'); // evicts the first
    expect(c.size).toBe(1);
    await job.query('www.cache.lab.test', 'AAAA');
    expect(asked('www.cache.lab.test AAAA')).toBe(before + 2);
  });
});
