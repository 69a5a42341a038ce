// The comparison of a finished job with its baseline (CONTRACT §13), made when the job ends and
// kept with it. It runs in bounded chunks (./compare-chunk.ts), each its own transaction holding
// the run's row (change_runs) locked, its position stored with it: a crash resumes at the last
// chunk committed, two orchestrators never compare the same chunk, and nothing of a 20,000-object
// job is held in memory. The counts are written to the job row in the transaction that makes the
// job terminal (finishComparison), so a reader who sees the job terminal sees the whole comparison.
//
// Where it runs (src/jobs/orchestration/finalize-job.ts): as a pre-terminal step, once every
// result is settled (compareBeforeTerminal), for products whose outputs are all written by then
// (a scan). A lookup writes what it derived across lanes in the terminal transaction itself, so
// its comparison (a few dozen objects) is made there, after them. Whatever is left when the
// terminal transaction runs is finished inside it.
//
// Staleness: the run notes the job's object and finding page counters when it starts (in its
// counts, under `seen`). A result applied after that (a task that finished as a cancel or a
// deadline ended the job) adds objects or findings; the terminal transaction then sees the
// counters moved and compares again, inside it. A settle cannot meet this: nothing is open.
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { inTransaction, parseJson, type Trx } from '../../db/transaction.ts';
import type { ChangeRules } from '../../products/kit/change-rules.ts';
import type { AsyncProduct } from '../../products/kit/product-contract.ts';
import { countsOf, emptyCounts } from './change-summary.ts';
import { compareChunk, type RunPosition } from './compare-chunk.ts';

/** Objects read from each job per chunk. */
export const COMPARE_CHUNK = 500;

interface RunRow {
  job_id: number;
  baseline_job_id: number;
  after_hash: Buffer | null;
  next_seq: number;
  counts: unknown;
  done: number;
}

/** The job's run, locked; created the first time (null: the job has no baseline). */
async function lockRun(trx: Trx, jobId: number): Promise<RunRow | null> {
  await sql`INSERT IGNORE INTO change_runs (job_id, baseline_job_id, counts, next_seq)
    SELECT id, baseline_job_id, ${JSON.stringify(emptyCounts())}, 1 FROM jobs WHERE id = ${jobId} AND baseline_job_id IS NOT NULL`.execute(
    trx,
  );
  const res = await sql<RunRow>`
    SELECT job_id, baseline_job_id, after_hash, next_seq, counts, done FROM change_runs WHERE job_id = ${jobId} FOR UPDATE`.execute(
    trx,
  );
  return res.rows[0] ?? null;
}

interface Seen {
  objects: number;
  findings: number;
}

async function pageCounters(trx: Trx, jobId: number): Promise<Seen> {
  const res = await sql<{ object_seq: number; finding_seq: number }>`
    SELECT object_seq, finding_seq FROM jobs WHERE id = ${jobId}`.execute(trx);
  return { objects: Number(res.rows[0]?.object_seq ?? 0), findings: Number(res.rows[0]?.finding_seq ?? 0) };
}

function seenOf(counts: unknown): Seen | null {
  const s = (parseJson<{ seen?: Partial<Seen> }>(counts) ?? {}).seen;
  return s && typeof s.objects === 'number' && typeof s.findings === 'number'
    ? { objects: s.objects, findings: s.findings }
    : null;
}

/** One chunk, if any is left; true when the comparison is complete (or there is none to make). */
async function stepLocked(trx: Trx, jobId: number, rules: ChangeRules, chunk: number): Promise<boolean> {
  const run = await lockRun(trx, jobId);
  if (!run || Number(run.done) === 1) return true;
  const seen = seenOf(run.counts) ?? (await pageCounters(trx, jobId));
  const pos: RunPosition = {
    jobId,
    baselineId: Number(run.baseline_job_id),
    afterHash: run.after_hash ? Buffer.from(run.after_hash) : null,
    nextSeq: Number(run.next_seq),
    counts: countsOf(run.counts),
  };
  const out = await compareChunk(trx, pos, rules, chunk);
  await sql`UPDATE change_runs SET after_hash = ${out.pos.afterHash}, next_seq = ${out.pos.nextSeq},
      counts = ${JSON.stringify({ ...out.pos.counts, seen })}, done = ${out.done ? 1 : 0}
    WHERE job_id = ${jobId}`.execute(trx);
  return out.done;
}

/** Back to the start: the job's outputs moved after the run began (see the header). */
async function resetRun(trx: Trx, jobId: number): Promise<void> {
  await sql`DELETE FROM job_changes WHERE job_id = ${jobId}`.execute(trx);
  await sql`UPDATE change_runs SET after_hash = NULL, next_seq = 1, counts = ${JSON.stringify(emptyCounts())}, done = 0
    WHERE job_id = ${jobId}`.execute(trx);
}

/**
 * Step 2 of finalizing (finalize-job.ts): the comparison of a job whose outputs are all written
 * before its terminal transaction (a product that derives nothing there), a chunk a transaction.
 */
export async function compareBeforeTerminal(
  db: Db,
  jobId: number,
  productJob: (product: string) => AsyncProduct<unknown> | undefined,
): Promise<void> {
  const row = await db
    .selectFrom('jobs')
    .select(['product', 'baseline_job_id'])
    .where('id', '=', jobId)
    .executeTakeFirst();
  if (!row?.baseline_job_id) return;
  const job = productJob(row.product);
  if (!job?.changes || job.assemble) return;
  await runComparison(db, jobId, job.changes);
}

/**
 * Before the terminal transaction: the whole comparison, a chunk per transaction (at most
 * `maxChunks` of them; true when complete). Safe to call again (after a crash, or from a second
 * orchestrator): it continues from the stored position.
 */
export async function runComparison(
  db: Db,
  jobId: number,
  rules: ChangeRules | undefined,
  opts: { chunk?: number; maxChunks?: number } = {},
): Promise<boolean> {
  if (!rules) return true;
  for (let n = 0; n < (opts.maxChunks ?? Number.POSITIVE_INFINITY); n++)
    if (await inTransaction(db, (trx) => stepLocked(trx, jobId, rules, opts.chunk ?? COMPARE_CHUNK))) return true;
  return false;
}

/**
 * In the terminal transaction (the job row locked): whatever is left of the comparison (a lookup's
 * few objects, written with its derived findings in this same transaction; or a job ended before
 * its comparison ran), then the counts on the job row.
 */
export async function finishComparison(
  trx: Trx,
  jobId: number,
  rules: ChangeRules | undefined,
  opts: { chunk?: number } = {},
): Promise<void> {
  if (!rules) return;
  const run = await lockRun(trx, jobId);
  if (!run) return; // no baseline: changes stay null
  const seen = seenOf(run.counts);
  if (Number(run.done) === 1 && seen) {
    const now = await pageCounters(trx, jobId);
    if (now.objects !== seen.objects || now.findings !== seen.findings) await resetRun(trx, jobId);
  }
  while (!(await stepLocked(trx, jobId, rules, opts.chunk ?? COMPARE_CHUNK)));
  const res = await sql<{ counts: unknown }>`SELECT counts FROM change_runs WHERE job_id = ${jobId}`.execute(trx);
  const row = res.rows[0];
  if (!row) return;
  await sql`UPDATE jobs SET changes = ${JSON.stringify(countsOf(parseJson(row.counts)))} WHERE id = ${jobId}`.execute(
    trx,
  );
}
