// Reads of a job's comparison (CONTRACT §13) for the routes: the changes pages, and the marks of
// the result items, objects and findings a page shows. A changes page is keyset-paged on
// (grp, seq) (job_changes' primary key): one range per (kind, mark) group its filters allow, in
// group order, each `seq > last LIMIT n+1`, so a page costs what a results page costs at any
// depth and under any filter.
//
// Unchanged identities are not stored (./change-codes.ts): the unchanged groups are the job's own
// objects (findings) that have no row, or a row of that group (jobs compared before kept them),
// keyset-paged on their page seq (objects' and findings' (job_id, seq) keys), each probed in
// job_changes by its id (ix_job_changes_object / _finding); the baseline's ids they pair with
// are read by identity for the page only (ix_objects_hash). A mark read for an object or finding
// with no row is `unchanged` when the job has a comparison.
import { sql } from 'kysely';
import type { ChangeMark, UnconfirmedReason } from '../../contract/change-schemas.ts';
import type { Db } from '../../db/database.ts';
import { parseJson } from '../../db/transaction.ts';
import { FINDING_UNCHANGED, OBJECT_UNCHANGED, OBJECT_UNCHANGED_UNHELD, markOfGroup } from './change-codes.ts';

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
  // The unchanged objects the job holds (derived), then those it does not (stored apart).
  const wanted = new Set(groups);
  if (wanted.has(OBJECT_UNCHANGED)) wanted.add(OBJECT_UNCHANGED_UNHELD);
  let baselineId: number | null | undefined;
  const baseline = async () => {
    if (baselineId === undefined) baselineId = await baselineOf(db, jobId);
    return baselineId;
  };
  for (const grp of [...wanted].sort((a, b) => a - b)) {
    if (after && grp < after.grp) continue;
    const from = after && grp === after.grp ? after.seq : -1;
    const want = limit + 1 - rows.length;
    if (grp === OBJECT_UNCHANGED) rows.push(...(await unchangedObjects(db, jobId, await baseline(), from, want)));
    else if (grp === FINDING_UNCHANGED)
      rows.push(...(await unchangedFindings(db, jobId, await baseline(), from, want)));
    else {
      const res = await sql<ChangeRow>`
        SELECT grp, seq, subject_type, subject_key, object_type, object_ref, baseline_object_ref, finding_ref,
          baseline_finding_ref, severity, changed_fields, reason
        FROM job_changes WHERE job_id = ${jobId} AND grp = ${grp} AND seq > ${from}
        ORDER BY seq LIMIT ${want}`.execute(db);
      rows.push(...res.rows);
    }
    if (rows.length > limit) break;
  }
  return { rows: rows.slice(0, limit), hasMore: rows.length > limit };
}

async function baselineOf(db: Db, jobId: number): Promise<number | null> {
  const row = await db.selectFrom('jobs').select('baseline_job_id').where('id', '=', jobId).executeTakeFirst();
  return row?.baseline_job_id === null || row?.baseline_job_id === undefined ? null : Number(row.baseline_job_id);
}

/** The baseline's objects of these identities (ix_objects_hash), by hash. */
async function baselineObjects(
  db: Db,
  baselineId: number | null,
  hashes: readonly Buffer[],
): Promise<Map<string, { id: number; ref: string }>> {
  const out = new Map<string, { id: number; ref: string }>();
  if (baselineId === null || hashes.length === 0) return out;
  const res = await sql<{ id: number; public_id: string; okey_hash: Buffer }>`
    SELECT id, public_id, okey_hash FROM objects
    WHERE job_id = ${baselineId} AND okey_hash IN (${sql.join([...hashes])}) AND folded_into IS NULL`.execute(db);
  for (const r of res.rows) out.set(Buffer.from(r.okey_hash).toString('hex'), { id: Number(r.id), ref: r.public_id });
  return out;
}

/**
 * The job's unchanged objects after page seq `from`: the ones it holds with no row (or a row of
 * the unchanged group: a job compared before rows stopped being stored for them).
 */
async function unchangedObjects(
  db: Db,
  jobId: number,
  baselineId: number | null,
  from: number,
  limit: number,
): Promise<ChangeRow[]> {
  const res = await sql<{ seq: number; type: string; okey: string; okey_hash: Buffer; public_id: string }>`
    SELECT o.seq, o.type, o.okey, o.okey_hash, o.public_id FROM objects o
      LEFT JOIN job_changes jc ON jc.job_id = o.job_id AND jc.object_id = o.id
    WHERE o.job_id = ${jobId} AND o.seq > ${from} AND o.folded_into IS NULL
      AND (jc.grp IS NULL OR jc.grp = ${OBJECT_UNCHANGED})
    ORDER BY o.seq LIMIT ${limit}`.execute(db);
  const base = await baselineObjects(
    db,
    baselineId,
    res.rows.map((r) => Buffer.from(r.okey_hash)),
  );
  return res.rows.map((r) => ({
    grp: OBJECT_UNCHANGED,
    seq: Number(r.seq),
    subject_type: r.type,
    subject_key: r.okey,
    object_type: null,
    object_ref: r.public_id,
    baseline_object_ref: base.get(Buffer.from(r.okey_hash).toString('hex'))?.ref ?? null,
    finding_ref: null,
    baseline_finding_ref: null,
    severity: null,
    changed_fields: null,
    reason: null,
  }));
}

/**
 * The job's unchanged findings after page seq `from`: its findings with no row (or one of the
 * unchanged group). Each is paired with the baseline's finding as the comparison paired them:
 * the same identity's object, the same code, the n-th of that code on it in page order.
 */
async function unchangedFindings(
  db: Db,
  jobId: number,
  baselineId: number | null,
  from: number,
  limit: number,
): Promise<ChangeRow[]> {
  const res = await sql<{
    id: number;
    seq: number;
    public_id: string;
    code: string;
    severity: number;
    object_id: number;
    type: string;
    okey: string;
    okey_hash: Buffer;
    object_ref: string;
  }>`SELECT f.id, f.seq, f.public_id, f.code, f.severity, o.id AS object_id, o.type, o.okey, o.okey_hash,
      o.public_id AS object_ref FROM findings f
      JOIN objects o ON o.id = f.object_id
      LEFT JOIN job_changes jc ON jc.job_id = f.job_id AND jc.finding_id = f.id
    WHERE f.job_id = ${jobId} AND f.seq > ${from} AND o.folded_into IS NULL
      AND (jc.grp IS NULL OR jc.grp = ${FINDING_UNCHANGED})
    ORDER BY f.seq LIMIT ${limit}`.execute(db);
  const base = await baselineObjects(
    db,
    baselineId,
    res.rows.map((r) => Buffer.from(r.okey_hash)),
  );
  const baseFindingRefs = await pairedBaselineFindings(db, jobId, baselineId, res.rows, base);
  return res.rows.map((r) => ({
    grp: FINDING_UNCHANGED,
    seq: Number(r.seq),
    subject_type: r.code,
    subject_key: r.okey,
    object_type: r.type,
    object_ref: r.object_ref,
    baseline_object_ref: base.get(Buffer.from(r.okey_hash).toString('hex'))?.ref ?? null,
    finding_ref: r.public_id,
    baseline_finding_ref: baseFindingRefs.get(Number(r.id)) ?? null,
    severity: Number(r.severity),
    changed_fields: null,
    reason: null,
  }));
}

/** By this job's finding id: the baseline finding of the same object identity and code, at the same rank. */
async function pairedBaselineFindings(
  db: Db,
  jobId: number,
  baselineId: number | null,
  rows: ReadonlyArray<{ id: number; object_id: number; code: string; okey_hash: Buffer }>,
  base: Map<string, { id: number; ref: string }>,
): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  if (baselineId === null || rows.length === 0 || base.size === 0) return out;
  const codes = [...new Set(rows.map((r) => r.code))];
  const objectIds = [...new Set(rows.map((r) => Number(r.object_id)))];
  const [mine, theirs] = await Promise.all([
    sql<{ id: number; object_id: number; code: string }>`
      SELECT id, object_id, code FROM findings WHERE job_id = ${jobId}
        AND object_id IN (${sql.join(objectIds)}) AND code IN (${sql.join(codes)}) ORDER BY seq`.execute(db),
    sql<{ public_id: string; object_id: number; code: string }>`
      SELECT public_id, object_id, code FROM findings WHERE job_id = ${baselineId}
        AND object_id IN (${sql.join([...base.values()].map((b) => b.id))}) AND code IN (${sql.join(codes)})
      ORDER BY seq`.execute(db),
  ]);
  const rank = new Map<number, number>();
  const seen = new Map<string, number>();
  for (const f of mine.rows) {
    const k = `${f.object_id}|${f.code}`;
    const n = seen.get(k) ?? 0;
    rank.set(Number(f.id), n);
    seen.set(k, n + 1);
  }
  const byKey = new Map<string, string[]>();
  for (const f of theirs.rows) {
    const k = `${f.object_id}|${f.code}`;
    byKey.set(k, [...(byKey.get(k) ?? []), f.public_id]);
  }
  for (const r of rows) {
    const b = base.get(Buffer.from(r.okey_hash).toString('hex'));
    const ref = b ? byKey.get(`${b.id}|${r.code}`)?.[rank.get(Number(r.id)) ?? 0] : undefined;
    if (ref) out.set(Number(r.id), ref);
  }
  return out;
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

/** Whether the job's comparison is made (its counts are on its row once it is terminal). */
async function hasComparison(db: Db, jobId: number): Promise<boolean> {
  const row = await db.selectFrom('jobs').select('changes').where('id', '=', jobId).executeTakeFirst();
  return row?.changes !== null && row?.changes !== undefined;
}

/** The ids without a row read `unchanged` when the job has a comparison (nothing is stored for them). */
async function fillUnchanged(
  db: Db,
  jobId: number,
  ids: readonly number[],
  out: Map<number, ItemMark>,
): Promise<Map<number, ItemMark>> {
  const missing = ids.filter((id) => !out.has(id));
  if (missing.length > 0 && (await hasComparison(db, jobId)))
    for (const id of missing) out.set(id, { change: 'unchanged' });
  return out;
}

/** The marks of these objects of the job (ix_job_changes_object). */
export async function objectMarks(db: Db, jobId: number, objectIds: readonly number[]): Promise<Map<number, ItemMark>> {
  const out = new Map<number, ItemMark>();
  if (objectIds.length === 0) return out;
  const res = await sql<{ object_id: number; grp: number; changed_fields: unknown; reason: string | null }>`
    SELECT object_id, grp, changed_fields, reason FROM job_changes
    WHERE job_id = ${jobId} AND object_id IN (${sql.join([...objectIds])})`.execute(db);
  for (const r of res.rows) out.set(Number(r.object_id), markOf(r));
  return fillUnchanged(db, jobId, objectIds, out);
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
  return fillUnchanged(db, jobId, findingIds, out);
}
