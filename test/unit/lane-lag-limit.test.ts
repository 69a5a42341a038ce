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

  it('LANE_CONCURRENCY caps the limit even under a higher floor; a floor under 1 is refused', () => {
    const c = new LagLimit({ floor: 8, ceiling: 4, targetMs: 15 });
    expect([c.limit, c.observe(win(100, true)), c.observe(win(1, true))]).toEqual([4, 4, 4]);
    expect(() => new LagLimit({ floor: 0, ceiling: 4, targetMs: 15 })).toThrow(RangeError);
  });
});

describe('RunGate: the capacity shared max-min fairly between workspaces', () => {
  const live = () => new AbortController().signal;
  const flush = async () => {
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };

  it('work conserving: one workspace alone may use the whole capacity; a release hands the slot on', async () => {
    const g = new RunGate(64);
    for (let i = 0; i < 64; i++) expect(await g.acquire('a', live())).toBe('admitted');
    let next = '';
    void g.acquire('a', live()).then((r) => {
      next = r;
    });
    await flush();
    expect([g.running, g.runningFor('a'), g.waiting, next]).toEqual([64, 64, 1, '']);
    g.release('a');
    await flush();
    expect([g.running, g.waiting, next]).toEqual([64, 0, 'admitted']);
  });

  it('capacity 1: a workspace waiting with nothing running goes before the workspace just admitted (issue 30)', async () => {
    const g = new RunGate(1);
    await g.acquire('a', live());
    const order: string[] = [];
    const a2 = g.acquire('a', live()).then(() => order.push('a2'));
    const b1 = g.acquire('b', live()).then(() => order.push('b1'));
    // a's check ends: a and b both run none; b has waited while a ran, so b goes first.
    g.release('a');
    await flush();
    expect(order).toEqual(['b1']);
    g.release('b');
    await Promise.all([a2, b1]);
    expect(order).toEqual(['b1', 'a2']);
  });

  it('a workspace that arrives takes every slot that frees until it holds as many as the others', async () => {
    const g = new RunGate(8);
    for (let i = 0; i < 8; i++) await g.acquire('a', live());
    const starts: string[] = [];
    const wait = (t: string) => void g.acquire(t, live()).then(() => starts.push(t));
    for (let i = 0; i < 20; i++) wait('a'); // a's backlog, queued first
    for (let i = 0; i < 20; i++) wait('b'); // b arrives behind all of it
    // Each of a's running checks finishes in turn: the first four slots go to b, then they alternate.
    for (let i = 0; i < 8; i++) {
      g.release('a');
      await flush();
    }
    expect(starts.slice(0, 4)).toEqual(['b', 'b', 'b', 'b']);
    expect([g.runningFor('a'), g.runningFor('b')]).toEqual([4, 4]);
    // From the equal share on, a slot freed by either goes to whoever holds fewer.
    g.release('b');
    await flush();
    expect([g.runningFor('a'), g.runningFor('b')]).toEqual([4, 4]);
    g.release('a');
    g.release('a');
    await flush();
    expect([g.runningFor('a'), g.runningFor('b')]).toEqual([4, 4]);
  });

  it('max-min: a workspace that needs less than its share gets all it needs, the rest goes to the others', async () => {
    const g = new RunGate(9);
    for (let i = 0; i < 9; i++) await g.acquire('a', live());
    const pending = (t: string, n: number) => Array.from({ length: n }, () => g.acquire(t, live()));
    pending('a', 30);
    pending('b', 30);
    pending('c', 2); // c needs two slots only
    for (let i = 0; i < 9; i++) {
      g.release('a');
      await flush();
    }
    expect(g.runningFor('c')).toBe(2);
    expect(g.runningFor('a') + g.runningFor('b')).toBe(7);
    expect(Math.abs(g.runningFor('a') - g.runningFor('b'))).toBeLessThanOrEqual(1);
    expect(g.running).toBe(9);
  });

  it('a lowered limit lets running checks finish before admitting more; a raised one admits at once', async () => {
    const g = new RunGate(3);
    for (let i = 0; i < 3; i++) await g.acquire('a', live());
    g.setLimit(1);
    let admitted = 0;
    const waiters = [1, 2, 3].map(() => g.acquire('b', live()).then(() => admitted++));
    g.release('a');
    g.release('a');
    await flush();
    expect([g.running, admitted]).toEqual([1, 0]);
    expect(g.takeHeld()).toBe(true);
    g.setLimit(3);
    await Promise.all(waiters.slice(0, 2));
    expect([g.running, g.waiting]).toEqual([3, 1]);
  });

  it('an aborted waiter leaves the queue without a slot', async () => {
    const g = new RunGate(1);
    expect(g.takeHeld()).toBe(false);
    await g.acquire('a', live());
    const ac = new AbortController();
    const waiting = g.acquire('b', ac.signal);
    ac.abort();
    expect(await waiting).toBe('aborted');
    expect([g.running, g.waiting]).toEqual([1, 0]);
    expect(g.takeHeld()).toBe(true);
    expect(g.takeHeld()).toBe(false);
    expect(await g.acquire('c', ac.signal)).toBe('aborted');
    g.release('a');
    expect(g.running).toBe(0);
  });
});
