// Reads of the inventory (CONTRACT §16) for its routes, and its retention. Every page is a keyset
// range on one index that starts with the workspace and the filter's equality (migration 031), so
// its cost does not grow with depth:
//   q            ix_inventory_q: rhost range, ordered (rhost, type, okey)
//   minSeverity  ix_inventory_severity: one range per severity at or above it, each ordered
//                (type, okey), merged here (at most five ranges of limit + 1 rows)
//   state        ix_inventory_state
//   otherwise    ix_inventory_page (type, okey; `type` narrows it)
// The other filters are conditions on the rows of that range. A cursor carries the last row's id;
// its position is read back from the row (a row purged since ends the cursor: invalid_cursor).
import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../../db/database.ts';
import { affected } from '../../db/transaction.ts';
import type { SuppressedFilter } from '../../contract/suppression-schemas.ts';
import { SEVERITIES, type Severity } from '../../contract/tasks.ts';
import type { InventoryState } from '../../contract/inventory-schemas.ts';
import { qRange } from './inventory-keys.ts';

export interface InventoryRow {
  id: number;
  type: string;
  okey: string;
  rhost: string;
  state: InventoryState;
  first_seen_at: Date;
  last_seen_at: Date;
  last_checked_at: Date | null;
  changed_at: Date | null;
  last_job_ref: string;
  last_object_ref: string | null;
  job_alive: number;
  products: string;
  open_critical: number;
  open_high: number;
  open_medium: number;
  open_low: number;
  open_info: number;
}

export interface InventoryFilters {
  type?: string | undefined;
  state?: InventoryState | undefined;
  q?: string | undefined;
  minSeverity?: Severity | undefined;
  changedSince?: Date | undefined;
}

interface Position {
  type: string;
  okey: string;
  rhost: string;
}

/** The position of the row a cursor names, or null (not this workspace's, or purged). */
export async function inventoryPosition(db: Db, workspaceId: number, id: number): Promise<Position | null> {
  const res = await sql<Position>`
    SELECT type, okey, rhost FROM inventory WHERE id = ${id} AND workspace_id = ${workspaceId}`.execute(db);
  return res.rows[0] ?? null;
}

const COLUMNS = sql`i.id, i.type, i.okey, i.rhost, i.state, i.first_seen_at, i.last_seen_at, i.last_checked_at,
  i.changed_at, i.last_job_ref, i.last_object_ref, (j.id IS NOT NULL) AS job_alive, i.products, i.open_critical,
  i.open_high, i.open_medium, i.open_low, i.open_info`;

/** (type, okey) > after, written so the range optimizer sees the index's order. */
function afterTypeKey(after: Position | null, type: string | undefined): RawBuilder<unknown> {
  if (!after) return sql``;
  if (type !== undefined) return sql`AND i.okey > ${after.okey}`;
  return sql`AND (i.type > ${after.type} OR (i.type = ${after.type} AND i.okey > ${after.okey}))`;
}

export async function inventoryPage(
  db: Db,
  workspaceId: number,
  f: InventoryFilters,
  after: Position | null,
  limit: number,
): Promise<{ rows: InventoryRow[]; hasMore: boolean } | null> {
  const n = limit + 1;
  const typeCond = f.type !== undefined ? sql`AND i.type = ${f.type}` : sql``;
  const stateCond = f.state !== undefined ? sql`AND i.state = ${f.state}` : sql``;
  const minRank = f.minSeverity !== undefined ? SEVERITIES.indexOf(f.minSeverity) : -1;
  const sevCond = minRank >= 0 ? sql`AND i.max_open >= ${minRank}` : sql``;
  const changedCond = f.changedSince ? sql`AND i.changed_at >= ${f.changedSince}` : sql``;
  const from = (index: string) =>
    sql`FROM inventory i FORCE INDEX (${sql.raw(index)}) LEFT JOIN jobs j ON j.id = i.last_job_id`;
  let rows: InventoryRow[];
  if (f.q !== undefined) {
    const range = qRange(f.q);
    if (!range) return { rows: [], hasMore: false };
    const pos = after
      ? sql`AND (i.rhost > ${after.rhost} OR (i.rhost = ${after.rhost} AND (i.type > ${after.type}
          OR (i.type = ${after.type} AND i.okey > ${after.okey}))))`
      : sql``;
    rows = (
      await sql<InventoryRow>`SELECT ${COLUMNS} ${from('ix_inventory_q')}
        WHERE i.workspace_id = ${workspaceId} AND i.rhost >= ${range.from} AND i.rhost < ${range.to} ${pos}
          ${typeCond} ${stateCond} ${sevCond} ${changedCond}
        ORDER BY i.rhost, i.type, i.okey LIMIT ${n}`.execute(db)
    ).rows;
  } else if (minRank >= 0) {
    // One range per severity at or above the minimum, each in (type, okey) order; merged.
    const parts: InventoryRow[] = [];
    for (let s = minRank; s < SEVERITIES.length; s++) {
      const res = await sql<InventoryRow>`SELECT ${COLUMNS} ${from('ix_inventory_severity')}
        WHERE i.workspace_id = ${workspaceId} AND i.max_open = ${s} ${typeCond} ${afterTypeKey(after, f.type)}
          ${stateCond} ${changedCond}
        ORDER BY i.type, i.okey LIMIT ${n}`.execute(db);
      parts.push(...res.rows);
    }
    rows = parts.sort(byTypeKey).slice(0, n);
  } else if (f.state !== undefined) {
    rows = (
      await sql<InventoryRow>`SELECT ${COLUMNS} ${from('ix_inventory_state')}
        WHERE i.workspace_id = ${workspaceId} AND i.state = ${f.state} ${typeCond} ${afterTypeKey(after, f.type)}
          ${changedCond}
        ORDER BY i.type, i.okey LIMIT ${n}`.execute(db)
    ).rows;
  } else {
    rows = (
      await sql<InventoryRow>`SELECT ${COLUMNS} ${from('ix_inventory_page')}
        WHERE i.workspace_id = ${workspaceId} ${typeCond} ${afterTypeKey(after, f.type)} ${changedCond}
        ORDER BY i.type, i.okey LIMIT ${n}`.execute(db)
    ).rows;
  }
  return { rows: rows.slice(0, limit), hasMore: rows.length > limit };
}

/** utf8mb4_bin order, as the index has it: byte order of the UTF-8 text. */
function cmp(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

function byTypeKey(a: InventoryRow, b: InventoryRow): number {
  return cmp(a.type, b.type) || cmp(a.okey, b.okey);
}

export interface InventoryFindingRow {
  id: number;
  code: string;
  severity: number;
  object_type: string;
  object_key: string;
  first_seen_at: Date;
  last_seen_at: Date;
  job_ref: string;
  finding_ref: string;
  suppression_ref: string | null;
  suppression_reason: string | null;
  suppression_expires_at: Date | null;
}

export interface InventoryFindingFilters {
  minSeverity?: Severity | undefined;
  code?: string | undefined;
  q?: string | undefined;
  suppressed?: SuppressedFilter | undefined;
}

/** Keyset by id (ix_inventory_findings_page); the filters are conditions on its rows. */
export async function inventoryFindingsPage(
  db: Db,
  workspaceId: number,
  f: InventoryFindingFilters,
  afterId: number,
  limit: number,
): Promise<{ rows: InventoryFindingRow[]; hasMore: boolean }> {
  const conds: RawBuilder<unknown>[] = [];
  const rank = f.minSeverity ? SEVERITIES.indexOf(f.minSeverity) : 0;
  if (rank > 0) conds.push(sql`AND severity >= ${rank}`);
  if (f.code) conds.push(sql`AND code = ${f.code}`);
  if (f.q !== undefined) {
    const range = qRange(f.q);
    if (!range) return { rows: [], hasMore: false };
    conds.push(sql`AND rhost >= ${range.from} AND rhost < ${range.to}`);
  }
  if (f.suppressed === 'exclude') conds.push(sql`AND suppression_ref IS NULL`);
  if (f.suppressed === 'only') conds.push(sql`AND suppression_ref IS NOT NULL`);
  const res = await sql<InventoryFindingRow>`
    SELECT id, code, severity, object_type, object_key, first_seen_at, last_seen_at, job_ref, finding_ref,
      suppression_ref, suppression_reason, suppression_expires_at
    FROM inventory_findings FORCE INDEX (ix_inventory_findings_page)
    WHERE workspace_id = ${workspaceId} AND id > ${afterId} ${sql.join(conds, sql` `)}
    ORDER BY id LIMIT ${limit + 1}`.execute(db);
  return { rows: res.rows.slice(0, limit), hasMore: res.rows.length > limit };
}

/** Rows not seen for `days` (CONTRACT §16: INVENTORY_RETENTION_DAYS), in bounded batches. */
export async function purgeInventory(db: Db, days: number, batch = 5000): Promise<number> {
  let n = 0;
  for (const table of ['inventory', 'inventory_findings'] as const) {
    for (;;) {
      const res = await sql`DELETE FROM ${sql.table(table)} WHERE last_seen_at < NOW(3) - INTERVAL ${days} DAY
        LIMIT ${batch}`.execute(db);
      n += affected(res);
      if (affected(res) < batch) break;
    }
  }
  return n;
}
