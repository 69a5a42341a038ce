// The job row's running task counters (migration 008). Applying a batch of results used to ask
// the job's tasks what the reservation stands for and how many are still unapplied: sums and
// counts over a share of the tasks that grew with the job (a 20,000-host scan has ~60,000), on
// every batch, under the job row lock. The answers live on the job row instead, written only by
// holders of that lock (every insert and every apply already takes it), so a batch reads one row.
//
// What each counts, over the job's tasks (recountTaskCounters is the definition, in SQL):
//   * tasks_planned_cost: the unit cost of every task not `budget_exhausted`, except those applied
//     with a status that did no paid work (unavailable, timeout, failed, skipped, cancelled): what
//     the reservation stands for (CONTRACT §6; task-insert.ts). Such a task gives its share back
//     when its result is APPLIED, not when its lane records it (a lane never takes the job lock);
//     until then the budget counts it, which can only stop scheduling earlier, never let captures
//     pass the reservation (docs/products/scan.md, "Budget").
//   * tasks_unapplied: tasks not applied yet, open ones included; 0 means the job may settle.
//   * budget_stopped: some plan was recorded `budget_exhausted`: scheduling has stopped for good.
// A lane's status change (pending → running → finished) changes none of them: only an insert (+),
// an apply (settleTasks: −) and the cancel of unfinished tasks (a recount) do.
import { sql } from 'kysely';
import type { Trx } from '../../db/transaction.ts';
import { BUDGETED_STATUSES_SQL, OPEN_STATUSES_SQL } from './task-rows.ts';
import { forgetTaskCounters, keptTaskCounters, taskCountersOf, type TaskCounters } from '../locked-job-row.ts';

export type { TaskCounters };

/** Caller holds the job row lock. */
export async function readTaskCounters(trx: Trx, jobId: number): Promise<TaskCounters> {
  const kept = keptTaskCounters(trx, jobId);
  if (kept) return { ...kept };
  const res = await sql<{ tasks_planned_cost: number; tasks_unapplied: number; budget_stopped: number }>`
    SELECT tasks_planned_cost, tasks_unapplied, budget_stopped FROM jobs WHERE id = ${jobId}`.execute(trx);
  return taskCountersOf(res.rows[0] ?? {});
}

/** Caller holds the job row lock. Adds to the counters (negative: takes away). */
export async function addTaskCounters(
  trx: Trx,
  jobId: number,
  d: { plannedCost?: number; unapplied?: number; budgetStopped?: boolean },
): Promise<void> {
  const cost = d.plannedCost ?? 0;
  const n = d.unapplied ?? 0;
  if (cost === 0 && n === 0 && !d.budgetStopped) return;
  await sql`UPDATE jobs SET tasks_planned_cost = tasks_planned_cost + ${cost},
      tasks_unapplied = tasks_unapplied + ${n}, budget_stopped = GREATEST(budget_stopped, ${d.budgetStopped ? 1 : 0})
    WHERE id = ${jobId}`.execute(trx);
  const kept = keptTaskCounters(trx, jobId);
  if (kept) {
    kept.plannedCost += cost;
    kept.unapplied += n;
    kept.budgetStopped ||= d.budgetStopped === true;
  }
}

/**
 * Caller holds the job row lock. Sets the counters from the job's tasks: their definition, read
 * once where a change is not a known delta (a cancel of many unfinished tasks, an insert that
 * skipped rows). Reads every task of the job: not for the per-batch path.
 */
export async function recountTaskCounters(trx: Trx, jobId: number): Promise<void> {
  await sql`UPDATE jobs j SET
      tasks_planned_cost = (SELECT COALESCE(SUM(t.unit_cost), 0) FROM tasks t WHERE t.job_id = j.id
        AND t.status <> 'budget_exhausted' AND (t.applied_at IS NULL OR t.status IN (${BUDGETED_STATUSES_SQL}))),
      tasks_unapplied = (SELECT COUNT(*) FROM tasks t WHERE t.job_id = j.id
        AND (t.applied_at IS NULL OR t.status IN (${OPEN_STATUSES_SQL}))),
      budget_stopped = EXISTS (SELECT 1 FROM tasks t WHERE t.job_id = j.id AND t.status = 'budget_exhausted')
    WHERE j.id = ${jobId}`.execute(trx);
  forgetTaskCounters(trx, jobId); // read again when next asked
}
