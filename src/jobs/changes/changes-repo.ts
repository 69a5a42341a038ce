// Reads of a job's comparison (CONTRACT §13) for the routes: the changes pages, and the marks of
// the result items, objects and findings a page shows. A changes page is keyset-paged on
// (grp, seq) (job_changes' primary key): one range per (kind, mark) group its filters allow, in
// group order, each `seq > last LIMIT n+1`, so a page costs what a results page costs at any
// depth and under any filter (unchanged rows are never walked past to reach the others).
import { sql } from 'kysely';
import type { ChangeMark, UnconfirmedReason } from '../../contract/change-schemas.ts';
import type { Db } from '../../db/database.ts';
import { parseJson } from '../../db/transaction.ts';
import { markOfGroup } from './change-codes.ts';

/** A keyset position: the last (group, seq) a client was given. */
export interface ChangePosition {
  grp: number;
  seq: number;
}

const SEQ_BITS = 2 ** 24;

/** The position as the cursor's one u32 (a job has far fewer than 16.7 million identities). */
export function packPosition(p: ChangePosition): number {
  if (p.seq >= SEQ_BITS || p.grp > 255) throw new Error('change position out of range');
  return p.grp * SEQ_BITS + p.seq;
}

export function unpackPosition(n: number): ChangePosition {
  return { grp: Math.floor(n / SEQ_BITS), seq: n % SEQ_BITS };
}

export interface ChangeRow {
  grp: number;
  seq: number;
  subject_type: string;
  subject_key: string;
  object_type: string | null;
  object_ref: string | null;
  baseline_object_ref: string | null;
  finding_ref: string | null;
  baseline_finding_ref: string | null;
  severity: number | null;
  changed_fields: unknown;
  reason: string | null;
}

/** The next `limit` rows after `after` among `groups` (ascending), and whether more follow. */
export async function changePage(
  db: Db,
  jobId: number,
  groups: readonly number[],
  after: ChangePosition | null,
  limit: number,
): Promise<{ rows: ChangeRow[]; hasMore: boolean }> {
  const rows: ChangeRow[] = [];
  for (const grp of [...groups].sort((a, b) => a - b)) {
    if (after && grp < after.grp) continue;
    const from = after && grp === after.grp ? after.seq : -1;
    const want = limit + 1 - rows.length;
    const res = await sql<ChangeRow>`
      SELECT grp, seq, subject_type, subject_key, object_type, object_ref, baseline_object_ref, finding_ref,
        baseline_finding_ref, severity, changed_fields, reason
      FROM job_changes WHERE job_id = ${jobId} AND grp = ${grp} AND seq > ${from}
      ORDER BY seq LIMIT ${want}`.execute(db);
    rows.push(...res.rows);
    if (rows.length > limit) break;
  }
  return { rows: rows.slice(0, limit), hasMore: rows.length > limit };
}

export interface ItemMark {
  change: ChangeMark;
  changedFields?: string[];
  changeReason?: UnconfirmedReason;
}

function markOf(r: { grp: number; changed_fields: unknown; reason: string | null }): ItemMark {
  const fields = parseJson<string[]>(r.changed_fields);
  return {
    change: markOfGroup(Number(r.grp)),
    ...(Array.isArray(fields) && fields.length > 0 ? { changedFields: fields } : {}),
    ...(r.reason ? { changeReason: r.reason as UnconfirmedReason } : {}),
  };
}

/** The marks of these objects of the job (ix_job_changes_object). */
export async function objectMarks(db: Db, jobId: number, objectIds: readonly number[]): Promise<Map<number, ItemMark>> {
  const out = new Map<number, ItemMark>();
  if (objectIds.length === 0) return out;
  const res = await sql<{ object_id: number; grp: number; changed_fields: unknown; reason: string | null }>`
    SELECT object_id, grp, changed_fields, reason FROM job_changes
    WHERE job_id = ${jobId} AND object_id IN (${sql.join([...objectIds])})`.execute(db);
  for (const r of res.rows) out.set(Number(r.object_id), markOf(r));
  return out;
}

/** The marks of these findings of the job (ix_job_changes_finding). */
export async function findingMarks(
  db: Db,
  jobId: number,
  findingIds: readonly number[],
): Promise<Map<number, ItemMark>> {
  const out = new Map<number, ItemMark>();
  if (findingIds.length === 0) return out;
  const res = await sql<{ finding_id: number; grp: number; changed_fields: unknown; reason: string | null }>`
    SELECT finding_id, grp, changed_fields, reason FROM job_changes
    WHERE job_id = ${jobId} AND finding_id IN (${sql.join([...findingIds])})`.execute(db);
  for (const r of res.rows) out.set(Number(r.finding_id), markOf(r));
  return out;
}
