// Reads behind the result, finding and object routes (CONTRACT §10). Pages are keyset queries on
// the per-job `seq` (unique (job_id, seq) index): `seq > last ORDER BY seq LIMIT n+1`, so a page
// at depth 100,000 costs what the first page costs. seq is taken under the job row lock by the
// writer, so commit order is seq order and a reader never sees seq n+1 without seq n: pages read
// while the job runs never skip or repeat. Every query is scoped by job (and the job was found
// within the caller's workspace); objects are also matched on workspace_id. A tombstone (an
// object folded into another, src/jobs/object-folds.ts) is no object: no read returns it.
import type { Expression, SqlBool } from 'kysely';
import type { Db } from '../db/database.ts';
import { SEVERITIES, type Severity } from '../contract/tasks.ts';

/** findings.severity stores the index in SEVERITIES: info 0, low 1, medium 2, high 3, critical 4. */
export function severityRank(s: Severity): number {
  return SEVERITIES.indexOf(s);
}

export function severityName(rank: number): Severity {
  return SEVERITIES[rank] ?? 'info';
}

export interface ObjectRow {
  id: number;
  public_id: string;
  seq: number;
  type: string;
  okey: string;
  distance: number;
  projection: unknown;
  lanes: unknown;
  evidence: unknown;
  first_seen_at: Date;
}

export interface FindingRow {
  id: number;
  public_id: string;
  seq: number;
  code: string;
  severity: number;
  confidence: string;
  title: string;
  summary: string;
  evidence: unknown;
  sources: unknown;
  detected_at: Date;
  object_public_id: string;
}

export interface Page<T> {
  rows: T[];
  /** More rows exist after this page right now. */
  hasMore: boolean;
}

const OBJECT_COLUMNS = [
  'id',
  'public_id',
  'seq',
  'type',
  'okey',
  'distance',
  'projection',
  'lanes',
  'evidence',
  'first_seen_at',
] as const;

export async function objectPage(db: Db, jobId: number, afterSeq: number, limit: number): Promise<Page<ObjectRow>> {
  const rows = (await db
    .selectFrom('objects')
    .select(OBJECT_COLUMNS)
    .where('job_id', '=', jobId)
    .where('seq', '>', afterSeq)
    .where('folded_into', 'is', null)
    .orderBy('seq', 'asc')
    .limit(limit + 1)
    .execute()) as ObjectRow[];
  return { rows: rows.slice(0, limit), hasMore: rows.length > limit };
}

export async function findingPage(
  db: Db,
  jobId: number,
  afterSeq: number,
  limit: number,
  minSeverity: Severity | undefined,
  /** A further condition on `findings as f` (CONTRACT §15's suppressed=exclude|only). */
  where?: Expression<SqlBool>,
): Promise<Page<FindingRow>> {
  let q = db
    .selectFrom('findings as f')
    .innerJoin('objects as o', 'o.id', 'f.object_id')
    .select([
      'f.id',
      'f.public_id',
      'f.seq',
      'f.code',
      'f.severity',
      'f.confidence',
      'f.title',
      'f.summary',
      'f.evidence',
      'f.sources',
      'f.detected_at',
      'o.public_id as object_public_id',
    ])
    .where('f.job_id', '=', jobId)
    .where('f.seq', '>', afterSeq);
  if (minSeverity && severityRank(minSeverity) > 0) q = q.where('f.severity', '>=', severityRank(minSeverity));
  if (where) q = q.where(where);
  const rows = (await q
    .orderBy('f.seq', 'asc')
    .limit(limit + 1)
    .execute()) as FindingRow[];
  return { rows: rows.slice(0, limit), hasMore: rows.length > limit };
}

const OBJECT_ID_RE = /^obj_[0-9A-HJKMNP-TV-Z]{26}$/;

/** The object of this job and workspace, or null (never-existed and elsewhere look the same). */
export async function findObject(
  db: Db,
  workspaceId: number,
  jobId: number,
  objectPublicId: string,
): Promise<ObjectRow | null> {
  if (!OBJECT_ID_RE.test(objectPublicId)) return null;
  const row = await db
    .selectFrom('objects')
    .select(OBJECT_COLUMNS)
    .where('public_id', '=', objectPublicId)
    .where('job_id', '=', jobId)
    .where('workspace_id', '=', workspaceId)
    .where('folded_into', 'is', null)
    .executeTakeFirst();
  return (row as ObjectRow | undefined) ?? null;
}

export interface RelationRef {
  relation: string;
  direction: 'outgoing' | 'incoming';
  objectId: string;
}

/** Both directions, internal ids mapped to public ids, restricted to the object's own job. */
export async function objectRelations(db: Db, jobId: number, objectId: number): Promise<RelationRef[]> {
  const [outgoing, incoming] = await Promise.all([
    db
      .selectFrom('relations as r')
      .innerJoin('objects as o', 'o.id', 'r.to_object_id')
      .select(['r.relation', 'o.public_id', 'o.seq'])
      .where('r.from_object_id', '=', objectId)
      .where('r.job_id', '=', jobId)
      .where('o.job_id', '=', jobId)
      .where('o.folded_into', 'is', null)
      .orderBy('o.seq', 'asc')
      .execute(),
    db
      .selectFrom('relations as r')
      .innerJoin('objects as o', 'o.id', 'r.from_object_id')
      .select(['r.relation', 'o.public_id', 'o.seq'])
      .where('r.to_object_id', '=', objectId)
      .where('r.job_id', '=', jobId)
      .where('o.job_id', '=', jobId)
      .where('o.folded_into', 'is', null)
      .orderBy('o.seq', 'asc')
      .execute(),
  ]);
  return [
    ...outgoing.map((r) => ({ relation: r.relation, direction: 'outgoing' as const, objectId: r.public_id })),
    ...incoming.map((r) => ({ relation: r.relation, direction: 'incoming' as const, objectId: r.public_id })),
  ];
}

export async function objectFindingIds(db: Db, jobId: number, objectId: number): Promise<string[]> {
  const rows = await db
    .selectFrom('findings')
    .select(['public_id'])
    .where('object_id', '=', objectId)
    .where('job_id', '=', jobId)
    .orderBy('seq', 'asc')
    .execute();
  return rows.map((r) => r.public_id);
}

/** The object's findings, internal id beside the public one (the route marks them: CONTRACT §15). */
export async function objectFindings(
  db: Db,
  jobId: number,
  objectId: number,
): Promise<Array<{ id: number; publicId: string }>> {
  const rows = await db
    .selectFrom('findings')
    .select(['id', 'public_id'])
    .where('object_id', '=', objectId)
    .where('job_id', '=', jobId)
    .orderBy('seq', 'asc')
    .execute();
  return rows.map((r) => ({ id: Number(r.id), publicId: r.public_id }));
}
