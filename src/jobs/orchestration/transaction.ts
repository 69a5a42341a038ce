// Transactions that retry on InnoDB deadlock / lock-wait timeout. Every writer of a job's rows
// locks the job row first (jobs → tasks → objects/findings → credit rows), which keeps deadlocks
// rare; the retry covers gap-lock conflicts on concurrent inserts. Callers must be idempotent
// (they are: every write is a compare-and-set or keyed).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';

export type Trx = Transaction<Database>;

const RETRYABLE = new Set([1213, 1205]); // ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT

function isRetryable(err: unknown): boolean {
  const e = err as { errno?: number; code?: string };
  return (e.errno !== undefined && RETRYABLE.has(e.errno)) || e.code === 'ER_LOCK_DEADLOCK' || e.code === 'ER_LOCK_WAIT_TIMEOUT';
}

export async function inTransaction<T>(db: Db, fn: (trx: Trx) => Promise<T>, attempts = 4): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await db.transaction().execute(fn);
    } catch (err) {
      if (i >= attempts || !isRetryable(err)) throw err;
      await sleep(5 + Math.random() * 20 * i);
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
