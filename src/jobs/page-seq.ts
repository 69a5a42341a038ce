// Page positions of a job's objects and findings (CONTRACT §10): taken under the job row lock, so
// commit order is page order and keyset pages read while the job runs never skip or repeat.
import { sql } from 'kysely';
import type { Trx } from '../db/transaction.ts';
import { keptPagePositions } from './locked-job-row.ts';

/** Reserves n page positions; returns the first. The job row is already locked by this transaction. */
export async function takeSeq(
  trx: Trx,
  jobId: number,
  column: 'object_seq' | 'finding_seq',
  n: number,
): Promise<number> {
  const upd =
    await sql`UPDATE jobs SET ${sql.ref(column)} = LAST_INSERT_ID(${sql.ref(column)} + ${n}) WHERE id = ${jobId}`.execute(
      trx,
    );
  // The statement's reply carries LAST_INSERT_ID(expr)'s value (as mysql_insert_id() does): no
  // second round trip on the job row lock's critical path (issue 32). Asked only if it is absent.
  const last =
    upd.insertId !== undefined && upd.insertId > 0n
      ? Number(upd.insertId)
      : Number((await sql<{ last: number }>`SELECT LAST_INSERT_ID() AS last`.execute(trx)).rows[0]!.last);
  // Kept in step for this transaction (../jobs/locked-job-row.ts).
  const kept = keptPagePositions(trx, jobId);
  if (kept) kept[column === 'object_seq' ? 'objectSeq' : 'findingSeq'] = last;
  return last - n + 1;
}

/** Caller holds the job row lock. The job's object page position and object cap, as they stand. */
export async function objectRoom(trx: Trx, jobId: number): Promise<{ objectSeq: number; objectCap: number | null }> {
  const kept = keptPagePositions(trx, jobId);
  if (kept) return { objectSeq: kept.objectSeq, objectCap: kept.objectCap };
  const res = await sql<{ object_seq: number; object_cap: number | null }>`
    SELECT object_seq, object_cap FROM jobs WHERE id = ${jobId}`.execute(trx);
  const r = res.rows[0];
  return {
    objectSeq: Number(r?.object_seq ?? 0),
    objectCap: r?.object_cap === null || r?.object_cap === undefined ? null : Number(r.object_cap),
  };
}
