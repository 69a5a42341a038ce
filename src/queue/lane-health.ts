// Lane liveness for readiness: a lane is alive while at least one of its consumers has a recent
// heartbeat in the lane's sorted set `{lss}:lane-alive:<lane>` (consumer → ms, refreshed every
// 5 s). One pipelined read per lane every 2 s serves every lane, whatever the keyspace size;
// alive() and state() are then memory reads on the request path.
//
// A lane being restarted (SIGKILL and start, or a deploy's SIGTERM, whose clean stop removes the
// heartbeat at once) is not an outage: the stream keeps its work. So each lane also has a state:
//   alive       a current heartbeat;
//   restarting  none, but the lane was alive at most LANE_RESTART_GRACE_MS ago (as this
//               process last saw it alive, which outlives a Redis restart, or by its last
//               heartbeat `…:seen`, which a clean stop keeps): async products are still accepted
//               and queued;
//   down        neither: admission answers 503.
// The view is re-read on its own schedule; when a read fails (Redis unreachable) a breaker
// re-reads about once a second until one succeeds, so the view is current again within about a
// second of Redis's return instead of at the next 2 s tick. A view older than the heartbeat TTL
// says nothing about now: nothing is alive (the grace still applies to what was last seen).
import type { RedisClient } from '../redis/client.ts';
import { Breaker } from '../resilience/breaker.ts';
import { seenKeyOf } from './heartbeat.ts';
import { LANES, queueKeys, type LaneName } from './streams.ts';

/** A heartbeat older than this no longer counts; also how old a view may get before failing closed. */
export const HEARTBEAT_TTL_MS = 15_000;
const STALE_AFTER_MS = HEARTBEAT_TTL_MS;
/** The lanes, and the orchestrator: without it accepted jobs would never be planned. */
const WATCHED = [...LANES, 'orchestrator'] as const;
/** Clock skew between a lane's host and this one that the grace tolerates (a seen time in the future). */
const SKEW_MS = 1000;

export type LaneState = 'alive' | 'restarting' | 'down';

export interface LaneHealthOptions {
  intervalMs?: number;
  /** LANE_RESTART_GRACE_MS (default 30 s; 0 = a lane is either alive or down). */
  restartGraceMs?: number;
}

export class LaneHealth {
  readonly #redis: RedisClient;
  readonly #intervalMs: number;
  readonly #graceMs: number;
  #alive = new Set<string>();
  /** Per lane, the latest moment it is known to have been alive (a live view, or Redis's `:seen`). */
  readonly #lastSeen = new Map<string, number>();
  #refreshedAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<boolean> | undefined;
  readonly #breaker: Breaker;

  constructor(redis: RedisClient, opts: LaneHealthOptions = {}) {
    this.#redis = redis;
    this.#intervalMs = opts.intervalMs ?? 2000;
    this.#graceMs = opts.restartGraceMs ?? 30_000;
    this.#breaker = new Breaker({
      name: 'lane-view',
      failuresToOpen: 1,
      probeTimeoutMs: 2000,
      probe: () => this.refresh(),
    });
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
    this.#breaker.stop();
  }

  /** A consumer of the lane has a current heartbeat. */
  alive(lane: LaneName | 'orchestrator' | string): boolean {
    // A view older than the heartbeat TTL says nothing about now: fail closed.
    if (Date.now() - this.#refreshedAt > STALE_AFTER_MS) return false;
    return this.#alive.has(lane);
  }

  state(lane: LaneName | 'orchestrator' | string): LaneState {
    if (this.alive(lane)) return 'alive';
    const seen = this.#lastSeen.get(lane);
    if (seen === undefined || this.#graceMs <= 0) return 'down';
    const age = Date.now() - seen;
    return age >= -SKEW_MS && age <= this.#graceMs ? 'restarting' : 'down';
  }

  /** Work for the lane may be accepted: it is alive, or restarting within the grace. */
  accepting(lane: LaneName | 'orchestrator' | string): boolean {
    return this.state(lane) !== 'down';
  }

  /** One pipelined read; concurrent callers share it. True when it succeeded. */
  refresh(): Promise<boolean> {
    this.#running ??= this.#scan()
      .then(
        () => {
          this.#breaker.success();
          return true;
        },
        () => {
          this.#breaker.failure();
          return false;
        },
      )
      .finally(() => {
        this.#running = undefined;
      });
    return this.#running;
  }

  async #scan(): Promise<void> {
    const now = Date.now();
    const since = now - HEARTBEAT_TTL_MS;
    const pipeline = this.#redis.pipeline();
    for (const lane of WATCHED) {
      const key = queueKeys.laneAlive(lane);
      pipeline.zcount(key, since, '+inf');
      pipeline.get(seenKeyOf(key));
    }
    const replies = (await pipeline.exec()) ?? [];
    const alive = new Set<string>();
    WATCHED.forEach((lane, i) => {
      const [err, count] = replies[2 * i] ?? [new Error('no reply'), 0];
      const [seenErr, seen] = replies[2 * i + 1] ?? [new Error('no reply'), null];
      if (err) throw err;
      if (seenErr) throw seenErr;
      const isAlive = Number(count) > 0;
      if (isAlive) alive.add(lane);
      const seenMs = Number(seen);
      // The latest moment the lane is known to have been alive: now when the view says so, else
      // its last heartbeat as Redis recorded it, else what this process remembers (a Redis
      // restarted empty forgets it, this process does not).
      const latest = Math.max(this.#lastSeen.get(lane) ?? 0, Number.isFinite(seenMs) ? seenMs : 0, isAlive ? now : 0);
      if (latest > 0) this.#lastSeen.set(lane, latest);
    });
    this.#alive = alive;
    this.#refreshedAt = Date.now();
  }
}
