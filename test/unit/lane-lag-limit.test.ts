// The lane's concurrency limit from event-loop lag (workers/lane-runner/lag-limit.ts) and the gate
// that applies it (run-gate.ts). Deterministic: the controller gets its windows' lag figures from the
// test, the gate is bookkeeping; no timers, no timing assertions.
import { describe, expect, it } from 'vitest';
import { LagLimit } from '../../workers/lane-runner/lag-limit.ts';

/** A window whose loop was busy (utilization 0.8) unless told otherwise. */
const win = (lagP99Ms: number, limited: boolean, utilization = 0.8) => ({ lagP99Ms, limited, utilization });
import { RunGate } from '../../workers/lane-runner/run-gate.ts';

describe('LagLimit: AIMD between the floor and LANE_CONCURRENCY', () => {
  it('starts at the ceiling, shrinks by a quarter per window over the target, never under the floor', () => {
    const c = new LagLimit({ floor: 4, ceiling: 32, targetMs: 15 });
    expect(c.limit).toBe(32);
    const seen = [40, 40, 40, 40, 40, 40, 40, 40].map((lag) => c.observe(win(lag, true)));
    expect(seen).toEqual([24, 18, 13, 9, 6, 4, 4, 4]);
  });

  it('a small limit still loses one per window over the target', () => {
    const c = new LagLimit({ floor: 1, ceiling: 3, targetMs: 15 });
    expect([c.observe(win(16, true)), c.observe(win(16, true)), c.observe(win(16, true))]).toEqual([2, 1, 1]);
  });

  it('grows by one per window under the target only when the limit held checks back, up to the ceiling', () => {
    const c = new LagLimit({ floor: 2, ceiling: 6, targetMs: 15 });
    for (let i = 0; i < 10; i++) c.observe(win(50, true));
    expect(c.limit).toBe(2);
    // Under the target, but nothing waited: the lane has less work than its limit; no growth.
    expect([c.observe(win(11, false)), c.observe(win(12, false))]).toEqual([2, 2]);
    const seen = [11, 11, 11, 11, 11, 11].map((lag) => c.observe(win(lag, true)));
    expect(seen).toEqual([3, 4, 5, 6, 6, 6]);
    // At the target exactly is not over it.
    expect(c.observe(win(15, true))).toBe(6);
    expect(c.observe(win(15.1, false))).toBe(4);
  });

  it("a lag over the target with a mostly idle loop is the machine's: the limit holds", () => {
    const c = new LagLimit({ floor: 2, ceiling: 16, targetMs: 15 });
    expect([c.observe(win(80, true, 0.2)), c.observe(win(80, false, 0.49))]).toEqual([16, 16]);
    expect(c.observe(win(80, true, 0.5))).toBe(12);
  });

  it('a floor above the ceiling is the limit; a floor under 1 is refused', () => {
    const c = new LagLimit({ floor: 8, ceiling: 4, targetMs: 15 });
    expect([c.limit, c.observe(win(100, true)), c.observe(win(1, true))]).toEqual([8, 8, 8]);
    expect(() => new LagLimit({ floor: 0, ceiling: 4, targetMs: 15 })).toThrow(RangeError);
  });
});

describe('RunGate: the limit, served per workspace in turn, a workspace never past its permits', () => {
  const live = () => new AbortController().signal;
  const LONG = 60_000; // no wait in these tests reaches it, except where a test says so

  it('admits up to the limit; a release hands the slot to a waiter', async () => {
    const g = new RunGate(2);
    expect(await g.acquire('a', live(), LONG)).toBe('admitted');
    expect(await g.acquire('a', live(), LONG)).toBe('admitted');
    let third = '';
    void g.acquire('a', live(), LONG).then((r) => {
      third = r;
    });
    await Promise.resolve();
    expect([g.running, g.waiting, third]).toEqual([2, 1, '']);
    g.release('a');
    await Promise.resolve();
    expect([g.running, g.waiting, third]).toEqual([2, 0, 'admitted']);
    g.release('a');
    g.release('a');
    expect([g.running, g.runningFor('a')]).toEqual([0, 0]);
  });

  it("one workspace's queue does not keep another's check behind all of it", async () => {
    const g = new RunGate(1);
    await g.acquire('a', live(), LONG);
    const order: string[] = [];
    const wait = (t: string, n: number) =>
      g.acquire(t, live(), LONG).then(() => {
        order.push(`${t}${n}`);
        return t;
      });
    const all = [wait('a', 1), wait('a', 2), wait('a', 3), wait('b', 1), wait('a', 4), wait('b', 2), wait('c', 1)];
    let last = 'a';
    for (let i = 0; i < all.length; i++) {
      g.release(last);
      await Promise.resolve();
      await Promise.resolve();
      last = order.at(-1)!.slice(0, 1);
    }
    await Promise.all(all);
    // Round-robin over the workspaces that wait, by when each was last admitted: a had a check
    // running when b and c began to wait, so b and c go first (issue 30: before, a1 went first and
    // a was admitted twice in a row while b waited).
    expect(order).toEqual(['b1', 'c1', 'a1', 'b2', 'a2', 'a3', 'a4']);
  });

  it('limit 1: a workspace waiting with nothing running goes before the workspace just admitted', async () => {
    const g = new RunGate(1);
    await g.acquire('a', live(), LONG);
    const order: string[] = [];
    const a2 = g.acquire('a', live(), LONG).then(() => order.push('a2'));
    const b1 = g.acquire('b', live(), LONG).then(() => order.push('b1'));
    g.release('a');
    await Promise.resolve();
    await Promise.resolve();
    expect(order).toEqual(['b1']);
    g.release('b');
    await Promise.all([a2, b1]);
    expect(order).toEqual(['b1', 'a2']);
  });

  it('a workspace at its share waits without taking a slot another workspace can use', async () => {
    const g = new RunGate(4, 2);
    expect([await g.acquire('a', live(), LONG), await g.acquire('a', live(), LONG)]).toEqual(['admitted', 'admitted']);
    let a3 = '';
    void g.acquire('a', live(), LONG).then((r) => {
      a3 = r;
    });
    // a holds its two; b still finds a slot at once, and the limit did not hold anyone back.
    expect(await g.acquire('b', live(), LONG)).toBe('admitted');
    expect([g.running, g.waiting, a3, g.takeHeld()]).toEqual([3, 1, '', false]);
    g.release('a');
    await Promise.resolve();
    expect([g.runningFor('a'), a3]).toEqual([2, 'admitted']);
  });

  it('a lowered limit lets running checks finish before admitting more; a raised one admits at once', async () => {
    const g = new RunGate(3);
    for (let i = 0; i < 3; i++) await g.acquire('a', live(), LONG);
    g.setLimit(1);
    let admitted = 0;
    const waiters = [1, 2, 3].map(() => g.acquire('b', live(), LONG).then(() => admitted++));
    g.release('a');
    g.release('a');
    await Promise.resolve();
    expect([g.running, admitted]).toEqual([1, 0]);
    expect(g.takeHeld()).toBe(true);
    g.setLimit(3);
    await Promise.all(waiters.slice(0, 2));
    expect([g.running, g.waiting]).toEqual([3, 1]);
  });

  it('an aborted or timed-out waiter leaves the queue without a slot', async () => {
    const g = new RunGate(1);
    expect(g.takeHeld()).toBe(false);
    await g.acquire('a', live(), LONG);
    const ac = new AbortController();
    const waiting = g.acquire('b', ac.signal, LONG);
    ac.abort();
    expect(await waiting).toBe('aborted');
    expect([g.running, g.waiting]).toEqual([1, 0]);
    expect(g.takeHeld()).toBe(true);
    expect(g.takeHeld()).toBe(false);
    expect(await g.acquire('c', ac.signal, LONG)).toBe('aborted');
    expect(await g.acquire('c', live(), 1)).toBe('timeout');
    expect([g.running, g.waiting]).toEqual([1, 0]);
    g.release('a');
    expect(g.running).toBe(0);
  });
});
