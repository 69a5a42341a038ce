// Liveness (read by src/queue/lane-health.ts for readiness): this consumer's score in the
// lane's sorted set, refreshed every 5 s; entries older than a minute are pruned by every beat,
// and a clean stop removes this consumer at once.
//
// Each beat also records the lane's last heartbeat time in `<key>:seen` (same hash tag, same
// MULTI), which a clean stop leaves in place: the web role reads it to tell a lane being
// restarted (last seen a few seconds ago) from a lane that is gone (LANE_RESTART_GRACE_MS).
// A beat is also sent as soon as the Redis connection is ready again, so a Redis restart (which
// forgets every heartbeat) makes the lanes look dead for a round trip, not for a beat interval.
import type { RedisClient } from '../redis/client.ts';

export interface Heartbeat {
  stop(): Promise<void>;
}

/** The key holding a lane's last heartbeat time (ms): the alive set's key + `:seen`. */
export function seenKeyOf(aliveKey: string): string {
  return `${aliveKey}:seen`;
}

/** How long the last-seen time is kept: longer than any restart grace (at most 10 minutes). */
const SEEN_TTL_MS = 15 * 60_000;

export function startHeartbeat(
  redis: RedisClient,
  key: string,
  member: string,
  opts: { everyMs?: number } = {},
): Heartbeat {
  const everyMs = opts.everyMs ?? 5000;
  let stopped = false;
  const beat = () => {
    if (stopped) return Promise.resolve();
    const now = Date.now();
    return redis
      .multi()
      .zadd(key, now, member)
      .zremrangebyscore(key, '-inf', now - 60_000)
      .pexpire(key, 120_000)
      .set(seenKeyOf(key), String(now), 'PX', SEEN_TTL_MS)
      .exec()
      .catch(() => {});
  };
  const onReady = () => void beat();
  void beat();
  const timer = setInterval(beat, everyMs);
  timer.unref();
  redis.on('ready', onReady);
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      redis.off('ready', onReady);
      await redis.zrem(key, member).catch(() => {});
    },
  };
}
