// The per-workspace lane permits (workers/lane-runner/tenant-permits.ts) against a real Redis: the
// limit holds across processes (two TenantPermits on one Redis), and while one process holds every
// permit of a workspace its next acquisition waits for that process's own release without asking
// Redis (it used to poll every 50 ms from the lane's main thread).
import { randomInt } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RedisClient } from '../../src/redis/client.ts';
import { TenantPermits } from '../../workers/lane-runner/tenant-permits.ts';
import { testRedis } from '../helpers/redis.ts';

describe('TenantPermits', () => {
  let redis: RedisClient;
  const log = pino({ level: 'silent' });
  const signal = new AbortController().signal;
  beforeAll(async () => {
    redis = await testRedis(`${process.env.REDIS_KEY_PREFIX ?? ''}permits:`);
  });
  afterEach(() => vi.restoreAllMocks());
  afterAll(() => redis.quit());

  const scriptCalls = () => {
    const calls = [vi.spyOn(redis, 'evalsha'), vi.spyOn(redis, 'eval')];
    return () => calls.reduce((n, s) => n + s.mock.calls.length, 0);
  };

  it('the limit holds across processes: what one holds, another cannot take', async () => {
    const ws = randomInt(1, 2 ** 40);
    const a = new TenantPermits(redis, 'web', 2, log, { waitMs: 150 });
    const b = new TenantPermits(redis, 'web', 2, log, { waitMs: 150 });
    const held = [await a.acquire(ws, signal), await b.acquire(ws, signal)];
    expect(held.every((p) => p !== null)).toBe(true);
    expect(await b.acquire(ws, signal)).toBeNull(); // b holds 1 of 2: it asks Redis, which says no
    await held[0]!.release();
    const again = await b.acquire(ws, signal);
    expect(again).not.toBeNull();
    expect([a.heldBy(ws), b.heldBy(ws)]).toEqual([0, 2]);
    await again!.release();
    await held[1]!.release();
    expect(b.heldBy(ws)).toBe(0);
  });

  it('holding every permit, the next acquisition waits for a local release without a Redis call', async () => {
    const ws = randomInt(1, 2 ** 40);
    const p = new TenantPermits(redis, 'web', 2, log, { waitMs: 2000 });
    const first = [await p.acquire(ws, signal), await p.acquire(ws, signal)];
    const calls = scriptCalls();
    let third: Awaited<ReturnType<TenantPermits['acquire']>> | undefined;
    const waiting = p.acquire(ws, signal).then((x) => (third = x));
    await new Promise((r) => setTimeout(r, 300)); // six of the library's 50 ms retries
    expect(calls()).toBe(0);
    expect(third).toBeUndefined();
    await first[0]!.release();
    await waiting;
    expect(third).not.toBeNull();
    expect(p.heldBy(ws)).toBe(2);
    await third!.release();
    await third!.release(); // idempotent: counted once
    await first[1]!.release();
    expect(p.heldBy(ws)).toBe(0);
  });

  it('no local release within the wait: null, and still no Redis call; an abort ends the wait too', async () => {
    const ws = randomInt(1, 2 ** 40);
    const p = new TenantPermits(redis, 'web', 1, log, { waitMs: 150 });
    const only = await p.acquire(ws, signal);
    const calls = scriptCalls();
    expect(await p.acquire(ws, signal)).toBeNull();
    const ac = new AbortController();
    const aborted = p.acquire(ws, ac.signal);
    ac.abort();
    expect(await aborted).toBeNull();
    expect(calls()).toBe(0);
    await only!.release();
    const next = await p.acquire(ws, signal);
    expect(next).not.toBeNull();
    await next!.release();
  });
});
