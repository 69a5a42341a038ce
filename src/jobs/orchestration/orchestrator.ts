// The orchestrator: consumes the jobs stream (plan, cancel) and every lane's task-results stream
// (capture, finalize), and runs the periodic jobs (outbox relay, reconciler, sweeper, retention
// purge, the re-proof of verified scopes), each at most once per tick across instances (tick-lock.ts). Several orchestrators may
// run: the consumer groups share the streams and every step is idempotent under the job row lock.
// A lane's results stream lives in the lane's slot (its runners publish in the MULTI that acks),
// so the orchestrator reads one results stream per lane, each on a connection of its own.
// Every instance also runs the monitor scheduler and one webhook delivery worker (src/jobs/monitors/):
// their claims in MySQL (FOR UPDATE SKIP LOCKED) share the due runs and events among instances.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import client from 'prom-client';
import type { Config } from '../../config/config.ts';
import { connectionShare } from '../../config/connection-budget.ts';
import { createDb, type Db } from '../../db/database.ts';
import { observePool } from '../../db/pool-metrics.ts';
import { isConnectionError } from '../../db/transaction.ts';
import type { ProductDefinition } from '../../products/kit/product-contract.ts';
import { closeRedis, createRedis, redisReady, redisTarget, type RedisClient } from '../../redis/client.ts';
import { addDeadLetter, consumerName } from '../../queue/dead-letter.ts';
import { startHeartbeat } from '../../queue/heartbeat.ts';
import { parseQueueSettings, type QueueSettings } from '../../queue/queue-settings.ts';
import { ACK, StreamConsumer, errInfo, type Delivery, type Settlement } from '../../queue/stream-consumer.ts';
import { registerStreamGauges } from '../../queue/stream-metrics.ts';
import { registerCreditMetrics } from '../../credits/credit-metrics.ts';
import { registerChangeMetrics } from '../../metrics.ts';
import { registerEstateMetrics } from '../inventory/estate-metrics.ts';
import { purgeInventory } from '../inventory/inventory-repo.ts';
import { LANES, groups, isJobOp, queueKeys, streams } from '../../queue/streams.ts';
import { tryTickLock } from '../../queue/tick-lock.ts';
import { applyTaskResults } from './apply-result.ts';
import { giveUpApplying } from './apply-failure.ts';
import { ResultBatcher } from './result-batcher.ts';
import { jobOfTask } from '../tasks/task-repo.ts';
import { cancelJob } from './cancel-job.ts';
import { DEFAULT_CHECK_TIMEOUT_MS, DEFAULT_RESULT_BATCH, type OrchestrationContext } from './context.ts';
import { relayOutbox } from './outbox-relay.ts';
import { planJob } from './plan-job.ts';
import { productCatalog } from './product-catalog.ts';
import { Reconciler } from './reconciler.ts';
import { purgeExpiredJobs } from './retention.ts';
import { reproveDueScopes } from '../../auth/scope-reproof.ts';
import { sweepJobs } from './sweeper.ts';
import { LaneHealth } from '../../queue/lane-health.ts';
import { createProductRuntime } from '../../products/kit/runtime.ts';
import { createOutboundGuard } from '../../net/outbound-guard.ts';
import { RateLimiter } from '../../ratelimit/limiter.ts';
import { MonitorScheduler } from '../monitors/scheduler.ts';
import { DeliveryWorker, type DeliveryWorkerOptions } from '../monitors/delivery-worker.ts';
import { monitorMetrics } from '../monitors/monitor-metrics.ts';
import { SecretBox } from '../monitors/webhook-secrets.ts';
import { purgeMonitorHistory } from '../monitors/monitor-retention.ts';
import { retryScheduleOf } from '../monitors/retry-schedule.ts';

export interface OrchestratorTiming {
  relayEveryMs: number;
  /** An outbox row younger than this is left to the web process that wrote it. */
  relayAfterMs: number;
  reconcileEveryMs: number;
  /** A finished task not applied after this long gets its notice re-published. */
  unappliedAfterMs: number;
  /** An inventory marker untouched this long is resumed by the reconciler (its writer stopped). */
  inventoryStaleAfterMs: number;
  sweepEveryMs: number;
  purgeEveryMs: number;
  /** How often this orchestrator claims due monitor runs (every orchestrator does: no tick lock). */
  monitorEveryMs: number;
  /** How often verified scopes due a re-proof are looked for (SCOPE_REPROVE_HOURS says when one is due). */
  reproofEveryMs: number;
}

const DEFAULT_TIMING: OrchestratorTiming = {
  relayEveryMs: 1000,
  relayAfterMs: 2000,
  reconcileEveryMs: 5000,
  unappliedAfterMs: 5000,
  inventoryStaleAfterMs: 10_000,
  sweepEveryMs: 5000,
  purgeEveryMs: 60_000,
  monitorEveryMs: 1000,
  reproofEveryMs: 60_000,
};

export interface OrchestratorOptions {
  config: Config;
  log: Logger;
  /** Shared handles are not closed by close(); handles created here are. */
  db?: Db;
  redis?: RedisClient;
  /** The products this orchestrator owns (default: every async product of the registry). */
  products?: readonly ProductDefinition[];
  settings?: Partial<QueueSettings>;
  checkTimeoutMs?: (check: string) => number | undefined;
  timing?: Partial<OrchestratorTiming>;
  consumer?: string;
  concurrency?: number;
  /**
   * Result notices each lane's results stream consumer holds at once (read ahead, waiting for their
   * job's batch as ids): far more than a batch, so that one job's backlog in the stream does not
   * hide another job's notice behind it.
   */
  resultsConcurrency?: number;
  /** Result batches (each of one job) applied at once; jobs take turns (result-batcher.ts). */
  applyConcurrency?: number;
  /** Most finished tasks of one job applied in one transaction. */
  resultBatch?: number;
  metrics?: client.Registry;
  /** Webhook delivery worker tuning (tests, benchmarks). */
  delivery?: DeliveryWorkerOptions;
}

const DEFAULT_RESULTS_CONCURRENCY = 8192;
/** Below the MySQL pool (10 at most): plans, finalizing and the periodic tasks keep connections. */
const DEFAULT_APPLY_CONCURRENCY = 6;
/** Connections of the pool left to plans, finalizing and the periodic tasks beside the batches. */
const POOL_KEPT_FROM_BATCHES = 4;
/** Notices read per XREADGROUP of a results stream: the read-ahead fills in a few round trips. */
const RESULTS_READ_COUNT = 512;

export interface OrchestratorHandle {
  readonly context: OrchestrationContext;
  close(): Promise<void>;
}

export async function startOrchestrator(opts: OrchestratorOptions): Promise<OrchestratorHandle> {
  const { config, log } = opts;
  const timing = { ...DEFAULT_TIMING, ...opts.timing };
  const settings = parseQueueSettings(process.env, opts.settings);
  // The orchestrator's share of the deployment's connection budget (src/config/connection-budget.ts).
  const poolSize = connectionShare(config, 'orchestrator');
  const ownDb = opts.db
    ? undefined
    : createDb(config.DATABASE_URL, { connectionLimit: poolSize, waitMs: config.DATABASE_CONNECTION_WAIT_MS });
  const unobservePool = ownDb && opts.metrics ? observePool(opts.metrics, 'orchestrator', ownDb.stats) : () => {};
  const ownRedis = opts.redis ? undefined : createRedis(redisTarget(config), config.REDIS_KEY_PREFIX);
  ownRedis?.on('error', (err) => log.warn({ err: errInfo(err) }, 'redis error'));
  const redis = opts.redis ?? ownRedis!;
  await redisReady(redis);
  const lookupTimeout = opts.checkTimeoutMs ?? (() => undefined);
  const ctx: OrchestrationContext = {
    db: opts.db ?? ownDb!.db,
    redis,
    log,
    config,
    settings,
    catalog: productCatalog(opts.products),
    checkTimeoutMs: (check) => lookupTimeout(check) ?? DEFAULT_CHECK_TIMEOUT_MS,
    resultBatch: opts.resultBatch ?? DEFAULT_RESULT_BATCH,
  };

  const consumer = opts.consumer ?? consumerName('orchestrator');
  const common = {
    redis,
    group: groups.orchestrator,
    consumer,
    log,
    concurrency: opts.concurrency ?? 16,
    visibilityMs: settings.LANE_VISIBILITY_MS,
    maxDeliveries: settings.LANE_MAX_DELIVERIES,
    drainTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
  };
  // Orchestrator entries carry no state of their own: MySQL does. A dead-lettered one is recorded
  // and acknowledged; the reconciler and the sweeper bring its job to a terminal state.
  const deadLetter =
    (stream: string) =>
    async (d: Delivery): Promise<Settlement> => {
      log.error(
        { stream, entry: d.id, fields: d.fields, deliveries: d.deliveries },
        'orchestrator entry dead-lettered',
      );
      return { ack: true, with: (tx) => addDeadLetter(tx, stream, groups.orchestrator, d) };
    };
  const jobs = new StreamConsumer({
    ...common,
    stream: streams.jobs,
    handle: (d) => handleJobOp(ctx, d),
    deadLetter: deadLetter(streams.jobs),
  });
  // Results are applied in batches per job (result-batcher.ts): an entry being handled waits for
  // its job's batch as an id, so each results stream holds many at once (a job's backlog is read
  // past, and a later job's notice reaches the batcher at once); what bounds MySQL is the
  // batcher's few batches at once, one per job, jobs taking turns.
  // How big the batches are and how long each takes: the figures that say whether results wait on
  // the job row lock (few large batches) or arrive slower than they are applied (many of one).
  const batchTasks = opts.metrics
    ? new client.Histogram({
        name: 'lss_result_batch_tasks',
        help: 'Finished tasks applied per batch (one transaction under the job row lock)',
        buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
        registers: [opts.metrics],
      })
    : undefined;
  const batchSeconds = opts.metrics
    ? new client.Histogram({
        name: 'lss_result_batch_seconds',
        help: 'Time to apply one batch of finished tasks, commit included',
        buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
        registers: [opts.metrics],
      })
    : undefined;
  const batcher = new ResultBatcher(
    async (jobId, ids) => {
      const end = batchSeconds?.startTimer();
      await applyTaskResults(ctx, jobId, ids);
      end?.();
      batchTasks?.observe(ids.length);
    },
    {
      maxBatch: opts.resultBatch ?? DEFAULT_RESULT_BATCH,
      maxConcurrent:
        opts.applyConcurrency ??
        (ownDb
          ? Math.max(1, Math.min(DEFAULT_APPLY_CONCURRENCY, poolSize - POOL_KEPT_FROM_BATCHES))
          : DEFAULT_APPLY_CONCURRENCY),
    },
  );
  const resultsInFlight = opts.resultsConcurrency ?? DEFAULT_RESULTS_CONCURRENCY;
  const results = LANES.map((lane) => streams.laneResults(lane)).map(
    (stream) =>
      new StreamConsumer({
        ...common,
        concurrency: resultsInFlight,
        batch: RESULTS_READ_COUNT,
        stream,
        handle: (d) => handleTaskResult(ctx, batcher, d),
        deadLetter: (d) => deadTaskResult(ctx, stream, d, deadLetter(stream)),
      }),
  );
  const consumers = [jobs, ...results];
  if (opts.metrics) {
    registerStreamGauges(
      opts.metrics,
      redis,
      consumers.map((c) => ({ stream: c.stream, group: groups.orchestrator })),
    );
    registerCreditMetrics(opts.metrics, ctx.db);
    registerChangeMetrics(opts.metrics);
    registerEstateMetrics(opts.metrics, ctx.db);
  }

  // Monitors (CONTRACT §14): the scheduler admits runs as the route would (readiness needs the
  // lanes' liveness, so this process watches it too), and the delivery worker sends their events
  // through this process's outbound guard.
  const laneHealth = new LaneHealth(redis, { restartGraceMs: config.LANE_RESTART_GRACE_MS });
  laneHealth.start();
  const runtime = createProductRuntime(config, log, { laneHealth });
  const monitorMeters = opts.metrics ? monitorMetrics(opts.metrics) : undefined;
  const scheduler = new MonitorScheduler({
    db: ctx.db,
    redis,
    log,
    config,
    runtime,
    limiter: new RateLimiter(redis),
    products: new Map(ctx.catalog.ids.map((id) => [id, ctx.catalog.get(id)!])),
    ...(monitorMeters ? { metrics: monitorMeters } : {}),
  });
  const delivery = new DeliveryWorker(
    {
      db: ctx.db,
      log,
      config,
      // The outbound guard's own policy (ALLOW_PRIVATE_TARGETS, vetting at every attempt, the port
      // map), without the scanner's politeness per address (OUTBOUND_CONNECTIONS_PER_ADDRESS): a
      // receiver asked for these deliveries, and WEBHOOK_ENDPOINT_CONCURRENCY bounds them instead.
      guard: createOutboundGuard({
        allow: config.ALLOW_PRIVATE_TARGETS,
        resolver: runtime.services.resolver!,
        portMap: config.OUTBOUND_PORT_MAP,
      }),
      secrets: new SecretBox(config.WEBHOOK_SECRET_KEY, config.WEBHOOK_SECRET_KEY_PREVIOUS),
      ...(monitorMeters ? { metrics: monitorMeters } : {}),
    },
    opts.delivery,
  );

  const stop = new AbortController();
  const reconciler = new Reconciler(ctx, {
    unappliedAfterMs: timing.unappliedAfterMs,
    inventoryStaleAfterMs: timing.inventoryStaleAfterMs,
  });
  const periodic = async (name: string, everyMs: number, fn: () => Promise<unknown>): Promise<void> => {
    while (!stop.signal.aborted) {
      try {
        if (await tryTickLock(redis, name, everyMs * 0.9)) await fn();
      } catch (err) {
        if (!stop.signal.aborted) log.warn({ err: errInfo(err), task: name }, 'periodic orchestrator task failed');
      }
      await sleep(everyMs, undefined, { signal: stop.signal }).catch(() => {});
    }
  };

  // Every instance runs these: their claims (FOR UPDATE SKIP LOCKED) share the work out.
  const everyInstance = async (name: string, everyMs: number, fn: () => Promise<unknown>): Promise<void> => {
    while (!stop.signal.aborted) {
      try {
        await fn();
      } catch (err) {
        if (!stop.signal.aborted) log.warn({ err: errInfo(err), task: name }, 'periodic orchestrator task failed');
      }
      await sleep(everyMs, undefined, { signal: stop.signal }).catch(() => {});
    }
  };

  for (const c of consumers) await c.start();
  // Readiness of async products needs a live orchestrator (src/queue/lane-health.ts).
  const heartbeat = startHeartbeat(redis, queueKeys.laneAlive('orchestrator'), consumer);
  // Monitor runs are admitted with readiness (step 9), which reads this process's lane view: the
  // scheduler waits until the view has seen an orchestrator alive (this one's first heartbeat),
  // or a run due at start-up would be skipped as unavailable by a view that is merely not read yet.
  const laneViewReady = (async () => {
    for (let i = 0; i < 100 && !stop.signal.aborted; i++) {
      if ((await laneHealth.refresh()) && laneHealth.alive('orchestrator')) return;
      await sleep(100, undefined, { signal: stop.signal }).catch(() => {});
    }
  })();
  const loops = [
    periodic('outbox-relay', timing.relayEveryMs, () => relayOutbox(ctx, { olderThanMs: timing.relayAfterMs })),
    periodic('reconciler', timing.reconcileEveryMs, () => reconciler.tick()),
    periodic('sweeper', timing.sweepEveryMs, () => sweepJobs(ctx)),
    periodic('retention', timing.purgeEveryMs, () => purgeExpiredJobs(ctx)),
    periodic('inventory-retention', timing.purgeEveryMs, () => purgeInventory(ctx.db, config.INVENTORY_RETENTION_DAYS)),
    periodic('monitor-retention', timing.purgeEveryMs, () =>
      purgeMonitorHistory(ctx.db, config.JOB_RETENTION_DAYS, undefined, retryScheduleOf(config).windowSeconds),
    ),
    // Verified scopes proven again at their zones' servers (issue 45): one instance per tick, and
    // each scope's re-proof claimed in MySQL, so an overrun tick never proves one twice.
    periodic('scope-reproof', timing.reproofEveryMs, async () => {
      const done = await reproveDueScopes(
        ctx.db,
        { resolver: runtime.services.resolver!, servers: runtime.services.outbound! },
        { periodHours: config.SCOPE_REPROVE_HOURS },
      );
      for (const r of done)
        if (r.grant === 'suspended')
          log.warn(
            { workspace: r.workspaceId, scope: r.domain, outcome: r.outcome, detail: r.detail },
            'scope suspended',
          );
    }),
    everyInstance('monitors', timing.monitorEveryMs, async () => {
      await laneViewReady;
      return scheduler.tick();
    }),
  ];
  // Fault tests only: an orchestrator that ends jobs (and writes their events) but never delivers,
  // to be killed before any delivery (test/integration/monitors.test.ts).
  if (process.env.LSS_FAULT_NO_WEBHOOK_DELIVERY !== '1') delivery.start();
  log.info({ consumer, products: ctx.catalog.ids }, 'orchestrator started');

  let closing: Promise<void> | undefined;
  return {
    context: ctx,
    close() {
      closing ??= (async () => {
        // Each step runs even if another failed: stop reading → drain → Redis → MySQL.
        stop.abort();
        await heartbeat.stop().catch(() => {});
        await Promise.allSettled(loops);
        await delivery.close().catch(() => {});
        laneHealth.stop();
        runtime.services.resolver?.close?.();
        await Promise.allSettled(consumers.map((c) => c.close()));
        if (ownRedis) await closeRedis(ownRedis);
        unobservePool();
        if (ownDb) await ownDb.close().catch(() => {});
      })();
      return closing;
    },
  };
}

function idField(d: Delivery, name: string): number | null {
  const n = Number(d.fields[name]);
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

async function handleJobOp(ctx: OrchestrationContext, d: Delivery): Promise<Settlement> {
  const jobId = idField(d, 'job');
  const op = d.fields.op;
  if (jobId === null || !isJobOp(op)) {
    ctx.log.error({ entry: d.id, fields: d.fields }, 'malformed jobs entry dropped');
    return ACK;
  }
  if (op === 'plan') await planJob(ctx, jobId);
  else await cancelJob(ctx, jobId);
  return ACK;
}

/**
 * A result notice delivered LANE_MAX_DELIVERIES times: its batch failed each time (the batcher
 * already applied it alone after the first failure). One last try alone; if it fails again for
 * anything but MySQL being away, the task is settled without its result (apply-failure.ts) and
 * the notice dead-lettered with the error, so the job ends instead of waiting for it.
 */
async function deadTaskResult(
  ctx: OrchestrationContext,
  stream: string,
  d: Delivery,
  record: (d: Delivery) => Promise<Settlement>,
): Promise<Settlement> {
  const taskId = idField(d, 'task');
  const jobId = taskId === null ? null : (idField(d, 'job') ?? (await jobOfTask(ctx.db, taskId)));
  if (taskId === null || jobId === null) return record(d);
  try {
    await applyTaskResults(ctx, jobId, [taskId]);
    return ACK;
  } catch (err) {
    if (isConnectionError(err)) throw err; // left pending: MySQL is away, not this result's fault
    await giveUpApplying(ctx, jobId, taskId, err);
    ctx.log.error({ stream, entry: d.id, taskId, jobId, err: errInfo(err) }, 'task result dead-lettered');
    const error = errInfo(err).message.slice(0, 500);
    return { ack: true, with: (tx) => addDeadLetter(tx, stream, groups.orchestrator, d, { error }) };
  }
}

async function handleTaskResult(ctx: OrchestrationContext, batcher: ResultBatcher, d: Delivery): Promise<Settlement> {
  const taskId = idField(d, 'task');
  if (taskId === null) {
    ctx.log.error({ entry: d.id, fields: d.fields }, 'malformed task-results entry dropped');
    return ACK;
  }
  // The notice names the job; the batch locks only that job's rows (a wrong id applies nothing).
  const jobId = idField(d, 'job') ?? (await jobOfTask(ctx.db, taskId));
  if (jobId === null) return ACK; // purged
  await batcher.submit(jobId, taskId);
  return ACK;
}
