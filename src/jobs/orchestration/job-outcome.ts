// The terminal status, result and coverage of a job from its finished tasks (CONTRACT §7, §9).
// Pure: finalize-job.ts gathers the rows and writes what this returns.
//
//   completed    every applicable task completed
//   partial      terminal with results, coverage incomplete: some lane produced a fact about the
//                target, even when the required lane did not complete (the target refused,
//                stalled or spoke only legacy TLS, or its MX question timed out while SPF answered)
//   unavailable  no lane produced any fact about the target, and a required lane was unavailable
//                or timed out (our side could not look, or the target could not be reached at all)
//   failed       internal error: nothing usable and a required lane failed, or planning failed
//   cancelled    cancel requested (whatever the tasks did; completed ones are still charged)
// A lookup's envelope always carries `status` (the job's) and the part of every lane that
// produced a fact; a lane that did not is null with its reason. A deadline finalization is
// `partial` when any task produced a fact, else `failed`.
import { buildEnvelope, type Envelope } from '../../contract/envelope.ts';
import type { AssembledOutcome, DerivedOutput } from '../../contract/tasks.ts';
import type { Limitation } from '../../contract/lanes.ts';
import type { ProductDefinition } from '../../products/kit/product-contract.ts';
import { applicableDone, taskLimitations } from '../tasks/task-limitations.ts';
import { CAPTURED_TASK_STATUSES, taskView, type TaskRow } from '../tasks/task-rows.ts';

export type FinalizeMode = 'settle' | 'cancel' | 'deadline';
export type TerminalStatus = 'completed' | 'partial' | 'cancelled' | 'failed' | 'unavailable';

export interface OutcomeInput {
  def: ProductDefinition | undefined;
  productId: string;
  input: unknown;
  requestId: string;
  tasks: readonly TaskRow[];
  mode: FinalizeMode;
  /** Credits captured for the job, all tasks applied. */
  charged: number;
  /** A job-level failure (e.g. plan_failed): forces `failed`. */
  failure?: string;
  /** Jobs decided without outputs (scans): the limitations counted as their tasks were applied. */
  recordedLimitations?: RecordedLimitation[];
}

/** A limitation counted per job; `gap`: it makes coverage incomplete by itself (an object cap hit). */
export interface RecordedLimitation extends Limitation {
  gap: boolean;
}

export interface Coverage {
  complete: boolean;
  limitations: Limitation[];
}

export interface JobOutcome {
  status: TerminalStatus;
  result: Record<string, unknown> | null;
  coverage: Coverage;
  /** Findings and objects the product derived across lanes (persisted with the terminal CAS). */
  derived?: DerivedOutput[];
}

const FAILURE_MESSAGES: Record<string, string> = {
  plan_failed: 'The job could not be planned; no work was done.',
  product_not_available: 'The product of this job cannot run jobs here; no work was done.',
  assemble_failed: 'The job result could not be assembled from its tasks.',
};

function hasResults(t: TaskRow): boolean {
  return CAPTURED_TASK_STATUSES.includes(t.status);
}

/** A fact about the target: results, or a lane that measured what the target did (CheckOutput.measured). */
function producedFact(t: TaskRow): boolean {
  return hasResults(t) || t.output?.measured === true;
}

function mergeLimitations(...lists: ReadonlyArray<readonly Limitation[]>): Limitation[] {
  const out = new Map<string, Limitation>();
  for (const list of lists)
    for (const l of list) if (!out.has(l.code)) out.set(l.code, { code: l.code, message: l.message });
  return [...out.values()];
}

function failed(code: string, extra: readonly Limitation[] = []): JobOutcome {
  const own = { code, message: FAILURE_MESSAGES[code] ?? 'The job failed.' };
  return { status: 'failed', result: null, coverage: { complete: false, limitations: mergeLimitations([own], extra) } };
}

export function decideOutcome(o: OutcomeInput): JobOutcome {
  const lims = taskLimitations(o.tasks);
  if (o.failure) return failed(o.failure, lims);
  let out = o.def?.job?.assemble ? lookupOutcome(o.def, o, lims) : taskOutcome(o, lims);
  if (o.mode === 'cancel') {
    out = {
      status: 'cancelled',
      result: null,
      coverage: {
        complete: false,
        limitations: mergeLimitations(out.coverage.limitations, [
          { code: 'cancelled', message: 'The job was cancelled.' },
        ]),
      },
    };
  } else if (o.mode === 'deadline') {
    const status: TerminalStatus = o.tasks.some(producedFact) ? 'partial' : 'failed';
    const result = out.result ? { ...out.result, status, coverage: { complete: false } } : out.result;
    out = {
      status,
      result,
      coverage: {
        complete: false,
        limitations: mergeLimitations(out.coverage.limitations, [
          { code: 'deadline_exceeded', message: 'The job did not finish before its deadline.' },
        ]),
      },
      ...(out.derived ? { derived: out.derived } : {}),
    };
  }
  return out;
}

/** Lookups: the product assembles its envelope; a required lane that did not complete decides. */
function lookupOutcome(def: ProductDefinition, o: OutcomeInput, lims: Limitation[]): JobOutcome {
  let outcome: AssembledOutcome;
  try {
    outcome = def.job!.assemble!(o.input, o.tasks.map(taskView));
  } catch {
    return failed('assemble_failed', lims);
  }
  const limitations = mergeLimitations(outcome.limitations, lims);
  const blocking = outcome.lanes.find((l) => l.required && l.status !== 'completed');
  if (blocking) {
    // buildEnvelope refuses this case (a sync route answers 503). A job keeps everything that
    // was measured: any fact about the target makes it partial, with the required lane's part
    // null (or saying what the target did) and its reason in lanes and limitations. Only when
    // no lane produced a fact is the job unavailable (or failed, for an internal error).
    const status: TerminalStatus = o.tasks.some(producedFact)
      ? 'partial'
      : blocking.status === 'unavailable' || blocking.status === 'timeout'
        ? 'unavailable'
        : 'failed';
    return {
      status,
      result: jobEnvelope(def, o, outcome, status),
      coverage: { complete: false, limitations },
      ...derivedOf(outcome),
    };
  }
  const env: Envelope = buildEnvelope(def, o.input, outcome, o.requestId, o.charged);
  const complete = env.coverage.complete && o.tasks.every(applicableDone);
  if (!complete) {
    env.status = 'partial';
    env.coverage = { complete: false };
  }
  return {
    status: complete ? 'completed' : 'partial',
    result: { ...env },
    coverage: { complete, limitations },
    ...derivedOf(outcome),
  };
}

function derivedOf(outcome: AssembledOutcome): Pick<JobOutcome, 'derived'> {
  const { derived } = outcome;
  return derived && derived.length > 0 ? { derived } : {};
}

/** The envelope of a job whose required lane did not complete: its status is the job's. */
function jobEnvelope(
  def: ProductDefinition,
  o: OutcomeInput,
  outcome: AssembledOutcome,
  status: TerminalStatus,
): Record<string, unknown> {
  return {
    product: def.id,
    status,
    input: def.echo ? def.echo(o.input) : o.input,
    result: outcome.result,
    lanes: outcome.lanes,
    sources: outcome.sources,
    limitations: outcome.limitations,
    coverage: { complete: false },
    credits: { charged: o.charged },
    requestId: o.requestId,
    completedAt: new Date().toISOString(),
  };
}

/** Scans (no assemble): per product lane from the task statuses. */
function taskOutcome(o: OutcomeInput, lims: Limitation[]): JobOutcome {
  const outputLims: Limitation[] = (o.recordedLimitations ?? o.tasks.flatMap((t) => t.output?.limitations ?? [])).map(
    (l) => ({ code: l.code, message: l.message }),
  );
  const gaps = (o.recordedLimitations ?? []).some((l) => l.gap);
  const coverage = (complete: boolean): Coverage => ({
    complete,
    limitations: complete ? [] : mergeLimitations(lims, outputLims),
  });
  // Grouped in place: a copy of the lane's list per task was quadratic in a scan's tasks (tens of
  // thousands in one lane), seconds under the job row lock and the finalize's memory peak.
  const lanes = new Map<string, TaskRow[]>();
  for (const t of o.tasks) {
    const list = lanes.get(t.product_lane);
    if (list) list.push(t);
    else lanes.set(t.product_lane, [t]);
  }
  // A required lane without results decides only when no task at all produced one: the scan's
  // other lanes (the target's mail posture…) measured the target otherwise (CONTRACT §9).
  const anyResults = o.tasks.some(hasResults);
  for (const tasks of lanes.values()) {
    if (anyResults || !tasks.some((t) => t.required) || tasks.some(hasResults)) continue;
    const tried = tasks.filter((t) => t.status !== 'budget_exhausted' && t.status !== 'cancelled');
    const unavailable = tried.length > 0 && tried.every((t) => t.status === 'unavailable' || t.status === 'timeout');
    return { status: unavailable ? 'unavailable' : 'failed', result: null, coverage: coverage(false) };
  }
  if (o.tasks.length > 0 && o.tasks.every(applicableDone) && !gaps)
    return { status: 'completed', result: null, coverage: coverage(true) };
  return { status: o.tasks.some(hasResults) ? 'partial' : 'failed', result: null, coverage: coverage(false) };
}
