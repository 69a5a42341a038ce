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
import { suppressedById } from '../suppressions/job-suppressions.ts';
import type { SuppressedMark } from '../../contract/suppression-schemas.ts';

/** Twice the pages' largest limit: fewer round trips, and a page is still small (about 1 MB of text). */
export const EXPORT_PAGE_SIZE = 1000;

export interface ObjectBatch {
  rows: ObjectRow[];
  /** null: the job has no comparison (no baseline); items then carry `change: null`. */
  marks: Map<number, ItemMark> | null;
}

export interface FindingBatch {
  rows: FindingRow[];
  marks: Map<number, ItemMark> | null;
  /** By finding row id: the suppression its job's terminal work matched (CONTRACT §15); absent: open. */
  suppressed: Map<number, NonNullable<SuppressedMark>>;
  /** By finding row id: the object it is about. */
  subjects: Map<number, FindingSubject>;
}

export async function* objectBatches(db: Db, job: JobRow, pageSize = EXPORT_PAGE_SIZE): AsyncGenerator<ObjectBatch> {
  yield* readAhead(async (after) => {
    const page = await objectPage(db, job.id, after, pageSize);
    const ids = page.rows.map((r) => Number(r.id));
    const marks = job.baseline_ref && ids.length > 0 ? await objectMarks(db, job.id, ids) : null;
    return { batch: { rows: page.rows, marks }, last: lastSeq(page.rows), hasMore: page.hasMore };
  });
}

export async function* findingBatches(db: Db, job: JobRow, pageSize = EXPORT_PAGE_SIZE): AsyncGenerator<FindingBatch> {
  yield* readAhead(async (after) => {
    const page = await findingPage(db, job.id, after, pageSize, undefined);
    return { batch: await withContext(db, job, page.rows), last: lastSeq(page.rows), hasMore: page.hasMore };
  });
}

const lastSeq = (rows: Array<{ seq: number }>) => (rows.length > 0 ? Number(rows.at(-1)!.seq) : null);

/**
 * Keyset pages with one page read ahead: while the consumer turns a page into text and the socket
 * takes it, the next page's queries run in MySQL. Never more than two pages held; the read-ahead
 * starts only once the consumer has asked for the current page, so a stalled client stalls it.
 */
async function* readAhead<B extends { rows: unknown[] }>(
  read: (after: number) => Promise<{ batch: B; last: number | null; hasMore: boolean }>,
): AsyncGenerator<B> {
  let next = read(0);
  for (;;) {
    const page = await next;
    if (page.batch.rows.length === 0) return;
    const more = page.hasMore && page.last !== null;
    if (more) next = read(page.last!);
    // A read-ahead that fails while this page is being written is reported when it is awaited.
    if (more) next.catch(() => {});
    yield page.batch;
    if (!more) return;
  }
}

async function withContext(db: Db, job: JobRow, rows: FindingRow[]): Promise<FindingBatch> {
  const ids = rows.map((r) => Number(r.id));
  const [marks, suppressed, subjects] = await Promise.all([
    job.baseline_ref ? findingMarks(db, job.id, ids) : Promise.resolve(null),
    suppressedById(db, job.id, ids),
    findingSubjects(db, job.id, ids),
  ]);
  return { rows, marks, suppressed, subjects };
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
