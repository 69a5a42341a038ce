// The `plan` op: a queued job gets its task rows (budget applied) and goes running; then its
// pending tasks are put on their lane streams. A redelivered plan for a running job re-enqueues
// only tasks whose stream entry was lost.
import { sql } from 'kysely';
import type { TaskPlan } from '../../contract/tasks.ts';
import type { PlanContext } from '../../products/kit/product-contract.ts';
import { enqueueTasks, ensureTasksEnqueued } from '../../queue/task-enqueue.ts';
import { errInfo } from '../../queue/stream-consumer.ts';
import { cancelJob } from './cancel-job.ts';
import type { OrchestrationContext } from './context.ts';
import { finalizeJob, type FinalizeOptions } from './finalize-job.ts';
import { dedupePlans } from '../tasks/task-budget.ts';
import { insertPlannedTasks } from '../tasks/task-insert.ts';
import { countOpenTasks } from '../tasks/task-settlement.ts';
import { isValidPlan, lockJob, type LockedJob } from '../tasks/task-rows.ts';
import { pendingTaskRefs, stillPending } from '../tasks/task-repo.ts';
import { inTransaction, type Trx } from '../../db/transaction.ts';
import { planRechecks, takeBaseline } from '../changes/baseline.ts';

/** What to do after the plan's transaction; `finalize`: the job is done already (finalize-job.ts). */
type PlanStep = 'enqueue_all' | 'ensure' | 'cancel' | 'nothing' | { finalize: FinalizeOptions };

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
  if (typeof step === 'object') {
    await finalizeJob(ctx, jobId, 'settle', step.finalize);
    return;
  }
  const pending = await pendingTaskRefs(ctx.db, jobId);
  if (step === 'enqueue_all') await enqueueTasks(ctx.redis, pending);
  else await ensureTasksEnqueued(ctx.redis, pending, (lost) => stillPending(ctx.db, lost));
}

async function planQueued(trx: Trx, ctx: OrchestrationContext, job: LockedJob): Promise<PlanStep> {
  const def = ctx.catalog.get(job.product);
  if (!def?.job) {
    return { finalize: { failure: 'product_not_available' } };
  }
  let plans: TaskPlan[];
  try {
    plans = dedupePlans(def.job.plan(job.input, { activeScope: await activeScopeOf(trx, job.id) }));
    for (const p of plans)
      if (!isValidPlan(p))
        throw new Error(`invalid task plan ${JSON.stringify({ check: p.check, lane: p.lane, unitCost: p.unitCost })}`);
  } catch (err) {
    ctx.log.error({ jobId: job.id, err: errInfo(err) }, 'plan failed');
    return { finalize: { failure: 'plan_failed' } };
  }
  const pending = await insertPlannedTasks(trx, job, plans);
  // The baseline is picked as the job starts (CONTRACT §13); a scan then rechecks its names.
  const rules = def.job.changes;
  const baseline = rules
    ? await takeBaseline(trx, job, rules.fingerprint, { retentionDays: ctx.config.JOB_RETENTION_DAYS })
    : null;
  if (baseline) pending.push(...(await planRechecks(trx, job, def, baseline.id)));
  await sql`UPDATE jobs SET status = 'running', started_at = NOW(3) WHERE id = ${job.id} AND status = 'queued'`.execute(
    trx,
  );
  if (pending.length === 0 && (await countOpenTasks(trx, job.id)) === 0) return { finalize: {} };
  return 'enqueue_all';
}

/** The approved scope an active job was admitted under (jobs.active_scope), null for passive work. */
async function activeScopeOf(trx: Trx, jobId: number): Promise<PlanContext['activeScope']> {
  const r = await sql<{ active_scope: unknown }>`SELECT active_scope FROM jobs WHERE id = ${jobId}`.execute(trx);
  const raw = r.rows[0]?.active_scope;
  const v = typeof raw === 'string' ? (JSON.parse(raw) as unknown) : raw;
  if (!v || typeof v !== 'object') return null;
  const { domain, proof } = v as { domain?: unknown; proof?: unknown };
  if (typeof domain !== 'string' || (proof !== 'verified' && proof !== 'operator_override')) return null;
  return { domain, proof };
}
