// Retention (CONTRACT §9): a job terminal for more than JOB_RETENTION_DAYS goes, with everything
// under it, in bounded batches (children first, the job row last, so a crash mid-way leaves a job
// that the next pass finds again). Ledger entries stay: the ledger is immutable.
//
// A job that is the baseline of an open job (CONTRACT §13) is kept until that job has been
// compared with it (ix_jobs_baseline_of); once compared, the comparison stands on its own: it
// keeps the baseline's public ids and completion time, never its rows. A job starting meanwhile
// must not take one whose rows are going: the jobs to purge are first claimed (claimExpiredJobs),
// in one transaction holding their rows locked, checked again for an open job that took them
// and marked `baseline_unfit = 'purging'`; a job starting confirms its pick under a share lock of
// the same row (src/jobs/changes/baseline.ts), so one of the two sees the other.
//
// The outbox has no index on job_id, so its rows are purged by age through
// ix_outbox_unpublished (published_at, id) instead of per job.
import { sql } from 'kysely';
import { purgeExpiredIdempotencyKeys } from '../../idempotency/idempotency-repo.ts';
import type { OrchestrationContext } from './context.ts';
import { purgeJobTasks } from '../tasks/task-repo.ts';
import { affected, inTransaction } from '../../db/transaction.ts';

// Tasks go last of the children, through the tasks folder (the one owner of that table).
const CHILD_TABLES = ['relations', 'findings', 'objects', 'job_changes', 'change_runs', 'job_suppressions'] as const;

export async function purgeExpiredJobs(
  ctx: OrchestrationContext,
  opts: { jobBatch?: number; rowBatch?: number } = {},
): Promise<number> {
  const rowBatch = opts.rowBatch ?? 5000;
  const days = ctx.config.JOB_RETENTION_DAYS;
  const ids = await claimExpiredJobs(ctx, opts);
  if (ids.length > 0) await purgeJobs(ctx, ids, rowBatch);
  while (
    affected(
      await sql`DELETE FROM outbox WHERE published_at < NOW(3) - INTERVAL ${days} DAY LIMIT ${rowBatch}`.execute(
        ctx.db,
      ),
    ) >= rowBatch
  );
  while ((await purgeExpiredIdempotencyKeys(ctx.db, rowBatch)) >= rowBatch);
  return ids.length;
}

/**
 * The next jobs past retention that no open job has taken as its baseline, locked, checked again
 * and marked 'purging' in one transaction: from its commit on, no job takes them (a job that took
 * one before it keeps it: the claim saw that job and left the baseline). A claimed job is purged
 * whatever happens next; a crash after the claim leaves it to the next pass, still past retention.
 */
export async function claimExpiredJobs(ctx: OrchestrationContext, opts: { jobBatch?: number } = {}): Promise<number[]> {
  const days = ctx.config.JOB_RETENTION_DAYS;
  const jobs = await sql<{ id: number }>`
    SELECT j.id FROM jobs j WHERE j.status IN ('completed', 'partial', 'cancelled', 'failed', 'unavailable')
      AND j.completed_at < NOW(3) - INTERVAL ${days} DAY AND j.product IN (${sql.join(ctx.catalog.ids)})
      AND NOT EXISTS (SELECT 1 FROM jobs o WHERE o.baseline_job_id = j.id AND o.status IN ('queued', 'running', 'cancelling'))
    ORDER BY j.completed_at LIMIT ${opts.jobBatch ?? 100}`.execute(ctx.db);
  const candidates = jobs.rows.map((r) => Number(r.id));
  if (candidates.length === 0) return [];
  return inTransaction(ctx.db, async (trx) => {
    // Primary-key locks only; a job starting now that picked one of them waits here or is waited for.
    const locked = await sql<{ id: number }>`
      SELECT id FROM jobs WHERE id IN (${sql.join(candidates)}) FOR UPDATE`.execute(trx);
    const ids = locked.rows.map((r) => Number(r.id));
    if (ids.length === 0) return [];
    // Read committed: what a job that confirmed its pick before the locks were granted wrote.
    const taken = await sql<{ baseline_job_id: number }>`
      SELECT DISTINCT baseline_job_id FROM jobs
      WHERE baseline_job_id IN (${sql.join(ids)}) AND status IN ('queued', 'running', 'cancelling')`.execute(trx);
    const keep = new Set(taken.rows.map((r) => Number(r.baseline_job_id)));
    const claimed = ids.filter((id) => !keep.has(id));
    if (claimed.length > 0)
      await sql`UPDATE jobs SET baseline_unfit = 'purging' WHERE id IN (${sql.join(claimed)})`.execute(trx);
    return claimed;
  });
}

/** Everything under these (claimed) jobs, children first, the job rows last. */
export async function purgeJobs(ctx: OrchestrationContext, ids: readonly number[], rowBatch = 5000): Promise<void> {
  for (const table of CHILD_TABLES) {
    while (
      affected(
        await sql`DELETE FROM ${sql.table(table)} WHERE job_id IN (${sql.join(ids)}) LIMIT ${rowBatch}`.execute(ctx.db),
      ) >= rowBatch
    );
  }
  while ((await purgeJobTasks(ctx.db, ids, rowBatch)) >= rowBatch);
  await sql`DELETE FROM jobs WHERE id IN (${sql.join(ids)}) AND status IN ('completed', 'partial', 'cancelled', 'failed', 'unavailable')`.execute(
    ctx.db,
  );
}
