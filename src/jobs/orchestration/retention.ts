// Retention (CONTRACT §9): a job terminal for more than JOB_RETENTION_DAYS goes, with everything
// under it, in bounded batches (children first, the job row last, so a crash mid-way leaves a job
// that the next pass finds again). Ledger entries stay: the ledger is immutable.
//
// A job that is the baseline of an open job (CONTRACT §13) is kept until that job has been
// compared with it (ix_jobs_baseline_of); once compared, the comparison stands on its own: it
// keeps the baseline's public ids and completion time, never its rows.
//
// The outbox has no index on job_id, so its rows are purged by age through
// ix_outbox_unpublished (published_at, id) instead of per job.
import { sql } from 'kysely';
import { purgeExpiredIdempotencyKeys } from '../../idempotency/idempotency-repo.ts';
import type { OrchestrationContext } from './context.ts';
import { purgeJobTasks } from '../tasks/task-repo.ts';
import { affected } from '../../db/transaction.ts';

// Tasks go last of the children, through the tasks folder (the one owner of that table).
const CHILD_TABLES = ['relations', 'findings', 'objects', 'job_changes', 'change_runs', 'job_suppressions'] as const;

export async function purgeExpiredJobs(
  ctx: OrchestrationContext,
  opts: { jobBatch?: number; rowBatch?: number } = {},
): Promise<number> {
  const rowBatch = opts.rowBatch ?? 5000;
  const days = ctx.config.JOB_RETENTION_DAYS;
  const jobs = await sql<{ id: number }>`
    SELECT j.id FROM jobs j WHERE j.status IN ('completed', 'partial', 'cancelled', 'failed', 'unavailable')
      AND j.completed_at < NOW(3) - INTERVAL ${days} DAY AND j.product IN (${sql.join(ctx.catalog.ids)})
      AND NOT EXISTS (SELECT 1 FROM jobs o WHERE o.baseline_job_id = j.id AND o.status IN ('queued', 'running', 'cancelling'))
    ORDER BY j.completed_at LIMIT ${opts.jobBatch ?? 100}`.execute(ctx.db);
  const ids = jobs.rows.map((r) => Number(r.id));
  if (ids.length > 0) {
    for (const table of CHILD_TABLES) {
      while (
        affected(
          await sql`DELETE FROM ${sql.table(table)} WHERE job_id IN (${sql.join(ids)}) LIMIT ${rowBatch}`.execute(
            ctx.db,
          ),
        ) >= rowBatch
      );
    }
    while ((await purgeJobTasks(ctx.db, ids, rowBatch)) >= rowBatch);
    await sql`DELETE FROM jobs WHERE id IN (${sql.join(ids)}) AND status IN ('completed', 'partial', 'cancelled', 'failed', 'unavailable')`.execute(
      ctx.db,
    );
  }
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
