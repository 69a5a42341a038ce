// The outbox relay: an outbox row still unpublished a moment after its commit means the web
// process died (or Redis failed) between commit and XADD. Publish it now. A row published twice
// is harmless: the plan and cancel ops are idempotent.
import { sql } from 'kysely';
import { isJobOp, publishJob } from '../../queue/streams.ts';
import type { OrchestrationContext } from './context.ts';

export async function relayOutbox(
  ctx: OrchestrationContext,
  opts: { olderThanMs?: number; batch?: number } = {},
): Promise<number> {
  const olderThanUs = (opts.olderThanMs ?? 2000) * 1000;
  const rows = await sql<{ id: number; job_id: number; topic: string }>`
    SELECT o.id, o.job_id, o.topic FROM outbox o JOIN jobs j ON j.id = o.job_id
    WHERE o.published_at IS NULL AND o.created_at < NOW(3) - INTERVAL ${olderThanUs} MICROSECOND
      AND j.product IN (${sql.join(ctx.catalog.ids)})
    ORDER BY o.id LIMIT ${opts.batch ?? 100}`.execute(ctx.db);
  let published = 0;
  for (const r of rows.rows) {
    if (isJobOp(r.topic)) {
      await publishJob(ctx.redis, Number(r.job_id), r.topic);
      published++;
    } else {
      ctx.log.error(
        { outboxId: r.id, topic: r.topic },
        'outbox row with an unknown topic: marked published without effect',
      );
    }
    await sql`UPDATE outbox SET published_at = NOW(3) WHERE id = ${r.id} AND published_at IS NULL`.execute(ctx.db);
  }
  return published;
}
