// The stub resolver's congestion windows (src/dns/congestion.ts, issue 48): AIMD per zone and per
// server, and the queue behind them shared max-min fair between tenants. Driven by hand: permits
// are released when the test says so, so every assertion is on order and counts, never on time.
import { describe, expect, it } from 'vitest';
import { DnsCongestion, type Permit } from '../../src/dns/congestion.ts';

type Granted = { tenant: string; permit: Permit };

/** Acquires `n` places for `tenant` in `zone`, recording each grant in `log` as it happens. */
function ask(c: DnsCongestion, tenant: string, zone: string, n: number, log: Granted[]): Promise<unknown>[] {
  return Array.from({ length: n }, () =>
    c.acquire(tenant, zone, 0).then((p) => {
      if (p && p !== 'aborted') log.push({ tenant, permit: p });
      return p;
    }),
  );
}

const settle = () => new Promise((r) => setImmediate(r));

describe('AIMD windows', () => {
  it('a zone window grows by one per answer up to its cap, halves on a loss once per round, never below 1', async () => {
    let now = 0;
    const c = new DnsCongestion({
      zoneWindowMax: 64,
      serverWindowMax: 1000,
      queueWaitMs: 60_000,
      initialWindow: 4,
      now: () => now,
    });
    expect(c.zoneWindow('z.example')).toBe(4);
    // Slow start: each answer adds one.
    for (let i = 0; i < 10; i++) {
      const p = (await c.acquire('t', 'z.example', 0)) as Permit;
      now++;
      p.release('answer');
    }
    expect(c.zoneWindow('z.example')).toBe(14);
    // Eight questions in flight time out together: one round, one halving.
    const lost = (await Promise.all(Array.from({ length: 8 }, () => c.acquire('t', 'z.example', 0)))) as Permit[];
    now += 1000;
    for (const p of lost) p.release('timeout');
    expect(c.zoneWindow('z.example')).toBe(7);
    // Every following round that loses halves again, down to 1 and no further.
    for (let round = 0; round < 6; round++) {
      const p = (await c.acquire('t', 'z.example', 0)) as Permit;
      now += 1000;
      p.release('timeout');
    }
    expect(c.zoneWindow('z.example')).toBe(1);
    // After a loss, growth is additive: 1/window per answer.
    for (let i = 0; i < 3; i++) {
      const p = (await c.acquire('t', 'z.example', 0)) as Permit;
      now++;
      p.release('answer');
    }
    expect(c.zoneWindow('z.example')).toBe(2);
    // A zone's drops never shrink the server's window; only a server's silence does.
    expect(c.serverWindow(0)).toBe(1000);
    const p = (await c.acquire('t', 'z.example', 0)) as Permit;
    now += 1000;
    p.release('silent_timeout');
    expect(c.serverWindow(0)).toBe(500);
    // A server grows back by one per answer (it was silent, not slow).
    for (let i = 0; i < 3; i++) {
      const q = (await c.acquire('t', 'z.example', 0)) as Permit;
      now++;
      q.release('answer');
    }
    expect(c.serverWindow(0)).toBe(503);
  });

  it('remembers whether the zone answered since a question was sent (rate limiting, not death)', async () => {
    let now = 0;
    const c = new DnsCongestion({ zoneWindowMax: 8, serverWindowMax: 8, queueWaitMs: 60_000, now: () => now });
    const dropped = (await c.acquire('t', 'z.example', 0)) as Permit;
    now++;
    const answered = (await c.acquire('t', 'z.example', 0)) as Permit;
    now++;
    answered.release('answer');
    expect(dropped.zoneAnsweredSince()).toBe(true);
    now++;
    const silent = (await c.acquire('t', 'z.example', 0)) as Permit;
    now++;
    expect(silent.zoneAnsweredSince()).toBe(false);
  });

  it('a question that cannot be sent within the queue wait is given back (null), and counted', async () => {
    const c = new DnsCongestion({ zoneWindowMax: 1, serverWindowMax: 8, queueWaitMs: 50, initialWindow: 1 });
    const held = await c.acquire('t', 'z.example', 0);
    expect(held).not.toBeNull();
    expect(await c.acquire('t', 'z.example', 0)).toBeNull();
    expect(c.stats().givenBack).toBe(1);
    expect(c.waitingFor()).toBe(0);
  });

  it('a waiter whose signal aborts leaves the queue', async () => {
    const c = new DnsCongestion({ zoneWindowMax: 1, serverWindowMax: 8, queueWaitMs: 60_000, initialWindow: 1 });
    await c.acquire('t', 'z.example', 0);
    const ac = new AbortController();
    const waiting = c.acquire('t', 'z.example', 0, ac.signal);
    expect(c.waitingFor('t')).toBe(1);
    ac.abort();
    expect(await waiting).toBe('aborted');
    expect(c.waitingFor()).toBe(0);
  });
});

describe('the queue is shared max-min fair between tenants', () => {
  it("tenant A's 5,000 questions into a dead zone do not hold tenant B's questions to a healthy zone", async () => {
    const c = new DnsCongestion({ zoneWindowMax: 4, serverWindowMax: 64, queueWaitMs: 60_000, initialWindow: 4 });
    const log: Granted[] = [];
    void ask(c, 'A', 'dead.example', 5000, log);
    await settle();
    // A's zone window is full: the rest of A's questions wait.
    expect(c.inFlightFor('A')).toBe(4);
    expect(c.waitingFor('A')).toBe(4996);
    // B's questions to another zone go at once, past A's backlog, in its own window.
    const b = ask(c, 'B', 'healthy.example', 4, log);
    await Promise.all(b);
    expect(log.filter((g) => g.tenant === 'B')).toHaveLength(4);
    expect(c.waitingFor('A')).toBe(4996);
  });

  it("in one zone, a freed place goes to the tenant with the fewest in flight: B's 10 questions go before A's backlog", async () => {
    const c = new DnsCongestion({ zoneWindowMax: 4, serverWindowMax: 64, queueWaitMs: 60_000, initialWindow: 4 });
    const log: Granted[] = [];
    void ask(c, 'A', 'slow.example', 5000, log);
    await settle();
    const b = ask(c, 'B', 'slow.example', 10, log);
    await settle();
    expect(c.waitingFor('B')).toBe(10);
    // Answers come back one at a time, each freeing one place of the zone's window (capped at 4).
    let released = 0;
    while (log.filter((g) => g.tenant === 'B').length < 10) {
      const oldest = log.find((g) => !(g as { done?: boolean }).done)!;
      (oldest as { done?: boolean }).done = true;
      oldest.permit.release('answer');
      released++;
      await settle();
    }
    await Promise.all(b);
    // B was served as places freed, sharing the window with A: never behind A's backlog.
    const grantedToA = log.filter((g) => g.tenant === 'A').length;
    expect(grantedToA - 4).toBeLessThanOrEqual(10 + 4);
    expect(released).toBeLessThanOrEqual(2 * 10 + 4);
    expect(c.waitingFor('A')).toBeGreaterThan(4900);
  });

  it("a tenant's burst into healthy zones shares the server's window: another tenant's question goes at the next freed place", async () => {
    const c = new DnsCongestion({ zoneWindowMax: 1000, serverWindowMax: 8, queueWaitMs: 60_000, initialWindow: 1000 });
    const log: Granted[] = [];
    void ask(c, 'A', 'a.example', 2000, log);
    await settle();
    expect(c.inFlightFor('A')).toBe(8);
    const b = ask(c, 'B', 'b.example', 1, log);
    await settle();
    log[0]!.permit.release('answer');
    await Promise.all(b);
    expect(log.at(-1)!.tenant).toBe('B');
    expect(c.waitingFor('A')).toBe(1992);
  });
});
