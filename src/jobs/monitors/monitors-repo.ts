// The monitors table: create (with its idempotency record, in one transaction), read, list, change,
// delete. A monitor of another workspace, or a deleted one, is never returned: the route answers
// monitor_not_found for both, exactly as for one that never existed.
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { affected, inTransaction, type Trx } from '../../db/transaction.ts';
import type { MonitorRunOutcome } from '../../db/schema.ts';
import { commitClaimReply } from '../../idempotency/idempotency-repo.ts';
import type { IdempotencyClaim } from '../../idempotency/lease.ts';

export const MONITOR_ID_RE = /^mon_[0-9A-HJKMNP-TV-Z]{26}$/;

export interface MonitorRow {
  id: number;
  public_id: string;
  workspace_id: number;
  api_key_id: number;
  product: string;
  request: unknown;
  interval_seconds: number;
  paused: boolean;
  /** Why the service paused it ('key_revoked'); null when its owner did, or while it runs. */
  paused_reason: string | null;
  next_run_at: Date | null;
  last_job_id: number | null;
  webhook_url: string | null;
  webhook_secret: Buffer | null;
  webhook_prev_secret: Buffer | null;
  webhook_prev_secret_until: Date | null;
  webhook_disabled: string | null;
  webhook_failing_since: Date | null;
  created_at: Date;
  deleted_at: Date | null;
}

export function toMonitorRow(r: Record<string, unknown>): MonitorRow {
  return {
    id: Number(r.id),
    public_id: String(r.public_id),
    workspace_id: Number(r.workspace_id),
    api_key_id: Number(r.api_key_id),
    product: String(r.product),
    request: typeof r.request === 'string' ? JSON.parse(r.request) : r.request,
    interval_seconds: Number(r.interval_seconds),
    paused: Number(r.paused) === 1,
    paused_reason: (r.paused_reason as string | null) ?? null,
    next_run_at: (r.next_run_at as Date | null) ?? null,
    last_job_id: r.last_job_id == null ? null : Number(r.last_job_id),
    webhook_url: (r.webhook_url as string | null) ?? null,
    webhook_secret: (r.webhook_secret as Buffer | null) ?? null,
    webhook_prev_secret: (r.webhook_prev_secret as Buffer | null) ?? null,
    webhook_prev_secret_until: (r.webhook_prev_secret_until as Date | null) ?? null,
    webhook_disabled: (r.webhook_disabled as string | null) ?? null,
    webhook_failing_since: (r.webhook_failing_since as Date | null) ?? null,
    created_at: r.created_at as Date,
    deleted_at: (r.deleted_at as Date | null) ?? null,
  };
}

export interface NewMonitor {
  publicId: string;
  workspaceId: number;
  apiKeyId: number;
  product: string;
  request: unknown;
  intervalSeconds: number;
  paused: boolean;
  webhookUrl: string | null;
  webhookSecret: Buffer | null;
}

/** The workspace holds its cap of live monitors already. */
export class MonitorCapReached extends Error {}
/** Another request committed this Idempotency-Key first. */
export class MonitorCommittedElsewhere extends Error {}

/**
 * Inserts the monitor under the workspace row lock (so concurrent creates cannot pass the cap),
 * then builds the reply and keeps it for replay in the same transaction (`reply` gets the new row).
 */
export async function createMonitor(
  db: Db,
  m: NewMonitor,
  cap: number,
  reply: (row: MonitorRow) => { status: number; stored: string },
  claim: IdempotencyClaim | undefined,
  ttlHours: number,
): Promise<MonitorRow> {
  return inTransaction(db, async (trx) => {
    await sql`SELECT id FROM workspaces WHERE id = ${m.workspaceId} FOR UPDATE`.execute(trx);
    const live = await sql<{ n: number }>`
      SELECT COUNT(*) AS n FROM monitors WHERE workspace_id = ${m.workspaceId} AND deleted_at IS NULL`.execute(trx);
    if (Number(live.rows[0]?.n ?? 0) >= cap) throw new MonitorCapReached();
    const ins = await trx
      .insertInto('monitors')
      .values({
        public_id: m.publicId,
        workspace_id: m.workspaceId,
        api_key_id: m.apiKeyId,
        product: m.product,
        request: JSON.stringify(m.request),
        interval_seconds: m.intervalSeconds,
        paused: m.paused ? 1 : 0,
        paused_reason: null,
        // The first run is due at creation (CONTRACT §14).
        next_run_at: m.paused ? null : (sql`NOW(3)` as unknown as Date),
        last_job_id: null,
        webhook_url: m.webhookUrl,
        webhook_secret: m.webhookSecret,
        webhook_prev_secret: null,
        webhook_prev_secret_until: null,
        webhook_disabled: null,
        webhook_failing_since: null,
        deleted_at: null,
      })
      .executeTakeFirstOrThrow();
    const row = (await readMonitor(trx, Number(ins.insertId)))!;
    if (claim) {
      const { status, stored } = reply(row);
      const out = await commitClaimReply(trx as unknown as Db, claim, { status, body: stored }, ttlHours);
      if (out === 'duplicate') throw new MonitorCommittedElsewhere();
    }
    return row;
  });
}

async function readMonitor(db: Db | Trx, id: number, lock = false): Promise<MonitorRow | null> {
  const res = await sql<
    Record<string, unknown>
  >`SELECT * FROM monitors WHERE id = ${id}${lock ? sql` FOR UPDATE` : sql``}`.execute(db);
  return res.rows[0] ? toMonitorRow(res.rows[0]) : null;
}

/** The live monitor of this workspace, or null (another tenant's, a deleted one, a malformed id). */
export async function findMonitor(
  db: Db | Trx,
  workspaceId: number,
  publicId: string,
  lock = false,
): Promise<MonitorRow | null> {
  if (!MONITOR_ID_RE.test(publicId)) return null;
  const res = await sql<Record<string, unknown>>`
    SELECT * FROM monitors WHERE public_id = ${publicId} AND workspace_id = ${workspaceId} AND deleted_at IS NULL
    ${lock ? sql`FOR UPDATE` : sql``}`.execute(db);
  return res.rows[0] ? toMonitorRow(res.rows[0]) : null;
}

/** A page of the workspace's live monitors by id (keyset: after `afterId`). */
export async function listMonitors(db: Db, workspaceId: number, afterId: number, limit: number): Promise<MonitorRow[]> {
  const res = await sql<Record<string, unknown>>`
    SELECT * FROM monitors WHERE workspace_id = ${workspaceId} AND deleted_at IS NULL AND id > ${afterId}
    ORDER BY id LIMIT ${limit}`.execute(db);
  return res.rows.map(toMonitorRow);
}

export interface RunRecord {
  dueAt: Date;
  runAt: Date | null;
  outcome: MonitorRunOutcome;
  code: string | null;
  jobRef: string | null;
}

/** The monitor's last decided runs, newest first. */
export async function lastRuns(db: Db | Trx, monitorId: number, n: number): Promise<RunRecord[]> {
  const res = await sql<Record<string, unknown>>`
    SELECT r.due_at, r.run_at, r.outcome, r.code, j.public_id AS job_ref
    FROM monitor_runs r LEFT JOIN jobs j ON j.id = r.job_id
    WHERE r.monitor_id = ${monitorId} AND r.outcome <> 'claimed'
    ORDER BY r.due_at DESC LIMIT ${n}`.execute(db);
  return res.rows.map((r) => ({
    dueAt: r.due_at as Date,
    runAt: (r.run_at as Date | null) ?? null,
    outcome: r.outcome as MonitorRunOutcome,
    code: (r.code as string | null) ?? null,
    jobRef: (r.job_ref as string | null) ?? null,
  }));
}

export interface MonitorChange {
  intervalSeconds?: number;
  paused?: boolean;
  /** undefined: unchanged; null: removed; a URL: set (re-enables a disabled webhook). */
  webhookUrl?: string | null;
  /** A new secret (a webhook added, or a rotation). */
  webhookSecret?: Buffer;
  /** Rotation: the old secret signs beside the new one until then. */
  rotatedUntil?: Date;
  /**
   * The key that resumes a monitor the service paused because its key was revoked: its runs are
   * admitted as this key from then on (the revoked one admits nothing).
   */
  resumeAsKeyId?: number;
}

/** A rotation while the previous rotation's overlap lasts: it would drop a secret receivers may still hold. */
export class RotationOverlap extends Error {
  readonly until: Date;
  constructor(until: Date) {
    super('the previous secret still signs');
    this.until = until;
  }
}

/** The reply of an idempotent PATCH, kept for replay in the transaction that applies it. */
export interface ChangeCommit {
  reply: (row: MonitorRow, trx: Trx) => Promise<{ status: number; stored: string }>;
  claim: IdempotencyClaim;
  ttlHours: number;
}

/** Applies a PATCH under the row lock; null when the monitor is gone. */
export async function changeMonitor(
  db: Db,
  workspaceId: number,
  publicId: string,
  change: (row: MonitorRow) => MonitorChange | Promise<MonitorChange>,
  commit?: ChangeCommit,
): Promise<MonitorRow | null> {
  return inTransaction(db, async (trx) => {
    const row = await findMonitor(trx, workspaceId, publicId, true);
    if (!row) return null;
    const c = await change(row);
    const set: Record<string, unknown> = { updated_at: sql`NOW(3)` };
    const interval = c.intervalSeconds ?? row.interval_seconds;
    const paused = c.paused ?? row.paused;
    if (c.intervalSeconds !== undefined) set.interval_seconds = c.intervalSeconds;
    if (paused) {
      set.paused = 1;
      set.next_run_at = null;
      // Paused by its owner now: no longer the service's pause.
      if (c.paused === true) set.paused_reason = null;
    } else if (row.paused) {
      // Resumed: the first run is due at once (CONTRACT §14).
      set.paused = 0;
      set.paused_reason = null;
      set.next_run_at = sql`NOW(3)`;
      if (row.paused_reason === 'key_revoked' && c.resumeAsKeyId !== undefined) set.api_key_id = c.resumeAsKeyId;
    } else if (c.intervalSeconds !== undefined) {
      // A new interval counts from the last due time, never into the past.
      set.next_run_at = sql`GREATEST(NOW(3), COALESCE(
        (SELECT MAX(due_at) FROM monitor_runs WHERE monitor_id = ${row.id}), created_at) + INTERVAL ${interval} SECOND)`;
    }
    if (c.webhookUrl === null) {
      Object.assign(set, {
        webhook_url: null,
        webhook_secret: null,
        webhook_prev_secret: null,
        webhook_prev_secret_until: null,
        webhook_disabled: null,
        webhook_failing_since: null,
      });
    } else if (c.webhookUrl !== undefined) {
      Object.assign(set, { webhook_url: c.webhookUrl, webhook_disabled: null, webhook_failing_since: null });
    }
    if (c.webhookSecret) {
      if (c.rotatedUntil && row.webhook_secret) {
        // The previous rotation's secret still signs: replacing it would drop a secret receivers
        // may hold (a client that retried a rotation whose reply it lost, with a new key).
        const until = row.webhook_prev_secret_until;
        if (row.webhook_prev_secret && until && until.getTime() > Date.now()) throw new RotationOverlap(until);
        Object.assign(set, { webhook_prev_secret: row.webhook_secret, webhook_prev_secret_until: c.rotatedUntil });
      }
      set.webhook_secret = c.webhookSecret;
    }
    await trx
      .updateTable('monitors')
      .set(set as never)
      .where('id', '=', row.id)
      .execute();
    const after = (await readMonitor(trx, row.id))!;
    if (commit) {
      const { status, stored } = await commit.reply(after, trx);
      const out = await commitClaimReply(trx as unknown as Db, commit.claim, { status, body: stored }, commit.ttlHours);
      if (out === 'duplicate') throw new MonitorCommittedElsewhere();
    }
    return after;
  });
}

/** Soft delete: no run is claimed after it, and no event is delivered for it (CONTRACT §14). */
export async function deleteMonitor(db: Db, workspaceId: number, publicId: string): Promise<boolean> {
  if (!MONITOR_ID_RE.test(publicId)) return false;
  const res = await sql`
    UPDATE monitors SET deleted_at = NOW(3), next_run_at = NULL, updated_at = NOW(3)
    WHERE public_id = ${publicId} AND workspace_id = ${workspaceId} AND deleted_at IS NULL`.execute(db);
  return affected(res) === 1;
}
