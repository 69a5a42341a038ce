// Everything a route needs, built once per process and handed to createApp (and to tests).
import type { RedisClient } from '../redis/client.ts';
import type { Logger } from 'pino';
import type { Config } from '../config/config.ts';
import type { Db } from '../db/database.ts';
import type { Authenticator } from '../auth/authenticator.ts';
import type { RateLimiter } from '../ratelimit/limiter.ts';
import type { Idempotency } from '../idempotency/idempotency.ts';
import type { ProductDefinition, ProductRuntime } from '../products/kit/product-contract.ts';
import type { Breaker } from '../resilience/breaker.ts';

/** /readyz's MySQL and Redis breakers (src/routes/health.ts). */
export interface DependencyBreakers {
  mysql: Breaker;
  redis: Breaker;
  stop(): void;
}

export interface AppDeps {
  config: Config;
  log: Logger;
  db: Db;
  redis: RedisClient;
  auth: Authenticator;
  limiter: RateLimiter;
  /** Idempotency-Key leases and committed replies (src/idempotency/). */
  idempotency: Idempotency;
  runtime: ProductRuntime;
  products: readonly ProductDefinition[];
  /** Migration versions applied at start-up check time vs on disk (for /readyz). */
  expectedMigrations: readonly string[];
  /** Absent: /readyz checks MySQL and Redis on every call, with no breaker. */
  dependencies?: DependencyBreakers;
}
