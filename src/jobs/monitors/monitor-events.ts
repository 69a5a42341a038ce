// The event outbox of monitors (CONTRACT §14; STYLE.md "Events leave through an outbox"). An event
// row is written in the transaction that decides what it reports — the job's terminal transaction
// (monitor.job_finished) or the run's skip (monitor.run_skipped) — with its body fixed there, so a
// process dying between that commit and the delivery loses nothing and every attempt sends the same
// bytes under the same webhook-id. Events carry public projections only: job refs, statuses, the
// §13 counts. A monitor without a webhook (or with one disabled by a 410) gets no event.
import { sql } from 'kysely';
import { publicId } from '../../contract/ids.ts';
import type { Trx } from '../../db/transaction.ts';
import { readChangeSummary, type ChangeCounts } from '../changes/change-summary.ts';

export type MonitorEventType = 'monitor.job_finished' | 'monitor.run_skipped';

export type { ChangeCounts };

export interface MonitorEventData {
  monitorId: string;
  jobRef: string | null;
  /** The job's terminal status, or `skipped`. */
  status: string;
  baseline: { jobRef: string } | null;
  changes: ChangeCounts | null;
  /** Why the run was skipped (an error code, or previous_run_active). */
  code?: string;
}

export interface MonitorEvent {
  type: MonitorEventType;
  timestamp: string;
  data: MonitorEventData;
}

/** The monitor fields an event needs. */
export interface EventTarget {
  monitorId: number;
  monitorRef: string;
  workspaceId: number;
}

/** Writes one event in the caller's transaction; returns its webhook-id. */
export async function insertEvent(
  trx: Trx,
  to: EventTarget,
  type: MonitorEventType,
  data: Omit<MonitorEventData, 'monitorId'>,
  jobId: number | null,
): Promise<string> {
  const id = publicId('msg');
  const event: MonitorEvent = {
    type,
    timestamp: new Date().toISOString(),
    data: { monitorId: to.monitorRef, ...data },
  };
  await trx
    .insertInto('monitor_events')
    .values({
      public_id: id,
      monitor_id: to.monitorId,
      workspace_id: to.workspaceId,
      type,
      job_id: jobId,
      job_ref: data.jobRef,
      body: JSON.stringify(event),
      next_attempt_at: sql`NOW(3)` as unknown as Date,
      claim_token: null,
      last_attempt_at: null,
      last_status_code: null,
      last_error: null,
      delivered_at: null,
    })
    .execute();
  return id;
}

/** What a finished job's event says about its baseline and changes (CONTRACT §13). */
export type ChangeSummaryReader = (
  trx: Trx,
  jobId: number,
) => Promise<{ baseline: { jobRef: string } | null; changes: ChangeCounts | null }>;

/**
 * The terminal hook (src/jobs/orchestration/finalize-job.ts calls it once the terminal
 * compare-and-set has succeeded, in the same transaction): when the job is a monitor's run and the
 * monitor has a live webhook, its monitor.job_finished event. One indexed read for any other job.
 */
export async function recordJobFinished(
  trx: Trx,
  jobId: number,
  status: string,
  changeSummary: ChangeSummaryReader,
): Promise<string | null> {
  const res = await sql<Record<string, unknown>>`
    SELECT m.id, m.public_id, m.workspace_id, j.public_id AS job_ref
    FROM monitor_runs r
      JOIN monitors m ON m.id = r.monitor_id
      JOIN jobs j ON j.id = r.job_id
    WHERE r.job_id = ${jobId} AND m.deleted_at IS NULL AND m.webhook_url IS NOT NULL AND m.webhook_disabled IS NULL
    LIMIT 1`.execute(trx);
  const r = res.rows[0];
  if (!r) return null;
  const summary = await changeSummary(trx, jobId);
  return insertEvent(
    trx,
    { monitorId: Number(r.id), monitorRef: String(r.public_id), workspaceId: Number(r.workspace_id) },
    'monitor.job_finished',
    { jobRef: String(r.job_ref), status, baseline: summary.baseline, changes: summary.changes },
    jobId,
  );
}

/** The event's baseline and counts: change detection's summary (CONTRACT §13), the baseline by its ref only. */
export const monitorChangeSummary: ChangeSummaryReader = async (trx, jobId) => {
  const summary = await readChangeSummary(trx, jobId);
  return { baseline: summary.baseline ? { jobRef: summary.baseline.jobRef } : null, changes: summary.changes };
};
