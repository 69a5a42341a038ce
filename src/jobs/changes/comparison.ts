// The comparison of a finished job with its baseline (CONTRACT §13), made when the job ends and
// kept with it. It runs in bounded chunks (./compare-chunk.ts), each its own transaction holding
// the run's row (change_runs) locked, its position stored with it: a crash resumes at the last
// chunk committed, two orchestrators never compare the same chunk, and nothing of a 20,000-object
// job is held in memory. The counts are written to the job row in the transaction that makes the
// job terminal (finishComparison), so a reader who sees the job terminal sees the whole comparison.
//
// Where it runs (src/jobs/orchestration/finalize-job.ts): as a pre-terminal step, once every
// result is settled (compareBeforeTerminal), for products whose outputs are all written by then
// (a scan), never under the job row lock: the terminal transaction holds that lock, and a 20,000-
// object comparison inside it would hold every writer of the job (and its transaction would hold
// every row it writes) for as long as the comparison takes. The terminal transaction only reads
// that the run is complete (comparisonPending) and writes its counts; a run that is not (a late
// result put it back at its start after step 2) sends the finalize back to step 2. A lookup
// writes what it derived across lanes in the terminal transaction itself, so its comparison (a
// few dozen objects, its one target's) is made there, after them (`inPlace`).
//
// Staleness: a result applied after the run began (a task that finished as a cancel or a
// deadline ended the job, a late batch) may add, rewrite or fold objects and findings the run
// already passed. Every writer of a job's outputs puts its run back at the start in its own
// transaction (./stale-run.ts), so whatever step comes next (another chunk, or the lookup's
// terminal transaction) compares again from the first identity. A settle cannot meet this:
// nothing is open.
//
// What it cost: each chunk adds its time to the run (`work` in change_runs.counts, kept across
// restarts and resumes); the terminal transaction observes the total and the objects compared
// (lss_change_comparison_seconds, lss_change_comparison_objects) and logs one line.
import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Db } from '../../db/database.ts';
import { inTransaction, parseJson, type Trx } from '../../db/transaction.ts';
import { changeComparisonObjects, changeComparisonSeconds } from '../../metrics.ts';
import type { ChangeRules } from '../../products/kit/change-rules.ts';
import type { AsyncProduct } from '../../products/kit/product-contract.ts';
import { countsOf, emptyCounts, type ChangeCounts } from './change-summary.ts';
import { compareChunk, type RunPosition } from './compare-chunk.ts';
import { noteChangeRun } from '../locked-job-row.ts';

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

/** What the run has cost so far, every chunk of every pass (a restart or a resume adds to it). */
export interface RunWork {
  ms: number;
  chunks: number;
}

function workOf(counts: unknown): RunWork {
  const w = parseJson<{ work?: Partial<RunWork> }>(counts)?.work;
  return { ms: Number(w?.ms ?? 0) || 0, chunks: Number(w?.chunks ?? 0) || 0 };
}

/**
 * The job's run, locked; created the first time (null: the job has no baseline). The creation
 * reads the job row in share mode: a writer of the job's outputs holding it commits first, so
 * the run starts from what it wrote (./stale-run.ts).
 */
async function lockRun(trx: Trx, jobId: number): Promise<RunRow | null> {
  const select = () =>
    sql<RunRow>`
    SELECT job_id, baseline_job_id, after_hash, next_seq, counts, done FROM change_runs WHERE job_id = ${jobId} FOR UPDATE`.execute(
      trx,
    );
  const found = (await select()).rows[0];
  if (found) {
    noteChangeRun(trx, jobId);
    return found;
  }
  const job = await sql<{ baseline_job_id: number | null }>`
    SELECT baseline_job_id FROM jobs WHERE id = ${jobId} LOCK IN SHARE MODE`.execute(trx);
  const baseline = job.rows[0]?.baseline_job_id;
  if (baseline === null || baseline === undefined) return null;
  await sql`INSERT IGNORE INTO change_runs (job_id, baseline_job_id, counts, next_seq)
    VALUES (${jobId}, ${baseline}, ${JSON.stringify(emptyCounts())}, 1)`.execute(trx);
  // A writer of the job's outputs later in this transaction must put the run back at its start.
  noteChangeRun(trx, jobId);
  return (await select()).rows[0] ?? null;
}

/** A run at its start: nothing compared yet, or put back there by a writer (./stale-run.ts). */
const atStart = (run: RunRow) => Number(run.done) === 0 && Number(run.next_seq) === 1 && run.after_hash === null;

/** One chunk, if any is left; true when the comparison is complete (or there is none to make). */
async function stepLocked(trx: Trx, jobId: number, rules: ChangeRules, chunk: number): Promise<boolean> {
  const run = await lockRun(trx, jobId);
  if (!run || Number(run.done) === 1) return true;
  const began = performance.now();
  const fresh = atStart(run);
  // From the start: whatever an earlier pass wrote is compared again (a no-op range delete when
  // nothing was).
  if (fresh) await sql`DELETE FROM job_changes WHERE job_id = ${jobId}`.execute(trx);
  const pos: RunPosition = {
    jobId,
    baselineId: Number(run.baseline_job_id),
    afterHash: run.after_hash ? Buffer.from(run.after_hash) : null,
    nextSeq: Number(run.next_seq),
    counts: fresh ? emptyCounts() : countsOf(run.counts),
  };
  const out = await compareChunk(trx, pos, rules, chunk);
  const before = workOf(run.counts);
  const work: RunWork = { ms: before.ms + (performance.now() - began), chunks: before.chunks + 1 };
  await sql`UPDATE change_runs SET after_hash = ${out.pos.afterHash}, next_seq = ${out.pos.nextSeq},
      counts = ${JSON.stringify({ ...out.pos.counts, work })}, done = ${out.done ? 1 : 0}
    WHERE job_id = ${jobId}`.execute(trx);
  return out.done;
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

/** A comparison made: what the terminal transaction observes and logs. */
export interface ComparisonDone {
  baselineJobId: number;
  counts: ChangeCounts;
  /** Identities compared (objects of either job, each once). */
  objects: number;
  findings: number;
  work: RunWork;
}

/**
 * In the terminal transaction, the job row locked, before the terminal status is written: true
 * when the job has a comparison to make and it is not complete (never made, or put back at its
 * start by a late result). The caller then lets go of the lock and makes it (runComparison): the
 * lock is never held across a comparison. Lock-free reads: every writer that could put the run
 * back needs the job row lock this transaction holds.
 */
export async function comparisonPending(trx: Trx, jobId: number, rules: ChangeRules | undefined): Promise<boolean> {
  if (!rules) return false;
  const res = await sql<{ baseline_job_id: number | null; done: number | null }>`
    SELECT j.baseline_job_id, r.done FROM jobs j LEFT JOIN change_runs r ON r.job_id = j.id WHERE j.id = ${jobId}`.execute(
    trx,
  );
  const row = res.rows[0];
  if (!row || row.baseline_job_id === null) return false;
  return Number(row.done ?? 0) !== 1;
}

/**
 * In the terminal transaction (the job row locked): the counts of the complete comparison on the
 * job row. `inPlace` (a lookup: its few objects, written with its derived findings in this same
 * transaction): whatever is left of the comparison is made here first; else (the default) a run
 * that is not complete is left alone and null returned: the caller checked comparisonPending
 * before its terminal write. With `log`: the comparison's metrics and its one log line.
 */
export async function finishComparison(
  trx: Trx,
  jobId: number,
  rules: ChangeRules | undefined,
  opts: { chunk?: number; log?: Logger; inPlace?: boolean } = {},
): Promise<ComparisonDone | null> {
  if (!rules) return null;
  if (opts.inPlace) while (!(await stepLocked(trx, jobId, rules, opts.chunk ?? COMPARE_CHUNK)));
  else if (await comparisonPending(trx, jobId, rules)) return null;
  const res = await sql<{ baseline_job_id: number; counts: unknown }>`
    SELECT baseline_job_id, counts FROM change_runs WHERE job_id = ${jobId}`.execute(trx);
  const row = res.rows[0];
  if (!row) return null; // no baseline: changes stay null
  const counts = countsOf(parseJson(row.counts));
  await sql`UPDATE jobs SET changes = ${JSON.stringify(counts)} WHERE id = ${jobId}`.execute(trx);
  const sum = (part: Record<string, number>) => Object.values(part).reduce((a, b) => a + b, 0);
  const done: ComparisonDone = {
    baselineJobId: Number(row.baseline_job_id),
    counts,
    objects: sum(counts.objects),
    findings: sum(counts.findings),
    work: workOf(row.counts),
  };
  if (opts.log) {
    changeComparisonSeconds.observe(done.work.ms / 1000);
    changeComparisonObjects.observe(done.objects);
    opts.log.info(
      {
        jobId,
        baselineJobId: done.baselineJobId,
        objects: done.objects,
        findings: done.findings,
        changes: counts,
        durationMs: Math.round(done.work.ms),
        chunks: done.work.chunks,
      },
      'change comparison done',
    );
  }
  return done;
}
