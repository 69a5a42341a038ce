// Settling one finished task, under its job's row lock: mark it applied once, count its
// limitations into the job's coverage, capture its cost once (completed/partial only; CONTRACT §6).
// Shared by applying a result as it arrives (orchestration/apply-result.ts) and by the terminal
// transition (orchestration/finalize-job.ts), which applies whatever was not applied yet.
import { sql } from 'kysely';
import type { Limitation } from '../../contract/lanes.ts';
import type { CheckOutput } from '../../contract/tasks.ts';
import { captureTask } from '../../credits/ledger.ts';
import type { TaskStatus } from '../../db/schema.ts';
import { affected, type Trx } from '../../db/transaction.ts';
import { limitationCode, limitationMessage } from './task-limitations.ts';
import { CAPTURED_TASK_STATUSES, isOpenTask, OPEN_STATUSES_SQL, type LockedJob } from './task-rows.ts';

export interface ApplicableTask {
  id: number;
  status: TaskStatus;
  unit_cost: number;
  applied_at: Date | null;
  reason?: string | null;
  product_lane?: string;
  /** Its limitations, counted into the job's coverage (job_limitations). */
  output?: CheckOutput | null;
}

/** Caller holds the job row lock. Returns the credits captured (0 on a repeat). */
export async function applyFinishedTask(trx: Trx, job: LockedJob, task: ApplicableTask): Promise<number> {
  if (task.applied_at || isOpenTask(task.status)) return 0;
  const marked = await sql`UPDATE tasks SET applied_at = NOW(3)
    WHERE id = ${task.id} AND applied_at IS NULL AND status NOT IN (${OPEN_STATUSES_SQL})`.execute(trx);
  if (affected(marked) !== 1) return 0;
  await countLimitations(trx, job.id, task);
  if (!CAPTURED_TASK_STATUSES.includes(task.status) || task.unit_cost <= 0) return 0;
  return captureTask(trx, { workspaceId: job.workspace_id, jobId: job.id, taskId: task.id, amount: task.unit_cost });
}

/**
 * The task's own limitations and the one its status stands for, counted once per task. With
 * `gap`, they make the job's coverage incomplete by themselves (not a task's note).
 */
export async function countLimitations(trx: Trx, jobId: number, task: ApplicableTask, gap = false): Promise<void> {
  const lims: Limitation[] = [...(task.output?.limitations ?? [])];
  if (task.product_lane) {
    const row = { status: task.status, reason: task.reason ?? null, product_lane: task.product_lane };
    const code = limitationCode(row);
    if (code) lims.push({ code, message: limitationMessage(code, 1, row) });
  }
  const byCode = new Map<string, Limitation>();
  for (const l of lims) if (!byCode.has(l.code)) byCode.set(l.code, l);
  if (byCode.size === 0) return;
  const rows = [...byCode.values()].map(
    (l) => sql`(${jobId}, ${l.code.slice(0, 64)}, 1, ${String(l.message).slice(0, 500)}, ${gap ? 1 : 0})`,
  );
  await sql`INSERT INTO job_limitations (job_id, code, occurrences, message, gap) VALUES ${sql.join(rows)}
    ON DUPLICATE KEY UPDATE occurrences = occurrences + 1, gap = GREATEST(gap, VALUES(gap))`.execute(trx);
}

export async function countOpenTasks(trx: Trx, jobId: number): Promise<number> {
  const res = await sql<{
    n: number;
  }>`SELECT COUNT(*) AS n FROM tasks WHERE job_id = ${jobId} AND status IN (${OPEN_STATUSES_SQL})`.execute(trx);
  return Number(res.rows[0]?.n ?? 0);
}

/**
 * Tasks the job still waits for: open ones, and finished ones whose result has not been applied
 * yet. The latter matter: applying a scan's result may plan more work, so a job whose last open
 * task just finished is not done until every finished task went through its own apply (its
 * notice, or the reconciler's re-publish). Finalizing earlier would apply them without expansion.
 */
export async function countUnsettledTasks(trx: Trx, jobId: number): Promise<number> {
  const res = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM tasks WHERE job_id = ${jobId}
    AND (status IN (${OPEN_STATUSES_SQL}) OR applied_at IS NULL)`.execute(trx);
  return Number(res.rows[0]?.n ?? 0);
}
