// What this job's tasks did on the subjects of a baseline's objects (change detection, CONTRACT
// §13; src/jobs/changes/observe-absence.ts decides from it). Counted in SQL per (baseline object,
// product lane, status, reason), so an address that a thousand names resolved to costs one
// grouped row per outcome, not a thousand rows in memory.
import { sql } from 'kysely';
import type { Trx } from '../../db/transaction.ts';
import type { TaskStatus } from '../../db/schema.ts';

export interface SubjectTally {
  /** The baseline object the subject belongs to (own subjects) or is related to. */
  baselineObjectId: number;
  productLane: string;
  /** The task's check: of a lane's checks, only some observe what their key names (ChangeRules.observingChecks). */
  check: string;
  own: boolean;
  status: TaskStatus;
  reason: string | null;
  n: number;
}

const sha256Sql = (expr: ReturnType<typeof sql>) => sql`UNHEX(SHA2(${expr}, 256))`;

/**
 * Outcomes of `jobId`'s tasks whose key is one of `own` (baseline object id → its own subject
 * keys, e.g. a name, or the host of a URL), or the key of an object related to it in `baselineId`
 * (either direction of `relations`), through ix_tasks_key (job_id, object_key_hash).
 */
export async function subjectTallies(
  trx: Trx,
  jobId: number,
  baselineId: number,
  own: ReadonlyMap<number, readonly string[]>,
): Promise<SubjectTally[]> {
  if (own.size === 0) return [];
  const res = await sql<{
    mid: number;
    product_lane: string;
    check_name: string;
    own: number;
    status: TaskStatus;
    reason: string | null;
    n: number;
  }>`
    SELECT s.mid, t.product_lane, t.check_name, s.own AS own, t.status, t.reason, COUNT(DISTINCT t.id) AS n
    FROM (${subjects(baselineId, own)}) s
    JOIN tasks t ON t.job_id = ${jobId} AND t.object_key_hash = ${sha256Sql(sql`s.skey`)}
    GROUP BY s.mid, t.product_lane, t.check_name, t.status, t.reason, s.own`.execute(trx);
  return res.rows.map((r) => ({
    baselineObjectId: Number(r.mid),
    productLane: r.product_lane,
    check: r.check_name,
    own: Number(r.own) === 1,
    status: r.status,
    reason: r.reason ?? null,
    n: Number(r.n),
  }));
}

/**
 * The subject keys of baseline objects: their own (own = 1), and those of the objects related to
 * them in the baseline, either direction of `relations` (own = 0).
 */
function subjects(baselineId: number, own: ReadonlyMap<number, readonly string[]>) {
  const ids = [...own.keys()];
  const ownRows = [...own].flatMap(([id, keys]) => keys.map((k) => sql`SELECT ${id} AS mid, ${k} AS skey, 1 AS own`));
  return sql`
      ${sql.join(ownRows, sql` UNION ALL `)}
      UNION ALL
      SELECT r.to_object_id AS mid, o.okey AS skey, 0 AS own FROM relations r JOIN objects o ON o.id = r.from_object_id
        WHERE r.job_id = ${baselineId} AND r.to_object_id IN (${sql.join(ids)})
      UNION ALL
      SELECT r.from_object_id AS mid, o.okey AS skey, 0 AS own FROM relations r JOIN objects o ON o.id = r.to_object_id
        WHERE r.job_id = ${baselineId} AND r.from_object_id IN (${sql.join(ids)})`;
}

/** One task of a composed check on a subject, with the statuses of its parts as it recorded them. */
export interface SubjectPartOutcome {
  baselineObjectId: number;
  productLane: string;
  check: string;
  own: boolean;
  status: TaskStatus;
  reason: string | null;
  /** Its output's `projection.lanes` (a scan's mail task: each mail lane's outcome); null: none kept. */
  parts: unknown;
}

/**
 * The tasks of `productLanes` (composed checks: a scan's mail task) on the same subjects as
 * subjectTallies, one row per (baseline object, task, own or related), each with the part statuses its output
 * kept (at most one entry per part: a mail task's ten lanes). Only the small `projection.lanes`
 * leaves MySQL, never the output itself.
 */
export async function subjectPartOutcomes(
  trx: Trx,
  jobId: number,
  baselineId: number,
  own: ReadonlyMap<number, readonly string[]>,
  productLanes: readonly string[],
): Promise<SubjectPartOutcome[]> {
  if (own.size === 0 || productLanes.length === 0) return [];
  const res = await sql<{
    mid: number;
    product_lane: string;
    check_name: string;
    own: number;
    status: TaskStatus;
    reason: string | null;
    parts: unknown;
  }>`
    SELECT DISTINCT s.mid, s.own, t.id, t.product_lane, t.check_name, t.status, t.reason,
      JSON_EXTRACT(t.output, '$.projection.lanes') AS parts
    FROM (${subjects(baselineId, own)}) s
    JOIN tasks t ON t.job_id = ${jobId} AND t.object_key_hash = ${sha256Sql(sql`s.skey`)}
    WHERE t.product_lane IN (${sql.join([...productLanes])})`.execute(trx);
  return res.rows.map((r) => ({
    baselineObjectId: Number(r.mid),
    productLane: r.product_lane,
    check: r.check_name,
    own: Number(r.own) === 1,
    status: r.status,
    reason: r.reason ?? null,
    parts: r.parts ?? null,
  }));
}

/** Outcomes of every task of a job (a lookup: its few tasks are all about its one target). */
export async function jobTallies(
  trx: Trx,
  jobId: number,
): Promise<Array<{ productLane: string; check: string; status: TaskStatus; reason: string | null; n: number }>> {
  const res = await sql<{
    product_lane: string;
    check_name: string;
    status: TaskStatus;
    reason: string | null;
    n: number;
  }>`
    SELECT product_lane, check_name, status, reason, COUNT(*) AS n FROM tasks WHERE job_id = ${jobId}
    GROUP BY product_lane, check_name, status, reason`.execute(trx);
  return res.rows.map((r) => ({
    productLane: r.product_lane,
    check: r.check_name,
    status: r.status,
    reason: r.reason ?? null,
    n: Number(r.n),
  }));
}
