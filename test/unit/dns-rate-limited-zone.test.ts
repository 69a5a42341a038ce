// Issue 48, item 1: a zone that rate-limits (NSD's and BIND's default response rate limiting drops
// what exceeds ~200 replies a second to one client) is slowed down to, never read as dead. The
// real StubResolver against the real lab DNS server on loopback with its RRL mode
// (test/lab/dns-server.ts `rateLimit`, every excess reply dropped), and against a zone that answers
// nothing (stalled.test). Before the congestion windows (src/dns/congestion.ts) every question of
// a burst went out at once, the server dropped most of them, their timeouts backed the zone off,
// and the rest of the burst answered `timeout` without being asked.
import dgram from 'node:dgram';
import * as packet from 'dns-packet';
import { afterEach, describe, expect, it } from 'vitest';
import { StubResolver } from '../../src/dns/stub-resolver.ts';
import { retriedLimitation, retryingNotAsked } from '../../workers/lane-runner/not-asked-retry.ts';
import { onBreakerTransition } from '../../src/resilience/breaker.ts';
import { presence } from '../../src/dns/presence.ts';
import type { QueryResult } from '../../src/dns/types.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { labZones, labNames as n } from '../lab/zones.ts';
import type { Zone } from '../lab/zones.ts';

const ZONE = 'rrl.test';
const HOSTS = 2000;

/** A zone of HOSTS hosts, h0 … h1999, each with an A record. */
const rrlZone: Zone = {
  origin: ZONE,
  records: [
    { name: '@', type: 'SOA', data: { mname: `ns.${ZONE}`, rname: `hostmaster.${ZONE}` } },
    { name: '@', type: 'NS', data: `ns.${ZONE}` },
    ...Array.from({ length: HOSTS }, (_, i) => ({ name: `h${i}`, type: 'A', data: '127.0.0.80' })),
  ],
};

let lab: LabDns | undefined;
let resolver: StubResolver | undefined;

afterEach(async () => {
  resolver?.close();
  resolver = undefined;
  await lab?.close();
  lab = undefined;
});

function byOutcome(results: QueryResult[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of results) out[r.outcome] = (out[r.outcome] ?? 0) + 1;
  return out;
}

describe('a zone that rate-limits is slowed down to, never backed off as dead', () => {
  it('2,000 names of one zone asked at once against a server that drops replies beyond 500 a second: every one answered, none timeout, the zone not backed off', async () => {
    lab = await startLabDns({ zones: [rrlZone], rateLimit: { responsesPerSecond: 500 } });
    resolver = new StubResolver({ servers: [{ host: lab.host, port: lab.port }], timeoutMs: 1000 });
    // The resolver's breaker never opens for one zone's drops (issue 48: it did with latency).
    const opened: string[] = [];
    const stopWatching = onBreakerTransition((t) => {
      if (t.name === 'resolver' && t.to !== 'closed') opened.push(t.to);
    });
    const names = Array.from({ length: HOSTS }, (_, i) => `h${i}.${ZONE}`);
    // 100 names that do not exist: absence must come back as absence, not as silence.
    const absent = Array.from({ length: 100 }, (_, i) => `none${i}.${ZONE}`);
    const results = await Promise.all([...names, ...absent].map((name) => resolver!.query(name, 'A')));
    expect(byOutcome(results)).toEqual({ answer: HOSTS, nxdomain: 100 });
    expect(results.filter((r) => presence(r) === 'indeterminate')).toEqual([]);
    expect(results.some((r) => r.zoneBackoff || r.congested)).toBe(false);
    // The server did rate-limit: replies were dropped, and the window came down from its cap.
    expect(lab.limited.dropped).toBeGreaterThan(0);
    expect(resolver.congestion!.stats().cuts.zone).toBeGreaterThan(0);
    // Not backed off: the next question is asked and answered.
    const after = await resolver.query(`h1.${ZONE}`, 'A');
    expect(after.zoneBackoff).toBeUndefined();
    expect(after.outcome).toBe('answer');
    expect(resolver.readiness()).toBe('ready');
    stopWatching();
    expect(opened).toEqual([]);
  });

  it('a zone that answers nothing still backs off as before, with the windows in place', async () => {
    lab = await startLabDns({ zones: labZones });
    resolver = new StubResolver({ servers: [{ host: lab.host, port: lab.port }], timeoutMs: 150 });
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => resolver!.query(`h${i}.${n.stalled}`, 'A')));
    // Every one timed out or was answered from the backoff: none was read as absent.
    for (const r of results) expect(r.outcome).toBe('timeout');
    expect(results.some((r) => r.zoneBackoff === n.stalled)).toBe(true);
    // The backed-off answers say when asking may be worth it again.
    expect(results.find((r) => r.zoneBackoff)!.retryAfterMs).toBeGreaterThan(0);
    const later = await resolver.query(`other.${n.stalled}`, 'A');
    expect(later.zoneBackoff).toBe(n.stalled);
    // The other zones are asked as usual, and the resolver is ready.
    expect((await resolver.query(n.apex, 'A')).outcome).toBe('answer');
    expect(resolver.readiness()).toBe('ready');
  });
});

describe('the resolver breaker and a server that rate-limits', () => {
  it("a quiet process whose questions and probes are dropped (our address's rate used up by others) stays ready: the server answers its probe over TCP", async () => {
    lab = await startLabDns({ zones: [rrlZone], rateLimit: { responsesPerSecond: 5 } });
    // Other processes of ours (the lanes) use up the address's rate: a query every millisecond.
    const flood = dgram.createSocket('udp4');
    const query = packet.encode({ type: 'query', id: 1, questions: [{ type: 'A', name: `h1.${ZONE}` }] });
    const timer = setInterval(() => flood.send(query, lab!.port, lab!.host), 1);
    const opened: string[] = [];
    const stopWatching = onBreakerTransition((t) => {
      if (t.name === 'resolver' && t.to !== 'closed') opened.push(t.to);
    });
    try {
      resolver = new StubResolver({ servers: [{ host: lab.host, port: lab.port }], timeoutMs: 300, silenceMs: 200 });
      // Questions until one is dropped in silence and the breaker verifies the server.
      for (let i = 0; i < 10 && resolver.verifications === 0; i++) await resolver.query(`h${i}.${ZONE}`, 'A');
      expect(resolver.verifications).toBeGreaterThanOrEqual(1);
      // The verification's UDP went unanswered too; over TCP the server answered: not down.
      await new Promise((r) => setTimeout(r, 400));
      expect(resolver.readiness()).toBe('ready');
      expect(opened).toEqual([]);
      expect(lab.limited.dropped).toBeGreaterThan(0);
    } finally {
      clearInterval(timer);
      stopWatching();
      await new Promise<void>((r) => flood.close(() => r()));
    }
  });
});

describe("a question's deadline starts when it is sent", () => {
  it('a question queued behind a full window for longer than the DNS timeout is answered, not reported timeout', async () => {
    // A zone server that answers every question 100 ms late; a window of 1 for the zone, and a
    // deadline of 300 ms each, from when it is sent. Six questions: the last one waits five
    // answers (about 500 ms, more than its deadline) in our queue before it is sent.
    lab = await startLabDns({ zones: [rrlZone], replyDelayMs: 100 });
    resolver = new StubResolver({
      servers: [{ host: lab.host, port: lab.port }],
      timeoutMs: 300,
      minAttempts: 1,
      congestion: { zoneWindowMax: 1, serverWindowMax: 64, queueWaitMs: 30_000, initialWindow: 1 },
    });
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => resolver!.query(`h${i}.${ZONE}`, 'A')));
    expect(byOutcome(results)).toEqual({ answer: 6 });
    // The last one was queued longer than its deadline: its duration (queue included) says so.
    expect(Math.max(...results.map((r) => r.durationMs))).toBeGreaterThan(300);
  });

  it("a question that cannot be sent within the queue wait is given back unasked: congested, retryable, never the target's timeout", async () => {
    lab = await startLabDns({ zones: labZones });
    resolver = new StubResolver({
      servers: [{ host: lab.host, port: lab.port }],
      timeoutMs: 400,
      minAttempts: 1,
      zoneBackoff: false,
      congestion: { zoneWindowMax: 1, serverWindowMax: 64, queueWaitMs: 100, initialWindow: 1 },
    });
    const [first, second] = await Promise.all([
      resolver.query(`a.${n.stalled}`, 'A'),
      resolver.query(`b.${n.stalled}`, 'A'),
    ]);
    // The first was sent and the zone did not answer: the target's silence.
    expect(first!.outcome).toBe('timeout');
    expect(first!.congested).toBeUndefined();
    // The second never left our process.
    expect(second!.outcome).toBe('error');
    expect(second!.congested).toBe(n.stalled);
    expect(second!.retryAfterMs).toBeGreaterThan(0);
    expect(presence(second!)).toBe('indeterminate');
    expect(lab.asked.get(`b.${n.stalled} A`)).toBeUndefined();
  });
});

/** A zone whose servers answer every question SERVFAIL (broken, not busy). */
const BROKEN = 'broken-rrl.test';
const brokenZone: Zone = {
  origin: BROKEN,
  records: [{ name: '@', type: 'SOA', data: { mname: `ns.${BROKEN}`, rname: `hostmaster.${BROKEN}` } }],
  behaviours: [{ name: '@', subtree: true, behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } }],
};

describe('through a recursive resolver, the same rate limiting arrives as SERVFAIL', () => {
  it('1,000 names of one zone asked at once by a lane check against a server answering SERVFAIL beyond 500 a second (a resolver whose own questions the zone dropped): every one answered, the retries counted', async () => {
    lab = await startLabDns({ zones: [rrlZone], rateLimit: { responsesPerSecond: 500, excess: 'servfail' } });
    resolver = new StubResolver({ servers: [{ host: lab.host, port: lab.port }], timeoutMs: 1000 });
    // As a lane check asks (workers/lane-runner/runner.ts): DNS_SERVFAIL_RETRIES 3, within a 20 s deadline.
    const tally = { retried: 0 };
    const lane = retryingNotAsked(
      resolver,
      {
        retries: 2,
        servfailRetries: 3,
        servfailPauseMs: 1000,
        deadlineAt: performance.now() + 20_000,
        reserveMs: 2000,
      },
      tally,
    );
    const names = Array.from({ length: 1000 }, (_, i) => `h${i}.${ZONE}`);
    const results = await Promise.all(names.map((name) => lane.query(name, 'A')));
    // Before: every question beyond the bucket stood as SERVFAIL (indeterminate), about half.
    expect(byOutcome(results)).toEqual({ answer: 1000 });
    expect(lab.limited.dropped).toBeGreaterThan(0);
    expect(tally.retried).toBeGreaterThan(0);
    expect(retriedLimitation(tally)?.code).toBe('dns_questions_retried');
    expect(resolver.congestion!.stats().cuts.zone).toBeGreaterThan(0);
  });

  it('a zone whose every question SERVFAILs is broken, not busy: SERVFAIL at once, each question asked once', async () => {
    lab = await startLabDns({ zones: [brokenZone] });
    resolver = new StubResolver({ servers: [{ host: lab.host, port: lab.port }], timeoutMs: 1000 });
    const tally = { retried: 0 };
    const lane = retryingNotAsked(resolver, { retries: 2, servfailRetries: 3 }, tally);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => lane.query(`h${i}.${BROKEN}`, 'A')));
    expect(byOutcome(results)).toEqual({ servfail: 20 });
    expect(results.some((r) => r.busyServfail)).toBe(false);
    expect(tally.retried).toBe(0);
    expect(results.every((r) => presence(r) === 'indeterminate')).toBe(true);
    for (let i = 0; i < 20; i++) expect(lab.asked.get(`h${i}.${BROKEN} A`)).toBe(1);
  });

  it('a SERVFAIL for one name of a zone that answers others stands after one pause (a name broken on its own), and a burst of names is asked again, bounded', async () => {
    lab = await startLabDns({ zones: labZones });
    resolver = new StubResolver({ servers: [{ host: lab.host, port: lab.port }], timeoutMs: 1000 });
    const tally = { retried: 0 };
    const lane = retryingNotAsked(resolver, { retries: 2, servfailRetries: 2, servfailPauseMs: 20 }, tally);
    // The zone answers a real question first (it works).
    expect((await lane.query(n.www, 'A')).outcome).toBe('answer');
    const r = await lane.query(n.servfail, 'A');
    expect(r.outcome).toBe('servfail');
    expect(r.busyServfail).toBe(n.apex);
    expect(presence(r)).toBe('indeterminate');
    // Alone in its zone: not asked again.
    expect(tally.retried).toBe(0);
    expect(lab.asked.get(`${n.servfail} A`)).toBe(1);
    // Three names of the zone failing at once are a burst: each is asked again, twice at most.
    lab.setZone({
      ...labZones.find((z) => z.origin === n.apex)!,
      behaviours: [
        ...(labZones.find((z) => z.origin === n.apex)!.behaviours ?? []),
        ...['sf1', 'sf2'].map((name) => ({ name, behaviour: { kind: 'rcode' as const, rcode: 'SERVFAIL' as const } })),
      ],
    });
    const burst = await Promise.all(
      [n.servfail, `sf1.${n.apex}`, `sf2.${n.apex}`].map((name) => lane.query(name, 'AAAA')),
    );
    expect(burst.map((x) => x.outcome)).toEqual(['servfail', 'servfail', 'servfail']);
    expect(tally.retried).toBe(6);
    expect(lab.asked.get(`sf1.${n.apex} AAAA`)).toBe(3);
  });
});
