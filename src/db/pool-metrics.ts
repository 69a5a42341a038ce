// The connection budget as an operator sees it (docs/operations.md, "The database connection
// budget"): per role, the connections of its pool in use and idle, statements waiting for one, the
// pool's size (its share of DATABASE_MAX_CONNECTIONS), and the connections the server refused or
// the waits that ran out (lss_db_local_failures_total: ours, never a task's outcome).
// A process may hold several pools of one role (tests build many): they are summed.
import client from 'prom-client';
import type { PoolStats } from './database.ts';

interface Source {
  role: string;
  stats: PoolStats;
}

const sourcesOf = new WeakMap<client.Registry, Set<Source>>();

function sum(sources: Set<Source>, f: (s: PoolStats) => number): Map<string, number> {
  const out = new Map<string, number>();
  for (const { role, stats } of sources) out.set(role, (out.get(role) ?? 0) + f(stats));
  return out;
}

function register(registry: client.Registry, sources: Set<Source>): void {
  new client.Gauge({
    name: 'lss_db_connections',
    help: "Connections of the role's MySQL pool, by state (in_use, idle)",
    labelNames: ['role', 'state'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [role, open] of sum(sources, (s) => s.open())) {
        const idle = sum(sources, (s) => s.idle()).get(role) ?? 0;
        this.set({ role, state: 'in_use' }, open - idle);
        this.set({ role, state: 'idle' }, idle);
      }
    },
  });
  new client.Gauge({
    name: 'lss_db_connections_waiting',
    help: 'Statements waiting for a connection of the pool (all in use, or the server refusing new ones)',
    labelNames: ['role'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [role, n] of sum(sources, (s) => s.waiting())) this.set({ role }, n);
    },
  });
  new client.Gauge({
    name: 'lss_db_connection_limit',
    help: "The pool's size: the role's share of DATABASE_MAX_CONNECTIONS (src/config/connection-budget.ts)",
    labelNames: ['role'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [role, n] of sum(sources, (s) => s.limit)) this.set({ role }, n);
    },
  });
  const reported = new Map<string, number>();
  new client.Counter({
    name: 'lss_db_local_failures_total',
    help: 'Connections MySQL refused (ER_CON_COUNT_ERROR, ER_USER_LIMIT_REACHED…) and waits for one that ran out (POOL_WAIT_TIMEOUT): our shortage, retried',
    labelNames: ['role', 'code'] as const,
    registers: [registry],
    collect() {
      const now = new Map<string, number>();
      for (const { role, stats } of sources) {
        const add = (code: string, n: number) => now.set(`${role} ${code}`, (now.get(`${role} ${code}`) ?? 0) + n);
        for (const [code, n] of stats.refused) add(code, n);
        add('POOL_WAIT_TIMEOUT', stats.waitTimeouts);
      }
      for (const [key, n] of now) {
        const delta = n - (reported.get(key) ?? 0);
        if (delta <= 0) continue;
        const [role, code] = key.split(' ') as [string, string];
        this.inc({ role, code }, delta);
        reported.set(key, n);
      }
    },
  });
}

/** Reports `stats` as `role`'s pool in `registry`; the returned function stops reporting it. */
export function observePool(registry: client.Registry, role: string, stats: PoolStats): () => void {
  let sources = sourcesOf.get(registry);
  if (!sources) {
    sources = new Set();
    sourcesOf.set(registry, sources);
    register(registry, sources);
  }
  const source = { role, stats };
  sources.add(source);
  return () => sources.delete(source);
}
