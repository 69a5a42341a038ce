// Builds a lane worker (MySQL, Redis, piscina pool, product runtime, LaneRunner) and closes it in
// order: stop reading → drain in-flight tasks (bounded by SHUTDOWN_TIMEOUT_MS) → pool → Redis →
// MySQL, each step even if an earlier one failed. Used by workers/lane.ts and by tests in-process.
import type { Logger } from 'pino';
import client from 'prom-client';
import type { Config } from '../src/config/config.ts';
import { connectionShare } from '../src/config/connection-budget.ts';
import { createDb, type Db } from '../src/db/database.ts';
import { observePool } from '../src/db/pool-metrics.ts';
import { createProductRuntime } from '../src/products/kit/runtime.ts';
import { laneDefaults, parseQueueSettings, type QueueSettings } from '../src/queue/queue-settings.ts';
import { errInfo } from '../src/queue/stream-consumer.ts';
import { registerStreamGauges } from '../src/queue/stream-metrics.ts';
import { registerDnsCongestionMetrics } from '../src/dns/congestion-metrics.ts';
import { registerAddressSlotsMetrics } from '../src/net/address-slots-metrics.ts';
import { groups, queueKeys, streams, type LaneName } from '../src/queue/streams.ts';
import { closeRedis, createRedis, redisReady, redisTarget, type RedisClient } from '../src/redis/client.ts';
import { LaneRunner } from './lane-runner/runner.ts';
import type { CheckLookup } from './lane-runner/registry.ts';
import type { ParsePool, ParsePoolOptions, PoolRunOptions } from './pool/parse-pool.ts';

export interface LaneWorkerOptions {
  config: Config;
  log: Logger;
  /** Shared handles are not closed by close(); handles created here are. */
  db?: Db;
  redis?: RedisClient;
  settings?: Partial<QueueSettings>;
  checks?: CheckLookup;
  consumer?: string;
  /** Registry the worker's metrics go to (default: a new one per worker). */
  metrics?: client.Registry;
  blockMs?: number;
  /** Test knob: another parse-pool worker module (workers/pool/parse-worker.ts's protocol). */
  poolWorker?: string;
}

/**
 * The parse pool, created at the first task that uses it: piscina and its first thread (~24 MB)
 * never exist in a lane whose checks parse inline or not at all (dns, domain, active), nor in any
 * lane at rest.
 */
function lazyParsePool(options: ParsePoolOptions): ParsePool {
  let pool: Promise<ParsePool> | undefined;
  return {
    async run<T>(task: string, payload: unknown, opts?: PoolRunOptions): Promise<T> {
      pool ??= import('./pool/parse-pool.ts').then((m) => m.createParsePool(options));
      return (await pool).run<T>(task, payload, opts);
    },
    async destroy() {
      if (pool !== undefined) await (await pool).destroy();
    },
  };
}

export interface LaneWorkerHandle {
  readonly runner: LaneRunner;
  readonly metrics: client.Registry;
  close(): Promise<void>;
}

/** A lane process's pool: its share of the budget, at most what its checks can use at once. */
export function laneConnectionLimit(config: Config, lane: LaneName, settings: QueueSettings): number {
  return Math.min(connectionShare(config, `lane-${lane}`), settings.LANE_CONCURRENCY + 2);
}

export async function startLaneWorker(lane: LaneName, opts: LaneWorkerOptions): Promise<LaneWorkerHandle> {
  const { config } = opts;
  const log = opts.log.child({ lane });
  const settings = parseQueueSettings(process.env, { ...laneDefaults(lane), ...opts.settings });
  // The lane's share of the deployment's connection budget (src/config/connection-budget.ts), and
  // no more than its checks can use at once. Its tasks' statements wait for a connection of it:
  // outside the checks' timeouts (a check never touches MySQL), retried while the server refuses.
  const ownDb = opts.db
    ? undefined
    : createDb(config.DATABASE_URL, {
        connectionLimit: laneConnectionLimit(config, lane, settings),
        waitMs: config.DATABASE_CONNECTION_WAIT_MS,
      });
  const ownRedis = opts.redis ? undefined : createRedis(redisTarget(config), config.REDIS_KEY_PREFIX);
  ownRedis?.on('error', (err) => log.warn({ err: errInfo(err) }, 'redis error'));
  const redis = opts.redis ?? ownRedis!;
  await redisReady(redis);
  const metrics = opts.metrics ?? new client.Registry();
  const unobservePool = ownDb ? observePool(metrics, `lane-${lane}`, ownDb.stats) : () => {};
  const taskDuration = new client.Histogram({
    name: 'lss_task_duration_seconds',
    help: 'Lane task run time by lane and outcome (task status)',
    labelNames: ['lane', 'outcome'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [metrics],
  });
  // The resolver's congestion windows, and the questions a check asked again (issue 48).
  registerDnsCongestionMetrics(metrics);
  const dnsRetried =
    (metrics.getSingleMetric('lss_dns_questions_retried_total') as client.Counter<'lane' | 'why'> | undefined) ??
    new client.Counter({
      name: 'lss_dns_questions_retried_total',
      help: 'DNS questions a lane check asked again: not sent (zone backed off, congestion) or answered SERVFAIL by a zone that answers others, by lane and why',
      labelNames: ['lane', 'why'] as const,
      registers: [metrics],
    });
  // The windows per target address of the process's outbound guard (issue 48).
  const runtime = createProductRuntime(config, log);
  registerAddressSlotsMetrics(metrics, runtime.services.outbound?.slots);
  // The lane's job streams, summed under the lane's name (they come and go with the jobs).
  registerStreamGauges(metrics, redis, [
    {
      stream: streams.lane(lane),
      group: groups.lane(lane),
      members: async () =>
        ((await redis.zrange(queueKeys.laneJobs(lane), '0', '-1')) as string[]).map((j) =>
          streams.laneJob(lane, Number(j)),
        ),
    },
  ]);
  const pool = lazyParsePool({
    threads: settings.LANE_POOL_THREADS,
    deadlineMs: settings.LANE_POOL_DEADLINE_MS,
    metrics: { registry: metrics, lane },
    ...(opts.poolWorker ? { filename: opts.poolWorker } : {}),
  });
  if (settings.LANE_POOL_THREADS === 0)
    log.warn('LANE_POOL_THREADS=0: parsing runs inline, where no pool deadline can stop a slow parse');
  const runner = new LaneRunner({
    lane,
    db: opts.db ?? ownDb!.db,
    redis,
    log,
    settings,
    runtime,
    pool,
    taskDuration,
    dnsRetried,
    drainTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    ...(opts.checks ? { checks: opts.checks } : {}),
    ...(opts.consumer ? { consumer: opts.consumer } : {}),
    ...(opts.blockMs ? { blockMs: opts.blockMs } : {}),
  });
  await runner.start();
  // What the lag controller (lane-runner/lag-limit.ts) allows, and what runs under it.
  new client.Gauge({
    name: 'lss_lane_concurrency_limit',
    help: 'Checks this lane process may run at once (follows the event-loop lag; LANE_LAG_TARGET_MS)',
    labelNames: ['lane'] as const,
    registers: [metrics],
    collect() {
      this.set({ lane }, runner.gate.limit);
    },
  });
  new client.Gauge({
    name: 'lss_lane_checks_running',
    help: "Checks this lane process is running (within its capacity, in their workspace's turn)",
    labelNames: ['lane'] as const,
    registers: [metrics],
    collect() {
      this.set({ lane }, runner.gate.running);
    },
  });
  let closing: Promise<void> | undefined;
  return {
    runner,
    metrics,
    close() {
      closing ??= (async () => {
        await runner.close().catch((err) => log.warn({ err: errInfo(err) }, 'runner close failed'));
        await pool.destroy().catch((err) => log.warn({ err: errInfo(err) }, 'pool destroy failed'));
        if (ownRedis) await closeRedis(ownRedis);
        unobservePool();
        if (ownDb) await ownDb.close().catch(() => {});
      })();
      return closing;
    },
  };
}
