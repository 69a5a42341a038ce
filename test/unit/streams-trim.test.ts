// trimToPending never removes an entry a consumer group may still need: pending entries (of any
// group) and undelivered ones stay; acknowledged entries below the oldest pending one go.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { trimToPending } from '../../src/queue/stream-trim.ts';
import { compareStreamIds } from '../../src/queue/stream-ids.ts';
import type { RedisClient } from '../../src/redis/client.ts';
import { testRedis } from '../helpers/redis.ts';

describe('trimToPending', () => {
  let redis: RedisClient;
  // A tag of its own per stream: on a cluster they land on different shards, as lanes do.
  const stream = () => `{lss:trim-test:${randomBytes(4).toString('hex')}}:tasks`;

  beforeAll(async () => {
    redis = await testRedis(`${process.env.REDIS_KEY_PREFIX ?? ''}trim:`);
  });
  afterAll(() => redis.quit());

  async function fill(key: string, n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await redis.xadd(key, '*', 'n', String(i)))!);
    return ids;
  }

  async function read(key: string, group: string, consumer: string, count: number): Promise<string[]> {
    const res = (await redis.xreadgroup('GROUP', group, consumer, 'COUNT', count, 'STREAMS', key, '>')) as Array<
      [string, Array<[string, string[]]>]
    > | null;
    return (res?.[0]?.[1] ?? []).map(([id]) => id);
  }

  async function remaining(key: string): Promise<string[]> {
    return ((await redis.xrange(key, '-', '+')) as Array<[string, string[]]>).map(([id]) => id);
  }

  it('keeps the oldest pending entry and everything after it', async () => {
    const key = stream();
    const ids = await fill(key, 10);
    await redis.xgroup('CREATE', key, 'g', '0');
    const delivered = await read(key, 'g', 'c1', 6); // ids[0..5] delivered
    expect(delivered).toEqual(ids.slice(0, 6));
    await redis.xack(key, 'g', ids[0]!, ids[1]!, ids[3]!); // ids[2], ids[4], ids[5] stay pending
    expect(await trimToPending(redis, key)).toBe(2);
    expect(await remaining(key)).toEqual(ids.slice(2));
    // Every pending entry is still readable (XAUTOCLAIM would find its fields).
    const pending = (await redis.xpending(key, 'g', '-', '+', 100)) as Array<[string]>;
    expect(pending.map(([id]) => id)).toEqual([ids[2], ids[4], ids[5]]);
    const claimed = (await redis.xautoclaim(key, 'g', 'c2', 0, '0-0', 'COUNT', 10)) as [
      string,
      Array<[string, string[] | null]>,
    ];
    expect(claimed[1].map(([id, f]) => [id, f !== null])).toEqual([
      [ids[2], true],
      [ids[4], true],
      [ids[5], true],
    ]);
  });

  it('with nothing pending trims to the last delivered entry, never into undelivered ones', async () => {
    const key = stream();
    const ids = await fill(key, 8);
    await redis.xgroup('CREATE', key, 'g', '0');
    await read(key, 'g', 'c1', 5);
    await redis.xack(key, 'g', ...ids.slice(0, 5));
    await trimToPending(redis, key);
    const left = await remaining(key);
    expect(left).toEqual(ids.slice(4)); // last delivered (ids[4]) and the 3 undelivered
    expect(await read(key, 'g', 'c1', 10)).toEqual(ids.slice(5));
  });

  it('takes the minimum over every group', async () => {
    const key = stream();
    const ids = await fill(key, 6);
    await redis.xgroup('CREATE', key, 'fast', '0');
    await redis.xgroup('CREATE', key, 'slow', '0');
    await read(key, 'fast', 'c', 6);
    await redis.xack(key, 'fast', ...ids);
    await read(key, 'slow', 'c', 2); // slow: ids[0], ids[1] pending
    expect(await trimToPending(redis, key)).toBe(0);
    expect(await remaining(key)).toEqual(ids);
    await redis.xack(key, 'slow', ids[0]!);
    await trimToPending(redis, key);
    expect(await remaining(key)).toEqual(ids.slice(1));
  });

  it('removes nothing when no group exists or nothing was delivered', async () => {
    const key = stream();
    const ids = await fill(key, 4);
    expect(await trimToPending(redis, key)).toBe(-1);
    await redis.xgroup('CREATE', key, 'g', '0');
    expect(await trimToPending(redis, key)).toBe(0);
    expect(await remaining(key)).toEqual(ids);
    expect(await trimToPending(redis, stream())).toBe(-1); // missing stream
  });

  it('orders ids numerically', () => {
    expect(compareStreamIds('999-0', '1000-0')).toBe(-1);
    expect(compareStreamIds('1000-10', '1000-9')).toBe(1);
    expect(compareStreamIds('5-5', '5-5')).toBe(0);
  });
});
