// Monitors' history is kept as long as jobs are (JOB_RETENTION_DAYS, CONTRACT §9): runs and events
// older than that, and monitors deleted longer ago, are purged in bounded batches by the
// orchestrator's retention tick. A pending event is purged only once its retry window has closed
// (it is no longer being delivered: one left pending by a bug or an unreadable secret before
// issue 44 would otherwise stay for ever); a run still claimed is never purged. Each statement is
// a range of an index on its age (ix_monitor_events_age, ix_monitor_runs_age, ix_monitors_deleted).
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { affected } from '../../db/transaction.ts';
import { CONTRACT_WINDOW_SECONDS } from './retry-schedule.ts';

export async function purgeMonitorHistory(
  db: Db,
  days: number,
  rowBatch = 5000,
  /** The retry window (CONTRACT §14: 24 h): pending past it, an event is no longer being delivered. */
  windowSeconds = CONTRACT_WINDOW_SECONDS,
): Promise<number> {
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
        AND (status IN ('delivered', 'failed') OR window_started_at < NOW(3) - INTERVAL ${windowSeconds} SECOND)
        LIMIT ${rowBatch}`.execute(db),
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
      await sql`DELETE FROM monitors WHERE deleted_at IS NOT NULL AND deleted_at < NOW(3) - INTERVAL ${days} DAY LIMIT ${rowBatch}`.execute(
        db,
      ),
    ),
  );
  return purged;
}
