// Monitor runs: each due time of a monitor becomes one row, claimed by exactly one orchestrator.
//
// The claim is one short transaction: the due monitors are read FOR UPDATE SKIP LOCKED (another
// orchestrator's claim in flight is skipped, not waited for), a run row is inserted per monitor
// (unique per monitor and due time) and each monitor's next_run_at moves on. The run is then
// decided outside that transaction: `started` is written inside the job's own transaction (so the
// run and its job commit together or not at all), `skipped` in the transaction that writes its
// event. A run left `claimed` (its orchestrator died) is picked up again by any orchestrator that
// owns its product after CLAIM_STALE_MS; the compare-and-set on `outcome = 'claimed'` keeps that
// exactly-once. A run refused for a retryable reason (a rate limit, a lane or dependency
// unavailable) stays claimed and is deferred: its reclaim_at moves to the retry time, when any
// orchestrator takes it as it takes a stale claim (the same index range, ix_monitor_runs_reclaim).
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { affected, inTransaction, type Trx } from '../../db/transaction.ts';
import { insertEvent } from './monitor-events.ts';

export interface ClaimedRun {
  runId: number;
  monitorId: number;
  dueAt: Date;
  /** Times it was deferred already (a retryable refusal). */
  deferrals: number;
}

/** A claimed run older than this is taken to have lost its orchestrator. */
export const CLAIM_STALE_MS = 60_000;

/**
 * Claims up to `limit` due runs of monitors of `products` (the orchestrator's own); each monitor's
 * next due time moves past now, in its phase.
 */
export async function claimDueRuns(db: Db, limit: number, products: readonly string[]): Promise<ClaimedRun[]> {
  if (products.length === 0) return [];
  return inTransaction(db, async (trx) => {
    const due = await sql<{ id: number; next_run_at: Date; interval_seconds: number; now: Date }>`
      SELECT id, next_run_at, interval_seconds, NOW(3) AS now FROM monitors
      WHERE next_run_at <= NOW(3) AND product IN (${sql.join(products)})
      ORDER BY next_run_at LIMIT ${limit}
      FOR UPDATE SKIP LOCKED`.execute(trx);
    if (due.rows.length === 0) return [];
    const runs = due.rows.map((r) => ({ runId: 0, monitorId: Number(r.id), dueAt: r.next_run_at }));
    await sql`INSERT IGNORE INTO monitor_runs (monitor_id, due_at, outcome, reclaim_at) VALUES ${sql.join(
      runs.map((r) => sql`(${r.monitorId}, ${r.dueAt}, 'claimed', NOW(3) + INTERVAL ${CLAIM_STALE_MS / 1000} SECOND)`),
    )}`.execute(trx);
    // One due time per interval, in the monitor's phase; a backlog (an outage of every
    // orchestrator) is one run now, not one per interval missed.
    const next = due.rows.map((r) => {
      const step = Number(r.interval_seconds) * 1000;
      const now = r.now.getTime();
      const due = r.next_run_at.getTime();
      return { id: Number(r.id), at: new Date(due + (Math.floor(Math.max(0, now - due) / step) + 1) * step) };
    });
    await sql`UPDATE monitors SET next_run_at = CASE id ${sql.join(
      next.map((n) => sql`WHEN ${n.id} THEN ${n.at}`),
      sql` `,
    )} END WHERE id IN (${sql.join(next.map((n) => n.id))})`.execute(trx);
    const ids = await sql<{ id: number; monitor_id: number; due_at: Date }>`
      SELECT id, monitor_id, due_at FROM monitor_runs WHERE outcome = 'claimed' AND (monitor_id, due_at) IN (${sql.join(
        runs.map((r) => sql`(${r.monitorId}, ${r.dueAt})`),
      )})`.execute(trx);
    return ids.rows.map((r) => ({
      runId: Number(r.id),
      monitorId: Number(r.monitor_id),
      dueAt: r.due_at,
      deferrals: 0,
    }));
  });
}

/**
 * Claimed runs any orchestrator may take now, of monitors of `products` (the orchestrator's own:
 * another's product it could only skip as capability_unavailable): left by an orchestrator that
 * died before deciding them (past CLAIM_STALE_MS), or deferred until now.
 */
export async function staleClaims(db: Db, limit: number, products: readonly string[]): Promise<ClaimedRun[]> {
  if (products.length === 0) return [];
  const res = await sql<{ id: number; monitor_id: number; due_at: Date; deferrals: number }>`
    SELECT r.id, r.monitor_id, r.due_at, r.deferrals FROM monitor_runs r JOIN monitors m ON m.id = r.monitor_id
    WHERE r.outcome = 'claimed' AND r.reclaim_at <= NOW(3) AND m.product IN (${sql.join(products)})
    ORDER BY r.reclaim_at LIMIT ${limit}`.execute(db);
  return res.rows.map((r) => ({
    runId: Number(r.id),
    monitorId: Number(r.monitor_id),
    dueAt: r.due_at,
    deferrals: Number(r.deferrals),
  }));
}

/** The run's claim is fresh again for whoever decides it now (a recovered stale or deferred claim). */
export async function refreshClaim(db: Db, runId: number): Promise<boolean> {
  const res = await sql`UPDATE monitor_runs SET claimed_at = NOW(3),
      reclaim_at = NOW(3) + INTERVAL ${CLAIM_STALE_MS / 1000} SECOND
    WHERE id = ${runId} AND outcome = 'claimed' AND reclaim_at <= NOW(3)`.execute(db);
  return affected(res) === 1;
}

/**
 * A retryable refusal: the run stays claimed, taken again at `retryAt` by any orchestrator. False
 * when another orchestrator decided it meanwhile.
 */
export async function deferRun(db: Db, run: ClaimedRun, retryAt: Date, code: string): Promise<boolean> {
  const res = await sql`UPDATE monitor_runs SET reclaim_at = ${retryAt}, deferrals = deferrals + 1, code = ${code}
    WHERE id = ${run.runId} AND outcome = 'claimed'`.execute(db);
  return affected(res) === 1;
}

/** The monitor paused or deleted before its run started. */
export class MonitorWithdrawn extends Error {}
/** Another orchestrator decided this run first. */
export class RunAlreadyDecided extends Error {}

/**
 * In the job's transaction (acceptJob's `within`): the monitor must still be live and unpaused
 * (its row lock orders this against a DELETE or a pause), and the run still claimed.
 */
export async function recordStarted(trx: Trx, run: ClaimedRun, jobId: number): Promise<void> {
  const m = await sql<{ paused: number; deleted_at: Date | null }>`
    SELECT paused, deleted_at FROM monitors WHERE id = ${run.monitorId} FOR UPDATE`.execute(trx);
  const row = m.rows[0];
  if (!row || row.deleted_at !== null || Number(row.paused) === 1) throw new MonitorWithdrawn();
  // A deferred run's last refusal (its code) is no longer why anything happened: cleared.
  const res = await sql`UPDATE monitor_runs SET outcome = 'started', code = NULL, job_id = ${jobId}, run_at = NOW(3)
    WHERE id = ${run.runId} AND outcome = 'claimed'`.execute(trx);
  if (affected(res) !== 1) throw new RunAlreadyDecided();
  await sql`UPDATE monitors SET last_job_id = ${jobId} WHERE id = ${run.monitorId}`.execute(trx);
  if (run.deferrals > 0) {
    // Started late: the monitor's phase moves to now, so monitors created together (all refused by
    // the same limit at the same due time) run apart from then on instead of colliding every interval.
    await sql`UPDATE monitors SET next_run_at = NOW(3) + INTERVAL interval_seconds SECOND
      WHERE id = ${run.monitorId} AND next_run_at IS NOT NULL
        AND next_run_at < NOW(3) + INTERVAL interval_seconds SECOND`.execute(trx);
  }
}

/**
 * The run is skipped with `code`, and its monitor.run_skipped event written in the same
 * transaction when the monitor has a live webhook. False when another orchestrator decided it.
 * With `pause`, the monitor is paused for that reason in the same transaction (a revoked key: this
 * is its one event; no run is due after it).
 */
export async function recordSkipped(db: Db, run: ClaimedRun, code: string, pause?: 'key_revoked'): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const res = await sql`UPDATE monitor_runs SET outcome = 'skipped', code = ${code}, run_at = NOW(3)
      WHERE id = ${run.runId} AND outcome = 'claimed'`.execute(trx);
    if (affected(res) !== 1) return false;
    if (pause) {
      await sql`UPDATE monitors SET paused = 1, paused_reason = ${pause}, next_run_at = NULL, updated_at = NOW(3)
        WHERE id = ${run.monitorId} AND deleted_at IS NULL`.execute(trx);
    }
    const m = await sql<{ public_id: string; workspace_id: number }>`
      SELECT public_id, workspace_id FROM monitors
      WHERE id = ${run.monitorId} AND deleted_at IS NULL AND webhook_url IS NOT NULL AND webhook_disabled IS NULL`.execute(
      trx,
    );
    const row = m.rows[0];
    if (row) {
      await insertEvent(
        trx,
        { monitorId: run.monitorId, monitorRef: row.public_id, workspaceId: Number(row.workspace_id) },
        'monitor.run_skipped',
        { jobRef: null, status: 'skipped', baseline: null, changes: null, code },
        null,
      );
    }
    return true;
  });
}

/** A claimed run whose monitor was paused or deleted before it started: it never ran. */
export async function dropRun(db: Db, run: ClaimedRun): Promise<void> {
  await sql`DELETE FROM monitor_runs WHERE id = ${run.runId} AND outcome = 'claimed'`.execute(db);
}
