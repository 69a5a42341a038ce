// The terminal transition of a job: the one way a job becomes terminal, called outside any
// transaction by every path that decides a job is done (the last result applied, a cancel with
// nothing running, the plan failing, the sweeper, the reconciler). Four steps, in this order,
// each at its one place in finalizeJob below:
//
//   1. Settle the backlog. Finished tasks whose results were not applied yet (their notices were
//      not handled: an apply lag, a cancel) are settled (captured once, their outputs written) in
//      chunks of at most the result batch, by task id range, each chunk its own transaction under
//      the job row lock. A cancel or deadline first ends the open tasks, so the backlog cannot
//      grow behind the chunks. The whole backlog in one transaction (every output in memory at
//      once) took an orchestrator past its 128 MB heap at 1,500 tasks of 19 KB, and every retry
//      path repeated it (issue 31). A chunk that fails is settled again one task at a time, and
//      a result that cannot be written alone is settled without it (apply-failure.ts). After the
//      last batch of results, whose transaction found nothing left to settle, the first round
//      skips this step (FinalizeOptions.nothingToSettle): the terminal transaction checks again.
//   2. Pre-terminal steps: bounded, resumable work that needs every result settled and must be
//      done before the job is terminal, each one call between the backlog and the terminal
//      transaction (change detection, CONTRACT §13, compares the job with its baseline there).
//   3. The terminal transaction: under the job row lock, re-checks that nothing is open (a
//      settle) and that nothing is left unapplied (else back to step 1), decides the outcome,
//      compare-and-sets the terminal status, writes what the product derived across lanes and
//      releases the unused reservation. What must become true exactly when the job is terminal
//      is written here, after the compare-and-set won (a monitor's event outbox row, CONTRACT
//      §14; the change counts of step 2; the suppressions and the inventory's marker, §15-16):
//      see terminalTransaction. The release stays the last statement (the workspace's credit row
//      is then locked only for the commit).
//   4. After the commit, work the job's end asked for that need not hold its lock: the inventory
//      (CONTRACT §16), in pages, exactly once from its marker (../inventory/inventory-pending.ts);
//      what a crash leaves of it the reconciler resumes.
//
// Only the winner of the terminal compare-and-set releases; releaseRemainder is itself keyed by
// job, so a second release is a no-op. A crash between steps leaves a non-terminal job whose
// remaining steps the reconciler (a cancelling job, a running one with nothing left) or the
// sweeper (its deadline) runs again: each step is idempotent. The terminal transaction never makes
// a scan's comparison: one a late result put back at its start sends the finalize back to step 2
// (COMPARISON_LEFT), so the job row lock is never held across it.
import { sql } from 'kysely';
import { captureTasks, releaseRemainder } from '../../credits/ledger.ts';
import { isTerminal } from '../job-view.ts';
import { countOpenTasks, settleAsNotApplied } from '../tasks/task-settlement.ts';
import { settleAndWrite } from './settle-outputs.ts';
import { writeOutput } from '../output-writer.ts';
import { DEFAULT_RESULT_BATCH, type OrchestrationContext } from './context.ts';
import { decideOutcome, type FinalizeMode, type RecordedLimitation, type TerminalStatus } from './job-outcome.ts';
import { isOpenTask, lockJob, selectTasks, selectUnappliedChunk, type LockedJob } from '../tasks/task-rows.ts';
import { cancelUnfinishedTasks, hasUnappliedFinished, lockTasksForApply } from '../tasks/task-repo.ts';
import { affected, inTransaction, isConnectionError, type Trx } from '../../db/transaction.ts';
import { errInfo } from '../../queue/stream-consumer.ts';
import type { LaneStatus } from '../../contract/lanes.ts';
import { compareBeforeTerminal, comparisonPending, finishComparison } from '../changes/comparison.ts';
import { monitorChangeSummary, recordJobFinished } from '../monitors/monitor-events.ts';
import { recordEstate } from '../inventory/record-estate.ts';
import { drainInventoryOf } from '../inventory/inventory-pending.ts';

export interface FinalizeOptions {
  /** A job-level failure code (plan_failed, product_not_available). */
  failure?: string;
  /**
   * The caller's transaction, under the job row lock, just found nothing left to settle: nothing
   * open, nothing finished and unapplied (the last batch of results: apply-result.ts). Step 1's
   * transaction would only find that again, so the first round goes straight to the terminal
   * transaction, which checks both again under its own lock and sends a result that arrived in
   * between back to step 1. Honoured for a `settle` only (a cancel may leave a backlog).
   */
  nothingToSettle?: boolean;
}

/** The terminal transaction found finished tasks left unapplied: settle them first (step 1). */
const BACKLOG_LEFT = Symbol('backlog left');
/** It found the change comparison not complete (a late result put it back at its start): step 2 first. */
const COMPARISON_LEFT = Symbol('comparison left');
/** Rounds of steps 1–3 before giving up for now (the reconciler or the sweeper comes back). */
const MAX_ROUNDS = 5;

/**
 * Brings the job to its terminal status: settle the backlog in chunks → pre-terminal steps → the
 * terminal transaction. Returns the terminal status, or null when the job was terminal already or
 * a settle was refused (something is still open).
 */
export async function finalizeJob(
  ctx: OrchestrationContext,
  jobId: number,
  mode: FinalizeMode,
  opts: FinalizeOptions = {},
): Promise<TerminalStatus | null> {
  for (let round = 1; ; round++) {
    // 1. The backlog, in bounded chunks.
    const settledAlready = round === 1 && mode === 'settle' && opts.nothingToSettle === true;
    if (!settledAlready && !(await settleBacklog(ctx, jobId, mode, opts))) return null;
    // 2. Pre-terminal steps, one call each.
    await compareBeforeTerminal(ctx.db, jobId, (product) => ctx.catalog.get(product)?.job);
    // 3. The terminal transaction.
    const done = await inTransaction(ctx.db, (trx) => terminalTransaction(trx, ctx, jobId, mode, opts));
    if (done !== BACKLOG_LEFT && done !== COMPARISON_LEFT) {
      // 4. After the commit: the inventory its marker asks for (CONTRACT §16).
      if (done !== null) await writeInventory(ctx, jobId);
      return done;
    }
    if (round >= MAX_ROUNDS) {
      ctx.log.warn(
        { jobId, rounds: round, left: done === BACKLOG_LEFT ? 'results' : 'comparison' },
        'finalize: results keep arriving unapplied (or putting the comparison back); left for the next pass',
      );
      return null;
    }
  }
}

/**
 * Step 4: the inventory of the job's end, in pages after the terminal commit. The job is terminal
 * whatever happens here: a failure leaves the marker to the reconciler (drainStaleInventory).
 */
async function writeInventory(ctx: OrchestrationContext, jobId: number): Promise<void> {
  try {
    await drainInventoryOf(ctx.db, jobId, (product) => ctx.catalog.get(product)?.job?.changes, ctx.log);
  } catch (err) {
    ctx.log.warn({ jobId, err: errInfo(err) }, 'inventory not written after the job ended: left to the reconciler');
  }
}

/** A job cancelled by its owner ends `cancelled` even when the deadline sweeper gets there first. */
function effectiveMode(job: LockedJob, mode: FinalizeMode): FinalizeMode {
  return job.status === 'cancelling' ? 'cancel' : mode;
}

/**
 * Under the job row lock, before anything is settled: what is open may not stay open. A settle is
 * only due when nothing is open; a caller that decided so before taking the lock (the reconciler's
 * idle sweep) may be stale by now: refuse rather than cancel live work. After a cancel, a deadline
 * or a job-level failure, what is left will not run: its tasks end here. A runner still executing
 * one of these loses its compare-and-set and writes nothing, so no finished task can join the
 * backlog after this. Returns false when the settle is refused. One count of the open tasks
 * either way.
 */
async function closeOpenTasks(
  trx: Trx,
  ctx: OrchestrationContext,
  job: LockedJob,
  mode: FinalizeMode,
  opts: FinalizeOptions,
): Promise<boolean> {
  if ((await countOpenTasks(trx, job.id)) === 0) return true;
  if (mode === 'settle' && !opts.failure) {
    ctx.log.warn({ jobId: job.id }, 'settle refused: the job has open tasks');
    return false;
  }
  await cancelUnfinishedTasks(trx, job.id, mode === 'deadline' ? 'deadline_exceeded' : 'job_cancelled', {
    includeRunning: true,
  });
  return true;
}

/**
 * Step 1: settles the job's finished, unapplied tasks, at most a result batch per transaction, in
 * id order. Returns false when there is nothing to finalize (terminal already, or a settle
 * refused).
 */
async function settleBacklog(
  ctx: OrchestrationContext,
  jobId: number,
  mode: FinalizeMode,
  opts: FinalizeOptions,
): Promise<boolean> {
  const begun = await inTransaction(ctx.db, async (trx) => {
    const job = await lockJob(trx, jobId);
    if (!job || isTerminal(job.status)) return 'no' as const;
    if (!(await closeOpenTasks(trx, ctx, job, effectiveMode(job, mode), opts))) return 'no' as const;
    // Nothing finished is left unapplied (the usual case: the last batch applied it all): no chunk
    // transaction to find that out. One finishing meanwhile is caught by the terminal transaction.
    return (await hasUnappliedFinished(trx, job.id)) ? ('backlog' as const) : ('clear' as const);
  });
  if (begun === 'no') return false;
  if (begun === 'clear') return true;
  const size = ctx.resultBatch ?? DEFAULT_RESULT_BATCH;
  let afterId = 0;
  for (;;) {
    let ids: number[] | null;
    try {
      ids = await settleChunk(ctx, jobId, afterId, size);
    } catch (err) {
      // One result of the chunk cannot be written: the chunk again, one task at a time, and the
      // one that fails alone is settled without its result (apply-failure.ts). MySQL being away
      // is no result's fault: the caller retries later.
      if (isConnectionError(err)) throw err;
      ids = await settleChunkOneByOne(ctx, jobId, afterId, size);
    }
    if (ids === null) return false;
    if (ids.length < size) return true;
    afterId = ids[ids.length - 1]!;
  }
}

/** One chunk of the backlog in one transaction; its task ids, or null when the job is terminal. */
async function settleChunk(
  ctx: OrchestrationContext,
  jobId: number,
  afterId: number,
  size: number,
): Promise<number[] | null> {
  return inTransaction(ctx.db, async (trx) => {
    const job = await lockJob(trx, jobId);
    if (!job || isTerminal(job.status)) return null;
    const tasks = await selectUnappliedChunk(trx, job.id, afterId, size);
    const { capture } = await settleAndWrite(trx, job, tasks);
    await captureTasks(trx, capture); // last: the workspace's credit row only for the commit
    return tasks.map((t) => t.id);
  });
}

async function settleChunkOneByOne(
  ctx: OrchestrationContext,
  jobId: number,
  afterId: number,
  size: number,
): Promise<number[] | null> {
  const ids = (
    await inTransaction(ctx.db, (trx) => selectUnappliedChunk(trx, jobId, afterId, size, { withOutput: false }))
  ).map((t) => t.id);
  for (const id of ids) {
    try {
      const settled = await inTransaction(ctx.db, async (trx) => {
        const job = await lockJob(trx, jobId);
        if (!job || isTerminal(job.status)) return false;
        const { capture } = await settleAndWrite(trx, job, await lockTasksForApply(trx, job.id, [id]), {
          rowsLocked: true,
        });
        await captureTasks(trx, capture);
        return true;
      });
      if (!settled) return null;
    } catch (err) {
      if (isConnectionError(err)) throw err;
      const given = await inTransaction(ctx.db, async (trx) => {
        const job = await lockJob(trx, jobId);
        return job !== null && !isTerminal(job.status) && (await settleAsNotApplied(trx, job, id));
      });
      if (given)
        ctx.log.error({ jobId, taskId: id, err: errInfo(err) }, 'task result could not be applied: settled without it');
    }
  }
  return ids;
}

/**
 * Step 3, in one transaction. Returns the terminal status, null when there is nothing to do, or
 * BACKLOG_LEFT when finished tasks are still unapplied (a result that arrived after step 1).
 */
async function terminalTransaction(
  trx: Trx,
  ctx: OrchestrationContext,
  jobId: number,
  mode: FinalizeMode,
  opts: FinalizeOptions,
): Promise<TerminalStatus | null | typeof BACKLOG_LEFT | typeof COMPARISON_LEFT> {
  const job = await lockJob(trx, jobId);
  if (!job || isTerminal(job.status)) return null;
  const effective = effectiveMode(job, mode);
  // Open again since step 1: a batch applied meanwhile may have planned more (a deadline on a
  // running scan). They will not run either.
  if (!(await closeOpenTasks(trx, ctx, job, effective, opts))) return null;
  if (await hasUnappliedFinished(trx, job.id)) return BACKLOG_LEFT;
  const def = ctx.catalog.get(job.product);
  // A lookup assembles its envelope from its few tasks' outputs; a scan may have thousands of
  // tasks, so it is decided from their statuses and the limitations counted as they were applied.
  const assembles = Boolean(def?.job?.assemble);
  // The comparison is made before this transaction (step 2), never under its lock; a lookup's few
  // objects are compared here, after what it derives (finishComparison's inPlace).
  if (!assembles && (await comparisonPending(trx, job.id, def?.job?.changes))) return COMPARISON_LEFT;
  const tasks = await selectTasks(trx, job.id, { withOutput: assembles });
  const outcome = decideOutcome({
    def,
    productId: job.product,
    input: job.input,
    requestId: job.request_id,
    tasks,
    ...(assembles ? {} : { recordedLimitations: await recordedLimitations(trx, job.id) }),
    mode: effective,
    // As the lock read it: nothing in this transaction captures (captures are step 1's and the batches').
    charged: job.credits_captured,
    ...(opts.failure ? { failure: opts.failure } : {}),
  });
  // A job its deadline ended saw only part of its target: never a baseline (CONTRACT §13).
  const unfit = effective === 'deadline' ? 'deadline' : null;
  const done =
    await sql`UPDATE jobs SET status = ${outcome.status}, result = ${outcome.result ? JSON.stringify(outcome.result) : null},
      coverage = ${JSON.stringify(outcome.coverage)}, completed_at = NOW(3), baseline_unfit = ${unfit}
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
  // Whatever must exist exactly when the job is terminal is written here, one call each (the
  // change counts of §13, a monitor's event outbox row of §14), before the release.
  await finishComparison(trx, job.id, def?.job?.changes, { log: ctx.log, inPlace: assembles });
  // The estate (CONTRACT §15-16): suppressions applied and the counts split by them, and the
  // inventory's marker (written from the comparison after the commit, step 4); before the
  // monitor's event, which carries the counts.
  await recordEstate(
    trx,
    { id: job.id, workspaceId: job.workspace_id, product: job.product, publicId: job.public_id },
    ctx.log,
  );
  // A monitor's run: its monitor.job_finished event, carrying the §13 baseline and counts as this
  // transaction has them (the counts are written above it).
  await recordJobFinished(trx, job.id, outcome.status, monitorChangeSummary);
  // The lock read's credits are current: nothing in this transaction captured.
  await releaseRemainder(trx, job.id, {
    publicId: job.public_id,
    workspaceId: job.workspace_id,
    apiKeyId: job.api_key_id,
    month: job.month,
    reserved: job.credits_reserved,
    captured: job.credits_captured,
    settled: job.settled,
  });
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
