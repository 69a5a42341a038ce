// The check/task contract: what the orchestrator plans, what a lane check returns, and what a
// product's assembly and expansion read back. Plain data that crosses the Redis streams and the
// tasks table, so every layer from the queue up speaks it. Types and constants only.
import type { LaneStatus, Limitation, SourceRef, SyncOutcome } from './lanes.ts';

/** A worker lane: a task stream and the process kind (Procfile role `lane-<name>`) that consumes it. */
export type WorkerLane = 'dns' | 'mail' | 'web' | 'domain' | 'active';

/** One unit of work, keyed by (job, check, objectKey): a redelivery finds the same row. */
export interface TaskPlan {
  check: string;
  lane: WorkerLane;
  /** The product lane reported in the envelope and job status (e.g. dns_delegation). */
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
  /**
   * The part of a composed check that raised it, when one task runs several (a scan's mail task
   * runs the mail lookup's lanes: `dmarc`, `spf`…). Stored with its sources (never shown): its
   * absence from a later job is observed by that part's status in the task, not the whole task's
   * (CONTRACT §13; src/jobs/changes/observe-absence.ts).
   */
  part?: string;
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
  /**
   * The lane did not complete, yet what it saw is a fact about the target: it refused the
   * connection, accepted it and then stalled, spoke only a protocol the lane will not, or has no
   * address (an authoritative NXDOMAIN). The projection says so, it stays in the job's envelope,
   * and the job is `partial`, not `unavailable` (CONTRACT §9). Absent: our side could not look.
   */
  measured?: boolean;
  /** Objects this check found to be no object of their own: see ObjectFold. */
  folds?: ObjectFold[];
}

/**
 * A name that is not an object of its own (a scan name that only its level's wildcard answers):
 * it collapses into `into`, which must be among the output's objects. Its object, if one was
 * recorded, leaves the pages; its relations and findings move to `into`, which lists it; and
 * whatever later names it lands on `into` too (src/jobs/output-writer.ts).
 */
export interface ObjectFold {
  object: ObjectRef;
  into: ObjectRef;
  /** How the name was found (e.g. `{ foundVia: 'mx' }`), listed on `into` with it. */
  detail?: Record<string, string>;
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
