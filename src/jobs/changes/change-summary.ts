// The change summary of one job (CONTRACT §13): its baseline, and once the job is terminal the
// counts of its comparison with that baseline. Read by the job status (GET /v2/jobs/{job_ref})
// and by monitors for their webhook events (CONTRACT §14), which call it inside the transaction
// that makes the job terminal: the counts are written in that same transaction
// (finishComparison, ./comparison.ts), before anything else of it reads them, so this reads them there.
import type { Db } from '../../db/database.ts';
import { parseJson, type Trx } from '../../db/transaction.ts';

export interface ChangeCounts {
  objects: { new: number; changed: number; gone: number; unconfirmed: number; unchanged: number };
  /**
   * resurfaced and suppressed (CONTRACT §15) are set by the job's terminal work after the
   * comparison (src/jobs/suppressions/apply-suppressions.ts): each of the job's findings counts once.
   */
  findings: {
    new: number;
    resolved: number;
    unconfirmed: number;
    unchanged: number;
    resurfaced: number;
    suppressed: number;
  };
}

export interface ChangeSummary {
  /** The job this one is compared with; null: none (no earlier job of that target qualified). */
  baseline: { jobRef: string; completedAt: string } | null;
  /** null without a baseline, and until the job is terminal. */
  changes: ChangeCounts | null;
}

export function emptyCounts(): ChangeCounts {
  return {
    objects: { new: 0, changed: 0, gone: 0, unconfirmed: 0, unchanged: 0 },
    findings: { new: 0, resolved: 0, unconfirmed: 0, unchanged: 0, resurfaced: 0, suppressed: 0 },
  };
}

/** Stored counts, every field a number (a missing one reads 0, never undefined). */
export function countsOf(v: unknown): ChangeCounts {
  const raw = (parseJson<Partial<Record<keyof ChangeCounts, Record<string, unknown>>>>(v) ?? {}) as Partial<
    Record<keyof ChangeCounts, Record<string, unknown>>
  >;
  const out = emptyCounts();
  for (const kind of ['objects', 'findings'] as const) {
    const part = out[kind] as Record<string, number>;
    for (const k of Object.keys(part)) part[k] = Number(raw[kind]?.[k] ?? 0) || 0;
  }
  return out;
}

export async function readChangeSummary(db: Db | Trx, jobId: number): Promise<ChangeSummary> {
  const row = await db
    .selectFrom('jobs')
    .select(['baseline_ref', 'baseline_completed_at', 'changes'])
    .where('id', '=', jobId)
    .executeTakeFirst();
  if (!row?.baseline_ref || !row.baseline_completed_at) return { baseline: null, changes: null };
  return {
    baseline: { jobRef: row.baseline_ref, completedAt: new Date(row.baseline_completed_at).toISOString() },
    changes: row.changes === null || row.changes === undefined ? null : countsOf(row.changes),
  };
}
