// Consumers of several streams that share one HandlingBudget never hold more entries in flight,
// together, than the budget; every entry is still handled and acknowledged. (The orchestrator
// reads five per-lane results streams this way.)
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACK, HandlingBudget, StreamConsumer, type Delivery } from '../../src/queue/stream-consumer.ts';
import type { RedisClient } from '../../src/redis/client.ts';
import { testRedis } from '../helpers/redis.ts';

describe('HandlingBudget shared by stream consumers', () => {
  let redis: RedisClient;
  beforeAll(async () => {
    redis = await testRedis(`${process.env.REDIS_KEY_PREFIX ?? ''}budget:`);
  });
  afterAll(() => redis.quit());

  it('three streams, a budget of 4: at most 4 handled at any time, all 90 entries handled once', async () => {
    const streams = [0, 1, 2].map((i) => `{lss:budget-test:${randomBytes(4).toString('hex')}:${i}}:s`);
    for (const s of streams) for (let n = 0; n < 30; n++) await redis.xadd(s, '*', 'n', String(n));
    const budget = new HandlingBudget(4);
    let inFlight = 0;
    let peak = 0;
    const seen = new Set<string>();
    const handle = async (stream: string, d: Delivery) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise((r) => setTimeout(r, 5));
      seen.add(`${stream} ${d.id}`);
      inFlight--;
      return ACK;
    };
    const consumers = streams.map(
      (stream) =>
        new StreamConsumer({
          redis,
          stream,
          group: 'g',
          consumer: 'c',
          log: pino({ level: 'silent' }),
          concurrency: 8,
          handling: budget,
          visibilityMs: 30_000,
          maxDeliveries: 5,
          blockMs: 50,
          trimEveryMs: 0,
          handle: (d) => handle(stream, d),
          deadLetter: async () => ACK,
        }),
    );
    for (const c of consumers) await c.start();
    const end = Date.now() + 15_000;
    while (seen.size < 90 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    await Promise.all(consumers.map((c) => c.close()));
    expect(seen.size).toBe(90);
    expect(peak).toBeLessThanOrEqual(4);
    expect(peak).toBeGreaterThan(1);
    expect(budget.inUse).toBe(0);
    for (const s of streams) {
      const pending = (await redis.xpending(s, 'g')) as [number, ...unknown[]];
      expect(Number(pending[0])).toBe(0);
    }
  });
});
