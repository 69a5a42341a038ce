// At start, each role compares the deployment's connection budget (src/config/connection-budget.ts)
// with what the server allows this account: @@max_connections, and the account's
// max_user_connections when it has one (a managed MySQL often sets it per user). A budget above it
// means the pools together may be refused connections under load: a warning line saying what to
// set, or, with DATABASE_BUDGET_STRICT, a refusal to start (the entry point exits 78).
import type { Logger } from 'pino';
import { sql } from 'kysely';
import type { Config } from '../config/config.ts';
import { connectionPlan, describePlan, type ConnectionPlan } from '../config/connection-budget.ts';
import { createDb, type Db } from './database.ts';

export interface ServerConnectionLimit {
  maxConnections: number;
  /** This account's limit (its MAX_USER_CONNECTIONS, or the global max_user_connections); 0 = none. */
  maxUserConnections: number;
  /** What this account may open at most: the lower of the two that apply. */
  limit: number;
}

export async function readServerConnectionLimit(db: Db): Promise<ServerConnectionLimit> {
  const { rows } = await sql<{ m: number | string; u: number | string }>`
    SELECT @@max_connections AS m, @@max_user_connections AS u`.execute(db);
  const maxConnections = Number(rows[0]?.m);
  const maxUserConnections = Number(rows[0]?.u);
  const limit = maxUserConnections > 0 ? Math.min(maxConnections, maxUserConnections) : maxConnections;
  return { maxConnections, maxUserConnections, limit };
}

/** What is wrong with the plan against the server's limit: one sentence each, empty when it fits. */
export function budgetProblems(plan: ConnectionPlan, server: ServerConnectionLimit): string[] {
  if (plan.budget <= server.limit) return [];
  const which =
    server.limit === server.maxConnections
      ? `max_connections is ${server.maxConnections}`
      : `this account's max_user_connections is ${server.maxUserConnections}`;
  return [
    `DATABASE_MAX_CONNECTIONS=${plan.budget} is more than the server allows (${which}): the roles' pools (${describePlan(plan)}) may be refused connections under load. Set DATABASE_MAX_CONNECTIONS to at most ${server.limit} (less what other clients of the server hold), or raise the server's limit`,
  ];
}

/**
 * Logs this process's share and the deployment's plan; warns for each problem. Returns the line
 * that stops the start (DATABASE_BUDGET_STRICT and a problem), or null: the entry point prints it
 * on stderr and exits 78 (EX_CONFIG), as for any other configuration problem.
 */
export async function checkConnectionBudget(
  db: Db,
  config: Config,
  role: string,
  share: number,
  log: Logger,
): Promise<string | null> {
  const plan = connectionPlan(config);
  let server: ServerConnectionLimit;
  try {
    server = await readServerConnectionLimit(db);
  } catch (err) {
    // Not this check's to decide: the role's own start meets an unreachable MySQL its own way.
    log.warn(
      { err: { message: (err as Error).message } },
      'database connection budget: could not read the server limit',
    );
    return null;
  }
  const problems = budgetProblems(plan, server);
  log.info(
    {
      role,
      pool: share,
      budget: plan.budget,
      deployment: plan.used,
      reserved: plan.reserved,
      serverLimit: server.limit,
    },
    `database connections: this ${role} process's pool ${share}; deployment ${describePlan(plan)}; the server allows ${server.limit}`,
  );
  for (const p of problems) log.warn({ role, strict: config.DATABASE_BUDGET_STRICT }, p);
  if (!config.DATABASE_BUDGET_STRICT || problems.length === 0) return null;
  return `${role} role cannot start: ${problems.join('; ')} (DATABASE_BUDGET_STRICT=true).`;
}

/** checkConnectionBudget over a connection of its own (one of the reserve), closed before it returns. */
export async function startupConnectionCheck(
  config: Config,
  role: string,
  share: number,
  log: Logger,
): Promise<string | null> {
  const handle = createDb(config.DATABASE_URL, { connectionLimit: 1, waitMs: 5000 });
  try {
    return await checkConnectionBudget(handle.db, config, role, share, log);
  } finally {
    await handle.close().catch(() => {});
  }
}
