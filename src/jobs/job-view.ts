// The public job status body (CONTRACT §9), built from the job row and its task aggregate. No
// internal id leaves this module: objects are referred to by public ids only.
import type { Db } from '../db/database.ts';
import { TERMINAL_STATUSES, type JobStatus } from '../db/schema.ts';
import { OPEN_TASK_STATUSES, isOpenTask } from './tasks/task-rows.ts';
import { taskTallies } from './tasks/task-repo.ts';
import { readChangeSummary } from './changes/change-summary.ts';
import { readFindingsSummary } from './suppressions/job-suppressions.ts';

export interface JobRow {
  id: number;
  public_id: string;
  workspace_id: number;
  product: string;
  status: JobStatus;
  profile: string | null;
  target_type: string;
  target_value: string;
  credits_reserved: number;
  credits_captured: number;
  credits_released: number | null;
  settled_at: Date | null;
  result: unknown;
  coverage: unknown;
  object_seq: number;
  finding_seq: number;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  /** The baseline picked when the job started (CONTRACT §13); null: none. */
  baseline_ref: string | null;
  baseline_completed_at: Date | null;
  /** The approved scope active work was admitted under, with its proof (migration 011). */
  active_scope: unknown;
}

export function isTerminal(status: JobStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

const JOB_COLUMNS = [
  'id',
  'public_id',
  'workspace_id',
  'product',
  'status',
  'profile',
  'target_type',
  'target_value',
  'credits_reserved',
  'credits_captured',
  'credits_released',
  'settled_at',
  'result',
  'coverage',
  'object_seq',
  'finding_seq',
  'created_at',
  'started_at',
  'completed_at',
  'baseline_ref',
  'baseline_completed_at',
  'active_scope',
] as const;

/** The job of this workspace, or null: another tenant's job is indistinguishable from none. */
export async function findJob(db: Db, workspaceId: number, jobRef: string): Promise<JobRow | null> {
  if (!/^job_[0-9A-HJKMNP-TV-Z]{26}$/.test(jobRef)) return null;
  const row = await db
    .selectFrom('jobs')
    .select(JOB_COLUMNS)
    .where('public_id', '=', jobRef)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  return (row as JobRow | undefined) ?? null;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

// biome-ignore lint/suspicious/noExplicitAny: stored JSON columns, read as the view's fields
function parseJson(v: unknown): any {
  return typeof v === 'string' ? JSON.parse(v) : v;
}

/** Per product lane: how many tasks, and how each ended (CONTRACT §9); with the open/done totals. */
export async function laneCounts(db: Db, jobId: number) {
  const rows = await taskTallies(db, jobId);
  const byLane = new Map<string, Record<string, number>>();
  let queued = 0;
  let done = 0;
  /** The worker lanes (dns, web, …) of the open tasks. */
  const openWorkerLanes = new Set<string>();
  for (const r of rows) {
    const m = byLane.get(r.product_lane) ?? {};
    m[r.status] = (m[r.status] ?? 0) + Number(r.n);
    byLane.set(r.product_lane, m);
    if (isOpenTask(r.status)) {
      queued += Number(r.n);
      openWorkerLanes.add(r.lane);
    } else done += Number(r.n);
  }
  const lanes = [...byLane].map(([lane, m]) => {
    const tasks = Object.values(m).reduce((a, b) => a + b, 0);
    const open = OPEN_TASK_STATUSES.reduce((a, st) => a + (m[st] ?? 0), 0);
    const status = open > 0 ? (m.running ? 'running' : 'queued') : laneSummary(m, tasks);
    return {
      lane,
      status,
      tasks,
      completed: m.completed ?? 0,
      partial: m.partial ?? 0,
      unavailable: m.unavailable ?? 0,
      timeout: m.timeout ?? 0,
      skipped: m.skipped ?? 0,
      failed: m.failed ?? 0,
      cancelled: m.cancelled ?? 0,
      budgetExhausted: m.budget_exhausted ?? 0,
    };
  });
  return { lanes, queued, done, openWorkerLanes };
}

/** Worker liveness as the web role sees it (src/queue/lane-health.ts): only the state is read here. */
export interface WorkerStates {
  state(lane: string): 'alive' | 'restarting' | 'down';
}

/** Poll interval while the job waits for a worker that is not alive (restarting, or gone). */
const WAITING_POLL_MS = 3000;

/**
 * The worker lanes this open job waits for: those of its open tasks (or, before it is planned,
 * the orchestrator) that have no live worker right now. Empty when nothing waits.
 */
function waitingFor(job: JobRow, openWorkerLanes: Set<string>, liveness: WorkerStates): string[] {
  const lanes = openWorkerLanes.size > 0 ? [...openWorkerLanes] : job.status === 'queued' ? ['orchestrator'] : [];
  return lanes.filter((l) => liveness.state(l) !== 'alive').sort();
}

/**
 * `liveness` (the web role's): when given, an open job whose work waits for a worker that is not
 * alive (a lane being restarted) says so in `progress.waitingFor` and asks to be polled less often.
 */
export async function jobView(db: Db, job: JobRow, liveness?: WorkerStates) {
  const { lanes: laneList, queued, done, openWorkerLanes } = await laneCounts(db, job.id);
  const changes = await readChangeSummary(db, job.id);
  const terminal = isTerminal(job.status);
  // Written with the terminal status (CONTRACT §15): a running job has none yet, and is not asked.
  const findingsSummary = terminal ? await readFindingsSummary(db, job.id) : null;
  const waiting = !terminal && liveness ? waitingFor(job, openWorkerLanes, liveness) : [];
  const activeScope = parseJson(job.active_scope);
  const coverage = {
    ...(parseJson(job.coverage) ?? {
      complete: false,
      limitations: terminal
        ? []
        : [{ code: 'job_not_finished', message: 'The job has not finished; coverage is not final.' }],
    }),
    // Active work says what it ran under: a verified scope, or an operator's approval without proof.
    ...(activeScope ? { activeScope } : {}),
  };
  return {
    jobRef: job.public_id,
    product: job.product,
    status: job.status,
    terminal,
    createdAt: iso(job.created_at)!,
    startedAt: iso(job.started_at),
    completedAt: iso(job.completed_at),
    target: { type: job.target_type, value: job.target_value },
    profile: job.profile,
    progress: {
      tasksQueued: queued,
      tasksDone: done,
      objects: Number(job.object_seq),
      findings: Number(job.finding_seq),
      ...(waiting.length > 0 ? { waitingFor: waiting } : {}),
    },
    lanes: laneList,
    coverage,
    ledger: job.settled_at
      ? {
          reserved: Number(job.credits_reserved),
          captured: Number(job.credits_captured),
          released: Number(job.credits_released ?? 0),
          settledAt: iso(job.settled_at)!,
        }
      : null,
    result: parseJson(job.result) ?? null,
    baseline: changes.baseline,
    changes: changes.changes,
    findingsSummary,
    pollAfterMs: terminal ? 0 : waiting.length > 0 ? WAITING_POLL_MS : 1000,
    links: {
      self: `/v2/jobs/${job.public_id}`,
      results: `/v2/jobs/${job.public_id}/results`,
      findings: `/v2/jobs/${job.public_id}/findings`,
      changes: `/v2/jobs/${job.public_id}/changes`,
    },
  };
}

function laneSummary(m: Record<string, number>, tasks: number): string {
  if ((m.completed ?? 0) + (m.skipped ?? 0) === tasks) return 'completed';
  for (const s of ['failed', 'unavailable', 'timeout', 'cancelled', 'budget_exhausted'])
    if ((m[s] ?? 0) === tasks) return s;
  return 'partial';
}
