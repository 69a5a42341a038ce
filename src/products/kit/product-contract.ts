// The contract every product module fulfils. Product modules never import Express: they receive a
// validated input and an execution context and return lane outcomes plus a projection; the HTTP
// layer turns that into the CONTRACT §7 envelope. The data they exchange (lane outcomes, task
// plans, check outputs) is the vocabulary in src/contract/lanes.ts and src/contract/tasks.ts.
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { Config } from '../../config/config.ts';
import type { LaneReadiness, LaneSpec, RateClass, SyncOutcome } from '../../contract/lanes.ts';
import type {
  AssembledOutcome,
  CheckOutput,
  FinishedTask,
  TaskOutcomeView,
  TaskPlan,
  WorkerLane,
} from '../../contract/tasks.ts';
import type { Resolver } from '../../dns/types.ts';
import type { OutboundGuard } from '../../net/outbound-guard.ts';
import type { ChangeRules } from './change-rules.ts';
import type { ApprovedScope } from '../../auth/approved-scopes.ts';
import type { ScopeProofs } from '../../auth/scope-proof.ts';
import type { PublicResolverCheck } from '../../net/public-resolver-check.ts';

/**
 * What answers "can this lane's worker take work?" (src/queue/lane-health.ts): `alive` with a
 * current heartbeat, `restarting` when none but one was alive within LANE_RESTART_GRACE_MS (the
 * stream keeps the work: admission still accepts), `down` after that.
 */
export interface WorkerLiveness {
  state(lane: string): 'alive' | 'restarting' | 'down';
  /** state(lane) !== 'down'. */
  accepting(lane: string): boolean;
}

/**
 * The shared services product lanes use, built once per process (kit/runtime.ts). Each is
 * optional: a product whose service is missing reports its lane `unconfigured`, never absent.
 */
export interface ProductServices {
  /** The project's DNS resolver (src/dns/): every DNS question a product asks goes through it. */
  resolver?: Resolver;
  /** The one outbound guard: every HTTP, TCP and TLS connection to a target goes through it. */
  outbound?: OutboundGuard;
  /**
   * The same guard for active work (probes, transfers, protocol enumeration, path fetches): it
   * also refuses ACTIVE_DENY_CIDRS, whatever the approval. Active checks use this one only.
   */
  activeOutbound?: OutboundGuard;
  /** Proof-of-control checks of verified scopes over the resolver, cached (src/auth/scope-proof.ts). */
  scopeProofs?: ScopeProofs;
  /** Worker liveness, where the process answers admission (the web role). */
  laneHealth?: WorkerLiveness;
  /** Whether DNS_SERVERS answers special-use names (a /readyz warning: src/net/public-resolver-check.ts). */
  publicResolver?: PublicResolverCheck;
}

export interface ProductRuntime {
  config: Config;
  log: Logger;
  services: ProductServices;
}

export interface ExecContext {
  runtime: ProductRuntime;
  requestId: string;
  signal: AbortSignal;
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

// biome-ignore lint/suspicious/noExplicitAny: the registry holds products of every input and result type
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
  /**
   * The domain names the input asks about (a name, a URL's host, a scan target), with the body path
   * each came from: admission refuses special-use names among them (kit/target-names.ts).
   */
  targetNames?: (input: I) => Array<{ path: string; name: string }>;
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

// ---- Async products: the checks the lane runner executes ------------------------------------

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
  run(
    task: { objectKey: string; target: string; params: Record<string, unknown>; distance?: number },
    ctx: CheckContext,
  ): Promise<CheckOutput>;
}

export interface ExpandContext {
  /** The workspace's approved target scopes (domain suffixes and their proof), read when first asked. */
  approvedScopes(): Promise<ApprovedScope[]>;
}

/** What admission decided about a job that its plan needs. */
export interface PlanContext {
  /** The approved scope active work was admitted under (jobs.active_scope); null for passive work. */
  activeScope: { domain: string; proof: 'verified' | 'operator_override' } | null;
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
   * unavailable code when one has no consumer alive within LANE_RESTART_GRACE_MS. Default: workerLanes.
   */
  lanesFor?(input: I): WorkerLane[];
  /** This input's job deadline (a scan profile's); default deadlineMs. */
  deadlineFor?(input: I): number;
  target(input: I): { type: string; value: string };
  profile?(input: I): string | null;
  /** `job`: what the job was admitted under (an active job's approved scope: its tasks stay inside it). */
  plan(input: I, job?: PlanContext): TaskPlan[];
  /**
   * Builds the job's result envelope body from the finished tasks (lookups). Pure. It may adjust
   * a lane's reported status from what other lanes found (e.g. dane is partial when no
   * certificate could be obtained to match), and return derived findings.
   */
  assemble?(input: I, tasks: TaskOutcomeView[]): AssembledOutcome;
  deadlineMs: number;
  /** How this product's jobs are compared with their baseline (CONTRACT §13); absent: never compared. */
  changes?: ChangeRules;
  /**
   * The tasks that recheck what the baseline found (a scan: its in-scope names, discovery source
   * `baseline`), planned when the job starts, after plan(): so that what went away is observed
   * gone rather than merely not found again. Called with the baseline's names a page at a time;
   * budgeted and deduplicated like any plan.
   */
  recheck?(input: I, names: ReadonlyArray<{ name: string; distance: number }>): TaskPlan[];
}
