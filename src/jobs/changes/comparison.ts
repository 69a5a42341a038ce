// The comparison of a finished job with its baseline (CONTRACT §13), made when the job ends and
// kept with it. It runs in bounded chunks (./compare-chunk.ts), each its own transaction holding
// the run's row (change_runs) locked, its position stored with it: a crash resumes at the last
// chunk committed, two orchestrators never compare the same chunk, and nothing of a 20,000-object
// job is held in memory. The counts are written to the job row in the transaction that makes the
// job terminal (finishComparison), so a reader who sees the job terminal sees the whole comparison.
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { inTransaction, parseJson, type Trx } from '../../db/transaction.ts';
import type { ChangeRules } from '../../products/kit/change-rules.ts';
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

/** One chunk, if any is left; true when the comparison is complete (or there is none to make). */
async function stepLocked(trx: Trx, jobId: number, rules: ChangeRules, chunk: number): Promise<boolean> {
  const run = await lockRun(trx, jobId);
  if (!run || Number(run.done) === 1) return true;
  const pos: RunPosition = {
    jobId,
    baselineId: Number(run.baseline_job_id),
    afterHash: run.after_hash ? Buffer.from(run.after_hash) : null,
    nextSeq: Number(run.next_seq),
    counts: countsOf(run.counts),
  };
  const out = await compareChunk(trx, pos, rules, chunk);
  await sql`UPDATE change_runs SET after_hash = ${out.pos.afterHash}, next_seq = ${out.pos.nextSeq},
      counts = ${JSON.stringify(out.pos.counts)}, done = ${out.done ? 1 : 0}
    WHERE job_id = ${jobId}`.execute(trx);
  return out.done;
}

/**
 * Before the terminal transaction: the whole comparison, a chunk per transaction. Safe to call
 * again (after a crash, or from a second orchestrator): it continues from the stored position.
 */
export async function runComparison(
  db: Db,
  jobId: number,
  rules: ChangeRules | undefined,
  opts: { chunk?: number } = {},
): Promise<void> {
  if (!rules) return;
  while (!(await inTransaction(db, (trx) => stepLocked(trx, jobId, rules, opts.chunk ?? COMPARE_CHUNK))));
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
  while (!(await stepLocked(trx, jobId, rules, opts.chunk ?? COMPARE_CHUNK)));
  const res = await sql<{ counts: unknown }>`SELECT counts FROM change_runs WHERE job_id = ${jobId}`.execute(trx);
  const row = res.rows[0];
  if (!row) return; // no baseline: changes stay null
  await sql`UPDATE jobs SET changes = ${JSON.stringify(countsOf(parseJson(row.counts)))} WHERE id = ${jobId}`.execute(
    trx,
  );
}
