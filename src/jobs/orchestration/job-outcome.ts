// The terminal status, result and coverage of a job from its finished tasks (CONTRACT §7, §9).
// Pure: finalize-job.ts gathers the rows and writes what this returns.
//
//   completed    every applicable task completed
//   partial      terminal with results, coverage incomplete
//   unavailable  a required lane was unavailable (or timed out) for the whole job
//   failed       internal error: nothing usable, a required lane failed, planning failed
//   cancelled    cancel requested (whatever the tasks did; completed ones are still charged)
// A deadline finalization is `partial` when any task produced results, else `failed`.
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
    const status: TerminalStatus = o.tasks.some(hasResults) ? 'partial' : 'failed';
    const result =
      out.result && status === 'partial'
        ? { ...out.result, status: 'partial', coverage: { complete: false } }
        : out.result;
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
  if (blocking?.status === 'partial') {
    // A required lane that answered in part (e.g. NS answered, DS timed out) still has results:
    // keep the projection, and let the envelope, coverage and limitations say what is missing.
    return {
      status: 'partial',
      result: { ...envelopeWithoutProjection(def, o, outcome), status: 'partial', result: outcome.result },
      coverage: { complete: false, limitations },
      ...derivedOf(outcome),
    };
  }
  if (blocking) {
    // buildEnvelope refuses this case (a sync route answers 503); a job keeps what can be said.
    const status: TerminalStatus =
      blocking.status === 'unavailable' || blocking.status === 'timeout' ? 'unavailable' : 'failed';
    return {
      status,
      result: envelopeWithoutProjection(def, o, outcome),
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

function envelopeWithoutProjection(
  def: ProductDefinition,
  o: OutcomeInput,
  outcome: AssembledOutcome,
): Record<string, unknown> {
  return {
    product: def.id,
    input: def.echo ? def.echo(o.input) : o.input,
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
  const lanes = new Map<string, TaskRow[]>();
  for (const t of o.tasks) lanes.set(t.product_lane, [...(lanes.get(t.product_lane) ?? []), t]);
  for (const tasks of lanes.values()) {
    if (!tasks.some((t) => t.required) || tasks.some(hasResults)) continue;
    const tried = tasks.filter((t) => t.status !== 'budget_exhausted' && t.status !== 'cancelled');
    const unavailable = tried.length > 0 && tried.every((t) => t.status === 'unavailable' || t.status === 'timeout');
    return { status: unavailable ? 'unavailable' : 'failed', result: null, coverage: coverage(false) };
  }
  if (o.tasks.length > 0 && o.tasks.every(applicableDone) && !gaps)
    return { status: 'completed', result: null, coverage: coverage(true) };
  return { status: o.tasks.some(hasResults) ? 'partial' : 'failed', result: null, coverage: coverage(false) };
}
