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

/** This run's outcome, compare-and-set from its `running` attempt. False: another run owns the task. */
export async function recordOutcome(
  db: Db | Trx,
  taskId: number,
  attempt: number,
  r: { status: TaskStatus; reason: string | null; output: CheckOutput | null },
): Promise<boolean> {
  const upd =
    await sql`UPDATE tasks SET status = ${r.status}, reason = ${r.reason}, output = ${r.output ? JSON.stringify(r.output) : null},
      finished_at = NOW(3)
    WHERE id = ${taskId} AND status = 'running' AND attempts = ${attempt}`.execute(db);
  return affected(upd) === 1;
}
