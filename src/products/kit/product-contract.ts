// The contract every product module fulfils. Product modules never import Express: they receive a
// validated input and an execution context and return lane outcomes plus a projection; the HTTP
// layer turns that into the CONTRACT §7 envelope.
import type { z } from 'zod';
import type { Logger } from 'pino';
import type { Config } from '../../config/config.ts';

export const laneStatuses = [
  'completed', 'partial', 'unavailable', 'timeout', 'failed', 'skipped', 'cancelled', 'budget_exhausted',
] as const;
export type LaneStatus = (typeof laneStatuses)[number];

export interface LaneOutcome {
  lane: string;
  required: boolean;
  status: LaneStatus;
  durationMs?: number;
  /** Machine reason for a non-completed lane (e.g. resolver_unreachable, not_configured). */
  reason?: string;
}

export interface Limitation {
  code: string;
  message: string;
}

export interface SourceRef {
  source: string;
  version?: string;
}

export interface LaneSpec {
  lane: string;
  required: boolean;
  description: string;
}

/** What a lane can do right now, independent of any request. */
export type LaneReadiness = 'ready' | 'unconfigured' | 'down' | 'not_built';

export type ProductReadiness = 'available' | 'partially_configured' | 'unavailable';

export type RateClass = 'sync_lookup' | 'async_lookup' | 'scan';

export interface ProductRuntime {
  config: Config;
  log: Logger;
  /** Optional shared services wired in by later products (resolver, datasets…). */
  services: Record<string, unknown>;
}

export interface ExecContext {
  runtime: ProductRuntime;
  requestId: string;
  signal: AbortSignal;
}

export interface SyncOutcome<R = unknown> {
  result: R;
  lanes: LaneOutcome[];
  sources: SourceRef[];
  limitations: Limitation[];
}

export interface ActiveWork {
  /** True when this request asks for active (intrusive) work and must pass the active gates. */
  active: boolean;
  /** Active work was asked for (profile advanced) without the request's explicit authorization. */
  authorizationMissing?: boolean;
  /** Passive work that still needs current responsible-use acceptance (every scan). */
  requiresResponsibleUse?: boolean;
  /** The host name the active work would touch; checked against approved target scope. */
  targetHost?: string;
}

export interface ProductDefinition<I = any, R = any> {
  id: string;
  title: string;
  mode: 'sync' | 'async';
  method: 'POST';
  path: string;
  scope: 'scan:create';
  rateClass: RateClass;
  input: z.ZodType<I>;
  /** Normalised input echoed in the envelope (defaults filled in). */
  echo?: (input: I) => Record<string, unknown>;
  /** Schema of `result` for the OpenAPI document. */
  resultSchema?: z.ZodType<R>;
  lanes: LaneSpec[];
  /** Credits reserved at acceptance. */
  price: (input: I) => number;
  activeWork?: (input: I) => ActiveWork;
  /** Checks beyond the schema that have their own error code (e.g. scan_credit_budget_invalid). */
  check?: (input: I) => void;
  /** Lane readiness, cheap and side-effect free: used by /v2/products, /readyz and admission. */
  readiness: (runtime: ProductRuntime) => Record<string, LaneReadiness>;
  /** Present when the product is built and completes inline. */
  execute?: (input: I, ctx: ExecContext) => Promise<SyncOutcome<R>>;
  /** Loads what `execute` needs that is too big to load in every role (the web role calls it at start). */
  warm?: () => void;
  /** Present when the product is built and runs as a job. */
  job?: AsyncProduct<I>;
}

export function laneOutcome(spec: LaneSpec, status: LaneStatus, extra: Partial<LaneOutcome> = {}): LaneOutcome {
  return { lane: spec.lane, required: spec.required, status, ...extra };
}

/** What answers "is this lane's worker process running?" (src/queue/lane-health.ts). */
export interface WorkerLiveness {
  alive(lane: string): boolean;
}

/**
 * The product's own lane readiness, and for async products the liveness of the orchestrator and
 * of the worker lanes that run its checks: without them every lane is `down`, however well
 * configured (an accepted job would wait, not run).
 */
export function laneReadiness(def: ProductDefinition, runtime: ProductRuntime): Record<string, LaneReadiness> {
  if (!def.execute && !def.job) return Object.fromEntries(def.lanes.map((l) => [l.lane, 'not_built' as const]));
  const own = def.readiness(runtime);
  if (!def.job) return own;
  const liveness = runtime.services.laneHealth as WorkerLiveness | undefined;
  const workersUp = liveness ? liveness.alive('orchestrator') && def.job.workerLanes.every((l) => liveness.alive(l)) : false;
  if (workersUp) return own;
  return Object.fromEntries(def.lanes.map((l) => [l.lane, (own[l.lane] ?? 'not_built') === 'ready' ? 'down' as const : own[l.lane] ?? 'not_built']));
}

export function productReadiness(def: ProductDefinition, runtime: ProductRuntime): ProductReadiness {
  const lanes = laneReadiness(def, runtime);
  let partial = false;
  for (const spec of def.lanes) {
    const r = lanes[spec.lane] ?? 'not_built';
    if (r === 'ready') continue;
    if (spec.required) return 'unavailable';
    partial = true;
  }
  return partial ? 'partially_configured' : 'available';
}

// ---- Async products: jobs, tasks and lane checks -------------------------------------------

export type WorkerLane = 'dns' | 'mail' | 'web' | 'domain' | 'active';

/** One unit of work, keyed by (job, check, objectKey): a redelivery finds the same row. */
export interface TaskPlan {
  check: string;
  lane: WorkerLane;
  /** The lane name reported in the envelope and job status (e.g. dns_delegation). */
  productLane: string;
  required: boolean;
  unitCost: number;
  objectKey: string;
  distance?: number;
  params?: Record<string, unknown>;
  /**
   * Run only after this task (same job) has finished: until then the task is `waiting`, never
   * enqueued. On release its params gain `gate: { status, projection }` of that task, so a check
   * can use what it found (a scan's wildcard probe of a zone level, for the names under it).
   */
  gate?: { check: string; objectKey: string };
}

/** What a gated task receives in params.gate when it is released. */
export interface GateResult {
  status: LaneStatus;
  projection: Record<string, unknown> | null;
}

export interface ObjectRef {
  type: string;
  key: string;
}

export interface ObjectOut extends ObjectRef {
  distance?: number;
  projection: Record<string, unknown>;
  evidence?: Array<{ summary: string }>;
  /**
   * Recorded by this check but not examined by it (a name seen in a record, an address): it gets
   * its projection and distance, not this lane's status.
   */
  discovered?: boolean;
}

export interface RelationOut {
  from: ObjectRef;
  relation: 'resolves_to' | 'mx_of' | 'ns_of' | 'cname_to' | 'san_of' | 'links_to' | 'discovered_from';
  to: ObjectRef;
}

export type Severity = 'info' | 'low' | 'medium' | 'high' | 'critical';
export const SEVERITIES: readonly Severity[] = ['info', 'low', 'medium', 'high', 'critical'];

export interface FindingOut {
  code: string;
  severity: Severity;
  confidence: 'confirmed' | 'firm' | 'tentative';
  title: string;
  summary: string;
  object: ObjectRef;
  evidence?: Array<{ summary: string }>;
}

/** What a check returns; the lane runner persists it idempotently. */
export interface CheckOutput {
  status: LaneStatus;
  reason?: string;
  /** This lane's part of the product projection (assembled into the job's result). */
  projection: Record<string, unknown>;
  objects: ObjectOut[];
  relations: RelationOut[];
  findings: FindingOut[];
  limitations: Limitation[];
  sources: SourceRef[];
}

export interface CheckContext {
  runtime: ProductRuntime;
  signal: AbortSignal;
  /** Runs a CPU-heavy parse in the lane's piscina pool (or inline where no pool is configured). */
  runInPool?: <T>(task: string, payload: unknown) => Promise<T>;
}

export interface CheckSpec {
  name: string;
  lane: WorkerLane;
  timeoutMs: number;
  /** `distance`: the task's hops from the job's target (a scan places what it discovers one further). */
  run(task: { objectKey: string; target: string; params: Record<string, unknown>; distance?: number }, ctx: CheckContext): Promise<CheckOutput>;
}

export interface TaskOutcomeView {
  check: string;
  productLane: string;
  required: boolean;
  objectKey: string;
  status: LaneStatus;
  reason?: string;
  output: CheckOutput | null;
}

/**
 * What a lookup derives from several lanes at once, after every task finished (e.g. DANE records
 * matched against the certificate the STARTTLS lane was shown): findings and objects no single
 * check could produce. Persisted at finalize, attributed to `lane`.
 */
export interface DerivedOutput {
  lane: string;
  objects: ObjectOut[];
  relations: RelationOut[];
  findings: FindingOut[];
  sources: SourceRef[];
}

/** The envelope body of a lookup job, plus what it derived across lanes. */
export interface AssembledOutcome<R = unknown> extends SyncOutcome<R> {
  derived?: DerivedOutput[];
}

/** A finished task as the orchestrator hands it to a product's expand(). */
export interface FinishedTask {
  check: string;
  objectKey: string;
  distance: number;
  status: LaneStatus;
  output: CheckOutput | null;
}

export interface ExpandContext {
  /** The workspace's approved target scopes (domain suffixes), read when first asked. */
  approvedScopes(): Promise<string[]>;
}

export interface AsyncProduct<I> {
  /** The worker lanes that run this product's checks; readiness needs a live consumer on each. */
  workerLanes: WorkerLane[];
  /**
   * Plans more work from a finished task (recursive scans), under the job row lock, as results
   * arrive. What it returns is deduplicated against the job's tasks, budgeted against its
   * reservation and gated like the initial plan. Never called once the job is cancelling.
   */
  expand?(input: I, task: FinishedTask, ctx: ExpandContext): Promise<TaskPlan[]> | TaskPlan[];
  /** At most this many objects are kept for one job (a scan profile's cap). */
  objectCap?(input: I): number;
  /**
   * The worker lanes this input needs (a scan profile's); admission refuses with the product's
   * unavailable code when one has no live consumer. Default: workerLanes.
   */
  lanesFor?(input: I): WorkerLane[];
  /** This input's job deadline (a scan profile's); default deadlineMs. */
  deadlineFor?(input: I): number;
  target(input: I): { type: string; value: string };
  profile?(input: I): string | null;
  plan(input: I): TaskPlan[];
  /**
   * Builds the job's result envelope body from the finished tasks (lookups). Pure. It may adjust
   * a lane's reported status from what other lanes found (e.g. dane is partial when no
   * certificate could be obtained to match), and return derived findings.
   */
  assemble?(input: I, tasks: TaskOutcomeView[]): AssembledOutcome;
  deadlineMs: number;
}
