// Idempotency records (CONTRACT §4). A record is claimed with an insert that the unique key
// (api_key_id, idem_key) serialises; only the holder of the random lease token may complete or
// release it; an expired lease is taken over with a compare-and-set, so a crashed holder never
// leaves a key stuck.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import type { Db } from './database.ts';

export type ClaimResult =
  | { kind: 'claimed'; id: number; token: Buffer }
  | { kind: 'replay'; status: number; body: string }
  | { kind: 'conflict' }
  | { kind: 'in_progress' };

export interface ClaimInput {
  apiKeyId: number;
  key: string;
  fingerprint: Buffer;
  leaseMs: number;
  ttlHours: number;
}

/**
 * InnoDB may pick a statement on this table as a deadlock victim when identical requests race:
 * INSERT IGNORE on a duplicate key takes a shared lock on the existing row, and when its holder
 * deletes it (a released claim) the waiting inserts deadlock on the gap. Each statement here runs
 * alone (autocommit), so the victim rolled back nothing else and may simply run again.
 */
function isDeadlock(err: unknown): boolean {
  const e = err as { code?: string; errno?: number } | null;
  return e?.code === 'ER_LOCK_DEADLOCK' || e?.errno === 1213;
}

async function retryOnDeadlock<T>(fn: () => Promise<T>, attempts = 4): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (!isDeadlock(err) || i >= attempts) throw err;
      await sleep(Math.random() * 5 * i);
    }
  }
}

const CLAIM_ATTEMPTS = 5;

export async function claimIdempotencyKey(db: Db, input: ClaimInput): Promise<ClaimResult> {
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    try {
      const result = await claimOnce(db, input);
      if (result) return result;
    } catch (err) {
      if (!isDeadlock(err)) throw err;
      // Lost a race with an identical request: look again (it may have completed or released).
      await sleep(Math.random() * 5 * (attempt + 1));
    }
  }
  // Still contended after every attempt: an identical request holds or keeps taking the key.
  return { kind: 'in_progress' };
}

/** One claim attempt; undefined = the row changed under us, try again. */
async function claimOnce(db: Db, input: ClaimInput): Promise<ClaimResult | undefined> {
  const token = randomBytes(16);
  const inserted = await sql`
    INSERT IGNORE INTO idempotency_records
      (api_key_id, idem_key, fingerprint, state, lease_token, lease_until, expires_at)
    VALUES (${input.apiKeyId}, ${input.key}, ${input.fingerprint}, 'in_progress', ${token},
            NOW(3) + INTERVAL ${input.leaseMs * 1000} MICROSECOND,
            NOW(3) + INTERVAL ${input.ttlHours} HOUR)`.execute(db);
  if (Number(inserted.numAffectedRows ?? 0n) === 1) {
    return { kind: 'claimed', id: Number(inserted.insertId), token };
  }
  const row = await db
    .selectFrom('idempotency_records')
    .select(['id', 'fingerprint', 'state', 'response_status', 'response_body',
      sql<number>`expires_at <= NOW(3)`.as('expired'), sql<number>`lease_until <= NOW(3)`.as('lease_expired')])
    .where('api_key_id', '=', input.apiKeyId)
    .where('idem_key', '=', input.key)
    .executeTakeFirst();
  if (!row) return undefined; // released between our insert and select: try again
  if (Number(row.expired) === 1) {
    // Past retention: the key is free again. Delete only that exact expired row.
    await db.deleteFrom('idempotency_records').where('id', '=', row.id).where(sql<boolean>`expires_at <= NOW(3)`).execute();
    return undefined;
  }
  if (!row.fingerprint.equals(input.fingerprint)) return { kind: 'conflict' };
  if (row.state === 'completed') return { kind: 'replay', status: row.response_status!, body: row.response_body! };
  if (Number(row.lease_expired) === 1) {
    const taken = await db
      .updateTable('idempotency_records')
      .set({ lease_token: token, lease_until: sql`NOW(3) + INTERVAL ${input.leaseMs * 1000} MICROSECOND` })
      .where('id', '=', row.id)
      .where('state', '=', 'in_progress')
      .where(sql<boolean>`lease_until <= NOW(3)`)
      .executeTakeFirst();
    if (Number(taken.numUpdatedRows) === 1) return { kind: 'claimed', id: row.id, token };
  }
  return { kind: 'in_progress' };
}

export async function completeIdempotencyKey(db: Db, id: number, token: Buffer, status: number, body: string): Promise<boolean> {
  const res = await retryOnDeadlock(() => db
    .updateTable('idempotency_records')
    .set({ state: 'completed', lease_token: null, response_status: status, response_body: body })
    .where('id', '=', id)
    .where('lease_token', '=', token)
    .executeTakeFirst());
  return Number(res.numUpdatedRows) === 1;
}

export async function releaseIdempotencyKey(db: Db, id: number, token: Buffer): Promise<void> {
  await retryOnDeadlock(() =>
    db.deleteFrom('idempotency_records').where('id', '=', id).where('lease_token', '=', token).where('state', '=', 'in_progress').execute());
}

export async function purgeExpiredIdempotencyKeys(db: Db, batch = 1000): Promise<number> {
  const res = await sql`DELETE FROM idempotency_records WHERE expires_at <= NOW(3) LIMIT ${batch}`.execute(db);
  return Number(res.numAffectedRows ?? 0n);
}
