// Reads of what a job's terminal work matched (./apply-suppressions.ts) for the routes: the
// `suppressed` mark of the findings a page shows, by finding id (findings pages, object detail)
// or by public ref (changes items: ix_job_suppressions_ref), the findings page's
// `suppressed=exclude|only` condition, and the job's findingsSummary.
import { sql, type Expression, type SqlBool } from 'kysely';
import type { Db } from '../../db/database.ts';
import { parseJson } from '../../db/transaction.ts';
import type {
  FindingsSummary,
  SuppressedFilter,
  SuppressedMark,
  SuppressionReason,
} from '../../contract/suppression-schemas.ts';

interface MarkRow {
  finding_id: number;
  finding_ref: string;
  suppression_ref: string;
  reason: string;
  expires_at: Date | null;
}

function markOf(r: MarkRow): NonNullable<SuppressedMark> {
  return {
    suppressionId: r.suppression_ref,
    reason: r.reason as SuppressionReason,
    expiresAt: r.expires_at ? new Date(r.expires_at).toISOString() : null,
  };
}

/** The marks of these findings of the job, by finding id (absent: open). */
export async function suppressedById(
  db: Db,
  jobId: number,
  findingIds: readonly number[],
): Promise<Map<number, NonNullable<SuppressedMark>>> {
  const out = new Map<number, NonNullable<SuppressedMark>>();
  if (findingIds.length === 0) return out;
  const res = await sql<MarkRow>`
    SELECT finding_id, finding_ref, suppression_ref, reason, expires_at FROM job_suppressions
    WHERE job_id = ${jobId} AND finding_id IN (${sql.join([...findingIds])})`.execute(db);
  for (const r of res.rows) out.set(Number(r.finding_id), markOf(r));
  return out;
}

/** The marks of these findings of the job, by public ref (changes items carry refs). */
export async function suppressedByRef(
  db: Db,
  jobId: number,
  refs: readonly string[],
): Promise<Map<string, NonNullable<SuppressedMark>>> {
  const out = new Map<string, NonNullable<SuppressedMark>>();
  if (refs.length === 0) return out;
  const res = await sql<MarkRow>`
    SELECT finding_id, finding_ref, suppression_ref, reason, expires_at FROM job_suppressions
    WHERE job_id = ${jobId} AND finding_ref IN (${sql.join([...refs])})`.execute(db);
  for (const r of res.rows) out.set(r.finding_ref, markOf(r));
  return out;
}

/**
 * The findings page's condition on `findings as f` for `suppressed=exclude|only`; undefined for
 * include (no condition). Each row is checked by the primary key of job_suppressions.
 */
export function suppressedCondition(filter: SuppressedFilter | undefined): Expression<SqlBool> | undefined {
  if (filter === 'exclude')
    return sql<SqlBool>`NOT EXISTS (SELECT 1 FROM job_suppressions s WHERE s.job_id = f.job_id AND s.finding_id = f.id)`;
  if (filter === 'only')
    return sql<SqlBool>`EXISTS (SELECT 1 FROM job_suppressions s WHERE s.job_id = f.job_id AND s.finding_id = f.id)`;
  return undefined;
}

/** The job's findingsSummary, written when it became terminal; null before (and for older jobs). */
export async function readFindingsSummary(db: Db, jobId: number): Promise<FindingsSummary> {
  const res = await sql<{ findings_summary: unknown }>`
    SELECT findings_summary FROM jobs WHERE id = ${jobId}`.execute(db);
  return parseJson<NonNullable<FindingsSummary>>(res.rows[0]?.findings_summary) ?? null;
}
