// The sweeper settles what would otherwise hold a reservation forever (CONTRACT §9): jobs past
// their deadline, and cancelling jobs past CANCEL_GRACE_MS.
import { sql } from 'kysely';
import type { OrchestrationContext } from './context.ts';
import { finalizeJob } from './finalize-job.ts';

export async function sweepJobs(ctx: OrchestrationContext, batch = 100): Promise<number> {
  const products = sql.join(ctx.catalog.ids);
  const graceUs = ctx.config.CANCEL_GRACE_MS * 1000;
  const overdue = await sql<{ id: number }>`
    SELECT id FROM jobs WHERE status IN ('queued', 'running', 'cancelling') AND deadline_at < NOW(3) AND product IN (${products})
    ORDER BY deadline_at LIMIT ${batch}`.execute(ctx.db);
  const graceOver = await sql<{ id: number }>`
    SELECT id FROM jobs WHERE status = 'cancelling' AND cancel_requested_at < NOW(3) - INTERVAL ${graceUs} MICROSECOND AND product IN (${products})
    ORDER BY id LIMIT ${batch}`.execute(ctx.db);
  let n = 0;
  // finalizeJob turns a cancelling job's deadline into `cancelled`, so one mode fits both lists.
  for (const r of overdue.rows) if (await finalizeJob(ctx, Number(r.id), 'deadline')) n++;
  for (const r of graceOver.rows) if (await finalizeJob(ctx, Number(r.id), 'cancel')) n++;
  return n;
}
