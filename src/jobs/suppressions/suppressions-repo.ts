// The suppressions table (CONTRACT §15): create (with its idempotency record, in one transaction,
// under the workspace row lock so concurrent creates cannot pass the cap), read, list, change,
// revoke. Another workspace's suppression is never returned: the route answers
// suppression_not_found for it exactly as for one that never existed. A revoked one is kept and
// listed (revoked_at); its history says who did what and when.
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { inTransaction, parseJson, type Trx } from '../../db/transaction.ts';
import { commitClaimReply } from '../../idempotency/idempotency-repo.ts';
import type { IdempotencyClaim } from '../../idempotency/lease.ts';
import { SUPPRESSION_ID_RE, type SuppressionReason } from '../../contract/suppression-schemas.ts';
import type { SuppressionRule } from './suppression-key.ts';

export interface HistoryEntry {
  at: string;
  action: 'created' | 'updated' | 'revoked';
  by: string;
  changes?: Record<string, unknown>;
}

export interface SuppressionRow {
  id: number;
  public_id: string;
  workspace_id: number;
  code: string;
  match_key: string;
  product: string | null;
  reason: SuppressionReason;
  note: string;
  expires_at: Date | null;
  created_at: Date;
  created_by: string;
  revoked_at: Date | null;
  history: HistoryEntry[];
}

function toRow(r: Record<string, unknown>): SuppressionRow {
  return {
    id: Number(r.id),
    public_id: String(r.public_id),
    workspace_id: Number(r.workspace_id),
    code: String(r.code),
    match_key: String(r.match_key),
    product: (r.product as string | null) ?? null,
    reason: String(r.reason) as SuppressionReason,
    note: String(r.note ?? ''),
    expires_at: (r.expires_at as Date | null) ?? null,
    created_at: r.created_at as Date,
    created_by: String(r.created_by),
    revoked_at: (r.revoked_at as Date | null) ?? null,
    history: parseJson<HistoryEntry[]>(r.history) ?? [],
  };
}

/** Not revoked and not expired at `now`. */
export function isActive(r: Pick<SuppressionRow, 'revoked_at' | 'expires_at'>, now = Date.now()): boolean {
  return r.revoked_at === null && (r.expires_at === null || new Date(r.expires_at).getTime() > now);
}

/** The acting key's public prefix (its display hint), as `createdBy` and history's `by` show it. */
export async function keyPrefix(db: Db | Trx, keyId: number): Promise<string> {
  const res = await sql<{ hint: string }>`SELECT hint FROM api_keys WHERE id = ${keyId}`.execute(db);
  return res.rows[0] ? `lsk_${res.rows[0].hint}` : 'lsk_unknown';
}

export interface NewSuppression {
  publicId: string;
  workspaceId: number;
  keyId: number;
  code: string;
  key: string;
  product: string | null;
  reason: SuppressionReason;
  note: string;
  expiresAt: Date | null;
}

/** The workspace holds its cap of active suppressions already. */
export class SuppressionCapReached extends Error {}
/** Another request committed this Idempotency-Key first. */
export class SuppressionCommittedElsewhere extends Error {}

export async function createSuppression(
  db: Db,
  s: NewSuppression,
  cap: number,
  reply: (row: SuppressionRow) => { status: number; stored: string },
  claim: IdempotencyClaim | undefined,
  ttlHours: number,
): Promise<SuppressionRow> {
  return inTransaction(db, async (trx) => {
    await sql`SELECT id FROM workspaces WHERE id = ${s.workspaceId} FOR UPDATE`.execute(trx);
    const live = await sql<{ n: number }>`
      SELECT COUNT(*) AS n FROM suppressions WHERE workspace_id = ${s.workspaceId} AND revoked_at IS NULL
        AND (expires_at IS NULL OR expires_at > NOW(3))`.execute(trx);
    if (Number(live.rows[0]?.n ?? 0) >= cap) throw new SuppressionCapReached();
    const by = await keyPrefix(trx, s.keyId);
    const history: HistoryEntry[] = [{ at: new Date().toISOString(), action: 'created', by }];
    const ins = await sql`INSERT INTO suppressions
        (public_id, workspace_id, code, match_key, product, reason, note, expires_at, created_by, history)
      VALUES (${s.publicId}, ${s.workspaceId}, ${s.code}, ${s.key}, ${s.product}, ${s.reason}, ${s.note},
        ${s.expiresAt}, ${by}, ${JSON.stringify(history)})`.execute(trx);
    const row = (await readById(trx, Number(ins.insertId)))!;
    if (claim) {
      const { status, stored } = reply(row);
      const out = await commitClaimReply(trx as unknown as Db, claim, { status, body: stored }, ttlHours);
      if (out === 'duplicate') throw new SuppressionCommittedElsewhere();
    }
    return row;
  });
}

async function readById(db: Db | Trx, id: number): Promise<SuppressionRow | null> {
  const res = await sql<Record<string, unknown>>`SELECT * FROM suppressions WHERE id = ${id}`.execute(db);
  return res.rows[0] ? toRow(res.rows[0]) : null;
}

/** This workspace's suppression, revoked or not; null for another's, or a malformed id. */
export async function findSuppression(
  db: Db | Trx,
  workspaceId: number,
  publicId: string,
  lock = false,
): Promise<SuppressionRow | null> {
  if (!SUPPRESSION_ID_RE.test(publicId)) return null;
  const res = await sql<Record<string, unknown>>`
    SELECT * FROM suppressions WHERE public_id = ${publicId} AND workspace_id = ${workspaceId}
    ${lock ? sql`FOR UPDATE` : sql``}`.execute(db);
  return res.rows[0] ? toRow(res.rows[0]) : null;
}

/** Keyset page by id (ix_suppressions_list); `active` filters on the row, within the page's range. */
export async function listSuppressions(
  db: Db,
  workspaceId: number,
  afterId: number,
  limit: number,
  active: boolean | undefined,
): Promise<SuppressionRow[]> {
  const filter =
    active === undefined
      ? sql``
      : active
        ? sql`AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > NOW(3))`
        : sql`AND (revoked_at IS NOT NULL OR expires_at <= NOW(3))`;
  const res = await sql<Record<string, unknown>>`
    SELECT * FROM suppressions WHERE workspace_id = ${workspaceId} AND id > ${afterId} ${filter}
    ORDER BY id LIMIT ${limit}`.execute(db);
  return res.rows.map(toRow);
}

/**
 * Note and expiry of a suppression that is not revoked (a revoked one cannot come back: a new one
 * is made instead), with a history entry. null: not this workspace's. 'revoked': it is revoked.
 */
export async function changeSuppression(
  db: Db,
  workspaceId: number,
  publicId: string,
  keyId: number,
  change: { note?: string; expiresAt?: Date | null },
): Promise<SuppressionRow | null | 'revoked'> {
  return inTransaction(db, async (trx) => {
    const row = await findSuppression(trx, workspaceId, publicId, true);
    if (!row) return null;
    if (row.revoked_at !== null) return 'revoked' as const;
    const set: Record<string, unknown> = {};
    if (change.note !== undefined) set.note = change.note;
    if (change.expiresAt !== undefined) set.expiresAt = change.expiresAt?.toISOString() ?? null;
    const history = [
      ...row.history,
      { at: new Date().toISOString(), action: 'updated' as const, by: await keyPrefix(trx, keyId), changes: set },
    ];
    await sql`UPDATE suppressions SET
        note = ${change.note ?? row.note},
        expires_at = ${change.expiresAt === undefined ? row.expires_at : change.expiresAt},
        history = ${JSON.stringify(history)}
      WHERE id = ${row.id}`.execute(trx);
    return readById(trx, row.id);
  });
}

/** Revokes (kept, listed with revoked_at); a second revoke changes nothing. false: not found. */
export async function revokeSuppression(
  db: Db,
  workspaceId: number,
  publicId: string,
  keyId: number,
): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const row = await findSuppression(trx, workspaceId, publicId, true);
    if (!row) return false;
    if (row.revoked_at !== null) return true;
    const history = [
      ...row.history,
      { at: new Date().toISOString(), action: 'revoked', by: await keyPrefix(trx, keyId) },
    ];
    await sql`UPDATE suppressions SET revoked_at = NOW(3), history = ${JSON.stringify(history)}
      WHERE id = ${row.id}`.execute(trx);
    return true;
  });
}

/** The workspace's active suppressions as matching rules (a job's terminal work; ix_suppressions_active). */
export async function activeRules(db: Db | Trx, workspaceId: number): Promise<SuppressionRule[]> {
  const res = await sql<{
    id: number;
    public_id: string;
    code: string;
    match_key: string;
    product: string | null;
    reason: string;
    expires_at: Date | null;
  }>`SELECT id, public_id, code, match_key, product, reason, expires_at FROM suppressions
    WHERE workspace_id = ${workspaceId} AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > NOW(3))`.execute(
    db,
  );
  return res.rows.map((r) => ({
    id: Number(r.id),
    publicId: r.public_id,
    code: r.code,
    key: r.match_key,
    product: r.product,
    reason: r.reason,
    expiresAt: r.expires_at ? new Date(r.expires_at) : null,
  }));
}
