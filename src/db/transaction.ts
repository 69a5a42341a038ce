// Write transactions: READ COMMITTED, retried on InnoDB deadlock / lock-wait timeout.
//
// Isolation. Every writer of a job's rows locks the job row first, every ledger writer takes its
// rows in one order (jobs → credit_accounts → key_month_usage), and every other write is a
// compare-and-set or keyed by a unique index. None needs REPEATABLE READ's gap locks, which were
// the cause of deadlocks between unrelated jobs (a locking read on an empty range of objects'
// unique index locked a gap another job was inserting into). READ COMMITTED takes no gap locks.
//
// Retry. A deadlock victim's transaction was rolled back whole, so running it again is safe for
// callers that are idempotent (they are). It is retried at once, with bounded, jittered
// exponential backoff, instead of surfacing as a 503 or waiting for a stream redelivery.
import { setTimeout as sleep } from 'node:timers/promises';
import { CONNECTION_SHORTAGE_CODES } from '../resilience/dependency-errors.ts';
import type { Transaction } from 'kysely';
import type { Db } from './database.ts';
import type { Database } from './schema.ts';

export type Trx = Transaction<Database>;

const RETRYABLE = new Set([1213, 1205]); // ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT

export function isRetryableLockError(err: unknown): boolean {
  const e = err as { errno?: number; code?: string } | null;
  return (
    (e?.errno !== undefined && RETRYABLE.has(e.errno)) ||
    e?.code === 'ER_LOCK_DEADLOCK' ||
    e?.code === 'ER_LOCK_WAIT_TIMEOUT'
  );
}

/**
 * MySQL itself is away (connection refused, reset or lost, the server shutting down, a killed
 * connection, out of connections): an error of the moment, not of the statement. A caller that
 * isolates a failing statement (one result of a batch) must not blame the statement for it.
 */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  // No connection for us (too many connections, the account's limit, the pool's wait run out).
  ...CONNECTION_SHORTAGE_CODES,
  'ER_SERVER_SHUTDOWN',
  'ER_CONNECTION_KILLED',
  'ER_QUERY_INTERRUPTED',
]);

export function isConnectionError(err: unknown): boolean {
  const e = err as { fatal?: boolean; code?: string; message?: string } | null;
  return (
    e?.fatal === true ||
    (e?.code !== undefined && CONNECTION_CODES.has(e.code)) ||
    /Pool is closed/.test(e?.message ?? '')
  );
}

export interface TransactionOptions {
  /** Attempts in all (default 8: a handful of collisions in a row still ends in success). */
  attempts?: number;
  /** Called before each retry (metrics, logs). */
  onRetry?: (err: unknown, attempt: number) => void;
}

/** Full-jitter backoff: 0..min(cap, base·2^n) ms. */
export function backoffMs(attempt: number, baseMs = 5, capMs = 250): number {
  return Math.random() * Math.min(capMs, baseMs * 2 ** attempt);
}

export async function inTransaction<T>(
  db: Db,
  fn: (trx: Trx) => Promise<T>,
  opts: TransactionOptions = {},
): Promise<T> {
  const attempts = opts.attempts ?? 8;
  for (let i = 1; ; i++) {
    try {
      // READ COMMITTED: every connection's session default (database.ts), set once per connection.
      return await db.transaction().execute(fn);
    } catch (err) {
      if (i >= attempts || !isRetryableLockError(err)) throw err;
      opts.onRetry?.(err, i);
      await sleep(backoffMs(i));
    }
  }
}

export function affected(res: { numAffectedRows?: bigint; numUpdatedRows?: bigint; numDeletedRows?: bigint }): number {
  return Number(res.numAffectedRows ?? res.numUpdatedRows ?? res.numDeletedRows ?? 0n);
}

export function parseJson<T = unknown>(v: unknown): T | null {
  if (v === null || v === undefined) return null;
  return (typeof v === 'string' ? JSON.parse(v) : v) as T;
}
