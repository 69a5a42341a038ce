// The inventory updated from a job's end (CONTRACT §16), after the terminal transaction that
// stored its comparison and applied its suppressions, in pages the caller commits one by one
// (./inventory-pending.ts). Only this job's workspace is touched.
//
//   held (an object the job holds that records no absence)  → present: lastSeenAt, lastCheckedAt,
//       the products that saw it, its open findings (unsuppressed, by severity) from this job;
//       changedAt when the comparison marked it new or changed (or it is new to the estate);
//       its findings upserted into inventory_findings, marked as this job's end left them
//   the comparison's `gone` (an observed absence)         → gone, its findings leave the open list
//   the comparison's `resolved` finding                    → leaves the open list
//   the comparison's `unconfirmed` object (not held)       → unconfirmed, lastSeenAt kept and
//       lastCheckedAt not advanced; only while no later job has seen it (its last sighting is the
//       baseline's, or older)
//   without a comparison, an absence the job recorded (an NXDOMAIN name) → gone, on a row that exists
// A job asked to cancel adds what it held and nothing else: no absence of any kind.
//
// Work is bounded per transaction: the job's objects in pages of CHUNK by seq, each page one
// multi-row upsert in okey_hash order (concurrent jobs of a workspace take row locks in the same
// order), their findings and marks read for that page only; then the comparison's absences.
import { sql } from 'kysely';
import { parseJson, type Trx } from '../../db/transaction.ts';
import type { ChangeRules } from '../../products/kit/change-rules.ts';
import { groupOf } from '../changes/change-codes.ts';
import { objectHash } from '../output-writer.ts';
import { findingIdentity, reversedHost } from './inventory-keys.ts';
import type { EstateJobState } from './estate-job.ts';

const CHUNK = 500;

export interface InventoryJob {
  id: number;
  workspaceId: number;
  product: string;
  publicId: string;
}

interface ObjRow {
  id: number;
  public_id: string;
  type: string;
  okey: string;
  projection?: unknown;
}

interface FndRow {
  object_id: number;
  public_id: string;
  code: string;
  severity: number;
  suppression_ref: string | null;
  reason: string | null;
  expires_at: Date | null;
}

const OBJECT_GONE = groupOf('object', 'gone');
const OBJECT_UNCONFIRMED = groupOf('object', 'unconfirmed');
const OBJECT_NEW = groupOf('object', 'new');
const OBJECT_CHANGED = groupOf('object', 'changed');
const FINDING_RESOLVED = groupOf('finding', 'resolved');

export interface InventoryOutcome {
  present: number;
  gone: number;
  unconfirmed: number;
}

/** What one page of the job's objects did, and where the next page starts (null: none left). */
export interface InventoryChunk extends InventoryOutcome {
  nextSeq: number | null;
}

/**
 * One page of the job's objects (seq > afterSeq, at most pageSize): those it holds upserted, and
 * without a comparison the absences it recorded marked gone (a job asked to cancel: none). The
 * caller commits the page with its cursor (./inventory-pending.ts), so a page is never applied twice.
 */
export async function updateInventoryChunk(
  trx: Trx,
  job: InventoryJob,
  rules: ChangeRules | undefined,
  state: EstateJobState,
  afterSeq: number,
  pageSize = CHUNK,
): Promise<InventoryChunk> {
  const compared = isCompared(state);
  const out: InventoryChunk = { present: 0, gone: 0, unconfirmed: 0, nextSeq: null };
  const absentKeys: Array<{ type: string; okey: string }> = [];
  const readProjection = !compared && rules?.absent !== undefined;
  const res = await sql<ObjRow & { seq: number }>`
    SELECT id, seq, public_id, type, okey ${readProjection ? sql`, projection` : sql``} FROM objects
    WHERE job_id = ${job.id} AND seq > ${afterSeq} AND folded_into IS NULL ORDER BY seq LIMIT ${pageSize}`.execute(trx);
  if (res.rows.length === 0) return out;
  if (res.rows.length === pageSize) out.nextSeq = Number(res.rows.at(-1)!.seq);
  const marks = compared
    ? await objectMarks(
        trx,
        job.id,
        res.rows.map((r) => Number(r.id)),
      )
    : new Map<number, number>();
  const held: ObjRow[] = [];
  for (const o of res.rows) {
    const grp = marks.get(Number(o.id));
    if (grp === OBJECT_GONE) continue; // an absence record: the comparison's gone (updateInventoryAbsences)
    if (readProjection && rules!.absent!(o.type, parseJson<Record<string, unknown>>(o.projection) ?? {})) {
      absentKeys.push({ type: o.type, okey: o.okey });
      continue;
    }
    held.push(o);
  }
  if (held.length > 0) {
    await upsertHeld(trx, job, held, marks);
    out.present += held.length;
  }
  // Without a comparison an absence the job recorded is gone, page by page: the keys of one job's
  // objects are distinct, so no page's upsert and another's gone touch the same row.
  if (!state.cancelRequested && absentKeys.length > 0) out.gone += await markGone(trx, job.workspaceId, absentKeys);
  return out;
}

/**
 * After the last page: the comparison's gone, unconfirmed and resolved marks (nothing for a job
 * asked to cancel, nor without a comparison).
 */
export async function updateInventoryAbsences(
  trx: Trx,
  job: InventoryJob,
  state: EstateJobState,
): Promise<InventoryOutcome> {
  const out: InventoryOutcome = { present: 0, gone: 0, unconfirmed: 0 };
  if (state.cancelRequested || !isCompared(state)) return out;
  const res = await changedSubjects(trx, job.id, [OBJECT_GONE, OBJECT_UNCONFIRMED, FINDING_RESOLVED]);
  const gone = res.filter((r) => Number(r.grp) === OBJECT_GONE);
  const unconfirmed = res.filter((r) => Number(r.grp) === OBJECT_UNCONFIRMED && r.object_id === null);
  const resolved = res.filter((r) => Number(r.grp) === FINDING_RESOLVED);
  out.gone += await markGone(
    trx,
    job.workspaceId,
    gone.map((r) => ({ type: r.subject_type, okey: r.subject_key })),
  );
  out.unconfirmed += await markUnconfirmed(
    trx,
    job.workspaceId,
    unconfirmed.map((r) => objectHash({ type: r.subject_type, key: r.subject_key })),
    state.baselineJobId!,
    state.baselineCompletedAt,
  );
  const ids = resolved.map((r) => findingIdentity(r.subject_type, r.object_type ?? '', r.subject_key));
  for (let i = 0; i < ids.length; i += CHUNK)
    await sql`DELETE FROM inventory_findings WHERE workspace_id = ${job.workspaceId}
      AND identity_hash IN (${sql.join(ids.slice(i, i + CHUNK))})`.execute(trx);
  return out;
}

/** The whole update in the caller's transaction: every page, then the absences. */
export async function updateInventory(
  trx: Trx,
  job: InventoryJob,
  rules: ChangeRules | undefined,
  state: EstateJobState,
): Promise<InventoryOutcome> {
  const out: InventoryOutcome = { present: 0, gone: 0, unconfirmed: 0 };
  let after: number | null = 0;
  while (after !== null) {
    const page: InventoryChunk = await updateInventoryChunk(trx, job, rules, state, after);
    addOutcome(out, page);
    after = page.nextSeq;
  }
  addOutcome(out, await updateInventoryAbsences(trx, job, state));
  return out;
}

export function addOutcome(into: InventoryOutcome, add: InventoryOutcome): void {
  into.present += add.present;
  into.gone += add.gone;
  into.unconfirmed += add.unconfirmed;
}

function isCompared(state: EstateJobState): boolean {
  return state.baselineJobId !== null && state.changes !== null;
}

async function objectMarks(trx: Trx, jobId: number, ids: readonly number[]): Promise<Map<number, number>> {
  const res = await sql<{ object_id: number; grp: number }>`
    SELECT object_id, grp FROM job_changes WHERE job_id = ${jobId} AND object_id IN (${sql.join([...ids])})
      AND grp < 8`.execute(trx);
  return new Map(res.rows.map((r) => [Number(r.object_id), Number(r.grp)]));
}

async function changedSubjects(trx: Trx, jobId: number, groups: number[]) {
  const res = await sql<{
    grp: number;
    subject_type: string;
    subject_key: string;
    object_type: string | null;
    object_id: number | null;
  }>`SELECT grp, subject_type, subject_key, object_type, object_id FROM job_changes
    WHERE job_id = ${jobId} AND grp IN (${sql.join(groups)})`.execute(trx);
  return res.rows;
}

async function upsertHeld(trx: Trx, job: InventoryJob, held: ObjRow[], marks: Map<number, number>): Promise<void> {
  const ids = held.map((o) => Number(o.id));
  const fres = await sql<FndRow>`
    SELECT f.object_id, f.public_id, f.code, f.severity, s.suppression_ref, s.reason, s.expires_at FROM findings f
      LEFT JOIN job_suppressions s ON s.job_id = f.job_id AND s.finding_id = f.id
    WHERE f.job_id = ${job.id} AND f.object_id IN (${sql.join(ids)})`.execute(trx);
  const byObject = new Map<number, FndRow[]>();
  for (const f of fres.rows) {
    const list = byObject.get(Number(f.object_id)) ?? [];
    list.push(f);
    byObject.set(Number(f.object_id), list);
  }
  const rows = held
    .map((o) => ({ o, hash: objectHash({ type: o.type, key: o.okey }) }))
    .sort((a, b) => Buffer.compare(a.hash, b.hash));
  const values = rows.map(({ o, hash }) => {
    const open = [0, 0, 0, 0, 0];
    for (const f of byObject.get(Number(o.id)) ?? [])
      if (f.suppression_ref === null) open[Number(f.severity)] = (open[Number(f.severity)] ?? 0) + 1;
    const max = open.reduce((best, n, i) => (n > 0 ? i : best), -1);
    return sql`(${job.workspaceId}, ${hash}, ${o.type.slice(0, 32)}, ${o.okey.slice(0, 512)}, ${reversedHost(o.okey)},
      'present', NOW(3), NOW(3), NOW(3), NOW(3), ${job.id}, ${job.publicId}, ${o.public_id}, ${job.product},
      ${open[4]}, ${open[3]}, ${open[2]}, ${open[1]}, ${open[0]}, ${max})`;
  });
  await sql`INSERT INTO inventory (workspace_id, okey_hash, type, okey, rhost, state, first_seen_at, last_seen_at,
      last_checked_at, changed_at, last_job_id, last_job_ref, last_object_ref, products,
      open_critical, open_high, open_medium, open_low, open_info, max_open)
    VALUES ${sql.join(values)}
    ON DUPLICATE KEY UPDATE state = 'present', last_seen_at = VALUES(last_seen_at),
      last_checked_at = VALUES(last_checked_at), last_job_id = VALUES(last_job_id),
      last_job_ref = VALUES(last_job_ref), last_object_ref = VALUES(last_object_ref),
      products = IF(FIND_IN_SET(VALUES(products), products) > 0, products,
        LEFT(CONCAT(products, ',', VALUES(products)), 255)),
      open_critical = VALUES(open_critical), open_high = VALUES(open_high), open_medium = VALUES(open_medium),
      open_low = VALUES(open_low), open_info = VALUES(open_info), max_open = VALUES(max_open)`.execute(trx);
  // changedAt: what the comparison marked new or changed (a new row took it at its insert).
  const marked = rows.filter(({ o }) => {
    const g = marks.get(Number(o.id));
    return g === OBJECT_NEW || g === OBJECT_CHANGED;
  });
  if (marked.length > 0)
    await sql`UPDATE inventory SET changed_at = NOW(3) WHERE workspace_id = ${job.workspaceId}
      AND okey_hash IN (${sql.join(marked.map((r) => r.hash))})`.execute(trx);
  // Its findings, as this job's end left them (suppressed ones kept, marked).
  const findings = held.flatMap((o) =>
    (byObject.get(Number(o.id)) ?? []).map((f) => ({ o, f, id: findingIdentity(f.code, o.type, o.okey) })),
  );
  findings.sort((a, b) => Buffer.compare(a.id, b.id));
  for (let i = 0; i < findings.length; i += CHUNK) {
    const part = findings.slice(i, i + CHUNK).map(
      ({ o, f, id }) => sql`(${job.workspaceId}, ${id}, ${objectHash({ type: o.type, key: o.okey })}, ${f.code},
        ${f.severity}, ${o.type.slice(0, 32)}, ${o.okey.slice(0, 512)}, ${reversedHost(o.okey)}, NOW(3), NOW(3),
        ${job.publicId}, ${f.public_id}, ${f.suppression_ref}, ${f.reason}, ${f.expires_at})`,
    );
    await sql`INSERT INTO inventory_findings (workspace_id, identity_hash, okey_hash, code, severity, object_type,
        object_key, rhost, first_seen_at, last_seen_at, job_ref, finding_ref, suppression_ref, suppression_reason,
        suppression_expires_at)
      VALUES ${sql.join(part)}
      ON DUPLICATE KEY UPDATE severity = VALUES(severity), last_seen_at = VALUES(last_seen_at),
        job_ref = VALUES(job_ref), finding_ref = VALUES(finding_ref), suppression_ref = VALUES(suppression_ref),
        suppression_reason = VALUES(suppression_reason),
        suppression_expires_at = VALUES(suppression_expires_at)`.execute(trx);
  }
}

/** Observed absent: gone, no open finding left. Rows the estate never held are not made for it. */
async function markGone(trx: Trx, workspaceId: number, keys: Array<{ type: string; okey: string }>): Promise<number> {
  const hashes = keys.map((k) => objectHash({ type: k.type, key: k.okey })).sort(Buffer.compare);
  let n = 0;
  for (let i = 0; i < hashes.length; i += CHUNK) {
    const part = hashes.slice(i, i + CHUNK);
    const res = await sql`UPDATE inventory SET state = 'gone', last_checked_at = NOW(3), changed_at = NOW(3),
        open_critical = 0, open_high = 0, open_medium = 0, open_low = 0, open_info = 0, max_open = -1
      WHERE workspace_id = ${workspaceId} AND okey_hash IN (${sql.join(part)})`.execute(trx);
    n += Number(res.numAffectedRows ?? 0n);
    await sql`DELETE FROM inventory_findings WHERE workspace_id = ${workspaceId}
      AND okey_hash IN (${sql.join(part)})`.execute(trx);
  }
  return n;
}

/** Not observed this time: unconfirmed, unless a job since the baseline saw it (its sighting stands). */
async function markUnconfirmed(
  trx: Trx,
  workspaceId: number,
  hashes: Buffer[],
  baselineId: number,
  baselineEnd: Date | null,
): Promise<number> {
  hashes.sort(Buffer.compare);
  let n = 0;
  for (let i = 0; i < hashes.length; i += CHUNK) {
    const res = await sql`UPDATE inventory SET state = 'unconfirmed'
      WHERE workspace_id = ${workspaceId} AND okey_hash IN (${sql.join(hashes.slice(i, i + CHUNK))})
        AND state <> 'gone'
        AND (last_job_id = ${baselineId} ${baselineEnd ? sql`OR last_seen_at < ${baselineEnd}` : sql``})`.execute(trx);
    n += Number(res.numAffectedRows ?? 0n);
  }
  return n;
}
