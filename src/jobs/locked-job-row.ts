// What a transaction holding a job's row lock knows of that row: its task counters
// (./tasks/task-counters.ts) and its page positions (./page-seq.ts). lockJob (./tasks/task-rows.ts)
// reads them with the lock; each change this transaction makes to them goes through those two
// modules, which keep the values here in step (a recount forgets the counters). Only holders of
// the job row lock write these columns, and only through those modules, so within the lock the
// values kept here are the row's, and a batch of results reads them without asking MySQL again:
// three round trips fewer under the lock every batch (the expansion's budget, whether the job is
// done, and the object cap's room; issue 32). The lock read also says whether the job has a
// change comparison run (one more: ./changes/stale-run.ts has nothing to reset while there is
// none). Keyed by the transaction object: a retried transaction is a new one and starts with
// nothing kept.
import type { Trx } from '../db/transaction.ts';

export interface TaskCounters {
  plannedCost: number;
  unapplied: number;
  budgetStopped: boolean;
}

export interface PagePositions {
  objectSeq: number;
  findingSeq: number;
  /** The job's object cap (a scan profile's), null for none: fixed at admission. */
  objectCap: number | null;
}

interface Kept {
  counters?: TaskCounters;
  positions?: PagePositions;
  /** The job had a change comparison run when the lock was taken (none can begin while it is held). */
  changeRun?: boolean;
}

const known = new WeakMap<Trx, Map<number, Kept>>();

function keptOf(trx: Trx, jobId: number, create: true): Kept;
function keptOf(trx: Trx, jobId: number, create?: false): Kept | undefined;
function keptOf(trx: Trx, jobId: number, create = false): Kept | undefined {
  let m = known.get(trx);
  if (!m) {
    if (!create) return undefined;
    m = new Map();
    known.set(trx, m);
  }
  let k = m.get(jobId);
  if (!k && create) {
    k = {};
    m.set(jobId, k);
  }
  return k;
}

/** The job row's columns as lockJob read them, under the lock it just took. */
export function rememberLockedRow(trx: Trx, jobId: number, r: Record<string, unknown>): void {
  const k = keptOf(trx, jobId, true);
  k.counters = taskCountersOf(r);
  k.positions = {
    objectSeq: Number(r.object_seq ?? 0),
    findingSeq: Number(r.finding_seq ?? 0),
    objectCap: r.object_cap === null || r.object_cap === undefined ? null : Number(r.object_cap),
  };
  if (r.change_run !== undefined) k.changeRun = Number(r.change_run) === 1;
}

/**
 * False when this transaction's lock read found no change comparison run for the job: none can
 * begin before the lock is released (its creation reads the job row in share mode:
 * ./changes/comparison.ts), so there is nothing to put back at its start. True when there is one
 * or nothing is known (the caller then does what it would without this).
 */
export function mayHaveChangeRun(trx: Trx, jobId: number): boolean {
  return keptOf(trx, jobId)?.changeRun !== false;
}

/** This transaction began the job's change comparison run (or found one): later writers reset it. */
export function noteChangeRun(trx: Trx, jobId: number): void {
  const k = keptOf(trx, jobId);
  if (k) k.changeRun = true;
}

/** The job row's counter columns as read (lockJob's SELECT, readTaskCounters's). */
export function taskCountersOf(r: {
  tasks_planned_cost?: unknown;
  tasks_unapplied?: unknown;
  budget_stopped?: unknown;
}): TaskCounters {
  return {
    plannedCost: Number(r.tasks_planned_cost ?? 0),
    unapplied: Number(r.tasks_unapplied ?? 0),
    budgetStopped: Number(r.budget_stopped ?? 0) === 1,
  };
}

/** The counters kept for this transaction and job, or undefined; task-counters.ts changes them in step. */
export function keptTaskCounters(trx: Trx, jobId: number): TaskCounters | undefined {
  return keptOf(trx, jobId)?.counters;
}

export function forgetTaskCounters(trx: Trx, jobId: number): void {
  const k = keptOf(trx, jobId);
  if (k) delete k.counters;
}

/** The page positions kept for this transaction and job, or undefined; page-seq.ts changes them in step. */
export function keptPagePositions(trx: Trx, jobId: number): PagePositions | undefined {
  return keptOf(trx, jobId)?.positions;
}
