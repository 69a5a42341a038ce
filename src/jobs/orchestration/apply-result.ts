// Applying a finished task: capture its cost once (completed/partial only; CONTRACT §6) and mark
// it applied, in one transaction under the job row lock. A repeated notice finds applied_at set
// and changes nothing. When no task is left open, the job is finalized in the same transaction.
import { sql } from 'kysely';
import { captureTask } from '../../credits/ledger.ts';
import { isTerminal } from '../job-view.ts';
import type { OrchestrationContext } from './context.ts';
import { finalizeLocked } from './finalize-job.ts';
import { CAPTURED_TASK_STATUSES, isOpenTask, lockJob, type LockedJob } from './task-rows.ts';
import { affected, inTransaction, type Trx } from '../../db/transaction.ts';
import type { TaskStatus } from '../../db/schema.ts';

export interface ApplicableTask {
  id: number;
  status: TaskStatus;
  unit_cost: number;
  applied_at: Date | null;
}

/** Caller holds the job row lock. Returns the credits captured (0 on a repeat). */
export async function applyFinishedTask(trx: Trx, job: LockedJob, task: ApplicableTask): Promise<number> {
  if (task.applied_at || isOpenTask(task.status)) return 0;
  const marked = await sql`UPDATE tasks SET applied_at = NOW(3)
    WHERE id = ${task.id} AND applied_at IS NULL AND status NOT IN ('pending', 'running')`.execute(trx);
  if (affected(marked) !== 1) return 0;
  if (!CAPTURED_TASK_STATUSES.includes(task.status) || task.unit_cost <= 0) return 0;
  return captureTask(trx, { workspaceId: job.workspace_id, jobId: job.id, taskId: task.id, amount: task.unit_cost });
}

export async function countOpenTasks(trx: Trx, jobId: number): Promise<number> {
  const res = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM tasks WHERE job_id = ${jobId} AND status IN ('pending', 'running')`.execute(trx);
  return Number(res.rows[0]?.n ?? 0);
}

export async function applyTaskResult(ctx: OrchestrationContext, taskId: number): Promise<void> {
  const head = await ctx.db.selectFrom('tasks').select('job_id').where('id', '=', taskId).executeTakeFirst();
  if (!head) return; // purged
  await inTransaction(ctx.db, async (trx) => {
    const job = await lockJob(trx, head.job_id);
    if (!job || isTerminal(job.status)) return;
    const res = await sql<ApplicableTask>`SELECT id, status, unit_cost, applied_at FROM tasks WHERE id = ${taskId} FOR UPDATE`.execute(trx);
    const task = res.rows[0];
    if (!task) return;
    await applyFinishedTask(trx, job, { ...task, unit_cost: Number(task.unit_cost) });
    if (job.status === 'queued') return;
    if ((await countOpenTasks(trx, job.id)) === 0) {
      await finalizeLocked(trx, ctx, job, job.status === 'cancelling' ? 'cancel' : 'settle');
    }
  });
}
