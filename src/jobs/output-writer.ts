// Writes what a check (or a product's finalize-time derivation) found: objects upserted by
// (type, key) per job, relations, and findings (first detection of a code on an object wins),
// then the output's folds (./object-folds.ts). An object that was folded into another (a
// tombstone) is never written again: whatever names it lands on the object it was folded into.
// Callers hold the job row lock in the same transaction: page sequences (object_seq,
// finding_seq via LAST_INSERT_ID) are taken in commit order, so a page reader never sees seq n+1
// before seq n, and the existence checks below cannot race another writer. Every write puts the
// job's change comparison, if one began, back at its start (./changes/stale-run.ts).
import { createHash } from 'node:crypto';
import { sql, type RawBuilder } from 'kysely';
import { parseJson, type Trx } from '../db/transaction.ts';
import { publicId } from '../contract/ids.ts';
import {
  SEVERITIES,
  type FindingOut,
  type ObjectFold,
  type ObjectOut,
  type ObjectRef,
  type RelationOut,
} from '../contract/tasks.ts';
import type { LaneStatus, SourceRef } from '../contract/lanes.ts';
import { applyFolds } from './object-folds.ts';
import { objectRoom, takeSeq } from './page-seq.ts';
import { invalidateComparison } from './changes/stale-run.ts';

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
  folds?: ObjectFold[];
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
  /** Named in output.objects (its projection, evidence and distance are written); else only referenced. */
  own: boolean;
  /** Examined by this check (gets this lane's status); false for a merely discovered object. */
  checked: boolean;
}

type Evidence = Array<{ ref: string; summary: string }>;
type ObjectLanes = Array<{ lane: string; status: string }>;

const withRefs = (ev: Array<{ summary: string }> | undefined): Evidence =>
  (ev ?? []).map((e) => ({ ref: publicId('ev'), summary: String(e.summary).slice(0, 2000) }));

export async function writeOutput(trx: Trx, t: OutputOrigin, out: OutputRows): Promise<void> {
  await invalidateComparison(trx, t.jobId);
  await writeOne(trx, t, out);
}

async function writeOne(trx: Trx, t: OutputOrigin, out: OutputRows): Promise<void> {
  const planned = planObjects(t, out);
  if (planned.size === 0) return;
  const ids = await upsertObjects(trx, t, out.status, planned);
  // An object past the job's cap was not written: what refers to it is dropped with it.
  const idOf = (ref: ObjectRef) => ids.get(objectHash(ref).toString('hex'));
  const relations = out.relations
    .map((rel) => [idOf(rel.from), rel.relation, idOf(rel.to)] as const)
    // A relation to a folded name may now point from an object to itself: not a relation.
    .filter(([from, , to]) => from !== undefined && to !== undefined && from !== to)
    .map(([from, relation, to]) => sql`(${t.jobId}, ${from}, ${relation}, ${to})`);
  if (relations.length > 0) {
    await sql`INSERT IGNORE INTO relations (job_id, from_object_id, relation, to_object_id) VALUES ${sql.join(relations)}`.execute(
      trx,
    );
  }
  await insertFindings(trx, t, out, idOf);
  if (out.folds && out.folds.length > 0) await applyFolds(trx, t, out.folds, idOf, objectHash);
}

/** What one finished task (or derivation) writes, and where it comes from. */
export interface OutputItem {
  origin: OutputOrigin;
  out: OutputRows;
}

/**
 * writeOutput for many outputs of ONE job, in order, with the effect of writing them one after
 * the other (same objects, merges, cap, page order, first detections) but in a few multi-row
 * statements: the objects they name are read once, merged in memory, inserted (new ones) and
 * updated (known ones) once each, then the relations and findings of all of them are inserted
 * together. An output with folds is written on its own (writeOutput) after what came before it
 * was flushed: folds move rows that later outputs must see.
 */
export async function writeOutputs(trx: Trx, items: readonly OutputItem[]): Promise<void> {
  if (items.length === 0) return;
  await invalidateComparison(trx, items[0]!.origin.jobId);
  let run: OutputItem[] = [];
  for (const item of items) {
    if (item.out.folds && item.out.folds.length > 0) {
      await writeRun(trx, run);
      run = [];
      await writeOne(trx, item.origin, item.out);
    } else run.push(item);
  }
  await writeRun(trx, run);
}

interface ObjectRow {
  id: number;
  okey_hash: Buffer;
  distance: number;
  projection: unknown;
  lanes: unknown;
  evidence: unknown;
  folded_into: number | null;
}

/**
 * The job's objects with these key hashes (of any type), locked for update: by (job_id, okey_hash),
 * ix_objects_hash, in chunks of 1,000 so that one statement stays bounded however large a batch.
 */
async function lockObjects(trx: Trx, jobId: number, hashes: readonly Buffer[]): Promise<ObjectRow[]> {
  const out: ObjectRow[] = [];
  for (let i = 0; i < hashes.length; i += 1000) {
    const rows = await sql<ObjectRow>`SELECT id, okey_hash, distance, projection, lanes, evidence, folded_into
      FROM objects WHERE job_id = ${jobId} AND okey_hash IN (${sql.join(hashes.slice(i, i + 1000))}) FOR UPDATE`.execute(
      trx,
    );
    out.push(...rows.rows);
  }
  return out;
}

interface KnownObject {
  id: number | null;
  foldedInto: number | null;
  distance: number;
  projection: Record<string, unknown>;
  lanes: ObjectLanes;
  evidence: Evidence;
  dirty: boolean;
  /** A new object: its insert values, in creation (page) order. */
  fresh?: { ref: ObjectRef; hash: Buffer };
}

async function writeRun(trx: Trx, items: readonly OutputItem[]): Promise<void> {
  if (items.length === 0) return;
  if (items.length === 1) return writeOne(trx, items[0]!.origin, items[0]!.out);
  const jobId = items[0]!.origin.jobId;
  const workspaceId = items[0]!.origin.workspaceId;
  const plans = items.map((it) => planObjects(it.origin, it.out));
  const hashes = new Map<string, Buffer>();
  for (const p of plans) for (const [k, o] of p) hashes.set(k, o.hash);
  if (hashes.size === 0) return;
  const known = new Map<string, KnownObject>();
  for (const r of await lockObjects(trx, jobId, [...hashes.values()]))
    known.set(Buffer.from(r.okey_hash).toString('hex'), {
      id: Number(r.id),
      foldedInto: r.folded_into === null ? null : Number(r.folded_into),
      distance: Number(r.distance),
      projection: parseJson<Record<string, unknown>>(r.projection) ?? {},
      lanes: parseJson<ObjectLanes>(r.lanes) ?? [],
      evidence: parseJson<Evidence>(r.evidence) ?? [],
      dirty: false,
    });
  const { objectSeq, objectCap: cap } = await objectRoom(trx, jobId);
  let room = cap === null ? Number.POSITIVE_INFINITY : Math.max(0, cap - objectSeq);
  let capDropped = 0;
  const created: KnownObject[] = [];

  // Merge every output's objects in order, exactly as upsertObjects would one output at a time.
  items.forEach((it, i) => {
    const t = it.origin;
    const freshHere: Array<[string, PlannedObject]> = [];
    for (const [k, p] of plans[i]!) {
      const o = known.get(k);
      if (!o) {
        freshHere.push([k, p]);
        continue;
      }
      if (o.foldedInto !== null || !p.own) continue;
      if (p.checked) {
        o.lanes = [...o.lanes.filter((l) => l.lane !== t.productLane), { lane: t.productLane, status: it.out.status }];
      }
      o.projection = p.checked ? { ...o.projection, ...p.projection } : { ...p.projection, ...o.projection };
      o.evidence = [...o.evidence, ...withRefs(p.evidence)];
      o.distance = Math.min(o.distance, p.distance);
      o.dirty = true;
    }
    const rank = (p: PlannedObject) => (p.checked ? 0 : p.own ? 1 : 2);
    const kept =
      freshHere.length <= room ? freshHere : [...freshHere].sort((a, b) => rank(a[1]) - rank(b[1])).slice(0, room);
    capDropped += freshHere.length - kept.length;
    room -= kept.length;
    for (const [k, p] of kept) {
      const o: KnownObject = {
        id: null,
        foldedInto: null,
        distance: p.distance,
        projection: { ...p.projection },
        lanes: p.checked ? [{ lane: t.productLane, status: it.out.status }] : [],
        evidence: withRefs(p.evidence),
        dirty: false,
        fresh: { ref: p.ref, hash: p.hash },
      };
      known.set(k, o);
      created.push(o);
    }
  });
  if (capDropped > 0) {
    await sql`INSERT INTO job_limitations (job_id, code, occurrences, message, gap)
      VALUES (${jobId}, 'object_cap_reached', ${capDropped}, ${`The job's object cap (${cap}) was reached: objects found after it were not recorded, and nothing was planned from them.`}, 1)
      ON DUPLICATE KEY UPDATE occurrences = occurrences + ${capDropped}`.execute(trx);
  }
  if (created.length > 0) {
    const first = await takeSeq(trx, jobId, 'object_seq', created.length);
    for (let i = 0; i < created.length; i += 500) {
      const rows = created.slice(i, i + 500).map((o, j) => {
        const f = o.fresh!;
        return sql`(${publicId('obj')}, ${jobId}, ${first + i + j}, ${workspaceId}, ${f.ref.type.slice(0, 32)},
          ${f.ref.key.slice(0, 512)}, ${f.hash}, ${o.distance}, ${JSON.stringify(o.projection)},
          ${JSON.stringify(o.lanes)}, ${JSON.stringify(o.evidence)})`;
      });
      await sql`INSERT INTO objects (public_id, job_id, seq, workspace_id, type, okey, okey_hash, distance, projection, lanes, evidence)
        VALUES ${sql.join(rows)}`.execute(trx);
      const ids = await sql<{ id: number; okey_hash: Buffer }>`
        SELECT id, okey_hash FROM objects WHERE job_id = ${jobId} AND okey_hash IN (${sql.join(created.slice(i, i + 500).map((o) => o.fresh!.hash))})`.execute(
        trx,
      );
      for (const r of ids.rows) {
        const o = known.get(Buffer.from(r.okey_hash).toString('hex'));
        if (o) o.id = Number(r.id);
      }
    }
  }
  const updated = [...known.values()].filter((o) => o.dirty && !o.fresh);
  for (let i = 0; i < updated.length; i += 200) {
    const chunk = updated.slice(i, i + 200);
    const ids = sql.join(chunk.map((o) => o.id!));
    const cases = (value: (o: KnownObject) => unknown) =>
      sql`CASE id ${sql.join(
        chunk.map((o) => sql`WHEN ${o.id!} THEN ${value(o)}`),
        sql` `,
      )} END`;
    await sql`UPDATE objects SET projection = ${cases((o) => JSON.stringify(o.projection))},
        lanes = ${cases((o) => JSON.stringify(o.lanes))}, evidence = ${cases((o) => JSON.stringify(o.evidence))},
        distance = ${cases((o) => o.distance)}
      WHERE id IN (${ids})`.execute(trx);
  }

  const idOf = (ref: ObjectRef): number | undefined => {
    const o = known.get(objectHash(ref).toString('hex'));
    if (!o) return undefined; // past the cap
    return o.foldedInto ?? o.id ?? undefined;
  };
  const relations = new Map<string, RawBuilder<unknown>>();
  for (const it of items)
    for (const rel of it.out.relations) {
      const from = idOf(rel.from);
      const to = idOf(rel.to);
      if (from === undefined || to === undefined || from === to) continue;
      const k = `${from}\n${rel.relation}\n${to}`;
      if (!relations.has(k)) relations.set(k, sql`(${jobId}, ${from}, ${rel.relation}, ${to})`);
    }
  const relRows = [...relations.values()];
  for (let i = 0; i < relRows.length; i += 1000) {
    await sql`INSERT IGNORE INTO relations (job_id, from_object_id, relation, to_object_id) VALUES ${sql.join(relRows.slice(i, i + 1000))}`.execute(
      trx,
    );
  }

  // Findings: first detection of a code on an object wins, across the batch as across batches.
  const keyed = new Map<string, { f: FindingOut; objectId: number; t: OutputOrigin; sources: SourceRef[] }>();
  for (const it of items)
    for (const f of it.out.findings) {
      const objectId = idOf(f.object);
      if (objectId === undefined) continue;
      const k = `${objectId}\n${f.code}`;
      if (!keyed.has(k)) keyed.set(k, { f, objectId, t: it.origin, sources: it.out.sources });
    }
  if (keyed.size === 0) return;
  const objectIds = [...new Set([...keyed.values()].map((v) => v.objectId))];
  for (let i = 0; i < objectIds.length; i += 1000) {
    const existing = await sql<{ object_id: number; code: string }>`
      SELECT object_id, code FROM findings WHERE job_id = ${jobId} AND object_id IN (${sql.join(objectIds.slice(i, i + 1000))})`.execute(
      trx,
    );
    for (const e of existing.rows) keyed.delete(`${Number(e.object_id)}\n${e.code}`);
  }
  if (keyed.size === 0) return;
  const first = await takeSeq(trx, jobId, 'finding_seq', keyed.size);
  const rows = [...keyed.values()].map(({ f, objectId, t, sources }, i) => {
    const src = findingSources(sources, t.productLane, f);
    return sql`(${publicId('fnd')}, ${jobId}, ${first + i}, ${workspaceId}, ${objectId},
      ${f.code.slice(0, 64)}, ${Math.max(0, SEVERITIES.indexOf(f.severity))}, ${f.confidence}, ${f.title.slice(0, 300)},
      ${f.summary.slice(0, 2000)}, ${JSON.stringify(withRefs(f.evidence))}, ${JSON.stringify(src)})`;
  });
  for (let i = 0; i < rows.length; i += 500) {
    await sql`INSERT INTO findings (public_id, job_id, seq, workspace_id, object_id, code, severity, confidence, title, summary, evidence, sources)
      VALUES ${sql.join(rows.slice(i, i + 500))}`.execute(trx);
  }
}

/** Every object the output names or references, merged by (type, key). */
function planObjects(t: OutputOrigin, out: OutputRows): Map<string, PlannedObject> {
  const planned = new Map<string, PlannedObject>();
  const add = (ref: ObjectRef, own: boolean, o?: ObjectOut) => {
    const hash = objectHash(ref);
    const k = hash.toString('hex');
    const prev = planned.get(k);
    const checked = own && !o?.discovered;
    if (prev) {
      if (checked) prev.checked = true;
      if (own) {
        prev.own = true;
        Object.assign(prev.projection, o?.projection ?? {});
        prev.evidence.push(...(o?.evidence ?? []));
        prev.distance = Math.min(prev.distance, o?.distance ?? t.distance);
      }
      return;
    }
    planned.set(k, {
      ref: { type: ref.type, key: ref.key },
      hash,
      own,
      checked,
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
async function upsertObjects(
  trx: Trx,
  t: OutputOrigin,
  laneStatus: string,
  planned: Map<string, PlannedObject>,
): Promise<Map<string, number>> {
  const existing = await lockObjects(
    trx,
    t.jobId,
    [...planned.values()].map((p) => p.hash),
  );
  const ids = new Map<string, number>();
  for (const row of existing) {
    const k = Buffer.from(row.okey_hash).toString('hex');
    const p = planned.get(k);
    if (!p) continue;
    if (row.folded_into !== null) {
      // A tombstone: its relations and findings go to what it was folded into, nothing else.
      ids.set(k, Number(row.folded_into));
      continue;
    }
    ids.set(k, Number(row.id));
    if (!p.own) continue; // only referenced here: leave what its own checks wrote
    const lanes = parseJson<ObjectLanes>(row.lanes) ?? [];
    if (p.checked) {
      lanes.splice(0, lanes.length, ...lanes.filter((l) => l.lane !== t.productLane), {
        lane: t.productLane,
        status: laneStatus,
      });
    }
    // What a check examined replaces what was known; what it merely saw (a discovered object)
    // only adds: the first provenance of a name stays its provenance.
    const known = parseJson<Record<string, unknown>>(row.projection) ?? {};
    const projection = p.checked ? { ...known, ...p.projection } : { ...p.projection, ...known };
    const evidence = [...(parseJson<Evidence>(row.evidence) ?? []), ...withRefs(p.evidence)];
    await sql`UPDATE objects SET projection = ${JSON.stringify(projection)}, lanes = ${JSON.stringify(lanes)},
        evidence = ${JSON.stringify(evidence)}, distance = ${Math.min(Number(row.distance), p.distance)}
      WHERE id = ${row.id}`.execute(trx);
  }
  const fresh = await withinCap(
    trx,
    t.jobId,
    [...planned.entries()].filter(([k]) => !ids.has(k)),
  );
  if (fresh.length > 0) {
    const first = await takeSeq(trx, t.jobId, 'object_seq', fresh.length);
    const rows = fresh.map(
      ([, p], i) => sql`(${publicId('obj')}, ${t.jobId}, ${first + i}, ${t.workspaceId}, ${p.ref.type.slice(0, 32)},
      ${p.ref.key.slice(0, 512)}, ${p.hash}, ${p.distance}, ${JSON.stringify(p.projection)},
      ${JSON.stringify(p.checked ? [{ lane: t.productLane, status: laneStatus }] : [])}, ${JSON.stringify(withRefs(p.evidence))})`,
    );
    await sql`INSERT INTO objects (public_id, job_id, seq, workspace_id, type, okey, okey_hash, distance, projection, lanes, evidence)
      VALUES ${sql.join(rows)}`.execute(trx);
    const inserted = await sql<{ id: number; okey_hash: Buffer }>`
      SELECT id, okey_hash FROM objects WHERE job_id = ${t.jobId} AND okey_hash IN (${sql.join(fresh.map(([, p]) => p.hash))})`.execute(
      trx,
    );
    for (const row of inserted.rows) ids.set(Buffer.from(row.okey_hash).toString('hex'), Number(row.id));
  }
  return ids;
}

/**
 * The new objects that fit under the job's object cap (a scan profile's), examined ones first,
 * then discovered, then merely referenced. What does not fit is counted as a limitation.
 */
async function withinCap(
  trx: Trx,
  jobId: number,
  fresh: Array<[string, PlannedObject]>,
): Promise<Array<[string, PlannedObject]>> {
  if (fresh.length === 0) return fresh;
  const { objectSeq, objectCap: cap } = await objectRoom(trx, jobId);
  if (cap === null) return fresh;
  const room = Math.max(0, cap - objectSeq);
  if (fresh.length <= room) return fresh;
  const rank = (p: PlannedObject) => (p.checked ? 0 : p.own ? 1 : 2);
  const kept = [...fresh].sort((a, b) => rank(a[1]) - rank(b[1])).slice(0, room);
  const dropped = fresh.length - kept.length;
  await sql`INSERT INTO job_limitations (job_id, code, occurrences, message, gap)
    VALUES (${jobId}, 'object_cap_reached', ${dropped}, ${`The job's object cap (${cap}) was reached: objects found after it were not recorded, and nothing was planned from them.`}, 1)
    ON DUPLICATE KEY UPDATE occurrences = occurrences + ${dropped}`.execute(trx);
  return kept;
}

async function insertFindings(
  trx: Trx,
  t: OutputOrigin,
  out: OutputRows,
  idOf: (ref: ObjectRef) => number | undefined,
): Promise<void> {
  if (out.findings.length === 0) return;
  const keyed = new Map<string, { f: FindingOut; objectId: number }>();
  for (const f of out.findings) {
    const objectId = idOf(f.object);
    if (objectId === undefined) continue; // its object was past the cap
    const k = `${objectId}\n${f.code}`;
    if (!keyed.has(k)) keyed.set(k, { f, objectId });
  }
  if (keyed.size === 0) return;
  const objectIds = [...new Set([...keyed.values()].map((v) => v.objectId))];
  const existing = await sql<{ object_id: number; code: string }>`
    SELECT object_id, code FROM findings WHERE job_id = ${t.jobId} AND object_id IN (${sql.join(objectIds)})`.execute(
    trx,
  );
  for (const e of existing.rows) keyed.delete(`${Number(e.object_id)}\n${e.code}`); // first detection wins
  if (keyed.size === 0) return;
  const first = await takeSeq(trx, t.jobId, 'finding_seq', keyed.size);
  const rows = [...keyed.values()].map(
    ({ f, objectId }, i) => sql`(${publicId('fnd')}, ${t.jobId}, ${first + i}, ${t.workspaceId}, ${objectId},
    ${f.code.slice(0, 64)}, ${Math.max(0, SEVERITIES.indexOf(f.severity))}, ${f.confidence}, ${f.title.slice(0, 300)},
    ${f.summary.slice(0, 2000)}, ${JSON.stringify(withRefs(f.evidence))}, ${JSON.stringify(findingSources(out.sources, t.productLane, f))})`,
  );
  await sql`INSERT INTO findings (public_id, job_id, seq, workspace_id, object_id, code, severity, confidence, title, summary, evidence, sources)
    VALUES ${sql.join(rows)}`.execute(trx);
}

/**
 * A finding's stored sources: the data its task used, each under the task's product lane, and the
 * part of the task that raised it when it names one (FindingOut.part: a scan's mail lane), which
 * the change comparison reads and the pages do not show.
 */
function findingSources(sources: readonly SourceRef[], productLane: string, f: FindingOut) {
  const part = typeof f.part === 'string' && f.part.length > 0 ? { part: f.part.slice(0, 32) } : {};
  return (sources.length > 0 ? sources : [{ source: productLane }]).map((s) => ({
    lane: productLane,
    source: s.source,
    ...part,
  }));
}
