// A lane runner's reads over many job streams (src/queue/lane-streams-consumer.ts; issue 32: 1,000
// monitors due at once are 1,000 job streams on a lane), on real Redis: a read names at most
// MAX_KEYS_PER_READ streams, taking turns, and never brings back more entries than the room the
// runner has (maxInFlight); every entry of every stream is still delivered once. Before: one
// XREADGROUP named every stream with COUNT per stream, so 300 streams of 5 entries came back in
// one read of 1,500 entries to a runner with room for 64 (and a read's cost grew with the streams).
// And a job enqueued while the runner runs is found by a look for newly enqueued jobs (a range by
// score, every `discoverMs`), not only by the whole list's refresh (`refreshMs`): before, only
// the refresh found it.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LaneStreamsConsumer, MAX_KEYS_PER_READ } from '../../src/queue/lane-streams-consumer.ts';
import { enqueueTasks } from '../../src/queue/task-enqueue.ts';
import { ACK } from '../../src/queue/stream-consumer.ts';
import type { RedisClient } from '../../src/redis/client.ts';
import { hasRedis, testPrefix, testRedis } from '../helpers/redis.ts';

const STREAMS = 300;
const PER_STREAM = 5;
const ROOM = 64;

let redis: RedisClient;

beforeAll(async () => {
  if (!hasRedis()) throw new Error('needs Redis: run with `npm test`');
  redis = await testRedis(testPrefix('lsread'));
});
afterAll(async () => {
  await redis?.quit().catch(() => {});
});

describe('reads over many job streams', () => {
  it(`${STREAMS} job streams: no read brings back more than the room, and every entry is delivered once`, async () => {
    expect(MAX_KEYS_PER_READ).toBeLessThan(STREAMS);
    const refs = [];
    let id = 1;
    for (let j = 1; j <= STREAMS; j++)
      for (let t = 0; t < PER_STREAM; t++) refs.push({ id: id++, jobId: j, lane: 'dns' });
    await enqueueTasks(redis, refs);
    const seen = new Map<string, number>();
    let held = 0;
    let most = 0;
    const release: Array<() => void> = [];
    const consumer = new LaneStreamsConsumer({
      redis,
      lane: 'dns',
      consumer: 'reader',
      log: pino({ level: 'silent' }),
      maxInFlight: ROOM,
      wants: () => PER_STREAM,
      visibilityMs: 60_000,
      maxDeliveries: 5,
      refreshMs: 50,
      handle: async (d) => {
        held++;
        most = Math.max(most, held);
        seen.set(d.fields.task!, (seen.get(d.fields.task!) ?? 0) + 1);
        // Held until the test lets a batch go: the consumer's room fills up.
        await new Promise<void>((r) => release.push(r));
        held--;
        return ACK;
      },
      deadLetter: async () => ACK,
    });
    await consumer.start();
    const end = Date.now() + 60_000;
    try {
      while (seen.size < refs.length && Date.now() < end) {
        await new Promise((r) => setTimeout(r, 20));
        // Let go of what is held, a few at a time, so reads keep coming.
        for (const r of release.splice(0, 16)) r();
      }
    } finally {
      for (const r of release.splice(0)) r();
      await consumer.close();
    }
    expect(most).toBeLessThanOrEqual(ROOM);
    expect(seen.size).toBe(refs.length);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
  }, 90_000);

  it('a job enqueued after the runner started is read without waiting for the whole list to be refreshed', async () => {
    const lane = 'mail';
    await enqueueTasks(redis, [{ id: 1, jobId: 9001, lane }]);
    const seen: string[] = [];
    const consumer = new LaneStreamsConsumer({
      redis,
      lane,
      consumer: 'discoverer',
      log: pino({ level: 'silent' }),
      maxInFlight: 16,
      wants: () => 4,
      visibilityMs: 60_000,
      maxDeliveries: 5,
      // The whole list is refreshed once a minute here: only the discovery can find the new job.
      refreshMs: 60_000,
      discoverMs: 20,
      handle: async (d) => {
        seen.push(`${d.fields.job}:${d.fields.task}`);
        return ACK;
      },
      deadLetter: async () => ACK,
    });
    await consumer.start();
    try {
      const until = async (n: number) => {
        const end = Date.now() + 15_000;
        while (seen.length < n && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      };
      await until(1);
      expect(seen).toEqual(['9001:1']);
      // A new job after the first whole read of the list.
      await enqueueTasks(redis, [{ id: 2, jobId: 9002, lane }]);
      await until(2);
      expect(seen).toEqual(['9001:1', '9002:2']);
    } finally {
      await consumer.close();
    }
  }, 60_000);

  it("a runner with no job on its lane blocks on the lane's wake stream: a few reads a second, and an enqueue is read at once", async () => {
    const lane = 'domain';
    // Counts the commands the runner's own connection sends (the calls go through to Redis).
    const listReads = { n: 0 };
    for (const m of ['zrange', 'zrangebyscore'] as const) {
      const real = redis[m].bind(redis) as (...a: unknown[]) => Promise<unknown>;
      (redis as unknown as Record<string, unknown>)[m] = (...a: unknown[]) => {
        listReads.n++;
        return real(...a);
      };
    }
    const seen: Array<{ job: string; at: number }> = [];
    const consumer = new LaneStreamsConsumer({
      redis,
      lane,
      consumer: 'idler',
      log: pino({ level: 'silent' }),
      maxInFlight: 16,
      wants: () => 4,
      visibilityMs: 60_000,
      maxDeliveries: 5,
      discoverMs: 25,
      idleBlockMs: 5000,
      handle: async (d) => {
        seen.push({ job: String(d.fields.job), at: performance.now() });
        return ACK;
      },
      deadLetter: async () => ACK,
    });
    await consumer.start();
    try {
      // Idle for 1.5 s: asking the list every discoverMs would be ~60 reads.
      await new Promise((r) => setTimeout(r, 1500));
      expect(listReads.n).toBeLessThanOrEqual(6);
      // Well inside the 5 s block: only the enqueue's wake can make it read now.
      const at = performance.now();
      await enqueueTasks(redis, [{ id: 3, jobId: 9101, lane }]);
      const end = Date.now() + 15_000;
      while (seen.length < 1 && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
      expect(seen.map((x) => x.job)).toEqual(['9101']);
      expect(seen[0]!.at - at).toBeLessThan(1500);
    } finally {
      await consumer.close();
      delete (redis as unknown as Record<string, unknown>).zrange;
      delete (redis as unknown as Record<string, unknown>).zrangebyscore;
    }
  }, 60_000);
});
