// Stream gauges, read from Redis at scrape time (never on the hot path). Ages come from the ids,
// which carry the Redis clock: a skew between Redis and this host shifts them.
import client from 'prom-client';
import type { RedisClient } from '../redis/client.ts';
import { streamIdTime } from './stream-ids.ts';

export interface StreamTarget {
  stream: string;
  group: string;
}

async function pendingSummary(redis: RedisClient, t: StreamTarget): Promise<{ count: number; oldest: string | null }> {
  try {
    const s = (await redis.xpending(t.stream, t.group)) as [number, string | null, string | null, unknown];
    return { count: Number(s[0]), oldest: s[1] };
  } catch {
    return { count: 0, oldest: null }; // no stream or group yet
  }
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
      for (const t of targets) this.set({ stream: t.stream }, await redis.xlen(t.stream).catch(() => 0));
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
