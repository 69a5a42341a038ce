// The baseline of a job (CONTRACT §13), picked when the job starts (the plan op, under the job row
// lock): the workspace's newest job of the same product and normalized target (scans: and profile;
// jobs.target_key) that had ended completed or partial, was never asked to cancel (a cancelled job
// saw only part of the target, whatever status it ended with), was not ended by its deadline (the
// same: `baseline_unfit` 'deadline'), is within retention and not being purged, and was made
// under the same change fingerprint. Two jobs that start together cannot take each other: neither
// has ended. The pick is kept on the job row (ref and completion time too), so the baseline's
// purge does not undo it.
//
// Against retention (./orchestration/retention.ts): a job past JOB_RETENTION_DAYS is never taken,
// and the pick is confirmed under a share lock of the baseline's row, which retention's claim
// holds exclusively while it checks that no open job took the job and marks it 'purging'. Either
// the claim comes first (the confirmation then reads 'purging': no baseline), or the pick commits
// first (the claim then sees the open job that took it, and leaves it for later).
import { sql } from 'kysely';
import type { TaskPlan } from '../../contract/tasks.ts';
import type { Trx } from '../../db/transaction.ts';
import type { ProductDefinition } from '../../products/kit/product-contract.ts';
import type { TaskRef } from '../../queue/task-enqueue.ts';
import { insertPlannedTasks } from '../tasks/task-insert.ts';
import type { LockedJob } from '../tasks/task-rows.ts';

export interface Baseline {
  id: number;
  ref: string;
  completedAt: Date;
}

/**
 * Caller holds the job row lock of a job that is starting. Records the fingerprint and the pick.
 * `retentionDays`: jobs that ended longer ago are retention's, never a baseline.
 */
export async function takeBaseline(
  trx: Trx,
  job: LockedJob,
  fingerprint: string,
  opts: { retentionDays?: number } = {},
): Promise<Baseline | null> {
  const res = await sql<{ id: number; public_id: string; completed_at: Date }>`
    SELECT b.id, b.public_id, b.completed_at FROM jobs j
    JOIN jobs b ON b.workspace_id = j.workspace_id AND b.target_key = j.target_key
    WHERE j.id = ${job.id} AND b.id <> j.id AND b.product = j.product
      AND b.status IN ('completed', 'partial') AND b.cancel_requested_at IS NULL AND b.baseline_unfit IS NULL
      AND b.change_fingerprint = ${fingerprint} AND b.completed_at IS NOT NULL
      ${opts.retentionDays === undefined ? sql`` : sql`AND b.completed_at >= NOW(3) - INTERVAL ${opts.retentionDays} DAY`}
    ORDER BY b.completed_at DESC, b.id DESC LIMIT 1`.execute(trx);
  const b = res.rows[0];
  // Confirmed under the share lock retention's claim conflicts with. Only retention marks an ended
  // job unfit after it ended, and only one past retention: every older candidate is past it too,
  // so when the newest was claimed there is no other to try.
  const kept =
    b &&
    (
      await sql<{
        id: number;
      }>`SELECT id FROM jobs WHERE id = ${b.id} AND baseline_unfit IS NULL LOCK IN SHARE MODE`.execute(trx)
    ).rows.length === 1;
  const baseline = b && kept ? { id: Number(b.id), ref: b.public_id, completedAt: new Date(b.completed_at) } : null;
  await sql`UPDATE jobs SET change_fingerprint = ${fingerprint}, baseline_job_id = ${baseline?.id ?? null},
      baseline_ref = ${baseline?.ref ?? null}, baseline_completed_at = ${baseline?.completedAt ?? null}
    WHERE id = ${job.id}`.execute(trx);
  return baseline;
}

const RECHECK_PAGE = 1000;

/**
 * The baseline's names handed to the product's recheck (a scan's planner), a page at a time in
 * the baseline's own order, at most the job's object cap of them: their tasks are planned after
 * the job's own plan and budgeted with it. Returns the tasks pending now (enqueued by the caller).
 */
export async function planRechecks(
  trx: Trx,
  job: LockedJob,
  def: ProductDefinition,
  baselineId: number,
): Promise<TaskRef[]> {
  const recheck = def.job?.recheck;
  if (!recheck) return [];
  const capRow = await sql<{ object_cap: number | null }>`SELECT object_cap FROM jobs WHERE id = ${job.id}`.execute(
    trx,
  );
  const cap = capRow.rows[0]?.object_cap ?? null;
  let left = cap === null ? Number.POSITIVE_INFINITY : Number(cap);
  const pending: TaskRef[] = [];
  let after = 0;
  while (left > 0) {
    const rows = await sql<{ seq: number; okey: string; distance: number }>`
      SELECT seq, okey, distance FROM objects
      WHERE job_id = ${baselineId} AND seq > ${after} AND type IN ('host', 'domain') AND folded_into IS NULL
      ORDER BY seq LIMIT ${Math.min(RECHECK_PAGE, left)}`.execute(trx);
    if (rows.rows.length === 0) break;
    after = Number(rows.rows.at(-1)!.seq);
    left -= rows.rows.length;
    const plans: TaskPlan[] = recheck(
      job.input,
      rows.rows.map((r) => ({ name: r.okey, distance: Number(r.distance) })),
    );
    if (plans.length > 0) pending.push(...(await insertPlannedTasks(trx, job, plans)));
  }
  return pending;
}
