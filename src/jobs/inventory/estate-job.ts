// What a job's terminal work needs of its own row for the estate (CONTRACT §15-16): whether it was
// asked to cancel, its baseline and the comparison's counts. Read once, in the terminal
// transaction that holds the row's lock, and handed to the suppressions and the inventory.
import { sql } from 'kysely';
import type { Trx } from '../../db/transaction.ts';

export interface EstateJobState {
  cancelRequested: boolean;
  baselineJobId: number | null;
  baselineCompletedAt: Date | null;
  /** The comparison's counts as stored (jobs.changes); null: no comparison. */
  changes: unknown;
}

export async function readEstateJobState(trx: Trx, jobId: number): Promise<EstateJobState | null> {
  const res = await sql<{
    cancel_requested_at: Date | null;
    baseline_job_id: number | null;
    baseline_completed_at: Date | null;
    changes: unknown;
  }>`SELECT cancel_requested_at, baseline_job_id, baseline_completed_at, changes FROM jobs WHERE id = ${jobId}`.execute(
    trx,
  );
  const r = res.rows[0];
  if (!r) return null;
  return {
    cancelRequested: r.cancel_requested_at !== null,
    baselineJobId: r.baseline_job_id === null ? null : Number(r.baseline_job_id),
    baselineCompletedAt: r.baseline_completed_at,
    changes: r.changes,
  };
}
