// The credit ledger (CONTRACT §6). Entries are immutable; credit_accounts is kept in step inside
// the same transaction, and its CHECK (granted >= reserved + captured) makes oversubscription
// impossible under any concurrency: a reservation is one conditional UPDATE.
//
// Lock order, everywhere: jobs → credit_accounts → key_month_usage. Acceptance (reserve) takes
// credit_accounts then key_month_usage; settlement (capture, release) holds the job row, then
// credit_accounts, then key_month_usage. One order means no cycle, so no deadlock between a new
// job's reservation and another job's settlement of the same key.
//
// Every admission of a workspace updates its credit_accounts row, so a settlement holds that row
// for as short a time as it can: a capture or a release is the last work of its transaction
// (the caller's, e.g. a batch of results: after its outputs, gate releases and expansion), and
// inside it the workspace's row is updated last. A capture near the start of a 1,000-task batch
// held every reservation of the workspace for the whole batch (4.1 s; issue 31).
import { sql, type Transaction } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { Db } from '../db/database.ts';
import { ApiError } from '../contract/errors.ts';
import { inTransaction } from '../db/transaction.ts';

type Trx = Transaction<Database> | Db;

export function monthOf(d: Date): string {
  return d.toISOString().slice(0, 7);
}

async function ensureAccount(trx: Trx, workspaceId: number): Promise<void> {
  await sql`INSERT IGNORE INTO credit_accounts (workspace_id) VALUES (${workspaceId})`.execute(trx);
}

export async function grantCredits(db: Db, workspaceId: number, amount: number, dedupeKey: string): Promise<boolean> {
  if (!Number.isInteger(amount) || amount <= 0) throw new Error('grant amount must be a positive integer');
  return inTransaction(db, async (trx) => {
    await ensureAccount(trx, workspaceId);
    const entry = await sql`INSERT IGNORE INTO credit_entries (workspace_id, kind, amount, dedupe_key)
      VALUES (${workspaceId}, 'grant', ${amount}, ${dedupeKey})`.execute(trx);
    if (Number(entry.numAffectedRows ?? 0n) === 0) return false;
    await sql`UPDATE credit_accounts SET granted = granted + ${amount} WHERE workspace_id = ${workspaceId}`.execute(
      trx,
    );
    return true;
  });
}

export interface ReserveInput {
  workspaceId: number;
  apiKeyId: number;
  monthlyLimit: number | null;
  amount: number;
  month: string;
  /** Unique per reservation (the job's public id). */
  dedupeKey: string;
}

/**
 * Reserves `amount` for a new job. Throws monthly_credit_limit_exceeded, else insufficient_credits
 * (CONTRACT §2 step 10 order); the caller's transaction then rolls back whatever was taken.
 */
export async function reserveCredits(trx: Transaction<Database>, r: ReserveInput): Promise<void> {
  if (r.amount === 0) return;
  // credit_accounts first (the lock order above); both conditions are checked, then reported in
  // contract order.
  const taken = await sql`UPDATE credit_accounts SET reserved = reserved + ${r.amount}
    WHERE workspace_id = ${r.workspaceId} AND granted - reserved - captured >= ${r.amount}`.execute(trx);
  const creditsOk = Number(taken.numAffectedRows ?? 0n) === 1;
  let monthlyOk = true;
  if (r.monthlyLimit !== null) {
    // The no-op upsert takes the usage row's exclusive lock at once (INSERT IGNORE would take a
    // shared one, and two requests upgrading shared locks to exclusive deadlock each other).
    await sql`INSERT INTO key_month_usage (api_key_id, month, amount) VALUES (${r.apiKeyId}, ${r.month}, 0)
      ON DUPLICATE KEY UPDATE amount = amount`.execute(trx);
    const used = await sql`UPDATE key_month_usage SET amount = amount + ${r.amount}
      WHERE api_key_id = ${r.apiKeyId} AND month = ${r.month} AND amount + ${r.amount} <= ${r.monthlyLimit}`.execute(
      trx,
    );
    monthlyOk = Number(used.numAffectedRows ?? 0n) === 1;
  } else {
    await sql`INSERT INTO key_month_usage (api_key_id, month, amount) VALUES (${r.apiKeyId}, ${r.month}, ${r.amount})
      ON DUPLICATE KEY UPDATE amount = amount + VALUES(amount)`.execute(trx);
  }
  if (!monthlyOk) throw new ApiError('monthly_credit_limit_exceeded');
  if (!creditsOk) throw new ApiError('insufficient_credits');
  await sql`INSERT INTO credit_entries (workspace_id, kind, amount, api_key_id, dedupe_key)
    VALUES (${r.workspaceId}, 'reserve', ${r.amount}, ${r.apiKeyId}, ${r.dedupeKey})`.execute(trx);
}

/**
 * Captures a task's measured cost once (keyed by task). The capture never exceeds what remains of
 * the job's reservation. Returns the amount actually captured (0 on a repeat).
 */
export async function captureTask(
  trx: Transaction<Database>,
  c: { workspaceId: number; jobId: number; taskId: number; amount: number },
): Promise<number> {
  return captureTasks(trx, {
    workspaceId: c.workspaceId,
    jobId: c.jobId,
    tasks: [{ taskId: c.taskId, amount: c.amount }],
  });
}

/** What a batch of settled tasks is to capture: made by settling, captured by captureTasks. */
export interface CaptureRequest {
  workspaceId: number;
  jobId: number;
  tasks: ReadonlyArray<{ taskId: number; amount: number }>;
  /**
   * The job row as this transaction locked it (SELECT … FOR UPDATE) and has not changed its
   * credits since: given, the capture does not read it again (one round trip fewer under the job
   * row lock for every batch of results, issue 32). Absent, it locks and reads the row itself.
   */
  lockedJob?: { publicId: string; reserved: number; captured: number; settled: boolean };
}

/**
 * captureTask for many tasks of one job in one go (a batch of applied results): the job row is
 * read once, each task is captured once (its dedupe key; one already recorded is skipped), in the
 * given order while the reservation lasts, with one insert and one balance update for the lot.
 * Returns the credits captured. Call it as the last work of the transaction (see the top).
 */
export async function captureTasks(trx: Transaction<Database>, c: CaptureRequest): Promise<number> {
  const wanted = c.tasks.filter((t) => t.amount > 0);
  if (wanted.length === 0) return 0;
  const row = c.lockedJob
    ? {
        public_id: c.lockedJob.publicId,
        credits_reserved: c.lockedJob.reserved,
        credits_captured: c.lockedJob.captured,
        settled_at: c.lockedJob.settled ? new Date(0) : null,
      }
    : (
        await sql<{
          public_id: string;
          credits_reserved: number;
          credits_captured: number;
          settled_at: Date | null;
        }>`
    SELECT public_id, credits_reserved, credits_captured, settled_at FROM jobs WHERE id = ${c.jobId} FOR UPDATE`.execute(
          trx,
        )
      ).rows[0];
  if (!row || row.settled_at) return 0;
  const keyOf = (taskId: number) => `cap:${row.public_id}:${taskId}`;
  const known = await sql<{ dedupe_key: string }>`
    SELECT dedupe_key FROM credit_entries WHERE dedupe_key IN (${sql.join(wanted.map((t) => keyOf(t.taskId)))})`.execute(
    trx,
  );
  const seen = new Set(known.rows.map((r) => r.dedupe_key));
  let room = Number(row.credits_reserved) - Number(row.credits_captured);
  const entries: Array<{ key: string; amount: number }> = [];
  for (const t of wanted) {
    const key = keyOf(t.taskId);
    if (seen.has(key)) continue;
    seen.add(key);
    const amount = Math.min(t.amount, room);
    if (amount <= 0) break;
    room -= amount;
    entries.push({ key, amount });
  }
  if (entries.length === 0) return 0;
  const total = entries.reduce((a, e) => a + e.amount, 0);
  await sql`INSERT INTO credit_entries (workspace_id, kind, amount, job_id, dedupe_key) VALUES ${sql.join(
    entries.map((e) => sql`(${c.workspaceId}, 'capture', ${e.amount}, ${c.jobId}, ${e.key})`),
  )}`.execute(trx);
  await sql`UPDATE jobs SET credits_captured = credits_captured + ${total} WHERE id = ${c.jobId}`.execute(trx);
  // The workspace's row last (see the top): held from here to the commit only.
  await sql`UPDATE credit_accounts SET reserved = reserved - ${total}, captured = captured + ${total} WHERE workspace_id = ${c.workspaceId}`.execute(
    trx,
  );
  return total;
}

/**
 * Releases the unused remainder exactly once, at the terminal transition. Dedupe keys carry the
 * job's random public id, never a bare auto-increment id, which a restore or rebuild can reuse.
 * Lock order: jobs → credit_accounts → key_month_usage, as everywhere (see the top).
 */
export async function releaseRemainder(
  trx: Transaction<Database>,
  jobId: number,
  /**
   * The job row as this transaction read it with its lock, when nothing in the transaction changed
   * its credits since (the terminal transaction: finalize-job.ts): given, it is not read again.
   */
  lockedJob?: {
    publicId: string;
    workspaceId: number;
    apiKeyId: number;
    month: string;
    reserved: number;
    captured: number;
    settled: boolean;
  },
): Promise<{ reserved: number; captured: number; released: number } | null> {
  const job = lockedJob
    ? {
        public_id: lockedJob.publicId,
        workspace_id: lockedJob.workspaceId,
        api_key_id: lockedJob.apiKeyId,
        month: lockedJob.month,
        credits_reserved: lockedJob.reserved,
        credits_captured: lockedJob.captured,
        settled_at: lockedJob.settled ? new Date(0) : null,
      }
    : await lockForRelease(trx, jobId);
  if (!job || job.settled_at) return null;
  const reserved = Number(job.credits_reserved);
  const captured = Number(job.credits_captured);
  const released = reserved - captured;
  // The job row first (held already), the workspace's rows last (see the top).
  await sql`UPDATE jobs SET credits_released = ${released}, settled_at = NOW(3) WHERE id = ${jobId}`.execute(trx);
  if (released > 0) {
    const entry = await sql`INSERT IGNORE INTO credit_entries (workspace_id, kind, amount, job_id, dedupe_key)
      VALUES (${job.workspace_id}, 'release', ${released}, ${jobId}, ${`rel:${job.public_id}`})`.execute(trx);
    if (Number(entry.numAffectedRows ?? 0n) === 1) {
      await sql`UPDATE credit_accounts SET reserved = reserved - ${released} WHERE workspace_id = ${job.workspace_id}`.execute(
        trx,
      );
      await sql`UPDATE key_month_usage SET amount = amount - ${released} WHERE api_key_id = ${job.api_key_id} AND month = ${job.month}`.execute(
        trx,
      );
    }
    // An existing release entry means the balance was already settled: settle the job row too.
  }
  return { reserved, captured, released };
}

/** The job row's credit columns, locked (the job row first in the lock order). */
async function lockForRelease(trx: Transaction<Database>, jobId: number) {
  const res = await sql<{
    public_id: string;
    workspace_id: number;
    api_key_id: number;
    month: string;
    credits_reserved: number;
    credits_captured: number;
    settled_at: Date | null;
  }>`
    SELECT public_id, workspace_id, api_key_id, month, credits_reserved, credits_captured, settled_at FROM jobs WHERE id = ${jobId} FOR UPDATE`.execute(
    trx,
  );
  return res.rows[0];
}

export interface Balance {
  granted: number;
  reserved: number;
  captured: number;
  available: number;
}

export async function balance(db: Db, workspaceId: number): Promise<Balance> {
  const row = await db
    .selectFrom('credit_accounts')
    .select(['granted', 'reserved', 'captured'])
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  const granted = Number(row?.granted ?? 0);
  const reserved = Number(row?.reserved ?? 0);
  const captured = Number(row?.captured ?? 0);
  return { granted, reserved, captured, available: granted - reserved - captured };
}
