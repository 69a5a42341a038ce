// Applying finished tasks, in batches per job: ONE transaction takes the job row lock once,
// locks the batch's task rows, settles each exactly once (applied_at), writes all their outputs
// in multi-row statements (settle-outputs.ts), releases the tasks gated on them, lets the product
// plan more work from all of them (a scan's expansion: deduped, budgeted, gated, inserted
// multi-row), checks once whether the job is done, and captures their costs last (keyed by task;
// CONTRACT §6), so the workspace's credit row, which every admission of the workspace updates,
// is held only for the commit. A task already applied, or repeated in the batch (a redelivered notice), changes nothing.
// After the commit, what became pending is enqueued (the reconciler re-enqueues it if this process
// dies first, and re-publishes the notice of a finished task left unapplied), and a job that is
// done is finalized (finalize-job.ts: its own transactions; the reconciler finalizes it if this
// process dies first).
import { captureTasks } from '../../credits/ledger.ts';
import { enqueueTasks, type TaskRef } from '../../queue/task-enqueue.ts';
import { errInfo } from '../../queue/stream-consumer.ts';
import type { TaskPlan } from '../../contract/tasks.ts';
import { gateResultOf, insertPlannedTasks, releaseGatedBatch } from '../tasks/task-insert.ts';
import { isTerminal } from '../job-view.ts';
import type { OrchestrationContext } from './context.ts';
import { finalizeJob } from './finalize-job.ts';
import type { FinalizeMode } from './job-outcome.ts';
import { countLimitations, countOpenTasks, countUnsettledTasks } from '../tasks/task-settlement.ts';
import { isValidPlan, lockJob, type LockedJob } from '../tasks/task-rows.ts';
import { jobOfTask, lockTasksForApply, type TaskToApply } from '../tasks/task-repo.ts';
import { inTransaction, type Trx } from '../../db/transaction.ts';
import { settleAndWrite } from './settle-outputs.ts';
import { activeAuthorizationGone, approvedScopesOf } from '../../auth/keys-repo.ts';
import type { ApprovedScope } from '../../auth/approved-scopes.ts';

/** One task's notice, applied alone (tests; the orchestrator batches through applyTaskResults). */
export async function applyTaskResult(ctx: OrchestrationContext, taskId: number): Promise<void> {
  const jobId = await jobOfTask(ctx.db, taskId);
  if (jobId === null) return; // purged
  await applyTaskResults(ctx, jobId, [taskId]);
}

/** Applies the given finished tasks of one job (ids of other jobs, or unknown ones, are ignored). */
export async function applyTaskResults(
  ctx: OrchestrationContext,
  jobId: number,
  taskIds: readonly number[],
): Promise<void> {
  const ids = [...new Set(taskIds)];
  if (ids.length === 0) return;
  const after = await inTransaction(ctx.db, async (trx): Promise<{ next: TaskRef[]; finalize?: FinalizeMode }> => {
    const job = await lockJob(trx, jobId);
    if (!job || isTerminal(job.status)) return { next: [] };
    const rows = await lockTasksForApply(trx, job.id, ids);
    const { settled: applied, capture } = await settleAndWrite(trx, job, rows, { rowsLocked: true });
    if (applied.length === 0) return { next: [] };
    if (job.status === 'queued') {
      await captureTasks(trx, capture);
      return { next: [] };
    }
    // Work gated on these tasks may start now, with what they found; new work only while not cancelling.
    const released = await releaseGatedBatch(
      trx,
      job.id,
      applied.map((t) => ({ check: t.check_name, objectKey: t.object_key, result: gateResultOf(t.status, t.output) })),
    );
    const expanded = job.status === 'cancelling' ? [] : await expand(trx, ctx, job, applied);
    const finalize = await doneMode(trx, ctx, job);
    // The capture last, so the workspace's credit row is locked only for the commit (ledger.ts).
    await captureTasks(trx, capture);
    if (finalize) return { next: [], finalize };
    return { next: [...released, ...expanded] };
  });
  if (after.next.length > 0) await enqueueTasks(ctx.redis, after.next);
  // Done: this transaction just found nothing left to settle under the lock (doneMode).
  if (after.finalize) await finalizeJob(ctx, jobId, after.finalize, { nothingToSettle: true });
}

/**
 * Caller holds the job row lock, after applying. How the job is to be finalized when nothing is
 * left to wait for, else null. Cancelling: nothing new will be planned, so it waits only for its
 * open tasks (finished-but-unapplied ones need no expansion: the terminal transition settles
 * them). Otherwise every task must be applied first: its expansion may plan more.
 */
export async function doneMode(trx: Trx, ctx: OrchestrationContext, job: LockedJob): Promise<FinalizeMode | null> {
  if (job.status === 'queued') return null;
  const waitingFor =
    job.status === 'cancelling'
      ? await countOpenTasks(trx, job.id)
      : await countUnsettledTasks(trx, job.id, (counted, exact) =>
          ctx.log.error({ jobId: job.id, counted, exact }, 'task counters drifted: recounted'),
        );
  if (waitingFor > 0) return null;
  return job.status === 'cancelling' ? 'cancel' : 'settle';
}

/** The product's expansion of finished tasks, validated, then deduplicated, budgeted and gated at once. */
async function expand(
  trx: Trx,
  ctx: OrchestrationContext,
  job: LockedJob,
  tasks: readonly TaskToApply[],
): Promise<TaskRef[]> {
  const def = ctx.catalog.get(job.product);
  if (!def?.job?.expand) return [];
  let scopes: Promise<ApprovedScope[]> | undefined;
  // Active work planned from here needs the workspace's authorization as it is now: a withdrawn
  // capability or acceptance leaves no approved scope to plan in (issue 45: revoking stops work in
  // flight; the lane re-checks what is already queued, workers/lane-runner/runner.ts).
  const services = {
    approvedScopes: () =>
      (scopes ??= activeAuthorizationGone(trx, job.workspace_id, null, ctx.config.RESPONSIBLE_USE_VERSION).then(
        (gone) => (gone ? [] : approvedScopesOf(trx, job.workspace_id)),
      )),
  };
  const plans: TaskPlan[] = [];
  for (const t of tasks) {
    try {
      const more = await def.job.expand(
        job.input,
        {
          check: t.check_name,
          objectKey: t.object_key,
          distance: t.distance,
          status: t.status as never,
          output: t.output,
        },
        services,
      );
      for (const p of more) {
        if (isValidPlan(p)) plans.push(p);
        else ctx.log.error({ jobId: job.id, check: p.check, lane: p.lane }, 'invalid expansion plan dropped');
      }
    } catch (err) {
      // A bug in one expansion must not wedge the job: it ends with what it has, and says so.
      ctx.log.error({ jobId: job.id, check: t.check_name, err: errInfo(err) }, 'expansion failed');
      await countLimitations(
        trx,
        job.id,
        {
          id: 0,
          status: 'failed',
          unit_cost: 0,
          applied_at: null,
          output: {
            status: 'failed',
            projection: {},
            objects: [],
            relations: [],
            findings: [],
            sources: [],
            limitations: [
              {
                code: 'expansion_failed',
                message: 'Planning follow-up work from a finished task failed; what it would have found is missing.',
              },
            ],
          },
        },
        true,
      );
    }
  }
  return plans.length > 0 ? insertPlannedTasks(trx, job, plans) : [];
}
