// At most LANE_TENANT_CONCURRENCY tasks of one workspace run at once per lane, across every lane
// process (CONTRACT §5): a redis-semaphore permit per (workspace, lane) held while a task runs.
// A permit is refreshed while held and expires by itself if its holder dies.
//
// The Redis semaphore is polled (redis-semaphore retries every retryInterval), so a task waiting
// for a permit that another task of this process just released used to notice it up to 50 ms
// later: with 8 permits and a check of ~140 ms, a quarter of the tenant's share went to waiting.
// So a process first queues its own tasks per workspace in memory (the same limit: a released
// local slot goes to the next waiter at once, in arrival order) and only then takes the Redis
// permit, which is then free unless other processes hold the tenant's share; across processes the
// polling interval is 10 ms. Per-tenant fairness is unchanged: the queues are per workspace, so
// one tenant's tasks never wait behind another's, and Redis still bounds the tenant across
// processes.
import type { RedisClient } from '../../src/redis/client.ts';
import type { Logger } from 'pino';
import { Semaphore } from 'redis-semaphore';
import { queueKeys, type LaneName } from '../../src/queue/streams.ts';

export interface Permit {
  release(): Promise<void>;
}

/** How long an entry waits for its workspace's permit (and, in the runner, for the lane's limit) before re-queueing. */
export const PERMIT_WAIT_MS = 1000;

export class TenantPermits {
  readonly #redis: RedisClient;
  readonly #lane: LaneName;
  readonly #limit: number;
  readonly #log: Logger;
  readonly #waitMs: number;
  /** Per workspace: slots of this process in use, and its tasks waiting for one, in order. */
  readonly #local = new Map<number, { used: number; waiters: Array<() => void> }>();

  constructor(redis: RedisClient, lane: LaneName, limit: number, log: Logger, opts: { waitMs?: number } = {}) {
    this.#redis = redis;
    this.#lane = lane;
    this.#limit = limit;
    this.#log = log;
    this.#waitMs = opts.waitMs ?? PERMIT_WAIT_MS;
  }

  /** Slots of the workspace this process holds or is taking (tests). */
  heldBy(workspaceId: number): number {
    return this.#local.get(workspaceId)?.used ?? 0;
  }

  /** null when no permit came free within the wait: the caller re-queues the entry. */
  async acquire(workspaceId: number, signal: AbortSignal): Promise<Permit | null> {
    const started = Date.now();
    if (!(await this.#takeLocal(workspaceId, signal))) return null;
    let permit: Permit | null = null;
    try {
      permit = await this.#acquireShared(workspaceId, signal, Math.max(1, this.#waitMs - (Date.now() - started)));
    } finally {
      if (!permit) this.#releaseLocal(workspaceId);
    }
    if (!permit) return null;
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        await permit.release();
        this.#releaseLocal(workspaceId);
      },
    };
  }

  /** A slot of this process for the workspace, within the wait; false on timeout or abort. */
  #takeLocal(workspaceId: number, signal: AbortSignal): Promise<boolean> {
    let q = this.#local.get(workspaceId);
    if (!q) {
      q = { used: 0, waiters: [] };
      this.#local.set(workspaceId, q);
    }
    if (q.used < this.#limit) {
      q.used++;
      return Promise.resolve(true);
    }
    if (signal.aborted) return Promise.resolve(false);
    const queue = q;
    return new Promise<boolean>((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        resolve(ok);
      };
      const grant = () => done(true); // the releaser handed its slot over (used stays counted)
      const giveUp = () => {
        const i = queue.waiters.indexOf(grant);
        if (i >= 0) queue.waiters.splice(i, 1);
        done(false);
      };
      const onAbort = () => giveUp();
      const timer = setTimeout(giveUp, this.#waitMs);
      signal.addEventListener('abort', onAbort, { once: true });
      queue.waiters.push(grant);
    });
  }

  #releaseLocal(workspaceId: number): void {
    const q = this.#local.get(workspaceId);
    if (!q) return;
    const next = q.waiters.shift();
    if (next) return next(); // handed over: the slot stays in use
    q.used--;
    if (q.used === 0) this.#local.delete(workspaceId);
  }

  async #acquireShared(workspaceId: number, signal: AbortSignal, waitMs: number): Promise<Permit | null> {
    const sem = new Semaphore(this.#redis, queueKeys.tenantPermits(this.#lane, workspaceId), this.#limit, {
      lockTimeout: 30_000,
      acquireTimeout: waitMs,
      retryInterval: 10,
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
