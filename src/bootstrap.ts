// Builds the process-wide dependencies of the API from validated config, and closes them in order.
import type { Logger } from 'pino';
import type { Config } from './config/config.ts';
import { connectionShare } from './config/connection-budget.ts';
import { createDb } from './db/database.ts';
import { observePool } from './db/pool-metrics.ts';
import { registry } from './metrics.ts';
import { listMigrations } from './db/migrations.ts';
import { closeRedis, createRedis, redisTarget } from './redis/client.ts';
import { Authenticator } from './auth/authenticator.ts';
import { KeyIdIndex } from './auth/key-id-index.ts';
import { RateLimiter } from './ratelimit/limiter.ts';
import { Idempotency } from './idempotency/idempotency.ts';
import { IdempotencyLeases } from './idempotency/lease.ts';
import { createProductRuntime } from './products/kit/runtime.ts';
import { products } from './products/registry.ts';
import { LaneHealth } from './queue/lane-health.ts';
import { createDependencyBreakers } from './routes/health.ts';
import type { AppDeps } from './http/deps.ts';

export interface Deps extends AppDeps {
  close(): Promise<void>;
}

export async function createDeps(config: Config, log: Logger): Promise<Deps> {
  // This worker's share of the deployment's connection budget (src/config/connection-budget.ts).
  const dbHandle = createDb(config.DATABASE_URL, {
    connectionLimit: connectionShare(config, 'web'),
    waitMs: config.DATABASE_CONNECTION_WAIT_MS,
  });
  const unobservePool = observePool(registry, 'web', dbHandle.stats);
  // Writes coalesced per event-loop turn rather than ioredis' auto-pipelining: `npm run bench`
  // measured 12-16 % more admission throughput and a third of the full GCs (client.ts says why).
  const redis = createRedis(redisTarget(config), config.REDIS_KEY_PREFIX, {
    commandTimeoutMs: 2000,
    coalesceWrites: true,
  });
  redis.on('error', (err) => log.warn({ err: { message: err.message } }, 'redis error'));
  const expectedMigrations = (await listMigrations()).map((m) => m.version);
  // Inline products run here: load their big tables now rather than on a customer's request.
  for (const p of products) if (p.execute) p.warm?.();
  const laneHealth = new LaneHealth(redis, { restartGraceMs: config.LANE_RESTART_GRACE_MS });
  laneHealth.start();
  const dependencies = createDependencyBreakers(dbHandle.db, redis);
  const runtime = createProductRuntime(config, log, { laneHealth });
  // Issued key ids, rebuilt from MySQL when Redis lost them: unknown ids are refused without a read.
  // Not awaited: a dependency down at start is /readyz's to report; a miss catches up later.
  const keyIds = new KeyIdIndex(dbHandle.db, redis);
  keyIds
    .start()
    .catch((err: unknown) => log.warn({ err: { message: (err as Error).message } }, 'key id index not built at start'));
  let closing: Promise<void> | undefined;
  return {
    config,
    log,
    db: dbHandle.db,
    redis,
    auth: new Authenticator(dbHandle.db, config.KEY_PEPPER, config.AUTH_CACHE_TTL_MS, { keyIds }),
    limiter: new RateLimiter(redis),
    idempotency: new Idempotency(
      dbHandle.db,
      new IdempotencyLeases(redis, { leaseMs: config.IDEMPOTENCY_LOCK_MS, ttlHours: config.IDEMPOTENCY_TTL_HOURS }),
      config.IDEMPOTENCY_TTL_HOURS,
    ),
    runtime,
    products,
    expectedMigrations,
    dependencies,
    close() {
      closing ??= (async () => {
        // Each step runs even if another failed.
        laneHealth.stop();
        dependencies.stop();
        runtime.services.resolver?.close?.();
        await closeRedis(redis);
        unobservePool();
        await dbHandle.close().catch(() => {});
      })();
      return closing;
    },
  };
}
