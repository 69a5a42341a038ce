// Liveness (the process answers) and readiness (its dependencies answer and the schema is current).
//
// MySQL and Redis each have a circuit breaker (src/resilience/breaker.ts): a failed check opens
// it, and while it is open /readyz answers `down` at once (a load balancer's polls do not pile up
// behind 2 s timeouts) while the breaker itself re-checks the dependency about once a second, so
// /readyz is 200 again within about a second of its return, polled or not.
import type { Express } from 'express';
import type { Db } from '../db/database.ts';
import { appliedMigrations, pingDatabase } from '../db/health.ts';
import type { AppDeps, DependencyBreakers } from '../http/deps.ts';
import type { RedisClient } from '../redis/client.ts';
import { Breaker } from '../resilience/breaker.ts';
import { productList } from './meta.ts';

async function check(fn: () => Promise<unknown>, timeoutMs = 2000): Promise<'ok' | 'down'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      fn(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
      }),
    ]);
    return 'ok';
  } catch {
    return 'down';
  } finally {
    clearTimeout(timer);
  }
}

/** The breakers of /readyz's MySQL and Redis checks (created by src/bootstrap.ts, stopped on close). */
export function createDependencyBreakers(db: Db, redis: RedisClient): DependencyBreakers {
  const breaker = (name: string, fn: () => Promise<unknown>) =>
    new Breaker({
      name,
      failuresToOpen: 1,
      probeTimeoutMs: 2000,
      probe: async () => (await check(fn, 1000)) === 'ok',
    });
  const mysql = breaker('mysql', () => pingDatabase(db));
  const redisBreaker = breaker('redis', () => redis.ping());
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
    const [mysql, redis, applied] = await Promise.all([
      guarded(deps.dependencies?.mysql, () => pingDatabase(deps.db)),
      guarded(deps.dependencies?.redis, () => deps.redis.ping()),
      appliedMigrations(deps.db),
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
