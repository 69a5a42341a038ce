// Writes what a check (or a product's finalize-time derivation) found: objects upserted by
// (type, key) per job, relations, and findings (first detection of a code on an object wins).
// Callers hold the job row lock in the same transaction: page sequences (object_seq,
// finding_seq via LAST_INSERT_ID) are taken in commit order, so a page reader never sees seq n+1
// before seq n, and the existence checks below cannot race another writer.
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { parseJson, type Trx } from '../db/transaction.ts';
import { publicId } from '../lib/ids.ts';
import { SEVERITIES, type FindingOut, type LaneStatus, type ObjectOut, type ObjectRef, type RelationOut, type SourceRef } from '../products/types.ts';

/** Where an output comes from: the job, the product lane it belongs to, and its default distance. */
export interface OutputOrigin {
  jobId: number;
  workspaceId: number;
  productLane: string;
  distance: number;
}

/** The persistable part of a CheckOutput (also what a product derives at finalize). */
export interface OutputRows {
  status: LaneStatus;
  objects: ObjectOut[];
  relations: RelationOut[];
  findings: FindingOut[];
  sources: SourceRef[];
}

export function objectHash(ref: ObjectRef): Buffer {
  return createHash('sha256').update(`${ref.type}\n${ref.key}`).digest();
}

interface PlannedObject {
  ref: ObjectRef;
  hash: Buffer;
  distance: number;
  projection: Record<string, unknown>;
  evidence: Array<{ summary: string }>;
  /** Named in output.objects (gets this lane's status); otherwise only referenced. */
  own: boolean;
}

type Evidence = Array<{ ref: string; summary: string }>;
type ObjectLanes = Array<{ lane: string; status: string }>;

const withRefs = (ev: Array<{ summary: string }> | undefined): Evidence =>
  (ev ?? []).map((e) => ({ ref: publicId('ev'), summary: String(e.summary).slice(0, 2000) }));

export async function writeOutput(trx: Trx, t: OutputOrigin, out: OutputRows): Promise<void> {
  const planned = planObjects(t, out);
  if (planned.size === 0) return;
  const ids = await upsertObjects(trx, t, out.status, planned);
  const idOf = (ref: ObjectRef) => ids.get(objectHash(ref).toString('hex'))!;
  const relations = out.relations.map((rel) => sql`(${t.jobId}, ${idOf(rel.from)}, ${rel.relation}, ${idOf(rel.to)})`);
  if (relations.length > 0) {
    await sql`INSERT IGNORE INTO relations (job_id, from_object_id, relation, to_object_id) VALUES ${sql.join(relations)}`.execute(trx);
  }
  await insertFindings(trx, t, out, idOf);
}

/** Every object the output names or references, merged by (type, key). */
function planObjects(t: OutputOrigin, out: OutputRows): Map<string, PlannedObject> {
  const planned = new Map<string, PlannedObject>();
  const add = (ref: ObjectRef, own: boolean, o?: ObjectOut) => {
    const hash = objectHash(ref);
    const k = hash.toString('hex');
    const prev = planned.get(k);
    if (prev) {
      if (own) {
        prev.own = true;
        Object.assign(prev.projection, o?.projection ?? {});
        prev.evidence.push(...(o?.evidence ?? []));
        prev.distance = Math.min(prev.distance, o?.distance ?? t.distance);
      }
      return;
    }
    planned.set(k, {
      ref: { type: ref.type, key: ref.key }, hash, own,
      distance: o?.distance ?? t.distance,
      projection: { ...(o?.projection ?? {}) },
      evidence: [...(o?.evidence ?? [])],
    });
  };
  for (const o of out.objects) add(o, true, o);
  for (const rel of out.relations) {
    add(rel.from, false);
    add(rel.to, false);
  }
  for (const f of out.findings) add(f.object, false);
  return planned;
}

/** Returns hash hex → object id for every planned object. */
async function upsertObjects(trx: Trx, t: OutputOrigin, laneStatus: string, planned: Map<string, PlannedObject>): Promise<Map<string, number>> {
  const hashes = [...planned.values()].map((p) => p.hash);
  const existing = await sql<{ id: number; okey_hash: Buffer; distance: number; projection: unknown; lanes: unknown; evidence: unknown }>`
    SELECT id, okey_hash, distance, projection, lanes, evidence FROM objects
    WHERE job_id = ${t.jobId} AND okey_hash IN (${sql.join(hashes)}) FOR UPDATE`.execute(trx);
  const ids = new Map<string, number>();
  for (const row of existing.rows) {
    const k = Buffer.from(row.okey_hash).toString('hex');
    const p = planned.get(k);
    if (!p) continue;
    ids.set(k, Number(row.id));
    if (!p.own) continue; // only referenced here: leave what its own checks wrote
    const lanes = (parseJson<ObjectLanes>(row.lanes) ?? []).filter((l) => l.lane !== t.productLane);
    lanes.push({ lane: t.productLane, status: laneStatus });
    const projection = { ...(parseJson<Record<string, unknown>>(row.projection) ?? {}), ...p.projection };
    const evidence = [...(parseJson<Evidence>(row.evidence) ?? []), ...withRefs(p.evidence)];
    await sql`UPDATE objects SET projection = ${JSON.stringify(projection)}, lanes = ${JSON.stringify(lanes)},
        evidence = ${JSON.stringify(evidence)}, distance = ${Math.min(Number(row.distance), p.distance)}
      WHERE id = ${row.id}`.execute(trx);
  }
  const fresh = [...planned.entries()].filter(([k]) => !ids.has(k));
  if (fresh.length > 0) {
    const first = await takeSeq(trx, t.jobId, 'object_seq', fresh.length);
    const rows = fresh.map(([, p], i) => sql`(${publicId('obj')}, ${t.jobId}, ${first + i}, ${t.workspaceId}, ${p.ref.type.slice(0, 32)},
      ${p.ref.key.slice(0, 512)}, ${p.hash}, ${p.distance}, ${JSON.stringify(p.projection)},
      ${JSON.stringify(p.own ? [{ lane: t.productLane, status: laneStatus }] : [])}, ${JSON.stringify(withRefs(p.evidence))})`);
    await sql`INSERT INTO objects (public_id, job_id, seq, workspace_id, type, okey, okey_hash, distance, projection, lanes, evidence)
      VALUES ${sql.join(rows)}`.execute(trx);
    const inserted = await sql<{ id: number; okey_hash: Buffer }>`
      SELECT id, okey_hash FROM objects WHERE job_id = ${t.jobId} AND okey_hash IN (${sql.join(fresh.map(([, p]) => p.hash))})`.execute(trx);
    for (const row of inserted.rows) ids.set(Buffer.from(row.okey_hash).toString('hex'), Number(row.id));
  }
  return ids;
}

/** Reserves n page positions; returns the first. The job row is already locked by this transaction. */
async function takeSeq(trx: Trx, jobId: number, column: 'object_seq' | 'finding_seq', n: number): Promise<number> {
  await sql`UPDATE jobs SET ${sql.ref(column)} = LAST_INSERT_ID(${sql.ref(column)} + ${n}) WHERE id = ${jobId}`.execute(trx);
  const res = await sql<{ last: number }>`SELECT LAST_INSERT_ID() AS last`.execute(trx);
  return Number(res.rows[0]!.last) - n + 1;
}

async function insertFindings(trx: Trx, t: OutputOrigin, out: OutputRows, idOf: (ref: ObjectRef) => number): Promise<void> {
  if (out.findings.length === 0) return;
  const keyed = new Map<string, { f: FindingOut; objectId: number }>();
  for (const f of out.findings) {
    const objectId = idOf(f.object);
    const k = `${objectId}\n${f.code}`;
    if (!keyed.has(k)) keyed.set(k, { f, objectId });
  }
  const objectIds = [...new Set([...keyed.values()].map((v) => v.objectId))];
  const existing = await sql<{ object_id: number; code: string }>`
    SELECT object_id, code FROM findings WHERE job_id = ${t.jobId} AND object_id IN (${sql.join(objectIds)})`.execute(trx);
  for (const e of existing.rows) keyed.delete(`${Number(e.object_id)}\n${e.code}`); // first detection wins
  if (keyed.size === 0) return;
  const sources = (out.sources.length > 0 ? out.sources : [{ source: t.productLane }]).map((s) => ({ lane: t.productLane, source: s.source }));
  const first = await takeSeq(trx, t.jobId, 'finding_seq', keyed.size);
  const rows = [...keyed.values()].map(({ f, objectId }, i) => sql`(${publicId('fnd')}, ${t.jobId}, ${first + i}, ${t.workspaceId}, ${objectId},
    ${f.code.slice(0, 64)}, ${Math.max(0, SEVERITIES.indexOf(f.severity))}, ${f.confidence}, ${f.title.slice(0, 300)},
    ${f.summary.slice(0, 2000)}, ${JSON.stringify(withRefs(f.evidence))}, ${JSON.stringify(sources)})`);
  await sql`INSERT INTO findings (public_id, job_id, seq, workspace_id, object_id, code, severity, confidence, title, summary, evidence, sources)
    VALUES ${sql.join(rows)}`.execute(trx);
}
