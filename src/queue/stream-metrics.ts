// Stream gauges, read from Redis at scrape time (never on the hot path). Ages come from the ids,
// which carry the Redis clock: a skew between Redis and this host shifts them.
import client from 'prom-client';
import type { RedisClient } from '../redis/client.ts';
import { streamIdTime } from './stream-ids.ts';

export interface StreamTarget {
  /** The label; the stream itself unless `members` names the streams it stands for. */
  stream: string;
  group: string;
  /** Streams reported together under `stream` (a lane's job streams): sums, and the oldest. */
  members?: () => Promise<string[]>;
}

async function keysOf(t: StreamTarget): Promise<string[]> {
  return t.members ? await t.members().catch(() => []) : [t.stream];
}

async function length(redis: RedisClient, t: StreamTarget): Promise<number> {
  let n = 0;
  for (const k of await keysOf(t)) n += await redis.xlen(k).catch(() => 0);
  return n;
}

async function pendingSummary(redis: RedisClient, t: StreamTarget): Promise<{ count: number; oldest: string | null }> {
  let count = 0;
  let oldest: string | null = null;
  for (const k of await keysOf(t)) {
    try {
      const s = (await redis.xpending(k, t.group)) as [number, string | null, string | null, unknown];
      count += Number(s[0]);
      if (s[1] && (oldest === null || streamIdTime(s[1]) < streamIdTime(oldest))) oldest = s[1];
    } catch {
      // no stream or group yet
    }
  }
  return { count, oldest };
}

export function registerStreamGauges(
  registry: client.Registry,
  redis: RedisClient,
  targets: readonly StreamTarget[],
): void {
  new client.Gauge({
    name: 'lss_stream_length',
    help: 'Entries in the stream (XLEN)',
    labelNames: ['stream'] as const,
    registers: [registry],
    async collect() {
      for (const t of targets) this.set({ stream: t.stream }, await length(redis, t));
    },
  });
  new client.Gauge({
    name: 'lss_stream_pending',
    help: 'Entries delivered to the group and not yet acknowledged',
    labelNames: ['stream', 'group'] as const,
    registers: [registry],
    async collect() {
      for (const t of targets) this.set({ stream: t.stream, group: t.group }, (await pendingSummary(redis, t)).count);
    },
  });
  new client.Gauge({
    name: 'lss_stream_oldest_pending_age_seconds',
    help: 'Age of the oldest unacknowledged entry of the group (0 when none)',
    labelNames: ['stream', 'group'] as const,
    registers: [registry],
    async collect() {
      for (const t of targets) {
        const { oldest } = await pendingSummary(redis, t);
        this.set(
          { stream: t.stream, group: t.group },
          oldest ? Math.max(0, (Date.now() - streamIdTime(oldest)) / 1000) : 0,
        );
      }
    },
  });
}
