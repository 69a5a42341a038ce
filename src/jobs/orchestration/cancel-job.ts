// The `cancel` op (CONTRACT §9): pending and waiting tasks will never run (and nothing new is
// planned: apply-result does not expand a cancelling job); running ones may finish (and are
// charged) until the grace deadline. The job ends `cancelled` as soon as nothing is running:
// here, on the last running task's result (apply-result.ts), or by the sweeper after
// CANCEL_GRACE_MS. Finished results not applied yet are settled by the terminal transition, in
// chunks (finalize-job.ts), after this transaction.
import { countOpenTasks } from '../tasks/task-settlement.ts';
import type { OrchestrationContext } from './context.ts';
import { finalizeJob } from './finalize-job.ts';
import { lockJob } from '../tasks/task-rows.ts';
import { cancelUnfinishedTasks } from '../tasks/task-repo.ts';
import { inTransaction } from '../../db/transaction.ts';

export async function cancelJob(ctx: OrchestrationContext, jobId: number): Promise<void> {
  const idle = await inTransaction(ctx.db, async (trx) => {
    const job = await lockJob(trx, jobId);
    if (job?.status !== 'cancelling') return false;
    // Nothing to capture for these: they are applied at once.
    await cancelUnfinishedTasks(trx, job.id, 'job_cancelled', { includeRunning: false });
    return (await countOpenTasks(trx, job.id)) === 0;
  });
  if (idle) await finalizeJob(ctx, jobId, 'cancel');
}
