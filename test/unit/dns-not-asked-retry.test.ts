// Issue 48, item 3: a lane check's DNS question that was never sent (its zone backed off, or our
// own congestion window full) is asked again after the wait it names, within a bounded budget, and
// counted (workers/lane-runner/not-asked-retry.ts); one still congested after its retries is our
// shortage, a local failure that gives the task back, never the target's fact. The real
// StubResolver against the real lab DNS server; the lab's stalled.test answers nothing.
import client from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { StubResolver } from '../../src/dns/stub-resolver.ts';
import { registerDnsCongestionMetrics } from '../../src/dns/congestion-metrics.ts';
import { collectLocalFailures } from '../../src/net/local-failures.ts';
import {
  DNS_NOT_ASKED,
  retriedLimitation,
  retryingNotAsked,
  type RetryTally,
} from '../../workers/lane-runner/not-asked-retry.ts';
import { failureOf } from '../../src/products/kit/dns-replies.ts';
import type { QueryResult } from '../../src/dns/types.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { labNames as n } from '../lab/zones.ts';

let lab: LabDns | undefined;
let resolver: StubResolver | undefined;

afterEach(async () => {
  resolver?.close();
  resolver = undefined;
  await lab?.close();
  lab = undefined;
});

describe('never-sent questions are asked again, within a budget', () => {
  it('a question answered from a backoff is asked again when the backoff ends, and counted', async () => {
    lab = await startLabDns();
    resolver = new StubResolver({
      servers: [{ host: lab.host, port: lab.port }],
      timeoutMs: 150,
      zoneBackoff: { backoffMs: 300 },
    });
    // The zone stalls: backed off.
    await Promise.all(Array.from({ length: 12 }, (_, i) => resolver!.query(`s${i}.${n.stalled}`, 'A')));
    expect((await resolver.query(`x.${n.stalled}`, 'A')).zoneBackoff).toBe(n.stalled);
    const tally: RetryTally = { retried: 0 };
    const retrying = retryingNotAsked(resolver, { retries: 2 }, tally);
    const r = await retrying.query(`y.${n.stalled}`, 'A');
    // After the backoff the question went out as the trial (really asked: the lab saw it).
    expect(tally.retried).toBe(1);
    expect(lab.asked.get(`y.${n.stalled} A`)).toBeGreaterThanOrEqual(1);
    expect(r.zoneBackoff).toBeUndefined();
    expect(r.outcome).toBe('timeout');
    expect(retriedLimitation(tally)).toMatchObject({ code: 'dns_questions_retried' });
    expect(retriedLimitation({ retried: 0 })).toBeNull();
    // No retry is waited for that the check's deadline would not leave time for.
    const late: RetryTally = { retried: 0 };
    const hurried = retryingNotAsked(
      resolver,
      { retries: 2, deadlineAt: performance.now() + 100, reserveMs: 150 },
      late,
    );
    expect((await hurried.query(`z.${n.stalled}`, 'A')).zoneBackoff).toBe(n.stalled);
    expect(late.retried).toBe(0);
  });

  it('a question still congested after its retries is a local failure of the work (the task is given back), never a timeout', async () => {
    lab = await startLabDns();
    resolver = new StubResolver({
      servers: [{ host: lab.host, port: lab.port }],
      timeoutMs: 1000,
      minAttempts: 1,
      zoneBackoff: false,
      congestion: { zoneWindowMax: 1, serverWindowMax: 64, queueWaitMs: 50, initialWindow: 1 },
    });
    // The zone's one place is held by a question that will time out (1 s).
    const holder = resolver.query(`hold.${n.stalled}`, 'A');
    const tally: RetryTally = { retried: 0 };
    const retrying = retryingNotAsked(resolver, { retries: 1, maxWaitMs: 20 }, tally);
    const seen = await collectLocalFailures(() => retrying.query(`q.${n.stalled}`, 'A'));
    expect(seen.ok).toBe(true);
    expect(seen.codes).toEqual([DNS_NOT_ASKED]);
    if (seen.ok) expect(seen.value).toMatchObject({ outcome: 'error', congested: n.stalled });
    expect(tally.retried).toBe(1);
    expect(lab.asked.get(`q.${n.stalled} A`)).toBeUndefined();
    // The metrics say what happened: a question given back, none waiting any more.
    const registry = new client.Registry();
    registerDnsCongestionMetrics(registry);
    const text = await registry.metrics();
    expect(text).toMatch(/lss_dns_questions_not_sent_total [1-9]/);
    expect(text).toMatch(/lss_dns_questions_waiting 0/);
    expect(text).toMatch(/lss_dns_questions_in_flight 1/);
    expect(text).toMatch(/lss_dns_server_window\{server="0"\} 64/);
    expect((await holder).outcome).toBe('timeout');
  });
});

describe("a check's status when none of its questions was answered", () => {
  const base: QueryResult = {
    name: 'a.example',
    type: 'A',
    outcome: 'timeout',
    rcode: null,
    answers: [],
    flags: { aa: false, ad: false, tc: false, ra: false },
    transport: null,
    durationMs: 0,
  };
  it('never reads questions that were not sent as the target timing out', () => {
    expect(failureOf([base, base])).toEqual({ status: 'timeout', reason: 'dns_timeout' });
    const backedOff = { ...base, zoneBackoff: 'example', retryAfterMs: 100 };
    expect(failureOf([backedOff, backedOff])).toEqual({ status: 'timeout', reason: 'dns_zone_backed_off' });
    const congested: QueryResult = { ...base, outcome: 'error', congested: 'example', retryAfterMs: 1000 };
    expect(failureOf([base, congested])).toEqual({ status: 'unavailable', reason: 'dns_not_asked' });
  });
});
