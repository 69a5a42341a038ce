// The lane runner's reads and compare-and-sets on one task row. `attempts` is the fencing token:
// the run that moved the task to running with attempts = k is the only one whose outcome counts.
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { JobStatus, TaskStatus } from '../../db/schema.ts';
import { affected, parseJson, type Trx } from '../../db/transaction.ts';
import type { CheckOutput } from '../../contract/tasks.ts';

export interface LaneTask {
  id: number;
  jobId: number;
  workspaceId: number;
  objectKey: string;
  check: string;
  lane: string;
  productLane: string;
  distance: number;
  params: Record<string, unknown>;
  status: TaskStatus;
  attempts: number;
  jobStatus: JobStatus;
  target: string;
}

export async function loadLaneTask(db: Db, taskId: number): Promise<LaneTask | null> {
  const res = await sql<Record<string, unknown>>`
    SELECT t.id, t.job_id, t.workspace_id, t.object_key, t.check_name, t.lane, t.product_lane, t.distance, t.params,
           t.status, t.attempts, j.status AS job_status, j.target_value
    FROM tasks t JOIN jobs j ON j.id = t.job_id WHERE t.id = ${taskId}`.execute(db);
  const r = res.rows[0];
  if (!r) return null;
  return {
    id: Number(r.id),
    jobId: Number(r.job_id),
    workspaceId: Number(r.workspace_id),
    objectKey: String(r.object_key),
    check: String(r.check_name),
    lane: String(r.lane),
    productLane: String(r.product_lane),
    distance: Number(r.distance),
    params: parseJson<Record<string, unknown>>(r.params) ?? {},
    status: r.status as TaskStatus,
    attempts: Number(r.attempts),
    jobStatus: r.job_status as JobStatus,
    target: String(r.target_value),
  };
}

/**
 * pending → running, or takes over a `running` task whose runner must be dead (started longer ago
 * than the check could run). Returns the attempt number that now owns the task, or null.
 */
export async function claimTask(db: Db, t: LaneTask, takeoverAfterMs: number): Promise<number | null> {
  const res =
    t.status === 'pending'
      ? await sql`UPDATE tasks SET status = 'running', attempts = attempts + 1, started_at = NOW(3)
        WHERE id = ${t.id} AND status = 'pending' AND attempts = ${t.attempts}`.execute(db)
      : await sql`UPDATE tasks SET attempts = attempts + 1, started_at = NOW(3)
        WHERE id = ${t.id} AND status = 'running' AND attempts = ${t.attempts}
          AND started_at < NOW(3) - INTERVAL ${takeoverAfterMs * 1000} MICROSECOND`.execute(db);
  return affected(res) === 1 ? t.attempts + 1 : null;
}

/**
 * The common case in one statement, for a runner that has the task's fields already (carried in
 * its stream entry: src/queue/carried-task.ts): a pending task of a queued or running job with
 * deliveries left goes to running. Returns the attempt that now owns it (the reply carries
 * LAST_INSERT_ID(expr)'s value, as page-seq.ts takes it), or null for anything else: the caller
 * then reads the row and decides as before (cancel, take over, dead-letter, publish).
 */
export async function claimPending(db: Db, taskId: number, jobId: number, maxAttempts: number): Promise<number | null> {
  const res =
    await sql`UPDATE tasks SET status = 'running', attempts = LAST_INSERT_ID(attempts + 1), started_at = NOW(3)
    WHERE id = ${taskId} AND job_id = ${jobId} AND status = 'pending' AND attempts < ${maxAttempts}
      AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = ${jobId} AND j.status IN ('queued', 'running'))`.execute(db);
  if (affected(res) !== 1) return null;
  const attempt = res.insertId !== undefined ? Number(res.insertId) : 0;
  // attempts + 1 is at least 1: a reply without it is no claim this runner can fence with.
  if (attempt < 1) throw new Error(`claim of task ${taskId} returned no attempt number`);
  return attempt;
}

/** The job is cancelling or over: a task not started (or abandoned) will not run. */
export async function cancelTask(db: Db, taskId: number, takeoverAfterMs: number): Promise<boolean> {
  const res = await sql`UPDATE tasks SET status = 'cancelled', reason = 'job_cancelled', finished_at = NOW(3)
    WHERE id = ${taskId} AND (status = 'pending'
      OR (status = 'running' AND started_at < NOW(3) - INTERVAL ${takeoverAfterMs * 1000} MICROSECOND))`.execute(db);
  return affected(res) === 1;
}

/** Shutdown interrupted the run: hand the task back so the reclaimed entry runs it at once. */
export async function releaseTask(db: Db, taskId: number, attempt: number): Promise<void> {
  await sql`UPDATE tasks SET status = 'pending' WHERE id = ${taskId} AND status = 'running' AND attempts = ${attempt}`.execute(
    db,
  );
}

export async function deadLetterTask(db: Db, taskId: number): Promise<boolean> {
  const res = await sql`UPDATE tasks SET status = 'failed', reason = 'dead_lettered', finished_at = NOW(3)
    WHERE id = ${taskId} AND status IN ('pending', 'running')`.execute(db);
  return affected(res) === 1;
}

/** One run's outcome for recordOutcomes: the output already serialized (its size bounds a batch). */
export interface OutcomeRow {
  taskId: number;
  attempt: number;
  status: TaskStatus;
  reason: string | null;
  output: string | null;
}

/**
 * Several runs' outcomes in one statement, each compare-and-set from its own `running` attempt as
 * recordOutcome does (a row whose attempt moved on is left alone). Returns the rows written.
 */
export async function recordOutcomes(db: Db, rows: readonly OutcomeRow[]): Promise<number> {
  if (rows.length === 0) return 0;
  if (rows.length === 1) {
    const r = rows[0]!;
    const upd = await sql`UPDATE tasks SET status = ${r.status}, reason = ${r.reason}, output = ${r.output},
      finished_at = NOW(3)
    WHERE id = ${r.taskId} AND status = 'running' AND attempts = ${r.attempt}`.execute(db);
    return affected(upd);
  }
  const byId = (value: (r: OutcomeRow) => unknown) =>
    sql`CASE id ${sql.join(
      rows.map((r) => sql`WHEN ${r.taskId} THEN ${value(r)}`),
      sql` `,
    )} END`;
  const upd = await sql`UPDATE tasks SET status = ${byId((r) => r.status)}, reason = ${byId((r) => r.reason)},
      output = ${byId((r) => r.output)}, finished_at = NOW(3)
    WHERE id IN (${sql.join(rows.map((r) => r.taskId))}) AND status = 'running'
      AND CASE id ${sql.join(
        rows.map((r) => sql`WHEN ${r.taskId} THEN attempts = ${r.attempt}`),
        sql` `,
      )} END`.execute(db);
  return affected(upd);
}
