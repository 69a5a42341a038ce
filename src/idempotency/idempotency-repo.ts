// Committed idempotency replies (CONTRACT §4). Only a committed reply is written, in the same
// transaction as its effect where there is one (a job); the unique key (api_key_id, idem_key)
// makes a second commit for the same key impossible, whatever happened to the Redis lease.
import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { IdempotencyClaim } from './lease.ts';

export interface CommittedReply {
  fingerprint: Buffer;
  status: number;
  body: string;
}

/** The committed reply for a key, unless it is past retention. */
export async function findCommitted(db: Db, apiKeyId: number, key: string): Promise<CommittedReply | null> {
  const row = await db
    .selectFrom('idempotency_records')
    .select(['fingerprint', 'response_status', 'response_body'])
    .where('api_key_id', '=', apiKeyId)
    .where('idem_key', '=', key)
    .where(sql<boolean>`expires_at > NOW(3)`)
    .executeTakeFirst();
  return row ? { fingerprint: row.fingerprint, status: row.response_status, body: row.response_body } : null;
}

export interface NewCommitted {
  apiKeyId: number;
  key: string;
  fingerprint: Buffer;
  status: number;
  body: string;
  ttlHours: number;
}

function isDuplicate(err: unknown): boolean {
  const e = err as { code?: string; errno?: number } | null;
  return e?.code === 'ER_DUP_ENTRY' || e?.errno === 1062;
}

/**
 * Inserts the committed reply. 'duplicate' means another request committed this key first: the
 * caller must not commit its own effect and answers with that reply instead. A row past
 * retention is removed first so an old key can be used again.
 */
export async function insertCommitted(db: Db, r: NewCommitted): Promise<'inserted' | 'duplicate'> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await sql`INSERT INTO idempotency_records (api_key_id, idem_key, fingerprint, response_status, response_body, expires_at)
        VALUES (${r.apiKeyId}, ${r.key}, ${r.fingerprint}, ${r.status}, ${r.body}, NOW(3) + INTERVAL ${r.ttlHours} HOUR)`.execute(
        db,
      );
      return 'inserted';
    } catch (err) {
      if (!isDuplicate(err)) throw err;
      const freed = await sql`DELETE FROM idempotency_records
        WHERE api_key_id = ${r.apiKeyId} AND idem_key = ${r.key} AND expires_at <= NOW(3)`.execute(db);
      if (Number(freed.numAffectedRows ?? 0n) === 0) return 'duplicate';
    }
  }
  return 'duplicate';
}

/**
 * In the transaction of a write's effect: the reply stored as the committed reply of the request's
 * claim (its key, its fingerprint), so the effect and its replay commit together or not at all.
 * 'duplicate': another request committed this key first; the caller rolls its effect back.
 */
export function commitClaimReply(
  db: Db,
  claim: Pick<IdempotencyClaim, 'apiKeyId' | 'key' | 'fingerprint'>,
  reply: { status: number; body: string },
  ttlHours: number,
): Promise<'inserted' | 'duplicate'> {
  return insertCommitted(db, {
    apiKeyId: claim.apiKeyId,
    key: claim.key,
    fingerprint: Buffer.from(claim.fingerprint, 'hex'),
    status: reply.status,
    body: reply.body,
    ttlHours,
  });
}

export async function purgeExpiredIdempotencyKeys(db: Db, batch = 1000): Promise<number> {
  const res = await sql`DELETE FROM idempotency_records WHERE expires_at <= NOW(3) LIMIT ${batch}`.execute(db);
  return Number(res.numAffectedRows ?? 0n);
}
