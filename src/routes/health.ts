// Liveness (the process answers) and readiness (its dependencies answer and the schema is current).
import type { Express } from 'express';
import { appliedMigrations, pingDatabase } from '../db/health.ts';
import type { AppDeps } from '../http/deps.ts';
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

export function mountHealthRoutes(app: Express, deps: AppDeps, isDraining: () => boolean): void {
  app.get('/livez', (_req, res) => {
    res.json({ status: 'live' });
  });
  app.get('/readyz', async (_req, res) => {
    const [mysql, redis, applied] = await Promise.all([
      check(() => pingDatabase(deps.db)),
      check(() => deps.redis.ping()),
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
    res.status(ready ? 200 : 503).json({
      status: ready ? 'ready' : isDraining() ? 'draining' : 'not_ready',
      checks: { mysql, redis, migrations },
      products: Object.fromEntries(productList(deps).products.map((p) => [p.product, p.readiness])),
    });
  });
}
