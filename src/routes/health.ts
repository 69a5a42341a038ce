// Liveness (the process answers) and readiness (its dependencies answer and the schema is current).
//
// MySQL and Redis each have a circuit breaker (src/resilience/breaker.ts): a failed check opens
// it, and while it is open /readyz answers `down` at once (a load balancer's polls do not pile up
// behind 2 s timeouts) while the breaker itself re-checks the dependency about once a second, so
// /readyz is 200 again within about a second of its return, polled or not.
//
// The probe is the same check with the same bound as the one that opened it (CHECK_TIMEOUT_MS):
// with a shorter probe, a dependency answering in 1–2 s passed the check but failed every probe,
// and /readyz stuck at 503 (issue 31). The migrations read is a MySQL query too: it runs behind
// the MySQL breaker (skipped while open: `unknown`) and within the same bound, so a MySQL that
// hangs cannot hold /readyz either.
//
// The Redis check waits, within that bound, for a client still making its first connection: until
// its first `ready` every command fails at once (no offline queue), and a healthy Redis read `down`
// when a process was polled just after it started (pingRedis below).
import type { Express } from 'express';
import type { Db } from '../db/database.ts';
import { appliedMigrations, pingDatabase } from '../db/health.ts';
import type { AppDeps, DependencyBreakers } from '../http/deps.ts';
import { firstConnection, type RedisClient } from '../redis/client.ts';
import { Breaker } from '../resilience/breaker.ts';
import { productList } from './meta.ts';

/** The bound of one readiness check, and of the breaker's probe that re-runs it. */
export const CHECK_TIMEOUT_MS = 2000;

/** `fn`'s value, or `fallback` when it fails or takes longer than CHECK_TIMEOUT_MS. */
async function bounded<T, F>(fn: () => Promise<T>, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      fn(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), CHECK_TIMEOUT_MS);
      }),
    ]);
  } catch {
    return fallback;
  } finally {
    clearTimeout(timer);
  }
}

async function check(fn: () => Promise<unknown>): Promise<'ok' | 'down'> {
  return bounded(async () => {
    await fn();
    return 'ok' as const;
  }, 'down' as const);
}

/**
 * Redis answers PING, the client's first connection awaited within the check's bound: a process
 * just started whose client is still connecting has a Redis that is not down, only not reached
 * yet (src/redis/client.ts firstConnection).
 */
async function pingRedis(redis: RedisClient): Promise<void> {
  await firstConnection(redis, CHECK_TIMEOUT_MS);
  await redis.ping();
}

/** The breakers of /readyz's MySQL and Redis checks (created by src/bootstrap.ts, stopped on close). */
export function createDependencyBreakers(db: Db, redis: RedisClient): DependencyBreakers {
  const breaker = (name: string, fn: () => Promise<unknown>) =>
    new Breaker({
      name,
      failuresToOpen: 1,
      // The check bounds itself; the breaker's own bound only backs it up.
      probeTimeoutMs: CHECK_TIMEOUT_MS + 100,
      probe: async () => (await check(fn)) === 'ok',
    });
  const mysql = breaker('mysql', () => pingDatabase(db));
  const redisBreaker = breaker('redis', () => pingRedis(redis));
  return {
    mysql,
    redis: redisBreaker,
    stop() {
      mysql.stop();
      redisBreaker.stop();
    },
  };
}

/** The check, unless its breaker is open: then `down` at once (the breaker probes on its own). */
async function guarded(breaker: Breaker | undefined, fn: () => Promise<unknown>): Promise<'ok' | 'down'> {
  if (breaker?.isOpen()) return 'down';
  const r = await check(fn);
  if (r === 'ok') breaker?.success();
  else breaker?.failure();
  return r;
}

export function mountHealthRoutes(app: Express, deps: AppDeps, isDraining: () => boolean): void {
  app.get('/livez', (_req, res) => {
    res.json({ status: 'live' });
  });
  app.get('/readyz', async (_req, res) => {
    const mysqlBreaker = deps.dependencies?.mysql;
    const [mysql, redis, applied] = await Promise.all([
      guarded(mysqlBreaker, () => pingDatabase(deps.db)),
      guarded(deps.dependencies?.redis, () => pingRedis(deps.redis)),
      // Behind the MySQL breaker and within the same bound: unknown while MySQL is refused.
      mysqlBreaker?.isOpen() ? null : bounded(() => appliedMigrations(deps.db), null),
    ]);
    const missing = applied ? deps.expectedMigrations.filter((v) => !applied.includes(v)) : null;
    const migrations = missing === null ? 'unknown' : missing.length === 0 ? 'current' : 'pending';
    const ready = !isDraining() && mysql === 'ok' && redis === 'ok' && migrations === 'current';
    if (!ready) {
      // Every 503 logs its cause: here, which check failed (or that the process is draining).
      deps.log.warn(
        { status: 503, code: 'not_ready', draining: isDraining(), checks: { mysql, redis, migrations } },
        'readiness answered 503',
      );
    }
    // A warning, never a reason to be down: DNS_SERVERS answers special-use names (issue 30).
    const warnings = deps.runtime.services.publicResolver?.warnings() ?? [];
    res.status(ready ? 200 : 503).json({
      status: ready ? 'ready' : isDraining() ? 'draining' : 'not_ready',
      ...(warnings.length > 0 ? { warnings } : {}),
      checks: { mysql, redis, migrations },
      products: Object.fromEntries(productList(deps).products.map((p) => [p.product, p.readiness])),
    });
  });
}
