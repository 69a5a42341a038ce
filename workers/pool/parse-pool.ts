// The lane's piscina pool for CPU-heavy parsing, exposed to checks as CheckContext.runInPool.
//
// Every task has a deadline (parse-tasks.ts deadlineOf, or LANE_POOL_DEADLINE_MS), counted from
// the moment its thread starts it (the worker says so: parse-worker.ts), so time spent queued or
// loading modules never counts. Past it, and whenever the caller aborts (the check's timeout, a
// shutdown), the task is aborted: piscina terminates its thread (Worker.terminate() stops even a
// running regex backtrack) and, minThreads being maxThreads, starts a replacement at once. The
// caller gets PoolDeadlineExceeded, which the lane runner turns into a `timeout` with the
// limitation `parse_deadline_exceeded`. Before the deadline existed, a check's timeout ended the
// wait but the thread kept spinning, and every other workspace's task queued behind it.
//
// Tasks reach piscina through a per-workspace round-robin queue (fair-queue.ts), one per free
// thread, so one workspace's burst cannot hold the pool's only FIFO.
//
// With 0 threads the same functions run inline (tests, tiny deployments): no deadline can stop a
// synchronous parse there, so production runs LANE_POOL_THREADS >= 1 (docs/operations.md).
import { Piscina } from 'piscina';
import client from 'prom-client';
import { FairQueue } from './fair-queue.ts';
import { PoolDeadlineExceeded } from './pool-deadline.ts';
import { deadlineOf, isParseTask, parseTasks, TASK_STARTED, type PoolMessage } from './parse-tasks.ts';

export interface PoolRunOptions {
  /** Whose task it is (the workspace): the pool serves workspaces in turn. Default: one shared queue. */
  tenant?: string;
  /** Aborting it takes the task out of the queue, or stops (and replaces) the thread running it. */
  signal?: AbortSignal;
}

export interface ParsePool {
  run<T>(task: string, payload: unknown, opts?: PoolRunOptions): Promise<T>;
  destroy(): Promise<void>;
}

export interface ParsePoolOptions {
  threads: number;
  /** Overrides every task's deadline when > 0 (LANE_POOL_DEADLINE_MS). */
  deadlineMs?: number;
  /** Where the pool's metrics go, labelled with the lane. */
  metrics?: { registry: client.Registry; lane: string };
  /** Another worker module speaking the same protocol (tests: a task that never ends). */
  filename?: string;
}

const SHARED = '';

function poolMetrics(o: ParsePoolOptions['metrics'], queued: () => number) {
  if (!o) return null;
  const registers = [o.registry];
  const lane = o.lane;
  new client.Gauge({
    name: 'lss_pool_queued_tasks',
    help: 'Parse-pool tasks waiting for a thread in this lane process (all workspaces)',
    labelNames: ['lane'] as const,
    registers,
    collect() {
      this.set({ lane }, queued());
    },
  });
  const wait = new client.Histogram({
    name: 'lss_pool_queue_wait_seconds',
    help: 'Time a parse-pool task waited for a thread (the fair queue, then a replacement thread starting)',
    labelNames: ['lane'] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const duration = new client.Histogram({
    name: 'lss_pool_task_duration_seconds',
    help: 'Parse-pool task run time by task and outcome (ok, failed, deadline, aborted)',
    labelNames: ['lane', 'task', 'outcome'] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const replaced = new client.Counter({
    name: 'lss_pool_thread_replacements_total',
    help: 'Parse-pool threads terminated and replaced because their task passed its deadline or was aborted',
    labelNames: ['lane', 'task'] as const,
    registers,
  });
  return {
    waited: (s: number) => wait.observe({ lane }, s),
    ran: (task: string, outcome: string, s: number) => duration.observe({ lane, task, outcome }, s),
    replaced: (task: string) => replaced.inc({ lane, task }),
  };
}

interface Job {
  id: number;
  task: string;
  payload: unknown;
  tenant: string;
  signal: AbortSignal | undefined;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  enqueuedAt: number;
  /** Set once dispatched. */
  ac?: AbortController;
  startedAt?: number;
  timer?: NodeJS.Timeout;
  deadlineHit?: PoolDeadlineExceeded;
}

function inlinePool(): ParsePool {
  return {
    async run<T>(task: string, payload: unknown, opts: PoolRunOptions = {}): Promise<T> {
      opts.signal?.throwIfAborted();
      if (!isParseTask(task)) throw new Error(`unknown pool task ${task}`);
      return (await (parseTasks[task] as (p: unknown) => unknown)(payload)) as T;
    },
    async destroy() {},
  };
}

export function createParsePool(opts: number | ParsePoolOptions): ParsePool {
  const o: ParsePoolOptions = typeof opts === 'number' ? { threads: opts } : opts;
  if (o.threads <= 0) return inlinePool();
  const pool = new Piscina({
    filename: o.filename ?? new URL('./parse-worker.ts', import.meta.url).href,
    name: 'runPoolTask',
    // A terminated thread is replaced at once (piscina keeps minThreads alive), so an aborted task
    // never leaves the pool a thread short; nothing idles out.
    minThreads: o.threads,
    maxThreads: o.threads,
    idleTimeout: Number.POSITIVE_INFINITY,
  });
  const queue = new FairQueue<Job>(o.threads);
  const metrics = poolMetrics(o.metrics, () => queue.queued);
  const running = new Map<number, Job>();
  let nextId = 1;
  let destroying: Promise<void> | undefined;
  let closed = false;

  pool.on('message', (m: unknown) => {
    const id = (m as Record<string, unknown> | null)?.[TASK_STARTED];
    const job = typeof id === 'number' ? running.get(id) : undefined;
    if (!job || job.startedAt !== undefined) return;
    job.startedAt = performance.now();
    const ms = deadlineOf(job.task, o.deadlineMs);
    job.timer = setTimeout(() => {
      job.deadlineHit = new PoolDeadlineExceeded(job.task, ms);
      job.ac?.abort(job.deadlineHit);
    }, ms);
  });
  // A worker that fails outside a task is replaced by piscina; its task, if any, is rejected.
  pool.on('error', () => {});

  function settle(job: Job, ok: boolean, value: unknown): void {
    clearTimeout(job.timer);
    running.delete(job.id);
    queue.finish(job.tenant);
    const aborted = !ok && job.ac?.signal.aborted === true;
    const outcome = ok ? 'ok' : job.deadlineHit ? 'deadline' : aborted ? 'aborted' : 'failed';
    metrics?.ran(job.task, outcome, (performance.now() - (job.startedAt ?? job.enqueuedAt)) / 1000);
    // Aborted once its thread had it: piscina terminated that thread and is starting another.
    if (aborted && job.startedAt !== undefined) metrics?.replaced(job.task);
    if (ok) job.resolve(value);
    else if (job.deadlineHit) job.reject(job.deadlineHit);
    else if (aborted) job.reject(job.signal?.aborted ? job.signal.reason : value);
    else job.reject(value);
    pump();
  }

  function pump(): void {
    if (closed) return;
    for (const { item: job } of queue.take()) {
      job.ac = new AbortController();
      running.set(job.id, job);
      metrics?.waited((performance.now() - job.enqueuedAt) / 1000);
      const message: PoolMessage = { id: job.id, task: job.task, payload: job.payload };
      pool.run(message, { signal: job.ac.signal }).then(
        (v) => settle(job, true, v),
        (err) => settle(job, false, err),
      );
    }
  }

  return {
    run<T>(task: string, payload: unknown, opts: PoolRunOptions = {}): Promise<T> {
      if (!isParseTask(task)) return Promise.reject(new Error(`unknown pool task ${task}`));
      if (closed) return Promise.reject(new Error('the parse pool is shut down'));
      const { signal } = opts;
      if (signal?.aborted) return Promise.reject(signal.reason);
      return new Promise<T>((resolve, reject) => {
        const onAbort = () => {
          // Still queued: out of the queue. Running: abort it (piscina stops its thread).
          if (cancel()) reject(signal!.reason);
          else job.ac?.abort(signal!.reason);
        };
        const job: Job = {
          id: nextId++,
          task,
          payload,
          tenant: opts.tenant ?? SHARED,
          signal,
          resolve: (v) => {
            signal?.removeEventListener('abort', onAbort);
            resolve(v as T);
          },
          reject: (e) => {
            signal?.removeEventListener('abort', onAbort);
            reject(e);
          },
          enqueuedAt: performance.now(),
        };
        const cancel = queue.enqueue(job.tenant, job);
        signal?.addEventListener('abort', onAbort, { once: true });
        pump();
      });
    },
    destroy() {
      closed = true;
      destroying ??= (async () => {
        const failed = new Error('the parse pool is shut down');
        for (const job of queue.clear()) job.reject(failed);
        for (const job of running.values()) clearTimeout(job.timer);
        await pool.destroy();
      })();
      return destroying;
    },
  };
}
