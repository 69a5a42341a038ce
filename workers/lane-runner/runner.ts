// The lane runner: consumes the lane's job streams and runs each task's check once, durably.
//
// Per entry: load the task (MySQL is the truth, the entry only names it) →
//   finished already            → re-publish its result notice, ack
//   job cancelling or terminal  → task cancelled, publish, ack
//   too many attempts           → dead-letter (task failed/dead_lettered), publish, ack
//   otherwise                   → a slot of the process's capacity, shared max-min fairly between
//                                 workspaces (run-gate.ts; its limit follows the event-loop lag,
//                                 lag-limit.ts) → claim (CAS pending→running, attempts+1) → run
//                                 the check under its timeout → persist the outcome → publish +
//                                 ack in one MULTI.
// The runner reads ahead: a few entries of each job stream wait for their workspace's turn here
// (readAhead per stream, at most the capacity in all), so a freed slot never waits for Redis and a
// new job's entries are at hand when its workspace's turn comes.
// A crash anywhere leaves the entry pending (reclaimed by XAUTOCLAIM) or the task row in a state
// the next delivery or the reconciler completes; no step runs twice with effect.
// A statement that finds no database connection (the budget spent, the server refusing) is retried
// with backoff while the runner holds the entry (src/db/retry-shortage.ts): the entry stays ours
// and counts no delivery, the task spends no attempt; a shutdown gives the entry back pending.
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
import { ACK, RETAIN, type Settlement } from '../../src/queue/stream-consumer.ts';
import { LaneStreamsConsumer, type LaneDelivery } from '../../src/queue/lane-streams-consumer.ts';
import { TASK_MESSAGE_TTL_MS, groups, queueKeys, streams, type LaneName } from '../../src/queue/streams.ts';
import { executeCheck } from './execute-check.ts';
import { startHeartbeat, type Heartbeat } from '../../src/queue/heartbeat.ts';
import { OutcomeWriter } from './persist-outcome.ts';
import { decodeCarried } from '../../src/queue/carried-task.ts';
import { checkByName, type CheckLookup } from './registry.ts';
import {
  cancelTask,
  claimPending,
  claimTask,
  deadLetterTask,
  loadLaneTask,
  releaseTask,
  type LaneTask,
} from '../../src/jobs/tasks/lane-task-repo.ts';
import { LagLimit, watchLag, type LagWatch } from './lag-limit.ts';
import { RunGate } from './run-gate.ts';
import { retryWhileShort } from '../../src/db/retry-shortage.ts';
import type { ParsePool } from '../pool/parse-pool.ts';
import { AnswerCache } from '../../src/dns/answer-cache.ts';
import { activeAuthorizationGone } from '../../src/auth/keys-repo.ts';
import { notRun } from '../../src/products/kit/dns-replies.ts';
import { notingCuts } from '../../src/net/special-use-resolver.ts';
import type { QueryOptions, RecordType, Resolver } from '../../src/dns/types.ts';
import { retriedLimitation, retryingNotAsked, type RetryTally } from './not-asked-retry.ts';
import type { ProductRuntime as Runtime } from '../../src/products/kit/product-contract.ts';

/** `resolver` asking every question on behalf of `tenant` (a workspace). */
function asTenant(resolver: Resolver, tenant: string): Resolver {
  return {
    ...resolver,
    readiness: () => resolver.readiness(),
    retryAfterMs: () => resolver.retryAfterMs?.() ?? null,
    servfailBurst: (zone: string) => resolver.servfailBurst?.(zone) ?? false,
    query: (name: string, type: RecordType, opts?: QueryOptions) => resolver.query(name, type, { ...opts, tenant }),
  };
}

/** The limitation (and lane reason) of active work stopped because its authorization was withdrawn. */
export const AUTHORIZATION_REVOKED = 'authorization_revoked';

/** Active work: the active lane's tasks, and an authorized web lookup's. */
export function isActiveTask(task: { lane: string; params: Record<string, unknown> }): boolean {
  return task.lane === 'active' || task.params.authorized === true;
}

/** A run is presumed dead once it is older than its check's timeout plus this. */
const TAKEOVER_GRACE_MS = 5000;
/**
 * DNS answers kept per process for the checks of one job (src/dns/answer-cache.ts): the checks of
 * a job that run in this process ask a question once (the zone's own names for every dns task of a
 * scan, a web check's http and tls parts, its redirect hops). Bounded; answers for their TTL (at
 * most 5 min), NODATA/NXDOMAIN for a minute, indeterminate ones never. The web lane keeps fewer:
 * its checks ask about their own host, so what they share is held while they run (checks at once ×
 * a check's few questions), and 20,000 answers kept for minutes held ~11 MB of lane-web's heap at
 * the end of a 20,000-host scan for no later asker.
 */
export function answerCacheFor(lane: LaneName): {
  maxEntries: number;
  maxBytes: number;
  maxEntryBytes: number;
  maxTtlS: number;
  negativeTtlS: number;
} {
  // Bounded by bytes as well as entries (issue 45): an answer over 4 KiB (a target's large TXT
  // set) is not kept, and all kept answers together stay under 1 MiB (web) or 8 MiB.
  return {
    maxEntries: lane === 'web' ? 4096 : 20_000,
    maxBytes: (lane === 'web' ? 1 : 8) * 1024 * 1024,
    maxEntryBytes: 4096,
    maxTtlS: 300,
    negativeTtlS: 60,
  };
}
/** At most one log line per this long about statements waiting for a database connection. */
const SHORTAGE_LOG_EVERY_MS = 5000;
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
  /** DNS questions a check asked again because they were not sent (not-asked-retry.ts), by why. */
  dnsRetried?: client.Counter<'lane' | 'why'>;
  /** Test knob: how stale the list of job streams may be, and the longest read block (ms). */
  blockMs?: number;
  heartbeatEveryMs?: number;
  lagWindowMs?: number;
}

export class LaneRunner {
  readonly lane: LaneName;
  readonly consumer: string;
  readonly #o: LaneRunnerOptions;
  readonly #group: string;
  readonly #checks: CheckLookup;
  readonly #stop = new AbortController();
  readonly #consumer: LaneStreamsConsumer;
  /** Entries of a job stream read and not yet started (or let go): at most readAhead each. */
  readonly #waitingBy = new Map<string, number>();
  /** Per job stream: the last entry read that has not yet taken its place at the gate (or left). */
  readonly #inLine = new Map<string, Promise<void>>();
  #waitingAll = 0;
  /** Entries of one job stream held waiting for their turn; at most `capacity` in all. */
  readonly readAhead: number;
  readonly answers: AnswerCache;
  /** Outcomes that end together written in one statement (persist-outcome.ts). */
  readonly outcomes: OutcomeWriter;
  /** Checks running at once in this process; its limit follows the event-loop lag (LANE_LAG_TARGET_MS). */
  readonly gate: RunGate;
  readonly #lagLimit: LagLimit | null;
  #lagWatch: LagWatch | undefined;
  #heartbeat: Heartbeat | undefined;
  #closing: Promise<void> | undefined;
  /** Statements retried for want of a database connection (tests, the log line). */
  dbShortages = 0;
  /** Entries whose carried task could not be claimed at once and took the road through the row (tests). */
  fastClaimMisses = 0;
  /** Entries claimed in one statement from their carried fields (tests). */
  fastClaims = 0;
  #shortageLoggedAt = 0;

  constructor(o: LaneRunnerOptions) {
    this.#o = o;
    this.lane = o.lane;
    this.answers = new AnswerCache(answerCacheFor(o.lane));
    this.outcomes = new OutcomeWriter(o.db);
    this.consumer = o.consumer ?? consumerName(`lane-${o.lane}`);
    this.#group = groups.lane(o.lane);
    this.#checks = o.checks ?? checkByName;
    const s = o.settings;
    this.gate = new RunGate(s.LANE_CONCURRENCY);
    this.readAhead = Math.max(4, Math.ceil(s.LANE_CONCURRENCY / 8));
    this.#lagLimit =
      s.LANE_LAG_TARGET_MS > 0
        ? new LagLimit({ floor: s.LANE_CONCURRENCY_FLOOR, ceiling: s.LANE_CONCURRENCY, targetMs: s.LANE_LAG_TARGET_MS })
        : null;
    const capacity = s.LANE_CONCURRENCY;
    this.#consumer = new LaneStreamsConsumer({
      redis: o.redis,
      lane: o.lane,
      consumer: this.consumer,
      log: o.log,
      // Running checks plus the entries waiting for their turn.
      maxInFlight: 2 * capacity,
      wants: (stream) =>
        this.#waitingAll >= capacity ? 0 : Math.max(0, this.readAhead - (this.#waitingBy.get(stream) ?? 0)),
      visibilityMs: s.LANE_VISIBILITY_MS,
      maxDeliveries: s.LANE_MAX_DELIVERIES,
      drainTimeoutMs: o.drainTimeoutMs ?? 10_000,
      ...(o.blockMs ? { refreshMs: Math.min(o.blockMs, 100) } : {}),
      handle: (d) => this.#handleHeld(d),
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

  /** Entries of this job stream waiting here for their turn (tests, metrics). */
  waitingOn(stream: string): number {
    return this.#waitingBy.get(stream) ?? 0;
  }

  #hold(stream: string, n: 1 | -1): void {
    const v = (this.#waitingBy.get(stream) ?? 0) + n;
    if (v > 0) this.#waitingBy.set(stream, v);
    else this.#waitingBy.delete(stream);
    this.#waitingAll += n;
    if (n < 0) this.#consumer.wake();
  }

  /**
   * An entry counts against its stream's read-ahead from its read until its check starts or it is
   * let go. Entries of one job stream take their places at the gate in the order they were read
   * (their tasks are loaded at once, and MySQL may answer them in any order): a job's tasks start
   * in the order it planned them, whatever the timing of the loads.
   */
  async #handleHeld(d: LaneDelivery): Promise<Settlement> {
    this.#hold(d.stream, 1);
    let held = true;
    const started = () => {
      if (held) this.#hold(d.stream, -1);
      held = false;
    };
    const before = this.#inLine.get(d.stream);
    let placed!: () => void;
    const mine = new Promise<void>((resolve) => {
      placed = resolve;
    });
    this.#inLine.set(d.stream, mine);
    const place = () => {
      placed();
      if (this.#inLine.get(d.stream) === mine) this.#inLine.delete(d.stream);
    };
    try {
      return await this.#handle(d, started, before, place);
    } finally {
      place();
      started();
    }
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

  async #handle(
    d: LaneDelivery,
    started: () => void,
    before: Promise<void> | undefined,
    place: () => void,
  ): Promise<Settlement> {
    const taskId = Number(d.fields.task);
    if (!Number.isSafeInteger(taskId) || taskId <= 0) {
      this.#o.log.error({ entry: d.id, fields: d.fields }, 'malformed lane entry dropped');
      return ACK;
    }
    // The common case without reading the row first: the entry carries the task's fields, and
    // one compare-and-set claims it (carried-task.ts). Anything else takes the road below.
    const fast = await this.#claimCarried(d, taskId, started, before, place);
    if (fast !== null) return fast;
    const task = await this.#stmt(d, () => loadLaneTask(this.#o.db, taskId));
    if (!task) return ACK; // purged with its job
    if (!isOpenTask(task.status)) return this.#publish(task);
    const spec = this.#checks(task.check);
    const takeoverAfterMs = (spec?.timeoutMs ?? 0) + TAKEOVER_GRACE_MS;
    if (task.jobStatus === 'cancelling' || isTerminal(task.jobStatus)) {
      // A running task of a cancelling job belongs to a live runner, which may still finish it.
      return (await this.#stmt(d, () => cancelTask(this.#o.db, task.id, takeoverAfterMs)))
        ? this.#publish(task)
        : this.#leaveToOwner(task);
    }
    if (!spec || spec.lane !== this.lane) {
      // Probably a rolling deploy: leave it for a runner that knows the check. Repeated
      // deliveries end in the dead letter, never in silence.
      throw new Error(`check ${task.check} is not registered on lane ${this.lane}`);
    }
    // Deliveries are counted per stream entry; attempts survive re-enqueueing and Redis flushes.
    if (task.attempts >= this.#o.settings.LANE_MAX_DELIVERIES) return this.#deadLetter(d, task);
    // A slot of the process's capacity, in the workspace's turn (run-gate.ts). Not claimed yet: a
    // shutdown that gives up on the entry leaves it pending for another runner.
    const tenant = String(task.workspaceId);
    // After the entry read before it from this stream has its place (or has left).
    if (before !== undefined) await before;
    const entering = this.gate.acquire(tenant, d.signal); // its place is taken synchronously
    place();
    const entered = await entering;
    if (entered === 'aborted') return RETAIN;
    started();
    try {
      return await this.#run(d, task, spec, takeoverAfterMs);
    } finally {
      this.gate.release(tenant);
    }
  }

  /**
   * The entry's carried task claimed in one statement and run, in the workspace's turn at the gate
   * as below. Null: no carried fields, a check this lane does not run, or a claim that found
   * anything but a pending task of a live job with deliveries left; the caller then reads the row
   * and decides (its place at the gate was given up: it takes one again).
   */
  async #claimCarried(
    d: LaneDelivery,
    taskId: number,
    started: () => void,
    before: Promise<void> | undefined,
    place: () => void,
  ): Promise<Settlement | null> {
    const carried = decodeCarried(d.fields);
    const jobId = Number(d.fields.job);
    if (!carried || !Number.isSafeInteger(jobId) || jobId <= 0) return null;
    const spec = this.#checks(carried.check);
    if (!spec || spec.lane !== this.lane) return null;
    let params: Record<string, unknown> = {};
    if (carried.params !== null) {
      try {
        params = JSON.parse(carried.params) as Record<string, unknown>;
      } catch {
        return null;
      }
    }
    const tenant = String(carried.workspaceId);
    if (before !== undefined) await before;
    const entering = this.gate.acquire(tenant, d.signal); // its place is taken synchronously
    place();
    const entered = await entering;
    if (entered === 'aborted') return RETAIN;
    let claimed = false;
    try {
      const attempt = await this.#stmt(d, () =>
        claimPending(this.#o.db, taskId, jobId, this.#o.settings.LANE_MAX_DELIVERIES),
      );
      if (attempt === null) return null;
      claimed = true;
      this.fastClaims++;
      started();
      const task: LaneTask = {
        id: taskId,
        jobId,
        workspaceId: carried.workspaceId,
        objectKey: carried.objectKey,
        check: carried.check,
        lane: this.lane,
        productLane: carried.productLane,
        distance: carried.distance,
        params,
        status: 'running',
        attempts: attempt - 1,
        jobStatus: 'running',
        target: carried.target,
      };
      return await this.#run(d, task, spec, (spec.timeoutMs ?? 0) + TAKEOVER_GRACE_MS, attempt);
    } finally {
      this.gate.release(tenant);
      if (!claimed) this.fastClaimMisses++;
    }
  }

  async #run(
    d: LaneDelivery,
    task: LaneTask,
    spec: CheckSpec,
    takeoverAfterMs: number,
    claimed?: number,
  ): Promise<Settlement> {
    const attempt = claimed ?? (await this.#stmt(d, () => claimTask(this.#o.db, task, takeoverAfterMs)));
    if (attempt === null) return this.#leaveToOwner(task);
    const pool = this.#o.pool;
    // The pool serves workspaces in turn; the check's signal (executeCheck) stops its tasks.
    const tenant = String(task.workspaceId);
    const retries: RetryTally = { retried: 0 };
    const ctx = {
      runtime: this.#jobRuntime(task, retries, performance.now() + spec.timeoutMs),
      ...(pool
        ? {
            runInPool: <T>(name: string, payload: unknown, o: { signal: AbortSignal }) =>
              pool.run<T>(name, payload, { tenant, signal: o.signal }),
          }
        : {}),
    };
    // Active work re-checks its authorization before it sends anything: a revoked scope, a
    // withdrawn capability or a new responsible-use version stops the tasks already queued.
    const gone = isActiveTask(task)
      ? await activeAuthorizationGone(
          this.#o.db,
          task.workspaceId,
          typeof task.params.approvedScope === 'string' ? task.params.approvedScope : null,
          this.#o.runtime.config.RESPONSIBLE_USE_VERSION,
        )
      : null;
    const ran: Awaited<ReturnType<typeof executeCheck>> = gone
      ? {
          kind: 'done',
          status: 'unavailable',
          reason: AUTHORIZATION_REVOKED,
          output: notRun(
            'unavailable',
            AUTHORIZATION_REVOKED,
            [
              {
                code: AUTHORIZATION_REVOKED,
                message: `Active work stopped: ${gone}. Nothing was sent to ${task.objectKey}.`,
              },
            ],
            [],
          ),
          durationMs: 0,
        }
      : await executeCheck(spec, task, ctx, d.signal, this.#o.log);
    // The questions asked again because they were not sent at first: the job's coverage counts them.
    const retried = retriedLimitation(retries);
    const result =
      retried && ran.kind === 'done' && ran.output
        ? { ...ran, output: { ...ran.output, limitations: [...ran.output.limitations, retried] } }
        : ran;
    if (result.kind === 'local_failure')
      // Our shortage (EMFILE…), not the target's fact: nothing is recorded; the entry stays pending
      // and is delivered again after LANE_VISIBILITY_MS, and after LANE_MAX_DELIVERIES the task fails
      // as dead-lettered, which the job's coverage reports.
      this.#o.log.warn(
        { lane: this.lane, check: spec.name, taskId: task.id, attempt, codes: result.codes },
        "check hit this process's resource limits: its outcome is not recorded, the task goes back for another attempt",
      );
    if (result.kind === 'interrupted' || result.kind === 'local_failure') {
      await this.#stmt(d, () => releaseTask(this.#o.db, task.id, attempt));
      return RETAIN;
    }
    this.#o.taskDuration?.observe({ lane: this.lane, outcome: result.status }, result.durationMs / 1000);
    await this.#stmt(d, () => this.outcomes.write({ ...task, attempt }, result));
    // Published whether or not this run won: the notice is idempotent and the winner's may be lost.
    return this.#publish(task);
  }

  /** One statement of an entry's handling, a shortage of connections waited out (retry-shortage.ts). */
  #stmt<T>(d: LaneDelivery, work: () => Promise<T>): Promise<T> {
    return retryWhileShort(work, {
      signal: d.signal,
      onShortage: (code) => {
        this.dbShortages++;
        const now = Date.now();
        if (now - this.#shortageLoggedAt < SHORTAGE_LOG_EVERY_MS) return;
        this.#shortageLoggedAt = now;
        this.#o.log.warn(
          { lane: this.lane, code, retried: this.dbShortages },
          'no database connection for a task statement: retried with backoff (our shortage, never the task outcome; DATABASE_MAX_CONNECTIONS)',
        );
      },
    });
  }

  /**
   * The process's runtime with DNS answers shared by the checks of the task's job only (scope:
   * workspace and job), and the outbound guards asking through them and taking their politeness
   * slots per address as the task's workspace (shared max-min between workspaces: address-slots.ts).
   */
  #jobRuntime(task: { workspaceId: number; jobId: number }, retries: RetryTally, deadlineAt: number): Runtime {
    const base = this.#o.runtime;
    const tenant = String(task.workspaceId);
    // The workspace's questions share the resolver's congestion windows max-min with other
    // workspaces' (src/dns/congestion.ts); those never sent are asked again (not-asked-retry.ts).
    const lane = this.lane;
    const counter = this.#o.dnsRetried;
    const resolver = base.services.resolver
      ? retryingNotAsked(
          asTenant(base.services.resolver, tenant),
          {
            retries: base.config.DNS_NOT_ASKED_RETRIES,
            servfailRetries: base.config.DNS_SERVFAIL_RETRIES,
            // A retried question may queue, be sent and be dropped and sent again: room for two deadlines.
            deadlineAt,
            reserveMs: 2 * base.config.DNS_TIMEOUT_MS,
            ...(counter ? { onRetry: (why) => counter.inc({ lane, why }) } : {}),
          },
          retries,
        )
      : undefined;
    const active = base.services.activeOutbound?.forTenant(tenant);
    const withActive = active ? { activeOutbound: active } : {};
    if (!resolver) {
      const outbound = base.services.outbound?.forTenant(tenant);
      return { ...base, services: { ...base.services, ...withActive, ...(outbound ? { outbound } : {}) } };
    }
    // notingCuts: an answer cut at the public boundary (src/net/special-use-resolver.ts) in another
    // check of the job, served here from the cache, still gives this check its limitation.
    const scoped = notingCuts(this.answers.scoped(`${task.workspaceId}:${task.jobId}`, resolver));
    const outbound = base.services.outbound?.over(scoped).forTenant(tenant);
    return {
      ...base,
      services: { ...base.services, ...withActive, resolver: scoped, ...(outbound ? { outbound } : {}) },
    };
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

  /** A fresh entry at the back of the task's job stream (no delivery is counted). */
  async #requeue(d: LaneDelivery, task: LaneTask): Promise<Settlement> {
    const id = await this.#o.redis.xadd(d.stream, '*', 'task', String(task.id), 'job', String(task.jobId));
    await this.#o.redis.set(queueKeys.taskMessage(this.lane, task.id), String(id), 'PX', TASK_MESSAGE_TTL_MS);
    return ACK;
  }

  async #deadLetter(d: LaneDelivery, loaded?: LaneTask): Promise<Settlement> {
    const taskId = Number(d.fields.task);
    const task =
      loaded ??
      (Number.isSafeInteger(taskId) && taskId > 0 ? await this.#stmt(d, () => loadLaneTask(this.#o.db, taskId)) : null);
    // Deliveries also pile up while MySQL is unreachable (every handler fails before the task
    // starts). A task that never started is not poison: give it a fresh entry rather than fail it
    // the moment MySQL returns. A job that never gets it started ends at its deadline (sweeper).
    if (task && task.status === 'pending' && task.attempts === 0 && !loaded) {
      this.#o.log.warn(
        { lane: this.lane, entry: d.id, taskId: task.id, deliveries: d.deliveries },
        'entry exhausted its deliveries before its task ever started: re-queued',
      );
      return this.#requeue(d, task);
    }
    // The durable record first: the task fails with a reason the job's coverage reports.
    const failed = task ? await this.#stmt(d, () => deadLetterTask(this.#o.db, task.id)) : false;
    this.#o.log.error(
      { lane: this.lane, entry: d.id, taskId: task?.id, deliveries: d.deliveries, attempts: task?.attempts, failed },
      'task dead-lettered',
    );
    const notice = task ? this.#publish(task) : ACK;
    return {
      ack: true,
      with: (tx) => {
        addDeadLetter(tx, d.stream, this.#group, d);
        if (notice.ack) notice.with?.(tx);
      },
    };
  }
}
