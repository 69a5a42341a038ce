// At most LANE_TENANT_CONCURRENCY tasks of one workspace run at once per lane, across every lane
// process (CONTRACT §5): a redis-semaphore permit per (workspace, lane) held while a task runs.
// A permit is refreshed while held and expires by itself if its holder dies.
//
// While this process itself holds every permit of a workspace, only one of its own releases can
// free one, so an acquisition waits here for that release instead of asking Redis every 50 ms.
// A burst of one workspace's tasks (the lane takes up to LANE_CONCURRENCY entries, the workspace
// runs LANE_TENANT_CONCURRENCY of them) otherwise had every waiting entry polling Redis from the
// lane's main thread: 480 scripts a second for 24 waiters, measurable in the web lane's CPU per
// lookup (docs/products/web.md, Benchmark). The limit itself is still Redis's to decide: the
// local count only ever holds an acquisition back, never lets one through.
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
  /** Permits this process holds, per workspace. */
  readonly #held = new Map<number, number>();
  /** Acquisitions waiting for one of this process's releases, per workspace, oldest first. */
  readonly #waiting = new Map<number, Array<() => void>>();

  constructor(redis: RedisClient, lane: LaneName, limit: number, log: Logger, opts: { waitMs?: number } = {}) {
    this.#redis = redis;
    this.#lane = lane;
    this.#limit = limit;
    this.#log = log;
    this.#waitMs = opts.waitMs ?? 1000;
  }

  /** Permits of the workspace this process holds (tests). */
  heldBy(workspaceId: number): number {
    return this.#held.get(workspaceId) ?? 0;
  }

  /** null when no permit came free within the wait: the caller re-queues the entry. */
  async acquire(workspaceId: number, signal: AbortSignal): Promise<Permit | null> {
    const started = performance.now();
    if (this.heldBy(workspaceId) >= this.#limit && !(await this.#localRelease(workspaceId, signal))) return null;
    const sem = new Semaphore(this.#redis, queueKeys.tenantPermits(this.#lane, workspaceId), this.#limit, {
      lockTimeout: 30_000,
      acquireTimeout: Math.max(1, this.#waitMs - (performance.now() - started)),
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
    if (!ok) return null;
    this.#held.set(workspaceId, this.heldBy(workspaceId) + 1);
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        await sem.release().catch(() => {});
        // After Redis has it back, so the woken acquisition finds it free.
        const left = this.heldBy(workspaceId) - 1;
        if (left > 0) this.#held.set(workspaceId, left);
        else this.#held.delete(workspaceId);
        this.#waiting.get(workspaceId)?.shift()?.();
      },
    };
  }

  /** True once one of this process's permits of the workspace is released; false at the wait's end or on abort. */
  #localRelease(workspaceId: number, signal: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      const queue = this.#waiting.get(workspaceId) ?? [];
      this.#waiting.set(workspaceId, queue);
      const settle = (freed: boolean) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        const i = queue.indexOf(wake);
        if (i >= 0) queue.splice(i, 1);
        if (queue.length === 0 && this.#waiting.get(workspaceId) === queue) this.#waiting.delete(workspaceId);
        resolve(freed);
      };
      const wake = () => settle(true);
      const onAbort = () => settle(false);
      const timer = setTimeout(() => settle(false), this.#waitMs);
      if (signal.aborted) return settle(false);
      signal.addEventListener('abort', onAbort, { once: true });
      queue.push(wake);
    });
  }
}
