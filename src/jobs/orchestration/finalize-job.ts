// The terminal transition, once: cancel what is still open, apply (capture, write the output of)
// every finished task not yet applied, decide the outcome, compare-and-set the job to its terminal status and release
// the unused reservation, all in one transaction under the job row lock. Only the winner of the
// terminal CAS releases; releaseRemainder is itself keyed by job, so a second release is a no-op.
import { sql } from 'kysely';
import { releaseRemainder } from '../../credits/ledger.ts';
import { isTerminal } from '../job-view.ts';
import { countOpenTasks } from '../tasks/task-settlement.ts';
import { settleAndWrite } from './settle-outputs.ts';
import { writeOutput } from '../output-writer.ts';
import type { OrchestrationContext } from './context.ts';
import { decideOutcome, type FinalizeMode, type RecordedLimitation, type TerminalStatus } from './job-outcome.ts';
import { isOpenTask, lockJob, selectTasks, type LockedJob } from '../tasks/task-rows.ts';
import { cancelUnfinishedTasks } from '../tasks/task-repo.ts';
import { affected, inTransaction, type Trx } from '../../db/transaction.ts';
import type { LaneStatus } from '../../contract/lanes.ts';
import { finishComparison } from '../changes/comparison.ts';

export interface FinalizeOptions {
  /** A job-level failure code (plan_failed, product_not_available). */
  failure?: string;
}

/** Caller holds the job row lock (lockJob). Returns the terminal status, or null if already terminal. */
export async function finalizeLocked(
  trx: Trx,
  ctx: OrchestrationContext,
  job: LockedJob,
  mode: FinalizeMode,
  opts: FinalizeOptions = {},
): Promise<TerminalStatus | null> {
  if (isTerminal(job.status)) return null;
  // A job cancelled by its owner ends `cancelled` even when the deadline sweeper gets there first.
  const effective: FinalizeMode = job.status === 'cancelling' ? 'cancel' : mode;
  // A settle is only due when nothing is open. A caller that decided so before taking the lock
  // (the reconciler's idle sweep) may be stale by now: refuse rather than cancel live work.
  if (effective === 'settle' && !opts.failure && (await countOpenTasks(trx, job.id)) > 0) {
    ctx.log.warn({ jobId: job.id }, 'settle refused: the job has open tasks');
    return null;
  }
  const reason = effective === 'deadline' ? 'deadline_exceeded' : 'job_cancelled';
  // Nothing is open on a normal settle; after a cancel or a deadline, what is left will not run.
  // A runner still executing one of these loses its compare-and-set and writes nothing.
  await cancelUnfinishedTasks(trx, job.id, reason, { includeRunning: true });
  // Finished but never applied (their notices were not handled yet): settled, and what they found written.
  await settleAndWrite(trx, job, await selectTasks(trx, job.id, { unappliedOnly: true }));
  const def = ctx.catalog.get(job.product);
  // A lookup assembles its envelope from its few tasks' outputs; a scan may have thousands of
  // tasks, so it is decided from their statuses and the limitations counted as they were applied.
  const assembles = Boolean(def?.job?.assemble);
  const tasks = await selectTasks(trx, job.id, { withOutput: assembles });
  const captured = await sql<{ c: number }>`SELECT credits_captured AS c FROM jobs WHERE id = ${job.id}`.execute(trx);
  const outcome = decideOutcome({
    def,
    productId: job.product,
    input: job.input,
    requestId: job.request_id,
    tasks,
    ...(assembles ? {} : { recordedLimitations: await recordedLimitations(trx, job.id) }),
    mode: effective,
    charged: Number(captured.rows[0]?.c ?? 0),
    ...(opts.failure ? { failure: opts.failure } : {}),
  });
  const done =
    await sql`UPDATE jobs SET status = ${outcome.status}, result = ${outcome.result ? JSON.stringify(outcome.result) : null},
      coverage = ${JSON.stringify(outcome.coverage)}, completed_at = NOW(3)
    WHERE id = ${job.id} AND status IN ('queued', 'running', 'cancelling')`.execute(trx);
  if (affected(done) !== 1) return null;
  // What the product derived across lanes, in the same transaction as the terminal status: a
  // reader never sees a terminal job without its derived findings.
  for (const d of outcome.derived ?? []) {
    const laneStatus = tasks.find((t) => t.product_lane === d.lane)?.status;
    await writeOutput(
      trx,
      { jobId: job.id, workspaceId: job.workspace_id, productLane: d.lane, distance: 0 },
      { status: laneStatus && !isOpenTask(laneStatus) ? (laneStatus as LaneStatus) : 'completed', ...d },
    );
  }
  // The comparison with the baseline, complete when the job is seen terminal (CONTRACT §13).
  await finishComparison(trx, job.id, def?.job?.changes);
  await releaseRemainder(trx, job.id);
  ctx.log.info({ jobId: job.id, status: outcome.status, mode: effective }, 'job finalized');
  return outcome.status;
}

/** The limitations counted per job as its tasks were applied (apply-result.ts). */
async function recordedLimitations(trx: Trx, jobId: number): Promise<RecordedLimitation[]> {
  const rows = await sql<{ code: string; occurrences: number; message: string; gap: number }>`
    SELECT code, occurrences, message, gap FROM job_limitations WHERE job_id = ${jobId} ORDER BY code`.execute(trx);
  return rows.rows.map((r) => ({
    code: r.code,
    gap: Number(r.gap) === 1,
    message: Number(r.occurrences) > 1 ? `${r.message} (${r.occurrences} occurrences)` : r.message,
  }));
}

export async function finalizeJob(
  ctx: OrchestrationContext,
  jobId: number,
  mode: FinalizeMode,
  opts: FinalizeOptions = {},
): Promise<TerminalStatus | null> {
  return inTransaction(ctx.db, async (trx) => {
    const job = await lockJob(trx, jobId);
    if (!job) return null;
    return finalizeLocked(trx, ctx, job, mode, opts);
  });
}
