// The `plan` op: a queued job gets its task rows (budget applied) and goes running; then its
// pending tasks are put on their lane streams. A redelivered plan for a running job re-enqueues
// only tasks whose stream entry was lost.
import { sql } from 'kysely';
import type { TaskPlan } from '../../products/types.ts';
import { enqueueTasks, ensureTasksEnqueued, type TaskRef } from '../../queue/task-enqueue.ts';
import { errInfo } from '../../queue/stream-consumer.ts';
import { isLaneName } from '../../queue/streams.ts';
import { cancelJob } from './cancel-job.ts';
import type { OrchestrationContext } from './context.ts';
import { finalizeLocked } from './finalize-job.ts';
import { budgetTasks, dedupePlans } from './task-budget.ts';
import { lockJob, type LockedJob } from './task-rows.ts';
import { inTransaction, type Trx } from '../../db/transaction.ts';

type PlanStep = 'enqueue_all' | 'ensure' | 'cancel' | 'nothing';

export async function planJob(ctx: OrchestrationContext, jobId: number): Promise<void> {
  const step = await inTransaction(ctx.db, async (trx): Promise<PlanStep> => {
    const job = await lockJob(trx, jobId);
    if (!job) return 'nothing';
    if (job.status === 'running') return 'ensure';
    if (job.status === 'cancelling') return 'cancel';
    if (job.status !== 'queued') return 'nothing';
    return planQueued(trx, ctx, job);
  });
  if (step === 'cancel') return cancelJob(ctx, jobId);
  if (step === 'nothing') return;
  const pending = await pendingTasks(ctx, jobId);
  if (step === 'enqueue_all') await enqueueTasks(ctx.redis, pending);
  else await ensureTasksEnqueued(ctx.redis, pending);
}

async function planQueued(trx: Trx, ctx: OrchestrationContext, job: LockedJob): Promise<PlanStep> {
  const def = ctx.catalog.get(job.product);
  if (!def?.job) {
    await finalizeLocked(trx, ctx, job, 'settle', { failure: 'product_not_available' });
    return 'nothing';
  }
  let plans: TaskPlan[];
  try {
    plans = dedupePlans(def.job.plan(job.input));
    plans.forEach(validatePlan);
  } catch (err) {
    ctx.log.error({ jobId: job.id, err: errInfo(err) }, 'plan failed');
    await finalizeLocked(trx, ctx, job, 'settle', { failure: 'plan_failed' });
    return 'nothing';
  }
  const budgeted = budgetTasks(plans, job.credits_reserved);
  for (let i = 0; i < budgeted.length; i += 500) {
    const rows = budgeted.slice(i, i + 500).map(({ plan, status }) => sql`(
      ${job.id}, ${job.workspace_id}, ${plan.objectKey}, ${plan.check}, ${plan.lane}, ${plan.productLane},
      ${plan.required ? 1 : 0}, ${plan.unitCost}, ${plan.distance ?? 0}, ${plan.params ? JSON.stringify(plan.params) : null},
      ${status}, ${status === 'budget_exhausted' ? 'budget_exhausted' : null},
      ${status === 'budget_exhausted' ? sql`NOW(3)` : null}, ${status === 'budget_exhausted' ? sql`NOW(3)` : null})`);
    await sql`INSERT IGNORE INTO tasks (job_id, workspace_id, object_key, check_name, lane, product_lane, required, unit_cost,
        distance, params, status, reason, finished_at, applied_at)
      VALUES ${sql.join(rows)}`.execute(trx);
  }
  await sql`UPDATE jobs SET status = 'running', started_at = NOW(3) WHERE id = ${job.id} AND status = 'queued'`.execute(trx);
  if (!budgeted.some((b) => b.status === 'pending')) {
    await finalizeLocked(trx, ctx, { ...job, status: 'running' }, 'settle');
    return 'nothing';
  }
  return 'enqueue_all';
}

/** A plan the tables or the streams cannot hold fails the job instead of a lane, later. */
function validatePlan(p: TaskPlan): void {
  const ok = isLaneName(p.lane) && Number.isInteger(p.unitCost) && p.unitCost >= 0 && p.objectKey.length > 0 && p.objectKey.length <= 512
    && /^[a-z0-9_.-]{1,64}$/.test(p.check) && p.productLane.length > 0 && p.productLane.length <= 32;
  if (!ok) throw new Error(`invalid task plan ${JSON.stringify({ check: p.check, lane: p.lane, unitCost: p.unitCost })}`);
}

async function pendingTasks(ctx: OrchestrationContext, jobId: number): Promise<TaskRef[]> {
  const rows = await ctx.db.selectFrom('tasks').select(['id', 'lane']).where('job_id', '=', jobId).where('status', '=', 'pending').orderBy('id').execute();
  return rows.map((r) => ({ id: Number(r.id), jobId, lane: r.lane }));
}
