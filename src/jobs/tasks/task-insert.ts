// Inserting planned tasks, for the initial plan and for what a scan expands as results arrive,
// under the job row lock:
//   - deduplicated: a plan whose (check, object key) already has a task is dropped before it can
//     take budget (a rediscovered name adds a relation, never a second task);
//   - budgeted (CONTRACT §6): plans are taken in order while the job's planned cost stays within
//     its reservation; from the first that would pass it, scheduling stops for good and every
//     later plan is recorded `budget_exhausted`. The planned cost and the stop are the job row's
//     counters (task-counters.ts), not a sum over the job's tasks: a batch's cost does not grow
//     with the job. What the reservation stands for: the cost of every task that was captured
//     (completed, partial) or still may be (open, or finished and not applied yet). A task that
//     ended without doing paid work (unavailable, timeout, failed, skipped, cancelled) is never
//     captured, so its share goes back to the budget once it is applied: captures can never pass
//     the reservation;
//   - gated: a plan with a gate waits for that task; it is `waiting` while the gate is open,
//     `pending` with the gate's result when the gate has finished, `budget_exhausted` when the
//     gate itself was never scheduled.
// Returns the tasks that are pending now; the caller enqueues them after the commit.
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { GateResult, TaskPlan } from '../../contract/tasks.ts';
import type { TaskRef } from '../../queue/task-enqueue.ts';
import { affected, parseJson, type Trx } from '../../db/transaction.ts';
import type { TaskStatus } from '../../db/schema.ts';
import type { CheckOutput } from '../../contract/tasks.ts';
import { dedupePlans } from './task-budget.ts';
import { addTaskCounters, readTaskCounters, recountTaskCounters } from './task-counters.ts';
import { isOpenTask, type LockedJob } from './task-rows.ts';

/** The identity of a task within its job, as gates refer to it. */
export function taskKeyHash(check: string, objectKey: string): Buffer {
  return createHash('sha256').update(`${check}\n${objectKey}`).digest();
}

const sha256 = (s: string) => createHash('sha256').update(s).digest();

type GateState = { kind: 'open' } | { kind: 'done'; result: GateResult } | { kind: 'never' };

const NEVER_RUN: readonly TaskStatus[] = ['budget_exhausted', 'cancelled'];

/** The params a row is inserted with: the plan's, with its gate's result when it has one. */
function insertedParams({ plan, gate }: Row): Record<string, unknown> | undefined {
  return gate ? { ...plan.params, gate } : plan.params;
}

async function existingKeys(trx: Trx, jobId: number, plans: readonly TaskPlan[]): Promise<Set<string>> {
  const hashes = [...new Set(plans.map((p) => p.objectKey))].map(sha256);
  const out = new Set<string>();
  for (let i = 0; i < hashes.length; i += 500) {
    const rows = await sql<{ check_name: string; object_key: string }>`
      SELECT check_name, object_key FROM tasks WHERE job_id = ${jobId} AND object_key_hash IN (${sql.join(hashes.slice(i, i + 500))})`.execute(
      trx,
    );
    for (const r of rows.rows) out.add(`${r.check_name}\n${r.object_key}`);
  }
  return out;
}

async function gateStates(
  trx: Trx,
  jobId: number,
  gates: Array<{ check: string; objectKey: string }>,
): Promise<Map<string, GateState>> {
  const out = new Map<string, GateState>();
  for (const g of gates) {
    const key = `${g.check}\n${g.objectKey}`;
    if (out.has(key)) continue;
    const res = await sql<{ status: TaskStatus; output: unknown }>`
      SELECT status, output FROM tasks WHERE job_id = ${jobId} AND check_name = ${g.check} AND object_key_hash = ${sha256(g.objectKey)}`.execute(
      trx,
    );
    const row = res.rows[0];
    if (!row) out.set(key, { kind: 'done', result: { status: 'skipped', projection: null } });
    else if (isOpenTask(row.status)) out.set(key, { kind: 'open' });
    else if (NEVER_RUN.includes(row.status)) out.set(key, { kind: 'never' });
    else out.set(key, { kind: 'done', result: gateResultOf(row.status, parseJson<CheckOutput>(row.output)) });
  }
  return out;
}

export function gateResultOf(status: TaskStatus, output: CheckOutput | null): GateResult {
  return { status: status as GateResult['status'], projection: output?.projection ?? null };
}

interface Row {
  plan: TaskPlan;
  status: 'pending' | 'waiting' | 'budget_exhausted';
  gate?: GateResult;
}

export async function insertPlannedTasks(trx: Trx, job: LockedJob, input: readonly TaskPlan[]): Promise<TaskRef[]> {
  const known = await existingKeys(trx, job.id, input);
  // Gates first (stable otherwise): a dependent must see its gate's fate in the same batch.
  const gateKeys = new Set(input.flatMap((p) => (p.gate ? [`${p.gate.check}\n${p.gate.objectKey}`] : [])));
  const isGate = (p: TaskPlan) => (gateKeys.has(`${p.check}\n${p.objectKey}`) ? 1 : 0);
  const plans = dedupePlans([...input].sort((a, b) => isGate(b) - isGate(a))).filter(
    (p) => !known.has(`${p.check}\n${p.objectKey}`),
  );
  if (plans.length === 0) return [];

  const budget = await readTaskCounters(trx, job.id);
  let spent = budget.plannedCost;
  let stopped = budget.budgetStopped;
  const inBatch = new Map<string, Row['status']>();
  const gates = await gateStates(
    trx,
    job.id,
    plans.flatMap((p) =>
      p.gate && !plans.some((q) => q.check === p.gate!.check && q.objectKey === p.gate!.objectKey) ? [p.gate] : [],
    ),
  );
  const rows: Row[] = [];
  for (const plan of plans) {
    let status: Row['status'];
    let gate: GateResult | undefined;
    if (stopped || spent + plan.unitCost > job.credits_reserved) {
      stopped = true;
      status = 'budget_exhausted';
    } else if (plan.gate) {
      const key = `${plan.gate.check}\n${plan.gate.objectKey}`;
      const batch = inBatch.get(key);
      const state: GateState =
        batch !== undefined
          ? batch === 'budget_exhausted'
            ? { kind: 'never' }
            : { kind: 'open' }
          : (gates.get(key) ?? { kind: 'done', result: { status: 'skipped', projection: null } });
      if (state.kind === 'never') status = 'budget_exhausted';
      else if (state.kind === 'open') status = 'waiting';
      else {
        status = 'pending';
        gate = state.result;
      }
    } else {
      status = 'pending';
    }
    if (status !== 'budget_exhausted') spent += plan.unitCost;
    inBatch.set(`${plan.check}\n${plan.objectKey}`, status);
    rows.push({ plan, status, ...(gate ? { gate } : {}) });
  }

  let inserted = 0;
  for (let i = 0; i < rows.length; i += 500) {
    const values = rows.slice(i, i + 500).map((row) => {
      const { plan, status } = row;
      const params = insertedParams(row);
      const exhausted = status === 'budget_exhausted';
      return sql`(
        ${job.id}, ${job.workspace_id}, ${plan.objectKey}, ${plan.check}, ${plan.lane}, ${plan.productLane},
        ${plan.required ? 1 : 0}, ${plan.unitCost}, ${plan.distance ?? 0}, ${params ? JSON.stringify(params) : null},
        ${status}, ${exhausted ? 'budget_exhausted' : null}, ${exhausted ? sql`NOW(3)` : null}, ${exhausted ? sql`NOW(3)` : null},
        ${status === 'waiting' && plan.gate ? taskKeyHash(plan.gate.check, plan.gate.objectKey) : null})`;
    });
    const res =
      await sql`INSERT IGNORE INTO tasks (job_id, workspace_id, object_key, check_name, lane, product_lane, required, unit_cost,
        distance, params, status, reason, finished_at, applied_at, gate_key_hash)
      VALUES ${sql.join(values)}`.execute(trx);
    inserted += affected(res);
  }
  if (inserted === rows.length) {
    const scheduled = rows.filter((r) => r.status !== 'budget_exhausted');
    await addTaskCounters(trx, job.id, {
      plannedCost: scheduled.reduce((a, r) => a + r.plan.unitCost, 0),
      unapplied: scheduled.length,
      budgetStopped: scheduled.length < rows.length,
    });
  } else {
    // A row the unique key refused that the dedupe above did not see (uq_tasks compares a 255-
    // character prefix of the key): which one is unknown here, so count from the rows.
    await recountTaskCounters(trx, job.id);
  }
  const pending = rows.filter((r) => r.status === 'pending');
  return pendingRefs(trx, job, pending);
}

/**
 * The pending rows just inserted, each with the fields its runner needs (carried-task.ts) taken
 * from the plan as inserted: only a row read back with the plan's own check and key gets them.
 */
async function pendingRefs(trx: Trx, job: LockedJob, pending: Row[]): Promise<TaskRef[]> {
  if (pending.length === 0) return [];
  const jobId = job.id;
  const plans = pending.map((r) => r.plan);
  const wanted = new Map(pending.map((r) => [`${r.plan.check}\n${r.plan.objectKey}`, r]));
  const refs: TaskRef[] = [];
  const hashes = [...new Set(plans.map((p) => p.objectKey))].map(sha256);
  for (let i = 0; i < hashes.length; i += 500) {
    const rows = await sql<{ id: number; lane: string; check_name: string; object_key: string }>`
      SELECT id, lane, check_name, object_key FROM tasks
      WHERE job_id = ${jobId} AND status = 'pending' AND object_key_hash IN (${sql.join(hashes.slice(i, i + 500))})`.execute(
      trx,
    );
    for (const r of rows.rows) {
      const row = wanted.get(`${r.check_name}\n${r.object_key}`);
      if (!row) continue;
      const params = insertedParams(row);
      refs.push({
        id: Number(r.id),
        jobId,
        lane: r.lane,
        carried: {
          workspaceId: job.workspace_id,
          objectKey: row.plan.objectKey,
          check: row.plan.check,
          productLane: row.plan.productLane,
          distance: row.plan.distance ?? 0,
          params: params ? JSON.stringify(params) : null,
          target: job.target,
        },
      });
    }
  }
  return refs.sort((a, b) => a.id - b.id);
}

/**
 * Finished gate tasks (`check`/`objectKey`) of one job: the tasks waiting on any of them are read
 * in one locking select and made pending, each with its own gate's result, in one update. Returns
 * them for enqueueing after the commit.
 */
export async function releaseGatedBatch(
  trx: Trx,
  jobId: number,
  gates: ReadonlyArray<{ check: string; objectKey: string; result: GateResult }>,
): Promise<TaskRef[]> {
  if (gates.length === 0) return [];
  const byHash = new Map<string, GateResult>();
  for (const g of gates) byHash.set(taskKeyHash(g.check, g.objectKey).toString('hex'), g.result);
  const hashes = [...byHash.keys()].map((h) => Buffer.from(h, 'hex'));
  const refs: TaskRef[] = [];
  for (let i = 0; i < hashes.length; i += 500) {
    const waiting = await sql<{ id: number; lane: string; params: unknown; gate_key_hash: Buffer }>`
      SELECT id, lane, params, gate_key_hash FROM tasks
      WHERE job_id = ${jobId} AND gate_key_hash IN (${sql.join(hashes.slice(i, i + 500))}) AND status = 'waiting'
      ORDER BY id FOR UPDATE`.execute(trx);
    for (let j = 0; j < waiting.rows.length; j += 200) {
      const chunk = waiting.rows.slice(j, j + 200);
      const params = chunk.map((r) => {
        const gate = byHash.get(Buffer.from(r.gate_key_hash).toString('hex'));
        return sql`WHEN ${r.id} THEN ${JSON.stringify({ ...(parseJson<Record<string, unknown>>(r.params) ?? {}), gate })}`;
      });
      await sql`UPDATE tasks SET status = 'pending', params = CASE id ${sql.join(params, sql` `)} END
        WHERE id IN (${sql.join(chunk.map((r) => r.id))}) AND status = 'waiting'`.execute(trx);
      for (const r of chunk) refs.push({ id: Number(r.id), jobId, lane: r.lane });
    }
  }
  return refs;
}
