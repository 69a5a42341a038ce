// The one reader of a job's pages for exports and the report (CONTRACT §17): the same keyset
// pages the findings and results routes serve (pages-repo.ts: `seq > last LIMIT n`), one page at
// a time, with each page's change marks and, for findings, the type and key of their objects.
// An async generator: the next page is read only when the consumer asks for it, so a streamed
// export holds one page whatever the job's size, and a slow client slows the reads (backpressure).
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Severity } from '../../contract/tasks.ts';
import { findingPage, objectPage, severityName, type FindingRow, type ObjectRow } from '../pages-repo.ts';
import { findingMarks, objectMarks, type ItemMark } from '../changes/changes-repo.ts';
import type { JobRow } from '../job-view.ts';
import type { FindingSubject } from './export-items.ts';

/** The pages' largest limit: few round trips, and a page is still small (500 items). */
export const EXPORT_PAGE_SIZE = 500;

export interface ObjectBatch {
  rows: ObjectRow[];
  /** null: the job has no comparison (no baseline); items then carry `change: null`. */
  marks: Map<number, ItemMark> | null;
}

export interface FindingBatch {
  rows: FindingRow[];
  marks: Map<number, ItemMark> | null;
  /** By finding row id: the object it is about. */
  subjects: Map<number, FindingSubject>;
}

export async function* objectBatches(db: Db, job: JobRow, pageSize = EXPORT_PAGE_SIZE): AsyncGenerator<ObjectBatch> {
  let after = 0;
  for (;;) {
    const page = await objectPage(db, job.id, after, pageSize);
    if (page.rows.length === 0) return;
    const ids = page.rows.map((r) => Number(r.id));
    yield { rows: page.rows, marks: job.baseline_ref ? await objectMarks(db, job.id, ids) : null };
    if (!page.hasMore) return;
    after = Number(page.rows.at(-1)!.seq);
  }
}

export async function* findingBatches(db: Db, job: JobRow, pageSize = EXPORT_PAGE_SIZE): AsyncGenerator<FindingBatch> {
  let after = 0;
  for (;;) {
    const page = await findingPage(db, job.id, after, pageSize, undefined);
    if (page.rows.length === 0) return;
    yield await withContext(db, job, page.rows);
    if (!page.hasMore) return;
    after = Number(page.rows.at(-1)!.seq);
  }
}

async function withContext(db: Db, job: JobRow, rows: FindingRow[]): Promise<FindingBatch> {
  const ids = rows.map((r) => Number(r.id));
  const [marks, subjects] = await Promise.all([
    job.baseline_ref ? findingMarks(db, job.id, ids) : Promise.resolve(null),
    findingSubjects(db, job.id, ids),
  ]);
  return { rows, marks, subjects };
}

/** The objects these findings are about, by finding id (primary keys both ways). */
async function findingSubjects(db: Db, jobId: number, findingIds: number[]): Promise<Map<number, FindingSubject>> {
  const out = new Map<number, FindingSubject>();
  if (findingIds.length === 0) return out;
  const res = await sql<{ id: number; type: string; okey: string }>`
    SELECT f.id, o.type, o.okey FROM findings f JOIN objects o ON o.id = f.object_id
    WHERE f.job_id = ${jobId} AND f.id IN (${sql.join(findingIds)})`.execute(db);
  for (const r of res.rows) out.set(Number(r.id), { type: r.type, key: r.okey });
  return out;
}

/** Findings per severity, all of them (the report's counts; the listed ones are capped). */
export async function severityCounts(db: Db, jobId: number): Promise<Record<Severity, number>> {
  const counts: Record<Severity, number> = { critical: 0, high: 0, medium: 0, low: 0, info: 0 };
  const res = await sql<{ severity: number; n: number }>`
    SELECT severity, COUNT(*) AS n FROM findings WHERE job_id = ${jobId} GROUP BY severity`.execute(db);
  for (const r of res.rows) counts[severityName(Number(r.severity))] += Number(r.n);
  return counts;
}

/**
 * The report's findings: most severe first, then in detection order, at most `limit`. The
 * report is for reading; the export is where every finding of a large job goes.
 */
export async function topFindings(db: Db, job: JobRow, limit: number): Promise<FindingBatch> {
  const res = await sql<FindingRow>`
    SELECT f.id, f.public_id, f.seq, f.code, f.severity, f.confidence, f.title, f.summary, f.evidence,
      f.sources, f.detected_at, o.public_id AS object_public_id
    FROM findings f JOIN objects o ON o.id = f.object_id
    WHERE f.job_id = ${job.id}
    ORDER BY f.severity DESC, f.seq ASC LIMIT ${limit}`.execute(db);
  return withContext(db, job, res.rows);
}
