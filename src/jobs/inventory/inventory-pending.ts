// The inventory of a job's end (CONTRACT §16), written after its terminal transaction, not in it:
// the terminal transaction holds the job row lock and the workspace's credit row for its commit,
// and an inventory of tens of thousands of rows in it made both wait (and grew the orchestrator by
// the whole update). Exactly once, whatever dies when:
//
//   - the terminal transaction inserts the job's marker (inventory_pending, migration 025) beside
//     its terminal status: the job cannot be terminal without it;
//   - after the commit, finalize-job.ts drains the job's workspace (drainInventoryOf): each page of
//     the job's objects is one transaction that locks the marker, applies the page from the
//     marker's cursor (after_seq) and advances the cursor; the last one applies the comparison's
//     absences and deletes the marker. A page is never applied twice (its rows and the cursor commit
//     together) and never skipped (the cursor only moves with them);
//   - a process that died between the terminal commit and the last page leaves its marker
//     untouched; the reconciler resumes it (drainStaleInventory) at its cursor.
//
// A workspace's markers are worked oldest first, each to its end before the next: a job's end
// never overwrites what a later job of the workspace recorded (a resumed marker is older than the
// job whose drain finds it). Two drainers of one workspace meet on the marker's lock and share its
// pages.
import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Db } from '../../db/database.ts';
import { inTransaction, type Trx } from '../../db/transaction.ts';
import type { ChangeRules } from '../../products/kit/change-rules.ts';
import { readEstateJobState } from './estate-job.ts';
import { inventoryDrainSeconds } from './estate-metrics.ts';
import {
  addOutcome,
  updateInventoryAbsences,
  updateInventoryChunk,
  type InventoryJob,
  type InventoryOutcome,
} from './update-inventory.ts';

export type RulesOf = (product: string) => ChangeRules | undefined;

/** In the terminal transaction, once its compare-and-set won: the durable marker. */
export async function queueInventory(trx: Trx, job: { id: number; workspaceId: number }): Promise<void> {
  await sql`INSERT IGNORE INTO inventory_pending (job_id, workspace_id) VALUES (${job.id}, ${job.workspaceId})`.execute(
    trx,
  );
}

/** After the job's terminal commit: its workspace's markers, its own among them. Returns jobs written. */
export async function drainInventoryOf(db: Db, jobId: number, rulesOf: RulesOf, log?: Logger): Promise<number> {
  const res = await sql<{ workspace_id: number }>`
    SELECT workspace_id FROM inventory_pending WHERE job_id = ${jobId}`.execute(db);
  const row = res.rows[0];
  return row ? drainWorkspace(db, Number(row.workspace_id), rulesOf, log) : 0;
}

/**
 * The reconciler's pass: the workspaces of markers nobody touched for `staleMs` (their drainer
 * died), at most `limit` of them, each drained to its end. Returns jobs written.
 */
export async function drainStaleInventory(
  db: Db,
  rulesOf: RulesOf,
  opts: { staleMs: number; limit?: number; log?: Logger },
): Promise<number> {
  const res = await sql<{ workspace_id: number }>`
    SELECT DISTINCT workspace_id FROM inventory_pending
    WHERE touched_at < NOW(3) - INTERVAL ${opts.staleMs * 1000} MICROSECOND LIMIT ${opts.limit ?? 20}`.execute(db);
  let n = 0;
  for (const r of res.rows) n += await drainWorkspace(db, Number(r.workspace_id), rulesOf, opts.log);
  return n;
}

async function drainWorkspace(db: Db, workspaceId: number, rulesOf: RulesOf, log?: Logger): Promise<number> {
  let n = 0;
  for (;;) {
    const res = await sql<{ id: number }>`
      SELECT id FROM inventory_pending WHERE workspace_id = ${workspaceId} ORDER BY id LIMIT 1`.execute(db);
    const marker = res.rows[0];
    if (!marker) return n;
    if (await writeMarked(db, Number(marker.id), rulesOf, log)) n++;
  }
}

/** One marker to its end, a page per transaction. True when this call deleted it. */
async function writeMarked(db: Db, markerId: number, rulesOf: RulesOf, log?: Logger): Promise<boolean> {
  const began = performance.now();
  const out: InventoryOutcome = { present: 0, gone: 0, unconfirmed: 0 };
  let jobId: number | null = null;
  for (;;) {
    const page = await writeInventoryPage(db, markerId, rulesOf);
    if (page.step === 'gone') return false;
    jobId = page.jobId;
    addOutcome(out, page);
    if (page.step === 'done') break;
  }
  const ms = performance.now() - began;
  inventoryDrainSeconds.observe(ms / 1000);
  log?.debug({ jobId, ...out, durationMs: Math.round(ms) }, 'inventory written');
  return true;
}

export interface InventoryPage extends InventoryOutcome {
  /** more: pages left; done: this call deleted the marker; gone: no marker (another drainer's). */
  step: 'more' | 'done' | 'gone';
  jobId: number | null;
}

/**
 * One transaction of a marker's work: a page of its job's objects from its cursor, the cursor
 * advanced with them; the last one with the comparison's absences and the marker's delete.
 */
export async function writeInventoryPage(
  db: Db,
  markerId: number,
  rulesOf: RulesOf,
  pageSize?: number,
): Promise<InventoryPage> {
  return inTransaction(db, async (trx) => {
    const out: InventoryPage = { present: 0, gone: 0, unconfirmed: 0, step: 'gone', jobId: null };
    const m = await sql<{ job_id: number; after_seq: number }>`
      SELECT job_id, after_seq FROM inventory_pending WHERE id = ${markerId} FOR UPDATE`.execute(trx);
    const marker = m.rows[0];
    if (!marker) return out;
    const jobId = Number(marker.job_id);
    out.jobId = jobId;
    const j = await sql<{ workspace_id: number; product: string; public_id: string }>`
      SELECT workspace_id, product, public_id FROM jobs WHERE id = ${jobId}`.execute(trx);
    const row = j.rows[0];
    const state = row ? await readEstateJobState(trx, jobId) : null;
    if (!row || !state) {
      // Purged by retention before its inventory was written (a marker left for longer than the
      // job was kept): nothing left to write from.
      await sql`DELETE FROM inventory_pending WHERE id = ${markerId}`.execute(trx);
      return { ...out, step: 'done' };
    }
    const job: InventoryJob = {
      id: jobId,
      workspaceId: Number(row.workspace_id),
      product: row.product,
      publicId: row.public_id,
    };
    const page = await updateInventoryChunk(trx, job, rulesOf(job.product), state, Number(marker.after_seq), pageSize);
    addOutcome(out, page);
    if (page.nextSeq !== null) {
      await sql`UPDATE inventory_pending SET after_seq = ${page.nextSeq}, touched_at = NOW(3)
        WHERE id = ${markerId}`.execute(trx);
      return { ...out, step: 'more' };
    }
    addOutcome(out, await updateInventoryAbsences(trx, job, state));
    await sql`DELETE FROM inventory_pending WHERE id = ${markerId}`.execute(trx);
    return { ...out, step: 'done' };
  });
}
