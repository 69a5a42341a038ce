// Liveness (read by src/queue/lane-health.ts for readiness): this consumer's score in the
// lane's sorted set, refreshed every 5 s; entries older than a minute are pruned by every beat,
// and a clean stop removes this consumer at once.
import type { RedisClient } from '../redis/client.ts';

export interface Heartbeat {
  stop(): Promise<void>;
}

export function startHeartbeat(
  redis: RedisClient,
  key: string,
  member: string,
  opts: { everyMs?: number } = {},
): Heartbeat {
  const everyMs = opts.everyMs ?? 5000;
  const beat = () => {
    const now = Date.now();
    return redis
      .multi()
      .zadd(key, now, member)
      .zremrangebyscore(key, '-inf', now - 60_000)
      .pexpire(key, 120_000)
      .exec()
      .catch(() => {});
  };
  void beat();
  const timer = setInterval(beat, everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await redis.zrem(key, member).catch(() => {});
    },
  };
}
