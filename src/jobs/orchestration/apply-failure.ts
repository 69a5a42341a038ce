// Giving up on one result (issue 31 item 7). A finished task's result is applied by its job's
// batch (apply-result.ts); one whose output cannot be written (a statement MySQL refuses for it,
// not MySQL being away) used to fail its whole batch on every delivery, so the job never ended.
// Now the batcher applies a failed batch again one notice at a time (result-batcher.ts), the
// rest are applied, and the one that still fails is redelivered until LANE_MAX_DELIVERIES; then
// the orchestrator's dead-letter handler tries it alone once more and, if it fails again, settles
// it here without its result: `failed` / `apply_failed`, nothing captured, the job's coverage
// says `result_not_applied`, and the job ends (`partial` with what the other tasks found, or
// `failed`) instead of waiting for a result that will never be written. The terminal transition
// does the same for a result of its backlog that fails alone (finalize-job.ts).
import { inTransaction } from '../../db/transaction.ts';
import { errInfo } from '../../queue/stream-consumer.ts';
import { isTerminal } from '../job-view.ts';
import { lockJob } from '../tasks/task-rows.ts';
import { settleAsNotApplied } from '../tasks/task-settlement.ts';
import { doneMode } from './apply-result.ts';
import type { OrchestrationContext } from './context.ts';
import { finalizeJob } from './finalize-job.ts';
import type { FinalizeMode } from './job-outcome.ts';

/**
 * Settles the task without its result (it stays unapplied no more) and finalizes the job when it
 * was the last thing the job waited for. Returns false when the task was applied meanwhile.
 */
export async function giveUpApplying(
  ctx: OrchestrationContext,
  jobId: number,
  taskId: number,
  err: unknown,
): Promise<boolean> {
  const after = await inTransaction(ctx.db, async (trx): Promise<{ finalize: FinalizeMode | null } | null> => {
    const job = await lockJob(trx, jobId);
    if (!job || isTerminal(job.status)) return null;
    if (!(await settleAsNotApplied(trx, job, taskId))) return null;
    return { finalize: await doneMode(trx, ctx, job) };
  });
  if (!after) return false;
  ctx.log.error({ jobId, taskId, err: errInfo(err) }, 'task result could not be applied: settled without it');
  if (after.finalize) await finalizeJob(ctx, jobId, after.finalize, { nothingToSettle: true });
  return true;
}
