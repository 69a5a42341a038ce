// Lane liveness for readiness: a lane is alive while at least one of its consumers has a recent
// heartbeat in the lane's sorted set `{lss}:lane-alive:<lane>` (consumer → ms, refreshed every
// 5 s). One pipelined ZCOUNT per lane every 2 s serves every lane, whatever the keyspace size;
// alive() is then a memory read on the request path.
import type { RedisClient } from '../redis/client.ts';
import { LANES, queueKeys, type LaneName } from './streams.ts';

/** A heartbeat older than this no longer counts; also how old a view may get before failing closed. */
export const HEARTBEAT_TTL_MS = 15_000;
const STALE_AFTER_MS = HEARTBEAT_TTL_MS;
/** The lanes, and the orchestrator: without it accepted jobs would never be planned. */
const WATCHED = [...LANES, 'orchestrator'] as const;

export class LaneHealth {
  readonly #redis: RedisClient;
  readonly #intervalMs: number;
  #alive = new Set<string>();
  #refreshedAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  constructor(redis: RedisClient, opts: { intervalMs?: number } = {}) {
    this.#redis = redis;
    this.#intervalMs = opts.intervalMs ?? 2000;
  }

  start(): void {
    if (this.#timer) return;
    void this.refresh();
    this.#timer = setInterval(() => void this.refresh(), this.#intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  alive(lane: LaneName | 'orchestrator' | string): boolean {
    // A view older than the heartbeat TTL says nothing about now: fail closed.
    if (Date.now() - this.#refreshedAt > STALE_AFTER_MS) return false;
    return this.#alive.has(lane);
  }

  /** One SCAN pass; concurrent callers share it. Errors keep the last view until it goes stale. */
  refresh(): Promise<void> {
    this.#running ??= this.#scan()
      .catch(() => {})
      .finally(() => {
        this.#running = undefined;
      });
    return this.#running;
  }

  async #scan(): Promise<void> {
    const since = Date.now() - HEARTBEAT_TTL_MS;
    const pipeline = this.#redis.pipeline();
    for (const lane of WATCHED) pipeline.zcount(queueKeys.laneAlive(lane), since, '+inf');
    const replies = (await pipeline.exec()) ?? [];
    const seen = new Set<string>();
    WATCHED.forEach((lane, i) => {
      const [err, count] = replies[i] ?? [new Error('no reply'), 0];
      if (err) throw err;
      if (Number(count) > 0) seen.add(lane);
    });
    this.#alive = seen;
    this.#refreshedAt = Date.now();
  }
}
