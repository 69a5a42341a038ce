// Folding a name into the object it is not distinct from (CONTRACT §11: names that only match a
// wildcard collapse into one object). Called by the output writer, under the job row lock, once
// the output's own objects are written. For each fold:
//   - the name's object, if one was recorded (a name seen in an MX, SPF or SAN before its own
//     DNS was compared with the wildcard), becomes a tombstone: `folded_into` set, its relations
//     and findings moved to the object it folds into, and it leaves every page and lookup;
//   - with no object yet, a tombstone is written, so a later output naming it lands on the target
//     instead of recreating it (the writer maps a tombstone to its target);
//   - the target lists it in `projection.collapsed` ({ count, names: first 100 with how each was
//     found }), which is how a client sees the collapsed names.
import { sql } from 'kysely';
import { parseJson, type Trx } from '../db/transaction.ts';
import { publicId } from '../contract/ids.ts';
import type { ObjectFold, ObjectRef } from '../contract/tasks.ts';
import { takeSeq } from './page-seq.ts';

export const COLLAPSED_NAMES_LISTED = 100;
/** Provenance a recorded object carries (scan discoveries), kept in the target's list. */
const PROVENANCE = ['foundVia', 'foundFrom'] as const;

export interface FoldOrigin {
  jobId: number;
  workspaceId: number;
  distance: number;
}

type Hash = (ref: ObjectRef) => Buffer;

export async function applyFolds(
  trx: Trx,
  t: FoldOrigin,
  folds: readonly ObjectFold[],
  idOf: (ref: ObjectRef) => number | undefined,
  hash: Hash,
): Promise<void> {
  const listed = new Map<number, Array<Record<string, string>>>();
  for (const fold of folds) {
    const into = idOf(fold.into);
    if (into === undefined) continue; // its target was past the object cap: nothing to fold into
    const entry = await foldOne(trx, t, fold, into, hash(fold.object));
    if (entry) listed.set(into, [...(listed.get(into) ?? []), entry]);
  }
  for (const [into, entries] of listed) await listOn(trx, into, entries);
}

/** Returns the entry to list on the target, or null when the name was folded before. */
async function foldOne(
  trx: Trx,
  t: FoldOrigin,
  fold: ObjectFold,
  into: number,
  okeyHash: Buffer,
): Promise<Record<string, string> | null> {
  const res = await sql<{ id: number; projection: unknown; folded_into: number | null }>`
    SELECT id, projection, folded_into FROM objects WHERE job_id = ${t.jobId} AND okey_hash = ${okeyHash} FOR UPDATE`.execute(
    trx,
  );
  const row = res.rows[0];
  const entry: Record<string, string> = { name: fold.object.key, ...fold.detail };
  if (!row) {
    const seq = await takeSeq(trx, t.jobId, 'object_seq', 1);
    await sql`INSERT INTO objects (public_id, job_id, seq, workspace_id, type, okey, okey_hash, distance, projection, lanes, evidence, folded_into)
      VALUES (${publicId('obj')}, ${t.jobId}, ${seq}, ${t.workspaceId}, ${fold.object.type.slice(0, 32)}, ${fold.object.key.slice(0, 512)},
        ${okeyHash}, ${t.distance}, '{}', '[]', '[]', ${into})`.execute(trx);
    return entry;
  }
  if (row.folded_into !== null) return null;
  const id = Number(row.id);
  const known = parseJson<Record<string, unknown>>(row.projection) ?? {};
  for (const k of PROVENANCE) if (typeof known[k] === 'string') entry[k] = known[k] as string;
  // Its relations become the target's (a relation between the two would point at itself: dropped).
  await sql`INSERT IGNORE INTO relations (job_id, from_object_id, relation, to_object_id)
    SELECT job_id, IF(from_object_id = ${id}, ${into}, from_object_id), relation, IF(to_object_id = ${id}, ${into}, to_object_id)
    FROM relations WHERE job_id = ${t.jobId} AND (from_object_id = ${id} OR to_object_id = ${id})
      AND NOT (from_object_id IN (${id}, ${into}) AND to_object_id IN (${id}, ${into}))`.execute(trx);
  await sql`DELETE FROM relations WHERE job_id = ${t.jobId} AND (from_object_id = ${id} OR to_object_id = ${id})`.execute(
    trx,
  );
  // Its findings too; one the target already has (same code) stays the target's first detection.
  await sql`UPDATE IGNORE findings SET object_id = ${into} WHERE job_id = ${t.jobId} AND object_id = ${id}`.execute(
    trx,
  );
  await sql`DELETE FROM findings WHERE job_id = ${t.jobId} AND object_id = ${id}`.execute(trx);
  await sql`UPDATE objects SET folded_into = ${into} WHERE id = ${id}`.execute(trx);
  return entry;
}

async function listOn(trx: Trx, into: number, entries: Array<Record<string, string>>): Promise<void> {
  const res = await sql<{ projection: unknown }>`SELECT projection FROM objects WHERE id = ${into} FOR UPDATE`.execute(
    trx,
  );
  const projection = parseJson<Record<string, unknown>>(res.rows[0]?.projection) ?? {};
  const prev = projection.collapsed as { count?: number; names?: Array<Record<string, string>> } | undefined;
  const names = [...(prev?.names ?? [])];
  let count = prev?.count ?? 0;
  for (const e of entries) {
    if (names.some((n) => n.name === e.name)) continue;
    count++;
    if (names.length < COLLAPSED_NAMES_LISTED) names.push(e);
  }
  projection.collapsed = { count, names };
  await sql`UPDATE objects SET projection = ${JSON.stringify(projection)} WHERE id = ${into}`.execute(trx);
}
