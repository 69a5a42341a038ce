// Issue 31, item 1: one tenant's dead zone must not open the resolver's shared breaker. The real
// StubResolver against the real lab DNS server on loopback, which answers every zone but
// `stalled.test` (silent for every name and type under it, test/lab/zones.ts). Per-question
// timeouts never count against the resolver; only socket-level failures and a failed
// verification of the known-good question do (src/dns/stub-resolver.ts). The per-zone backoff
// (src/dns/zone-backoff.ts) then keeps a dead zone from holding sockets and time.
import dgram from 'node:dgram';
import * as packet from 'dns-packet';
import { afterEach, describe, expect, it } from 'vitest';
import { StubResolver } from '../../src/dns/stub-resolver.ts';
import { presence } from '../../src/dns/presence.ts';
import type { RecordType } from '../../src/dns/types.ts';
import { ZoneBackoff } from '../../src/dns/zone-backoff.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { labNames as n } from '../lab/zones.ts';
import { freePort } from '../helpers/processes.ts';

const TYPES: RecordType[] = ['A', 'AAAA', 'CNAME', 'MX', 'NS', 'TXT', 'CAA', 'SOA'];

let lab: LabDns | undefined;
let resolver: StubResolver | undefined;
const sockets: dgram.Socket[] = [];

afterEach(async () => {
  resolver?.close();
  resolver = undefined;
  await lab?.close();
  lab = undefined;
  for (const s of sockets.splice(0)) await new Promise<void>((r) => s.close(() => r()));
});

/** A loopback port that is free for UDP (and TCP: the lab binds both). */
async function freeDnsPort(): Promise<number> {
  for (;;) {
    const port = await freePort();
    const s = dgram.createSocket('udp4');
    const ok = await new Promise<boolean>((resolve) => {
      s.once('error', () => resolve(false));
      s.bind(port, '127.0.0.1', () => resolve(true));
    });
    await new Promise<void>((r) => (ok ? s.close(() => r()) : r()));
    if (ok) return port;
  }
}

/** A UDP socket on `port` that reads everything and answers nothing: a blackholing resolver. */
async function blackhole(port = 0): Promise<dgram.Socket> {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((r) => s.bind(port, '127.0.0.1', () => r()));
  sockets.push(s);
  return s;
}

/** One DNS lookup's eight questions about `name`, at once. */
const lookup = (r: StubResolver, name: string) => Promise.all(TYPES.map((t) => r.query(name, t)));

async function until(cond: () => boolean, withinMs: number): Promise<number | null> {
  const t0 = performance.now();
  while (performance.now() - t0 < withinMs) {
    if (cond()) return performance.now() - t0;
    await new Promise((r) => setTimeout(r, 20));
  }
  return cond() ? performance.now() - t0 : null;
}

describe('the resolver breaker opens only on evidence that the resolver is unreachable', () => {
  it('hundreds of stalled questions under one zone do not open it; the other zones answer throughout', async () => {
    lab = await startLabDns();
    // No zone backoff and no congestion windows here: every one of the stalled questions really
    // goes out at once and times out (the windows would hold most of them in our queue).
    resolver = new StubResolver({
      servers: [{ host: lab.host, port: lab.port }],
      timeoutMs: 150,
      zoneBackoff: false,
      congestion: false,
    });
    let stalled = 0;
    for (let wave = 0; wave < 5; wave++) {
      // 10 lookups of different names under the dead zone: 80 questions at once, 400 in all.
      const results = (
        await Promise.all(Array.from({ length: 10 }, (_, i) => lookup(resolver!, `h${wave}-${i}.${n.stalled}`)))
      ).flat();
      for (const r of results) {
        expect(r.outcome).toBe('timeout');
        expect(presence(r)).toBe('indeterminate'); // never an absence
      }
      stalled += results.length;
      expect(resolver.readiness(), `after ${stalled} stalled questions`).toBe('ready');
      expect((await resolver.query(n.apex, 'A')).outcome).toBe('answer');
    }
    expect(stalled).toBe(400);
    // Nothing else was asked while each wave waited: the resolver checked its servers with its own
    // question (`. NS`), which the lab answers, and stayed ready.
    expect(resolver.verifications).toBeGreaterThanOrEqual(1);
    expect(resolver.readiness()).toBe('ready');
  });

  it('stalled questions while another zone is answered need no verification at all', async () => {
    lab = await startLabDns();
    resolver = new StubResolver({ servers: [{ host: lab.host, port: lab.port }], timeoutMs: 300, zoneBackoff: false });
    const healthy = (async () => {
      const t0 = performance.now();
      let answered = 0;
      while (performance.now() - t0 < 900) {
        if ((await resolver!.query(n.apex, 'A')).outcome === 'answer') answered++;
        await new Promise((r) => setTimeout(r, 10));
      }
      return answered;
    })();
    const stalled = await Promise.all(
      Array.from({ length: 3 }, async (_, i) => {
        await new Promise((r) => setTimeout(r, i * 250));
        return lookup(resolver!, `w${i}.${n.stalled}`);
      }),
    );
    expect(stalled.flat().every((r) => r.outcome === 'timeout')).toBe(true);
    expect(await healthy).toBeGreaterThan(5);
    expect(resolver.verifications).toBe(0);
    expect(resolver.readiness()).toBe('ready');
  });

  it('a closed loopback port (ICMP port unreachable) opens it after 20 questions; it closes on its own when a server appears', async () => {
    const port = await freeDnsPort();
    resolver = new StubResolver({ servers: [{ host: '127.0.0.1', port }], timeoutMs: 500 });
    for (let i = 0; i < 19; i++) expect((await resolver.query(n.apex, 'A')).outcome).toBe('error');
    expect(resolver.readiness()).toBe('ready');
    await resolver.query(n.apex, 'A');
    expect(resolver.readiness()).toBe('down');
    lab = await startLabDns({ port });
    // No query from here on: the breaker's own probes notice the server.
    expect(await until(() => resolver!.readiness() === 'ready', 2500)).not.toBeNull();
    expect((await resolver.query(n.apex, 'A')).outcome).toBe('answer');
  });

  it('a truncated UDP reply whose TCP retry is refused (ECONNREFUSED over TCP) counts as unreachable too', async () => {
    // A UDP-only "resolver" that truncates every reply; nothing listens on its TCP port.
    const udp = await blackhole();
    udp.on('message', (msg, rinfo) => {
      const q = packet.decode(msg);
      const reply = packet.encode({
        type: 'response',
        id: q.id ?? 0,
        flags: packet.TRUNCATED_RESPONSE,
        questions: q.questions ?? [],
      });
      udp.send(reply, rinfo.port, rinfo.address);
    });
    resolver = new StubResolver({ servers: [{ host: '127.0.0.1', port: udp.address().port }], timeoutMs: 500 });
    for (let i = 0; i < 20; i++) expect((await resolver.query(n.apex, 'A')).outcome).toBe('error');
    expect(resolver.readiness()).toBe('down');
  });

  it('a blackholing resolver (nothing ever answers) is caught: the verification fails and it opens; it closes on its own when the server returns', async () => {
    const port = await freeDnsPort();
    await blackhole(port);
    resolver = new StubResolver({ servers: [{ host: '127.0.0.1', port }], timeoutMs: 200 });
    const first = await lookup(resolver, n.apex);
    expect(first.every((r) => r.outcome === 'timeout')).toBe(true);
    // One lookup timed out in silence: the `. NS` verification goes unanswered too.
    expect(await until(() => resolver!.readiness() === 'down', 2000)).not.toBeNull();
    expect(resolver.verifications).toBe(1);

    for (const s of sockets.splice(0)) await new Promise<void>((r) => s.close(() => r()));
    lab = await startLabDns({ port });
    expect(await until(() => resolver!.readiness() === 'ready', 2500)).not.toBeNull();
    expect((await resolver.query(n.apex, 'A')).outcome).toBe('answer');
  });
});

describe('per-zone backoff: a dead zone stops costing time, and touches nothing else', () => {
  it('after a dead zone stalls, its questions answer timeout at once; every other zone is asked as usual', async () => {
    lab = await startLabDns();
    resolver = new StubResolver({ servers: [{ host: lab.host, port: lab.port }], timeoutMs: 300 });
    // Three different names under the dead zone, eight types each: the zone backs off.
    for (let i = 0; i < 3; i++) await lookup(resolver, `s${i}.${n.stalled}`);
    const t0 = performance.now();
    const held = await lookup(resolver, `another.${n.stalled}`);
    expect(performance.now() - t0).toBeLessThan(150); // not the 300 ms each question would wait
    for (const r of held) {
      expect(r).toMatchObject({ outcome: 'timeout', rcode: null, answers: [], zoneBackoff: n.stalled });
      expect(presence(r)).toBe('indeterminate');
    }
    // The healthy zones: answered, nothing backed off.
    const ok = await lookup(resolver, n.apex);
    expect(ok.find((r) => r.type === 'A')).toMatchObject({ outcome: 'answer' });
    expect(ok.every((r) => r.zoneBackoff === undefined)).toBe(true);
    expect(await resolver.query(n.idn, 'A')).toMatchObject({ outcome: 'answer' });
    expect(resolver.readiness()).toBe('ready');
  });

  it("timeouts under a caller's shorter deadline do not count: they say less about the zone", async () => {
    lab = await startLabDns();
    resolver = new StubResolver({ servers: [{ host: lab.host, port: lab.port }], timeoutMs: 400 });
    for (let i = 0; i < 4; i++)
      await Promise.all(TYPES.map((t) => resolver!.query(`short${i}.${n.stalled}`, t, { timeoutMs: 100 })));
    const asked = await resolver.query(`after.${n.stalled}`, 'A', { timeoutMs: 100 });
    expect(asked.zoneBackoff).toBeUndefined();
    expect(asked.durationMs).toBeGreaterThanOrEqual(90);
  });

  it('one dead name in a healthy zone backs off that name only, never its zone', async () => {
    lab = await startLabDns();
    resolver = new StubResolver({ servers: [{ host: lab.host, port: lab.port }], timeoutMs: 200 });
    await lookup(resolver, n.timeout);
    const again = await resolver.query(n.timeout, 'A');
    expect(again).toMatchObject({ outcome: 'timeout', zoneBackoff: n.timeout });
    expect(await resolver.query(n.www, 'A')).toMatchObject({ outcome: 'answer' });
    expect(await resolver.query(n.nxdomain, 'A')).toMatchObject({ outcome: 'nxdomain' });
  });

  it('when the backoff ends, one question goes out as the trial while the others still answer at once', async () => {
    lab = await startLabDns();
    resolver = new StubResolver({
      servers: [{ host: lab.host, port: lab.port }],
      timeoutMs: 300,
      zoneBackoff: { backoffMs: 400 },
    });
    for (let i = 0; i < 3; i++) await lookup(resolver, `t${i}.${n.stalled}`);
    expect((await resolver.query(`x.${n.stalled}`, 'A')).zoneBackoff).toBe(n.stalled);
    await new Promise((r) => setTimeout(r, 450));
    const [trial, ...rest] = await Promise.all(TYPES.map((t) => resolver!.query(`y.${n.stalled}`, t)));
    expect(trial).toMatchObject({ outcome: 'timeout' });
    expect(trial!.zoneBackoff).toBeUndefined(); // really asked
    expect(trial!.durationMs).toBeGreaterThanOrEqual(250);
    expect(rest.every((r) => r.zoneBackoff === n.stalled)).toBe(true);
  });
});

describe('ZoneBackoff (a hand-driven clock)', () => {
  const at = (t: { now: number }) => ({ now: () => t.now });

  it('a reply from the zone clears it; a trial that times out backs it off again', () => {
    const clock = { now: 0 };
    const b = new ZoneBackoff({ stallsToBackOff: 4, namesToBackOffZone: 2, backoffMs: 1000, ...at(clock) });
    for (const name of ['a.dead.example', 'b.dead.example', 'a.dead.example', 'b.dead.example']) b.timedOut(name);
    expect(b.check('c.dead.example')).toBe('dead.example');
    expect(b.check('live.example')).toBeNull();
    clock.now = 1001;
    expect(b.check('c.dead.example')).toBeNull(); // the trial
    expect(b.check('d.dead.example')).toBe('dead.example'); // the others wait for it
    b.timedOut('c.dead.example');
    clock.now = 1500;
    expect(b.check('d.dead.example')).toBe('dead.example');
    clock.now = 2100;
    expect(b.check('e.dead.example')).toBeNull(); // the next trial
    b.replied('e.dead.example');
    expect(b.check('f.dead.example')).toBeNull();
    expect(b.check('a.dead.example')).toBeNull(); // two stalls of its own: under the threshold
  });

  it("a dead subzone backs off that subzone only: another tenant's questions about its parent domain are asked", () => {
    const clock = { now: 0 };
    const b = new ZoneBackoff({ stallsToBackOff: 4, namesToBackOffZone: 3, backoffMs: 1000, ...at(clock) });
    for (const label of ['a', 'b', 'c', 'd']) b.timedOut(`${label}.dead.victim.example`);
    expect(b.check('x.dead.victim.example')).toBe('dead.victim.example');
    expect(b.check('www.victim.example')).toBeNull();
    expect(b.check('victim.example')).toBeNull();
    expect(b.check('api.live.victim.example')).toBeNull();
  });

  it('a backoff that ended more than the window ago is forgotten: no trial, no re-arming', () => {
    const clock = { now: 0 };
    const b = new ZoneBackoff({
      stallsToBackOff: 1,
      namesToBackOffZone: 1,
      backoffMs: 100,
      windowMs: 1000,
      ...at(clock),
    });
    b.timedOut('x.gone.example');
    expect(b.check('y.gone.example')).toBe('gone.example');
    clock.now = 5000;
    expect(b.check('y.gone.example')).toBeNull();
    expect(b.check('z.gone.example')).toBeNull(); // not held behind a trial
  });

  it('timeouts spread over more than the window are forgotten', () => {
    const clock = { now: 0 };
    const b = new ZoneBackoff({
      stallsToBackOff: 3,
      namesToBackOffZone: 1,
      backoffMs: 100,
      windowMs: 1000,
      ...at(clock),
    });
    b.timedOut('x.slow.example');
    clock.now = 600;
    b.timedOut('y.slow.example');
    clock.now = 1700; // more than the window after the last count
    b.timedOut('z.slow.example');
    expect(b.check('w.slow.example')).toBeNull();
  });

  it('holds at most maxEntries keys, the least recently touched leaving first; a public suffix has no zone', () => {
    const clock = { now: 0 };
    const b = new ZoneBackoff({
      stallsToBackOff: 1,
      namesToBackOffZone: 1,
      backoffMs: 10_000,
      maxEntries: 50,
      ...at(clock),
    });
    for (let i = 0; i < 1000; i++) b.timedOut(`h.zone${i}.example`);
    expect(b.size).toBeLessThanOrEqual(50);
    expect(b.check('other.zone999.example')).toBe('zone999.example');
    expect(b.check('other.zone0.example')).toBeNull(); // evicted: asked again
    b.timedOut('co.uk');
    expect(b.check('example.co.uk')).toBeNull(); // nobody's zone: only the name itself
    expect(b.check('co.uk')).toBe('co.uk');
  });
});
