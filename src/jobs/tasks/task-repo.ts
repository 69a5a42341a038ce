// The `tasks` table's statements that the orchestration steps, the job view and retention need,
// beside the other task modules: every SQL statement on `tasks` lives in src/jobs/tasks/, so its
// indexes, its status lists and its locking order are read in one folder. The callers decide
// when; these say how.
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { affected, parseJson, type Trx } from '../../db/transaction.ts';
import type { CheckOutput } from '../../contract/tasks.ts';
import type { TaskStatus } from '../../db/schema.ts';
import type { TaskRef } from '../../queue/task-enqueue.ts';
import { NOT_STARTED_STATUSES_SQL, OPEN_STATUSES_SQL } from './task-rows.ts';
import { recountTaskCounters } from './task-counters.ts';

type Queryable = Db | Trx;

/** Per (product lane, worker lane, status): how many tasks (the job view's tallies). */
export async function taskTallies(
  db: Queryable,
  jobId: number,
): Promise<Array<{ product_lane: string; lane: string; status: TaskStatus; n: number }>> {
  const rows = await sql<{ product_lane: string; lane: string; status: TaskStatus; n: number }>`
    SELECT product_lane, lane, status, COUNT(*) AS n FROM tasks WHERE job_id = ${jobId}
    GROUP BY product_lane, lane, status`.execute(db);
  return rows.rows.map((r) => ({ ...r, n: Number(r.n) }));
}

/**
 * The job's pending tasks, in id order (what the plan op enqueues), each with the fields its
 * runner needs to claim it without reading the row again (src/queue/carried-task.ts).
 */
export async function pendingTaskRefs(db: Queryable, jobId: number): Promise<TaskRef[]> {
  const rows = await sql<{
    id: number;
    lane: string;
    workspace_id: number;
    object_key: string;
    check_name: string;
    product_lane: string;
    distance: number;
    params: unknown;
    target_value: string;
  }>`
    SELECT t.id, t.lane, t.workspace_id, t.object_key, t.check_name, t.product_lane, t.distance, t.params, j.target_value
    FROM tasks t JOIN jobs j ON j.id = t.job_id
    WHERE t.job_id = ${jobId} AND t.status = 'pending' ORDER BY t.id`.execute(db);
  return rows.rows.map((r) => ({
    id: Number(r.id),
    jobId,
    lane: r.lane,
    carried: {
      workspaceId: Number(r.workspace_id),
      objectKey: String(r.object_key),
      check: String(r.check_name),
      productLane: String(r.product_lane),
      distance: Number(r.distance),
      // The column's text as stored (mysql2 may hand JSON columns back parsed).
      params:
        r.params === null || r.params === undefined
          ? null
          : typeof r.params === 'string'
            ? r.params
            : JSON.stringify(r.params),
      target: String(r.target_value),
    },
  }));
}

/**
 * Those of `refs` whose task is still pending now (the rest were claimed, finished or purged).
 * By 1,000 ids a statement: a redelivered plan of a large job whose Redis was flushed asks for all
 * of its pending tasks.
 */
export async function stillPending(db: Queryable, refs: readonly TaskRef[]): Promise<TaskRef[]> {
  const pending = new Set<number>();
  for (let i = 0; i < refs.length; i += 1000) {
    const ids = refs.slice(i, i + 1000).map((r) => r.id);
    const rows = await sql<{ id: number }>`
      SELECT id FROM tasks WHERE id IN (${sql.join(ids)}) AND status = 'pending'`.execute(db);
    for (const r of rows.rows) pending.add(Number(r.id));
  }
  return refs.filter((r) => pending.has(r.id));
}

/** The job of a task (null: purged). */
export async function jobOfTask(db: Queryable, taskId: number): Promise<number | null> {
  const rows = await sql<{ job_id: number }>`SELECT job_id FROM tasks WHERE id = ${taskId}`.execute(db);
  return rows.rows[0] ? Number(rows.rows[0].job_id) : null;
}

/**
 * Caller holds the job row lock. Tasks that will never run end `cancelled` and are applied at
 * once (nothing to capture): with `includeRunning`, every open one (a terminal transition); else
 * only those not started (a cancel: running ones may still finish and be charged).
 */
export async function cancelUnfinishedTasks(
  trx: Trx,
  jobId: number,
  reason: string,
  opts: { includeRunning: boolean },
): Promise<void> {
  const statuses = opts.includeRunning ? OPEN_STATUSES_SQL : NOT_STARTED_STATUSES_SQL;
  await sql`UPDATE tasks SET status = 'cancelled', reason = ${reason}, finished_at = NOW(3), applied_at = NOW(3)
    WHERE job_id = ${jobId} AND status IN (${statuses})`.execute(trx);
  // Applied now without paid work: their shares and their unapplied count go (task-counters.ts).
  // Which rows changed is not a known delta (a lane may move one between statuses meanwhile), so
  // the counters are recounted: once per cancel or terminal transition, not per batch.
  await recountTaskCounters(trx, jobId);
}

/** Caller holds the job row lock. Whether a finished task of the job is still unapplied. */
export async function hasUnappliedFinished(trx: Trx, jobId: number): Promise<boolean> {
  const rows = await sql<{ id: number }>`SELECT id FROM tasks
    WHERE job_id = ${jobId} AND applied_at IS NULL AND status NOT IN (${OPEN_STATUSES_SQL}) LIMIT 1`.execute(trx);
  return rows.rows.length > 0;
}

// ---------------------------------------------------------------------------------------------
// The reconciler's scans: bounded, over the jobs of the given products.

const BATCH = 500;

/** Pending tasks of running jobs older than `olderThanUs`, after `afterId` (a rotating cursor). */
export async function stalePendingTasks(
  db: Db,
  products: readonly string[],
  olderThanUs: number,
  afterId: number,
): Promise<Array<TaskRef>> {
  const rows = await sql<{ id: number; job_id: number; lane: string }>`
    SELECT t.id, t.job_id, t.lane FROM tasks t JOIN jobs j ON j.id = t.job_id
    WHERE j.status = 'running' AND j.product IN (${sql.join(products)}) AND t.status = 'pending'
      AND t.created_at < NOW(3) - INTERVAL ${olderThanUs} MICROSECOND AND t.id > ${afterId}
    ORDER BY t.id LIMIT ${BATCH}`.execute(db);
  return rows.rows.map((r) => ({ id: Number(r.id), jobId: Number(r.job_id), lane: r.lane }));
}
export const RECONCILE_BATCH = BATCH;

export interface RunningTask {
  id: number;
  job_id: number;
  lane: string;
  check_name: string;
  attempts: number;
  age_ms: number;
}

/** Running tasks (of running or cancelling jobs) started more than `olderThanUs` ago. */
export async function longRunningTasks(
  db: Db,
  products: readonly string[],
  olderThanUs: number,
): Promise<RunningTask[]> {
  const rows = await sql<RunningTask>`
    SELECT t.id, t.job_id, t.lane, t.check_name, t.attempts, TIMESTAMPDIFF(MICROSECOND, t.started_at, NOW(3)) DIV 1000 AS age_ms
    FROM tasks t JOIN jobs j ON j.id = t.job_id
    WHERE j.status IN ('running', 'cancelling') AND j.product IN (${sql.join(products)}) AND t.status = 'running'
      AND t.started_at < NOW(3) - INTERVAL ${olderThanUs} MICROSECOND
    ORDER BY t.id LIMIT ${BATCH}`.execute(db);
  return rows.rows.map((r) => ({
    ...r,
    id: Number(r.id),
    job_id: Number(r.job_id),
    attempts: Number(r.attempts),
    age_ms: Number(r.age_ms),
  }));
}

/** Back to pending, fenced by attempts: a runner that took the task over meanwhile keeps it. */
export async function resetRunningTask(db: Db, taskId: number, attempts: number): Promise<boolean> {
  const res =
    await sql`UPDATE tasks SET status = 'pending' WHERE id = ${taskId} AND status = 'running' AND attempts = ${attempts}`.execute(
      db,
    );
  return affected(res) === 1;
}

/** Finished tasks not applied `olderThanUs` after they finished (of running or cancelling jobs). */
export async function unappliedFinishedTasks(
  db: Db,
  products: readonly string[],
  olderThanUs: number,
): Promise<TaskRef[]> {
  const rows = await sql<{ id: number; job_id: number; lane: string }>`
    SELECT t.id, t.job_id, t.lane FROM tasks t JOIN jobs j ON j.id = t.job_id
    WHERE j.status IN ('running', 'cancelling') AND j.product IN (${sql.join(products)})
      AND t.status NOT IN (${OPEN_STATUSES_SQL}) AND t.applied_at IS NULL
      AND t.finished_at < NOW(3) - INTERVAL ${olderThanUs} MICROSECOND
    ORDER BY t.id LIMIT ${BATCH}`.execute(db);
  return rows.rows.map((r) => ({ id: Number(r.id), jobId: Number(r.job_id), lane: r.lane }));
}

/**
 * Of these finished tasks, those still unapplied now. The reconciler asks again after reading the
 * results streams: a batch that committed and acknowledged its notices between its first read
 * and the streams' read would otherwise look lost (a duplicate notice, and a false warning).
 */
export async function stillUnapplied(db: Db, taskIds: readonly number[]): Promise<Set<number>> {
  if (taskIds.length === 0) return new Set();
  const rows = await sql<{ id: number }>`
    SELECT id FROM tasks WHERE id IN (${sql.join(taskIds)}) AND applied_at IS NULL`.execute(db);
  return new Set(rows.rows.map((r) => Number(r.id)));
}

/** Running jobs started more than `olderThanUs` ago with no open and no unapplied task. */
export async function idleRunningJobs(db: Db, products: readonly string[], olderThanUs: number): Promise<number[]> {
  const rows = await sql<{ id: number }>`
    SELECT j.id FROM jobs j
    WHERE j.status = 'running' AND j.product IN (${sql.join(products)})
      AND j.started_at < NOW(3) - INTERVAL ${olderThanUs} MICROSECOND
      AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.job_id = j.id AND (t.status IN (${OPEN_STATUSES_SQL}) OR t.applied_at IS NULL))
    ORDER BY j.id LIMIT 100`.execute(db);
  return rows.rows.map((r) => Number(r.id));
}

/** Retention: deletes up to `limit` task rows of the given jobs; returns how many went. */
export async function purgeJobTasks(db: Db, jobIds: readonly number[], limit: number): Promise<number> {
  return affected(await sql`DELETE FROM tasks WHERE job_id IN (${sql.join(jobIds)}) LIMIT ${limit}`.execute(db));
}

/** A finished task as applying its result needs it. */
export interface TaskToApply {
  id: number;
  status: TaskStatus;
  unit_cost: number;
  applied_at: Date | null;
  reason: string | null;
  product_lane: string;
  check_name: string;
  object_key: string;
  distance: number;
  output: CheckOutput | null;
}

/** Caller holds the job row lock. The job's given tasks, locked, in id order. */
export async function lockTasksForApply(trx: Trx, jobId: number, taskIds: readonly number[]): Promise<TaskToApply[]> {
  if (taskIds.length === 0) return [];
  const res = await sql<Record<string, unknown>>`
    SELECT id, status, unit_cost, applied_at, reason, product_lane, check_name, object_key, distance, output
    FROM tasks WHERE job_id = ${jobId} AND id IN (${sql.join(taskIds)}) ORDER BY id FOR UPDATE`.execute(trx);
  return res.rows.map((row) => ({
    id: Number(row.id),
    status: row.status as TaskStatus,
    unit_cost: Number(row.unit_cost),
    applied_at: (row.applied_at as Date | null) ?? null,
    reason: (row.reason as string | null) ?? null,
    product_lane: String(row.product_lane),
    check_name: String(row.check_name),
    object_key: String(row.object_key),
    distance: Number(row.distance),
    output: parseJson<CheckOutput>(row.output),
  }));
}
