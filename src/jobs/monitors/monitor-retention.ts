// Monitors' history is kept as long as jobs are (JOB_RETENTION_DAYS, CONTRACT §9): runs and events
// older than that, and monitors deleted longer ago, are purged in bounded batches by the
// orchestrator's retention tick. A pending event is never purged (it is still being delivered; its
// 24 h window ends it long before), nor a run still claimed.
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { affected } from '../../db/transaction.ts';

export async function purgeMonitorHistory(db: Db, days: number, rowBatch = 5000): Promise<number> {
  let purged = 0;
  const drain = async (statement: () => Promise<number>) => {
    for (;;) {
      const n = await statement();
      purged += n;
      if (n < rowBatch) return;
    }
  };
  await drain(async () =>
    affected(
      await sql`DELETE FROM monitor_events WHERE created_at < NOW(3) - INTERVAL ${days} DAY
        AND status IN ('delivered', 'failed') LIMIT ${rowBatch}`.execute(db),
    ),
  );
  await drain(async () =>
    affected(
      await sql`DELETE FROM monitor_runs WHERE due_at < NOW(3) - INTERVAL ${days} DAY
        AND outcome <> 'claimed' LIMIT ${rowBatch}`.execute(db),
    ),
  );
  await drain(async () =>
    affected(
      await sql`DELETE FROM monitors WHERE deleted_at < NOW(3) - INTERVAL ${days} DAY LIMIT ${rowBatch}`.execute(db),
    ),
  );
  return purged;
}
