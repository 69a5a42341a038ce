// Task statuses and the task/job rows the orchestrator and lane runner share.
import { sql } from 'kysely';
import type { JobStatus, TaskStatus } from '../../db/schema.ts';
import type { CheckOutput, TaskOutcomeView, TaskPlan } from '../../contract/tasks.ts';
import { isLaneName } from '../../queue/streams.ts';
import { parseJson, type Trx } from '../../db/transaction.ts';
import { rememberLockedRow } from '../locked-job-row.ts';

/** Work not finished: running, queued, or held until its gate finishes. */
export const OPEN_TASK_STATUSES: readonly TaskStatus[] = ['pending', 'running', 'waiting'];
/** OPEN_TASK_STATUSES as a SQL list, for `status IN (${OPEN_STATUSES_SQL})`: written once. */
export const OPEN_STATUSES_SQL = sql.join(OPEN_TASK_STATUSES.map((st) => sql.lit(st)));
/** The open statuses of a task no runner has started: what a cancel ends at once. */
export const NOT_STARTED_TASK_STATUSES: readonly TaskStatus[] = OPEN_TASK_STATUSES.filter((st) => st !== 'running');
export const NOT_STARTED_STATUSES_SQL = sql.join(NOT_STARTED_TASK_STATUSES.map((st) => sql.lit(st)));
/** Statuses whose task did work the workspace pays for (CONTRACT §6). */
export const CAPTURED_TASK_STATUSES: readonly TaskStatus[] = ['completed', 'partial'];
/** What a job's reservation stands for: tasks captured, or that still may be (task-insert.ts). */
export const BUDGETED_STATUSES_SQL = sql.join(
  [...OPEN_TASK_STATUSES, ...CAPTURED_TASK_STATUSES].map((st) => sql.lit(st)),
);

/** A plan the tables and the streams can hold (else the job fails instead of a lane, later). */
export function isValidPlan(p: TaskPlan): boolean {
  return (
    isLaneName(p.lane) &&
    Number.isInteger(p.unitCost) &&
    p.unitCost >= 0 &&
    p.objectKey.length > 0 &&
    p.objectKey.length <= 512 &&
    /^[a-z0-9_.-]{1,64}$/.test(p.check) &&
    p.productLane.length > 0 &&
    p.productLane.length <= 32
  );
}

export function isOpenTask(s: TaskStatus): boolean {
  return OPEN_TASK_STATUSES.includes(s);
}

export interface TaskRow {
  id: number;
  job_id: number;
  check_name: string;
  object_key: string;
  lane: string;
  product_lane: string;
  required: boolean;
  unit_cost: number;
  /** Hops from the target (its output's default distance); absent: 0. */
  distance?: number;
  status: TaskStatus;
  reason: string | null;
  output: CheckOutput | null;
  applied_at: Date | null;
}

const TASK_COLUMNS = sql`id, job_id, check_name, object_key, lane, product_lane, required, unit_cost, distance, status, reason`;

/** A job's tasks, with their outputs or without (a scan's thousands: statuses only). */
export async function selectTasks(trx: Trx, jobId: number, opts: { withOutput?: boolean } = {}): Promise<TaskRow[]> {
  const output = opts.withOutput === false ? sql`NULL AS output` : sql`output`;
  const res = await sql<Record<string, unknown>>`
    SELECT ${TASK_COLUMNS}, ${output}, applied_at FROM tasks WHERE job_id = ${jobId} ORDER BY id`.execute(trx);
  return res.rows.map(toTaskRow);
}

/**
 * At most `limit` of the job's finished tasks not applied yet, with their outputs, by id after
 * `afterId` (ix_tasks_unapplied): one chunk of a terminal transition's backlog, never the whole.
 */
export async function selectUnappliedChunk(
  trx: Trx,
  jobId: number,
  afterId: number,
  limit: number,
  opts: { withOutput?: boolean } = {},
): Promise<TaskRow[]> {
  const output = opts.withOutput === false ? sql`NULL AS output` : sql`output`;
  const res = await sql<Record<string, unknown>>`
    SELECT ${TASK_COLUMNS}, ${output}, applied_at FROM tasks
    WHERE job_id = ${jobId} AND applied_at IS NULL AND id > ${afterId} AND status NOT IN (${OPEN_STATUSES_SQL})
    ORDER BY id LIMIT ${limit}`.execute(trx);
  return res.rows.map(toTaskRow);
}

export function toTaskRow(r: Record<string, unknown>): TaskRow {
  return {
    id: Number(r.id),
    job_id: Number(r.job_id),
    check_name: String(r.check_name),
    object_key: String(r.object_key),
    lane: String(r.lane),
    product_lane: String(r.product_lane),
    required: Number(r.required) === 1,
    unit_cost: Number(r.unit_cost),
    distance: Number(r.distance ?? 0),
    status: r.status as TaskStatus,
    reason: (r.reason as string | null) ?? null,
    output: parseJson<CheckOutput>(r.output),
    applied_at: (r.applied_at as Date | null) ?? null,
  };
}

export function taskView(t: TaskRow): TaskOutcomeView {
  return {
    check: t.check_name,
    productLane: t.product_lane,
    required: t.required,
    objectKey: t.object_key,
    // pending/running never reach a view: finalize cancels them first.
    status: t.status as TaskOutcomeView['status'],
    ...(t.reason ? { reason: t.reason } : {}),
    output: t.output,
  };
}

export interface LockedJob {
  id: number;
  workspace_id: number;
  product: string;
  status: JobStatus;
  input: unknown;
  request_id: string;
  credits_reserved: number;
  credits_captured: number;
  /** The job's public id (capture dedupe keys are made of it: credits/ledger.ts). */
  public_id: string;
  /** Its remainder was released (the terminal transition's ledger step ran). */
  settled: boolean;
  /** The key and month its reservation counted against (the release gives them back). */
  api_key_id: number;
  month: string;
  /** The job's target (what its tasks are run for; a lane runner's check reads it). */
  target: string;
}

/** Every transaction that touches a job's rows starts here: the job row lock orders them. */
export async function lockJob(trx: Trx, jobId: number): Promise<LockedJob | null> {
  const res = await sql<Record<string, unknown>>`
    SELECT id, public_id, workspace_id, api_key_id, month, product, status, input, request_id, credits_reserved,
      credits_captured, settled_at, target_value,
      tasks_planned_cost, tasks_unapplied, budget_stopped, object_seq, finding_seq, object_cap,
      EXISTS (SELECT 1 FROM change_runs c WHERE c.job_id = jobs.id) AS change_run
    FROM jobs WHERE id = ${jobId} FOR UPDATE`.execute(trx);
  const r = res.rows[0];
  if (!r) return null;
  // The task counters and page positions come with the lock: this transaction does not ask again.
  rememberLockedRow(trx, jobId, r);
  return {
    id: Number(r.id),
    workspace_id: Number(r.workspace_id),
    product: String(r.product),
    status: r.status as JobStatus,
    input: parseJson(r.input),
    request_id: String(r.request_id),
    credits_reserved: Number(r.credits_reserved),
    credits_captured: Number(r.credits_captured),
    public_id: String(r.public_id),
    settled: r.settled_at !== null && r.settled_at !== undefined,
    api_key_id: Number(r.api_key_id),
    month: String(r.month),
    target: String(r.target_value),
  };
}
