// At most LANE_TENANT_CONCURRENCY tasks of one workspace run at once per lane, across every lane
// process (CONTRACT §5): a redis-semaphore permit per (workspace, lane) held while a task runs.
// A permit is refreshed while held and expires by itself if its holder dies.
import type { RedisClient } from '../../src/redis/client.ts';
import type { Logger } from 'pino';
import { Semaphore } from 'redis-semaphore';
import { queueKeys, type LaneName } from '../../src/queue/streams.ts';

export interface Permit {
  release(): Promise<void>;
}

export class TenantPermits {
  readonly #redis: RedisClient;
  readonly #lane: LaneName;
  readonly #limit: number;
  readonly #log: Logger;
  readonly #waitMs: number;

  constructor(redis: RedisClient, lane: LaneName, limit: number, log: Logger, opts: { waitMs?: number } = {}) {
    this.#redis = redis;
    this.#lane = lane;
    this.#limit = limit;
    this.#log = log;
    this.#waitMs = opts.waitMs ?? 1000;
  }

  /** null when no permit came free within the wait: the caller re-queues the entry. */
  async acquire(workspaceId: number, signal: AbortSignal): Promise<Permit | null> {
    const sem = new Semaphore(this.#redis, queueKeys.tenantPermits(this.#lane, workspaceId), this.#limit, {
      lockTimeout: 30_000,
      acquireTimeout: this.#waitMs,
      retryInterval: 50,
      // Losing a permit (Redis restarted) only lets the tenant exceed its share for a while; the
      // task itself is unaffected. The library's default would throw from a timer.
      onLockLost: (err) => this.#log.warn({ err: { message: err.message }, workspaceId }, 'tenant permit lost'),
    });
    let ok: boolean;
    try {
      ok = await sem.tryAcquire(signal);
    } catch (err) {
      if (signal.aborted) return null;
      throw err;
    }
    return ok ? { release: () => sem.release().catch(() => {}) } : null;
  }
}
