// The lane runner: consumes one lane stream and runs each task's check once, durably.
//
// Per entry: load the task (MySQL is the truth, the entry only names it) →
//   finished already            → re-publish its result notice, ack
//   job cancelling or terminal  → task cancelled, publish, ack
//   too many attempts           → dead-letter (task failed/dead_lettered), publish, ack
//   otherwise                   → a slot of the lane's run gate (its limit follows the event-loop
//                                 lag, lag-limit.ts) → tenant permit → claim (CAS pending→running,
//                                 attempts+1) → run
//                                 the check under its timeout → persist outcome + objects +
//                                 findings in one transaction → publish + ack in one MULTI.
// A crash anywhere leaves the entry pending (reclaimed by XAUTOCLAIM) or the task row in a state
// the next delivery or the reconciler completes; no step runs twice with effect.
import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from '../../src/redis/client.ts';
import type { Logger } from 'pino';
import type client from 'prom-client';
import type { Db } from '../../src/db/database.ts';
import type { CheckSpec, ProductRuntime } from '../../src/products/kit/product-contract.ts';
import { isOpenTask } from '../../src/jobs/tasks/task-rows.ts';
import { isTerminal } from '../../src/jobs/job-view.ts';
import { addDeadLetter, consumerName } from '../../src/queue/dead-letter.ts';
import type { QueueSettings } from '../../src/queue/queue-settings.ts';
import { ACK, RETAIN, StreamConsumer, type Delivery, type Settlement } from '../../src/queue/stream-consumer.ts';
import { TASK_MESSAGE_TTL_MS, groups, queueKeys, streams, type LaneName } from '../../src/queue/streams.ts';
import { executeCheck } from './execute-check.ts';
import { startHeartbeat, type Heartbeat } from '../../src/queue/heartbeat.ts';
import { persistOutcome } from './persist-outcome.ts';
import { checkByName, type CheckLookup } from './registry.ts';
import {
  cancelTask,
  claimTask,
  deadLetterTask,
  loadLaneTask,
  releaseTask,
  type LaneTask,
} from '../../src/jobs/tasks/lane-task-repo.ts';
import { PERMIT_WAIT_MS, TenantPermits } from './tenant-permits.ts';
import { LagLimit, watchLag, type LagWatch } from './lag-limit.ts';
import { RunGate } from './run-gate.ts';
import type { ParsePool } from '../pool/parse-pool.ts';

/** A run is presumed dead once it is older than its check's timeout plus this. */
const TAKEOVER_GRACE_MS = 5000;
/** The lag controller's window: long enough for 25 samples at 10 ms, short enough to react within a burst. */
const LAG_WINDOW_MS = 250;

export interface LaneRunnerOptions {
  lane: LaneName;
  db: Db;
  redis: RedisClient;
  log: Logger;
  settings: QueueSettings;
  runtime: ProductRuntime;
  checks?: CheckLookup;
  pool?: ParsePool;
  consumer?: string;
  drainTimeoutMs?: number;
  taskDuration?: client.Histogram<'lane' | 'outcome'>;
  /** Test knobs: stream read block and permit wait. */
  blockMs?: number;
  permitWaitMs?: number;
  heartbeatEveryMs?: number;
  lagWindowMs?: number;
}

export class LaneRunner {
  readonly lane: LaneName;
  readonly consumer: string;
  readonly #o: LaneRunnerOptions;
  readonly #stream: string;
  readonly #group: string;
  readonly #checks: CheckLookup;
  readonly #permits: TenantPermits;
  readonly #stop = new AbortController();
  readonly #consumer: StreamConsumer;
  /** Checks running at once in this process; its limit follows the event-loop lag (LANE_LAG_TARGET_MS). */
  readonly gate: RunGate;
  readonly #lagLimit: LagLimit | null;
  #lagWatch: LagWatch | undefined;
  #heartbeat: Heartbeat | undefined;
  #closing: Promise<void> | undefined;

  constructor(o: LaneRunnerOptions) {
    this.#o = o;
    this.lane = o.lane;
    this.consumer = o.consumer ?? consumerName(`lane-${o.lane}`);
    this.#stream = streams.lane(o.lane);
    this.#group = groups.lane(o.lane);
    this.#checks = o.checks ?? checkByName;
    this.#permits = new TenantPermits(o.redis, o.lane, o.settings.LANE_TENANT_CONCURRENCY, o.log, {
      waitMs: o.permitWaitMs ?? PERMIT_WAIT_MS,
    });
    const s = o.settings;
    this.gate = new RunGate(s.LANE_CONCURRENCY, s.LANE_TENANT_CONCURRENCY);
    this.#lagLimit =
      s.LANE_LAG_TARGET_MS > 0
        ? new LagLimit({ floor: s.LANE_CONCURRENCY_FLOOR, ceiling: s.LANE_CONCURRENCY, targetMs: s.LANE_LAG_TARGET_MS })
        : null;
    this.#consumer = new StreamConsumer({
      redis: o.redis,
      stream: this.#stream,
      group: this.#group,
      consumer: this.consumer,
      log: o.log,
      concurrency: o.settings.LANE_CONCURRENCY,
      visibilityMs: o.settings.LANE_VISIBILITY_MS,
      maxDeliveries: o.settings.LANE_MAX_DELIVERIES,
      drainTimeoutMs: o.drainTimeoutMs ?? 10_000,
      ...(o.blockMs ? { blockMs: o.blockMs } : {}),
      handle: (d) => this.#handle(d),
      deadLetter: (d) => this.#deadLetter(d),
    });
  }

  async start(): Promise<void> {
    await this.#consumer.start();
    const lagLimit = this.#lagLimit;
    if (lagLimit)
      this.#lagWatch = watchLag(this.#o.lagWindowMs ?? LAG_WINDOW_MS, (w) =>
        this.gate.setLimit(lagLimit.observe({ ...w, limited: this.gate.takeHeld() })),
      );
    this.#heartbeat = startHeartbeat(this.#o.redis, queueKeys.laneAlive(this.lane), this.consumer, {
      everyMs: this.#o.heartbeatEveryMs,
    });
    this.#o.log.info({ lane: this.lane, consumer: this.consumer }, 'lane runner started');
  }

  /** Stop reading → wait for in-flight tasks (bounded) → stop the heartbeat. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await this.#consumer.close().catch(() => {});
      this.#lagWatch?.stop();
      this.#stop.abort();
      await this.#heartbeat?.stop().catch(() => {});
    })();
    return this.#closing;
  }

  #publish(t: { id: number; jobId: number }): Settlement {
    return {
      ack: true,
      with: (tx: ChainableCommander) => {
        // The lane's results stream and the marker share the lane's slot with the XACK.
        tx.xadd(streams.laneResults(this.lane), '*', 'task', String(t.id), 'job', String(t.jobId));
        tx.del(queueKeys.taskMessage(this.lane, t.id));
      },
    };
  }

  async #handle(d: Delivery): Promise<Settlement> {
    const taskId = Number(d.fields.task);
    if (!Number.isSafeInteger(taskId) || taskId <= 0) {
      this.#o.log.error({ entry: d.id, fields: d.fields }, 'malformed lane entry dropped');
      return ACK;
    }
    const task = await loadLaneTask(this.#o.db, taskId);
    if (!task) return ACK; // purged with its job
    if (!isOpenTask(task.status)) return this.#publish(task);
    const spec = this.#checks(task.check);
    const takeoverAfterMs = (spec?.timeoutMs ?? 0) + TAKEOVER_GRACE_MS;
    if (task.jobStatus === 'cancelling' || isTerminal(task.jobStatus)) {
      // A running task of a cancelling job belongs to a live runner, which may still finish it.
      return (await cancelTask(this.#o.db, task.id, takeoverAfterMs)) ? this.#publish(task) : this.#leaveToOwner(task);
    }
    if (!spec || spec.lane !== this.lane) {
      // Probably a rolling deploy: leave it for a runner that knows the check. Repeated
      // deliveries end in the dead letter, never in silence.
      throw new Error(`check ${task.check} is not registered on lane ${this.lane}`);
    }
    // Deliveries are counted per stream entry; attempts survive re-enqueueing and Redis flushes.
    if (task.attempts >= this.#o.settings.LANE_MAX_DELIVERIES) return this.#deadLetter(d, task);
    // The lane's limit first (a check it holds back holds no permit another process could use),
    // then the workspace's permit. Neither waits longer than the permit wait: the entry goes to the
    // back of the lane instead. Not claimed yet: a shutdown that gives up on the entry leaves it
    // pending for another runner.
    const tenant = String(task.workspaceId);
    const entered = await this.gate.acquire(tenant, d.signal, this.#o.permitWaitMs ?? PERMIT_WAIT_MS);
    if (entered === 'aborted') return RETAIN;
    if (entered === 'timeout') return this.#requeue(task);
    try {
      const permit = await this.#permits.acquire(task.workspaceId, this.#stop.signal);
      if (!permit) return this.#requeue(task);
      try {
        return await this.#run(d, task, spec, takeoverAfterMs);
      } finally {
        await permit.release();
      }
    } finally {
      this.gate.release(tenant);
    }
  }

  async #run(d: Delivery, task: LaneTask, spec: CheckSpec, takeoverAfterMs: number): Promise<Settlement> {
    const attempt = await claimTask(this.#o.db, task, takeoverAfterMs);
    if (attempt === null) return this.#leaveToOwner(task);
    const pool = this.#o.pool;
    // The pool serves workspaces in turn; the check's signal (executeCheck) stops its tasks.
    const tenant = String(task.workspaceId);
    const ctx = {
      runtime: this.#o.runtime,
      ...(pool
        ? {
            runInPool: <T>(name: string, payload: unknown, o: { signal: AbortSignal }) =>
              pool.run<T>(name, payload, { tenant, signal: o.signal }),
          }
        : {}),
    };
    const result = await executeCheck(spec, task, ctx, d.signal, this.#o.log);
    if (result.kind === 'interrupted') {
      await releaseTask(this.#o.db, task.id, attempt);
      return RETAIN;
    }
    this.#o.taskDuration?.observe({ lane: this.lane, outcome: result.status }, result.durationMs / 1000);
    await persistOutcome(this.#o.db, { ...task, attempt }, result);
    // Published whether or not this run won: the notice is idempotent and the winner's may be lost.
    return this.#publish(task);
  }

  /**
   * Another run holds the task: a live one publishes its outcome; a dead one (this entry was
   * reclaimed from it) never will. Dropping the entry's marker with the ack is what lets the
   * reconciler, which resets a task running past its timeout, put it back on the lane: an
   * acknowledged entry still exists in the stream and would otherwise read as "still queued".
   */
  #leaveToOwner(task: { id: number }): Settlement {
    return {
      ack: true,
      with: (tx) => {
        tx.del(queueKeys.taskMessage(this.lane, task.id));
      },
    };
  }

  /** No permit came free: put the entry at the back of the lane (no delivery is counted). */
  async #requeue(task: LaneTask): Promise<Settlement> {
    const id = await this.#o.redis.xadd(this.#stream, '*', 'task', String(task.id), 'job', String(task.jobId));
    await this.#o.redis.set(queueKeys.taskMessage(this.lane, task.id), String(id), 'PX', TASK_MESSAGE_TTL_MS);
    return ACK;
  }

  async #deadLetter(d: Delivery, loaded?: LaneTask): Promise<Settlement> {
    const taskId = Number(d.fields.task);
    const task = loaded ?? (Number.isSafeInteger(taskId) && taskId > 0 ? await loadLaneTask(this.#o.db, taskId) : null);
    // Deliveries also pile up while MySQL is unreachable (every handler fails before the task
    // starts). A task that never started is not poison: give it a fresh entry rather than fail it
    // the moment MySQL returns. A job that never gets it started ends at its deadline (sweeper).
    if (task && task.status === 'pending' && task.attempts === 0 && !loaded) {
      this.#o.log.warn(
        { lane: this.lane, entry: d.id, taskId: task.id, deliveries: d.deliveries },
        'entry exhausted its deliveries before its task ever started: re-queued',
      );
      return this.#requeue(task);
    }
    // The durable record first: the task fails with a reason the job's coverage reports.
    const failed = task ? await deadLetterTask(this.#o.db, task.id) : false;
    this.#o.log.error(
      { lane: this.lane, entry: d.id, taskId: task?.id, deliveries: d.deliveries, attempts: task?.attempts, failed },
      'task dead-lettered',
    );
    const notice = task ? this.#publish(task) : ACK;
    return {
      ack: true,
      with: (tx) => {
        addDeadLetter(tx, this.#stream, this.#group, d);
        if (notice.ack) notice.with?.(tx);
      },
    };
  }
}
