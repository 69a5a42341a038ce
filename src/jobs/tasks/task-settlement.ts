// Settling one finished task, under its job's row lock: mark it applied once, count its
// limitations into the job's coverage, and say what to capture for it (completed/partial only;
// CONTRACT §6), which the caller captures once as the last work of its transaction (the
// workspace's credit row is then locked only for the commit: credits/ledger.ts). Shared by
// applying a result as it arrives (orchestration/apply-result.ts) and by the terminal transition
// (orchestration/finalize-job.ts), which applies whatever was not applied yet.
import { sql } from 'kysely';
import type { Limitation } from '../../contract/lanes.ts';
import type { CheckOutput } from '../../contract/tasks.ts';
import type { CaptureRequest } from '../../credits/ledger.ts';
import type { TaskStatus } from '../../db/schema.ts';
import type { Trx } from '../../db/transaction.ts';
import { limitationCode, limitationMessage } from './task-limitations.ts';
import { addTaskCounters, readTaskCounters, recountTaskCounters } from './task-counters.ts';
import { CAPTURED_TASK_STATUSES, isOpenTask, OPEN_STATUSES_SQL, type LockedJob } from './task-rows.ts';
import { invalidateComparison } from '../changes/stale-run.ts';

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

/**
 * Caller holds the job row lock. Settles finished tasks of the job at once: the rows are locked
 * and re-read (only those still unapplied and finished count: a repeat or a redelivered notice in
 * the same batch settles nothing twice), marked applied in one statement, their limitations
 * counted per task in one insert. Returns the tasks it settled, in the given order, and what to
 * capture for them: the caller passes it to captureTasks as the last work of its transaction.
 */
export async function settleTasks<T extends ApplicableTask>(
  trx: Trx,
  job: LockedJob,
  tasks: readonly T[],
  opts: { rowsLocked?: boolean } = {},
): Promise<{ settled: T[]; capture: CaptureRequest }> {
  const none = {
    workspaceId: job.workspace_id,
    jobId: job.id,
    tasks: [],
    // The capture is the transaction's only writer of the job's credits, and comes last.
    lockedJob: {
      publicId: job.public_id,
      reserved: job.credits_reserved,
      captured: job.credits_captured,
      settled: job.settled,
    },
  };
  const candidates = tasks.filter((t) => !t.applied_at && !isOpenTask(t.status));
  if (candidates.length === 0) return { settled: [], capture: none };
  const ids = [...new Set(candidates.map((t) => t.id))];
  // With `rowsLocked`, the caller read these rows FOR UPDATE in this transaction (their status
  // and applied_at are current: lockTasksForApply), so reading them again would only cost a
  // round trip under the job row lock. Otherwise they are locked and re-read here.
  const eligible = opts.rowsLocked
    ? new Set(ids)
    : new Set(
        (
          await sql<{ id: number }>`SELECT id FROM tasks WHERE id IN (${sql.join(ids)})
    AND applied_at IS NULL AND status NOT IN (${OPEN_STATUSES_SQL}) FOR UPDATE`.execute(trx)
        ).rows.map((r) => Number(r.id)),
      );
  const settled: T[] = [];
  for (const t of candidates) {
    if (!eligible.delete(t.id)) continue; // applied already, or a duplicate in this batch
    settled.push(t);
  }
  if (settled.length === 0) return { settled, capture: none };
  await sql`UPDATE tasks SET applied_at = NOW(3) WHERE id IN (${sql.join(settled.map((t) => t.id))})`.execute(trx);
  // The job row's counters (task-counters.ts): these are applied now, and those that did no paid
  // work give their share of the reservation back.
  await addTaskCounters(trx, job.id, {
    unapplied: -settled.length,
    plannedCost: -settled.reduce((a, t) => a + (CAPTURED_TASK_STATUSES.includes(t.status) ? 0 : t.unit_cost), 0),
  });
  await countLimitationsOf(trx, job.id, settled, false);
  const capture = {
    ...none,
    tasks: settled
      .filter((t) => CAPTURED_TASK_STATUSES.includes(t.status) && t.unit_cost > 0)
      .map((t) => ({ taskId: t.id, amount: t.unit_cost })),
  };
  return { settled, capture };
}

/**
 * Caller holds the job row lock. Settles a finished task whose result could not be applied (its
 * output failed to write on every try: apply-failure.ts) as `failed` / `apply_failed`, without
 * its output and without a capture: applied, so the job can end, with the limitation
 * `result_not_applied`. False when it is no longer finished-and-unapplied (applied meanwhile).
 */
export async function settleAsNotApplied(trx: Trx, job: LockedJob, taskId: number): Promise<boolean> {
  const res = await sql<{ unit_cost: number; product_lane: string }>`SELECT unit_cost, product_lane FROM tasks
    WHERE id = ${taskId} AND job_id = ${job.id} AND applied_at IS NULL AND status NOT IN (${OPEN_STATUSES_SQL})
    FOR UPDATE`.execute(trx);
  const row = res.rows[0];
  if (!row) return false;
  await sql`UPDATE tasks SET status = 'failed', reason = 'apply_failed', output = NULL, applied_at = NOW(3)
    WHERE id = ${taskId}`.execute(trx);
  // Its outcome changed (completed → failed) with no output to write: a comparison that already
  // read it as completed observed an absence it did not see (CONTRACT §13).
  await invalidateComparison(trx, job.id);
  // Applied now, with no paid work: its share of the reservation goes back (task-counters.ts).
  await addTaskCounters(trx, job.id, { unapplied: -1, plannedCost: -Number(row.unit_cost) });
  const task: ApplicableTask = {
    id: taskId,
    status: 'failed',
    reason: 'apply_failed',
    unit_cost: Number(row.unit_cost),
    applied_at: null,
    product_lane: row.product_lane,
  };
  await countLimitationsOf(trx, job.id, [task], false);
  return true;
}

/**
 * The task's own limitations and the one its status stands for, counted once per task. With
 * `gap`, they make the job's coverage incomplete by themselves (not a task's note).
 */
export async function countLimitations(trx: Trx, jobId: number, task: ApplicableTask, gap = false): Promise<void> {
  await countLimitationsOf(trx, jobId, [task], gap);
}

/** countLimitations for many tasks in one insert: each code counts once per task that has it. */
async function countLimitationsOf(
  trx: Trx,
  jobId: number,
  tasks: readonly ApplicableTask[],
  gap: boolean,
): Promise<void> {
  const byCode = new Map<string, { l: Limitation; n: number }>();
  for (const task of tasks) {
    const lims: Limitation[] = [...(task.output?.limitations ?? [])];
    if (task.product_lane) {
      const row = { status: task.status, reason: task.reason ?? null, product_lane: task.product_lane };
      const code = limitationCode(row);
      if (code) lims.push({ code, message: limitationMessage(code, 1, row) });
    }
    const mine = new Set<string>();
    for (const l of lims) {
      if (mine.has(l.code)) continue;
      mine.add(l.code);
      const seen = byCode.get(l.code);
      if (seen) seen.n++;
      else byCode.set(l.code, { l, n: 1 });
    }
  }
  if (byCode.size === 0) return;
  const rows = [...byCode.values()].map(
    ({ l, n }) => sql`(${jobId}, ${l.code.slice(0, 64)}, ${n}, ${String(l.message).slice(0, 500)}, ${gap ? 1 : 0})`,
  );
  await sql`INSERT INTO job_limitations (job_id, code, occurrences, message, gap) VALUES ${sql.join(rows)}
    ON DUPLICATE KEY UPDATE occurrences = occurrences + VALUES(occurrences), gap = GREATEST(gap, VALUES(gap))`.execute(
    trx,
  );
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
 * Caller holds the job row lock. This runs once per batch of results: it reads the job row's
 * counter (task-counters.ts), and only when that says 0 (once per job) the tasks themselves, so
 * that a counter gone wrong can never settle a job early: the counters are recounted and
 * `onDrift` hears of it. (A counter too high only delays: the reconciler settles a job that has
 * nothing open or unapplied by its tasks, reconciler.ts.)
 */
export async function countUnsettledTasks(
  trx: Trx,
  jobId: number,
  onDrift?: (counted: number, exact: number) => void,
): Promise<number> {
  const counted = (await readTaskCounters(trx, jobId)).unapplied;
  if (counted > 0) return counted;
  const exact = await countUnsettledExactly(trx, jobId);
  if (exact !== counted) {
    await recountTaskCounters(trx, jobId);
    onDrift?.(counted, exact);
  }
  return exact;
}

async function countUnsettledExactly(trx: Trx, jobId: number): Promise<number> {
  // Two counts, each on its own index (ix_tasks_unapplied, ix_tasks_job), instead of one OR that
  // reads every task of the job. An open task is never applied, so the second count is 0 unless
  // something set applied_at on an open task.
  const res = await sql<{ n: number }>`SELECT
      (SELECT COUNT(*) FROM tasks WHERE job_id = ${jobId} AND applied_at IS NULL)
    + (SELECT COUNT(*) FROM tasks WHERE job_id = ${jobId} AND status IN (${OPEN_STATUSES_SQL}) AND applied_at IS NOT NULL) AS n`.execute(
    trx,
  );
  return Number(res.rows[0]?.n ?? 0);
}
