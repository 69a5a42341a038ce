// The delivery side of the event outbox (monitor_events): which monitors have events due, the
// claim of due events per monitor (FOR UPDATE SKIP LOCKED: another worker's claim in flight is
// skipped, never waited for), each attempt's result (compare-and-set on the claim's token, so a
// late result of an attempt whose lease ran out changes nothing), the deliveries log and
// redeliver.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { affected, inTransaction } from '../../db/transaction.ts';
import type { MonitorEventStatus } from '../../db/schema.ts';

/** How long a claimed event is held by its worker: past it, another worker may attempt it. */
export const CLAIM_LEASE_SECONDS = 60;

export interface ClaimedEvent {
  id: number;
  publicId: string;
  monitorId: number;
  body: string;
  attempts: number;
  /** When the attempt was due (before the claim moved next_attempt_at to the lease's end). */
  dueAt: Date;
  windowStartedAt: Date;
  token: string;
}

/**
 * Monitors with at least one event due now, by id, after `afterId` (the caller goes round them in
 * turns). A range of ix_monitor_events_due_at (status, next_attempt_at, monitor_id): it reads the
 * events due now and nothing else, so its cost grows with them, not with the monitors that ever
 * had an event (the monitor-led index made it a loose scan of all of those: 100,000 idle monitors
 * cost 100,000 index dives every round; bench:monitors). An event is due at most once per step of
 * the retry schedule and a monitor makes at most one per interval (an hour), so a dead endpoint's
 * due events are a few dozen, not its whole backlog; a claimed event is not due until its lease ends.
 */
export async function monitorsWithDueEvents(db: Db, afterId: number, limit: number): Promise<number[]> {
  const res = await dueMonitorsQuery(afterId, limit).execute(db);
  return res.rows.map((r) => Number(r.monitor_id));
}

/** The statement of monitorsWithDueEvents (bench:monitors and its test show its plan). */
export function dueMonitorsQuery(afterId: number, limit: number) {
  return sql<{ monitor_id: number }>`
    SELECT monitor_id FROM monitor_events FORCE INDEX (ix_monitor_events_due_at)
    WHERE status = 'pending' AND next_attempt_at <= NOW(3) AND monitor_id > ${afterId}
    GROUP BY monitor_id ORDER BY monitor_id LIMIT ${limit}`;
}

/** Monitors per claim statement (one UNION ALL branch each). */
const CLAIM_BRANCHES = 100;

/**
 * Claims up to `want` due events of each monitor, leased for CLAIM_LEASE_SECONDS: one transaction,
 * one locking read per CLAIM_BRANCHES monitors (a UNION ALL of per-monitor index ranges, each
 * FOR UPDATE SKIP LOCKED, so another worker's rows are skipped and no monitor's backlog is read
 * beyond what is claimed of it) and one UPDATE.
 */
export async function claimEvents(
  db: Db,
  want: ReadonlyArray<[monitorId: number, count: number]>,
): Promise<ClaimedEvent[]> {
  if (want.length === 0) return [];
  return inTransaction(db, async (trx) => {
    const out: ClaimedEvent[] = [];
    for (let i = 0; i < want.length; i += CLAIM_BRANCHES) {
      const branches = want.slice(i, i + CLAIM_BRANCHES).map(
        ([
          monitorId,
          count,
        ]) => sql`(SELECT id, public_id, monitor_id, body, attempts, next_attempt_at, window_started_at
          FROM monitor_events
          WHERE status = 'pending' AND monitor_id = ${monitorId} AND next_attempt_at <= NOW(3)
          ORDER BY next_attempt_at LIMIT ${count}
          FOR UPDATE SKIP LOCKED)`,
      );
      const rows = await sql<Record<string, unknown>>`${sql.join(branches, sql` UNION ALL `)}`.execute(trx);
      for (const r of rows.rows) {
        out.push({
          id: Number(r.id),
          publicId: String(r.public_id),
          monitorId: Number(r.monitor_id),
          body: String(r.body),
          attempts: Number(r.attempts),
          dueAt: r.next_attempt_at as Date,
          windowStartedAt: r.window_started_at as Date,
          token: randomBytes(8).toString('hex'),
        });
      }
    }
    if (out.length === 0) return out;
    await sql`UPDATE monitor_events SET next_attempt_at = NOW(3) + INTERVAL ${CLAIM_LEASE_SECONDS} SECOND,
      claim_token = CASE id ${sql.join(
        out.map((e) => sql`WHEN ${e.id} THEN ${e.token}`),
        sql` `,
      )} END
      WHERE id IN (${sql.join(out.map((e) => e.id))})`.execute(trx);
    return out;
  });
}

/** What a delivery worker needs of the monitors it delivers for. */
export interface DeliveryTarget {
  id: number;
  /** The monitor's public id: its sealed secrets are bound to it. */
  ref: string;
  url: string | null;
  secret: Buffer | null;
  prevSecret: Buffer | null;
  prevSecretUntil: Date | null;
  disabled: string | null;
  /** The monitor's failing mark as read with the claim (its write is skipped when unchanged). */
  failingSince: Date | null;
  deleted: boolean;
}

/** Each monitor's webhook URL (null: none): the delivery worker shares its slots by endpoint host. */
export async function webhookUrls(db: Db, monitorIds: readonly number[]): Promise<Map<number, string | null>> {
  const out = new Map<number, string | null>();
  if (monitorIds.length === 0) return out;
  const res = await sql<{ id: number; webhook_url: string | null }>`
    SELECT id, webhook_url FROM monitors WHERE id IN (${sql.join([...new Set(monitorIds)])})`.execute(db);
  for (const r of res.rows) out.set(Number(r.id), r.webhook_url ?? null);
  return out;
}

export async function deliveryTargets(db: Db, monitorIds: readonly number[]): Promise<Map<number, DeliveryTarget>> {
  const out = new Map<number, DeliveryTarget>();
  if (monitorIds.length === 0) return out;
  const res = await sql<Record<string, unknown>>`
    SELECT id, public_id, webhook_url, webhook_secret, webhook_prev_secret, webhook_prev_secret_until, webhook_disabled,
      webhook_failing_since, deleted_at
    FROM monitors WHERE id IN (${sql.join([...new Set(monitorIds)])})`.execute(db);
  for (const r of res.rows) {
    out.set(Number(r.id), {
      id: Number(r.id),
      ref: String(r.public_id),
      url: (r.webhook_url as string | null) ?? null,
      secret: (r.webhook_secret as Buffer | null) ?? null,
      prevSecret: (r.webhook_prev_secret as Buffer | null) ?? null,
      prevSecretUntil: (r.webhook_prev_secret_until as Date | null) ?? null,
      disabled: (r.webhook_disabled as string | null) ?? null,
      failingSince: (r.webhook_failing_since as Date | null) ?? null,
      deleted: r.deleted_at != null,
    });
  }
  return out;
}

export interface AttemptRecord {
  statusCode: number | null;
  error: string | null;
  /** Pending again at this time; null with `final` = the event is done. */
  nextAttemptAt: Date | null;
  final: MonitorEventStatus | null;
}

/**
 * One attempt's result, if the claim is still this worker's (one statement). Then the monitor's
 * failing mark, only where it changes (`failingSince` as read with the claim): set at the first
 * failure since the last delivery, cleared by a delivery. The mark is advisory (24 h of it shows
 * `failing`), so it is not written in the event's statement: most attempts write one row.
 */
export async function recordAttempt(
  db: Db,
  ev: ClaimedEvent,
  r: AttemptRecord,
  failingSince: Date | null,
): Promise<boolean> {
  const res = await sql`UPDATE monitor_events SET
      attempts = attempts + 1, last_attempt_at = NOW(3), last_status_code = ${r.statusCode},
      last_error = ${r.error === null ? null : r.error.slice(0, 200)}, claim_token = NULL,
      status = ${r.final ?? 'pending'}, next_attempt_at = ${r.final ? null : r.nextAttemptAt},
      delivered_at = ${r.final === 'delivered' ? sql`NOW(3)` : null}
    WHERE id = ${ev.id} AND claim_token = ${ev.token}`.execute(db);
  if (affected(res) !== 1) return false;
  if (r.final === 'delivered') {
    if (failingSince !== null) {
      await sql`UPDATE monitors SET webhook_failing_since = NULL WHERE id = ${ev.monitorId}`.execute(db);
    }
  } else if (failingSince === null) {
    await sql`UPDATE monitors SET webhook_failing_since = NOW(3)
      WHERE id = ${ev.monitorId} AND webhook_failing_since IS NULL`.execute(db);
  }
  return true;
}

/**
 * A 410: the webhook is disabled ('gone') and no pending event of the monitor is attempted again.
 * Only unclaimed events are failed here: one another worker is sending now (its lease not yet
 * ended) is that worker's to record; if it fails, its next attempt finds the webhook disabled and
 * abandons it (a delivered one stays delivered, as the receiver answered it).
 */
export async function disableGone(db: Db, ev: ClaimedEvent): Promise<void> {
  await inTransaction(db, async (trx) => {
    await sql`UPDATE monitors SET webhook_disabled = 'gone' WHERE id = ${ev.monitorId}`.execute(trx);
    await sql`UPDATE monitor_events SET status = 'failed', next_attempt_at = NULL, claim_token = NULL,
        last_error = 'webhook disabled: the receiver answered 410 Gone'
      WHERE monitor_id = ${ev.monitorId} AND status = 'pending' AND id <> ${ev.id}
        AND (claim_token IS NULL OR next_attempt_at <= NOW(3))`.execute(trx);
  });
}

/** An event whose monitor can no longer be delivered to (deleted, webhook removed or disabled). */
export async function abandonEvent(db: Db, ev: ClaimedEvent, why: string): Promise<void> {
  await sql`UPDATE monitor_events SET status = 'failed', next_attempt_at = NULL, claim_token = NULL, last_error = ${why}
    WHERE id = ${ev.id} AND claim_token = ${ev.token}`.execute(db);
}

export interface DeliveryRow {
  id: number;
  publicId: string;
  type: string;
  jobRef: string | null;
  status: MonitorEventStatus;
  attempts: number;
  lastAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  nextAttemptAt: Date | null;
}

function toDelivery(r: Record<string, unknown>): DeliveryRow {
  return {
    id: Number(r.id),
    publicId: String(r.public_id),
    type: String(r.type),
    jobRef: (r.job_ref as string | null) ?? null,
    status: r.status as MonitorEventStatus,
    attempts: Number(r.attempts),
    lastAttemptAt: (r.last_attempt_at as Date | null) ?? null,
    lastStatusCode: r.last_status_code == null ? null : Number(r.last_status_code),
    lastError: (r.last_error as string | null) ?? null,
    nextAttemptAt: (r.next_attempt_at as Date | null) ?? null,
  };
}

const DELIVERY_COLUMNS = sql`id, public_id, type, job_ref, status, attempts, last_attempt_at, last_status_code, last_error, next_attempt_at`;

/** The monitor's events, newest first, before `beforeId` (keyset). */
export async function deliveriesPage(
  db: Db,
  monitorId: number,
  beforeId: number | null,
  limit: number,
): Promise<DeliveryRow[]> {
  const res = await sql<Record<string, unknown>>`
    SELECT ${DELIVERY_COLUMNS} FROM monitor_events
    WHERE monitor_id = ${monitorId} ${beforeId === null ? sql`` : sql`AND id < ${beforeId}`}
    ORDER BY id DESC LIMIT ${limit}`.execute(db);
  return res.rows.map(toDelivery);
}

/**
 * Sends the event again: pending now, as a fresh delivery (attempts and the retry window start
 * over; a running attempt's late result loses its compare-and-set). Null when the monitor has no such event.
 */
export async function redeliver(db: Db, monitorId: number, eventRef: string): Promise<DeliveryRow | null> {
  if (!/^msg_[0-9A-HJKMNP-TV-Z]{26}$/.test(eventRef)) return null;
  await sql`UPDATE monitor_events SET status = 'pending', next_attempt_at = NOW(3), window_started_at = NOW(3),
      attempts = 0, claim_token = NULL, delivered_at = NULL
    WHERE monitor_id = ${monitorId} AND public_id = ${eventRef}`.execute(db);
  const res = await sql<Record<string, unknown>>`
    SELECT ${DELIVERY_COLUMNS} FROM monitor_events WHERE monitor_id = ${monitorId} AND public_id = ${eventRef}`.execute(
    db,
  );
  return res.rows[0] ? toDelivery(res.rows[0]) : null;
}
