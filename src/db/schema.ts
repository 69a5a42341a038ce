// Kysely table types. Generated-by-hand to mirror sql/migrations; keep the two in step.
import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';

type CreatedAt = ColumnType<Date, Date | undefined, never>;

export interface WorkspacesTable {
  id: Generated<number>;
  public_id: string;
  name: string;
  active_capability: number;
  responsible_use_version: string | null;
  responsible_use_accepted_at: Date | null;
  created_at: CreatedAt;
}

export interface WorkspaceTargetScopesTable {
  workspace_id: number;
  suffix: string;
  created_at: CreatedAt;
  /** Migration 011: how the scope was approved (src/auth/approved-scopes.ts). */
  proof: Generated<'verified' | 'operator_override'>;
  verified_at: Date | null;
  /** Migration 024: the scheduled re-proof of verified scopes (src/auth/scope-reproof.ts). */
  last_proven_at: Generated<Date | null>;
  proof_checked_at: Generated<Date | null>;
  proof_outcome: Generated<'present' | 'missing' | 'indeterminate' | null>;
  proof_detail: Generated<string | null>;
  suspended_at: Generated<Date | null>;
}

/** The proof-of-control token of a (workspace, scope) (migration 011, src/auth/scope-proof.ts). */
export interface ScopeChallengesTable {
  workspace_id: number;
  suffix: string;
  token: string;
  created_at: CreatedAt;
}

export interface ApplicationsTable {
  id: Generated<number>;
  public_id: string;
  workspace_id: number;
  name: string;
  rate_limits: ColumnType<unknown, string | null, string | null>;
  created_at: CreatedAt;
}

export interface ApiKeysTable {
  id: Generated<number>;
  public_id: string;
  application_id: number;
  workspace_id: number;
  key_hash: Buffer;
  hint: string;
  scopes: string;
  monthly_credit_limit: number | null;
  revoked_at: Date | null;
  created_at: CreatedAt;
}

export interface IdempotencyRecordsTable {
  id: Generated<number>;
  api_key_id: number;
  idem_key: string;
  fingerprint: Buffer;
  response_status: number;
  response_body: string;
  created_at: CreatedAt;
  expires_at: Date;
}

export interface SchemaMigrationsTable {
  version: string;
  name: string;
  checksum: string;
  applied_at: CreatedAt;
}

export interface CreditAccountsTable {
  workspace_id: number;
  granted: number;
  reserved: number;
  captured: number;
  updated_at: ColumnType<Date, never, never>;
}

export interface CreditEntriesTable {
  id: Generated<number>;
  workspace_id: number;
  kind: 'grant' | 'reserve' | 'capture' | 'release';
  amount: number;
  job_id: number | null;
  api_key_id: number | null;
  dedupe_key: string;
  created_at: CreatedAt;
}

export interface KeyMonthUsageTable {
  api_key_id: number;
  month: string;
  amount: number;
}

export type JobStatus =
  | 'queued'
  | 'running'
  | 'cancelling'
  | 'completed'
  | 'partial'
  | 'cancelled'
  | 'failed'
  | 'unavailable';
export const TERMINAL_STATUSES: readonly JobStatus[] = ['completed', 'partial', 'cancelled', 'failed', 'unavailable'];

type Json = ColumnType<unknown, string, string>;
type NullableJson = ColumnType<unknown, string | null, string | null>;

export interface JobsTable {
  id: Generated<number>;
  public_id: string;
  workspace_id: number;
  api_key_id: number;
  product: string;
  status: JobStatus;
  profile: string | null;
  target_type: string;
  target_value: string;
  input: Json;
  request_id: string;
  credits_reserved: number;
  credits_captured: Generated<number>;
  credits_released: number | null;
  settled_at: Date | null;
  result: NullableJson;
  coverage: NullableJson;
  month: string;
  object_seq: Generated<number>;
  finding_seq: Generated<number>;
  created_at: CreatedAt;
  started_at: Date | null;
  completed_at: Date | null;
  cancel_requested_at: Date | null;
  deadline_at: Date;
  /** At most this many objects are kept for the job (a scan profile's cap); null = no cap. */
  object_cap: Generated<number | null>;
  /** Running task counters (migration 008; src/jobs/tasks/task-counters.ts). */
  tasks_planned_cost: Generated<number>;
  tasks_unapplied: Generated<number>;
  budget_stopped: Generated<number>;
  /** Migration 011: the approved scope an active job was admitted under, and its proof. */
  active_scope: ColumnType<unknown, string | null | undefined, string | null>;
  /** Change detection (migration 012; src/jobs/changes/). Generated: SHA-256 of product, target, profile. */
  target_key: ColumnType<Buffer, never, never>;
  change_fingerprint: Generated<string | null>;
  baseline_job_id: Generated<number | null>;
  baseline_ref: Generated<string | null>;
  baseline_completed_at: Generated<Date | null>;
  /** The change counts (CONTRACT §13), written with the terminal status. */
  changes: ColumnType<unknown, string | null | undefined, string | null>;
  /** Migration 020: why an ended job may never be a baseline ('deadline', 'purging'); null: it may. */
  baseline_unfit: Generated<string | null>;
}

export interface OutboxTable {
  id: Generated<number>;
  job_id: number;
  topic: string;
  created_at: CreatedAt;
  published_at: Date | null;
}

/** waiting: planned, held until the task it is gated on has finished (never enqueued before). */
export type TaskStatus =
  | 'pending'
  | 'running'
  | 'completed'
  | 'partial'
  | 'unavailable'
  | 'timeout'
  | 'failed'
  | 'skipped'
  | 'cancelled'
  | 'budget_exhausted'
  | 'waiting';

export interface TasksTable {
  id: Generated<number>;
  job_id: number;
  workspace_id: number;
  object_key: string;
  /** Generated (SHA-256 of object_key): the unique task identity. */
  object_key_hash: ColumnType<Buffer, never, never>;
  check_name: string;
  lane: string;
  product_lane: string;
  required: number;
  unit_cost: number;
  distance: number;
  params: NullableJson;
  status: Generated<TaskStatus>;
  reason: string | null;
  attempts: Generated<number>;
  output: NullableJson;
  applied_at: Date | null;
  created_at: CreatedAt;
  started_at: Date | null;
  finished_at: Date | null;
  /** SHA-256 of "<check>\n<object key>" of the task this one waits for. */
  gate_key_hash: Buffer | null;
}

export interface ObjectsTable {
  id: Generated<number>;
  public_id: string;
  job_id: number;
  seq: number;
  workspace_id: number;
  type: string;
  okey: string;
  okey_hash: Buffer;
  distance: number;
  projection: Json;
  lanes: Json;
  evidence: Json;
  first_seen_at: CreatedAt;
  /** Collapsed into this object (a wildcard's): the row is a tombstone, never read as an object. */
  folded_into: Generated<number | null>;
}

export interface RelationsTable {
  job_id: number;
  from_object_id: number;
  relation: string;
  to_object_id: number;
}

export interface FindingsTable {
  id: Generated<number>;
  public_id: string;
  job_id: number;
  seq: number;
  workspace_id: number;
  object_id: number;
  code: string;
  severity: number;
  confidence: string;
  title: string;
  summary: string;
  evidence: Json;
  sources: Json;
  detected_at: CreatedAt;
}

export interface JobLimitationsTable {
  job_id: number;
  code: string;
  occurrences: number;
  message: string;
  gap: number;
}

/** Monitors and their webhooks (migration 013; src/jobs/monitors/). */
export interface MonitorsTable {
  id: Generated<number>;
  public_id: string;
  workspace_id: number;
  api_key_id: number;
  product: string;
  request: Json;
  interval_seconds: number;
  paused: Generated<number>;
  /** Why the service paused it ('key_revoked'); null when its owner did (migration 022). */
  paused_reason: string | null;
  next_run_at: Date | null;
  last_job_id: number | null;
  webhook_url: string | null;
  webhook_secret: Buffer | null;
  webhook_prev_secret: Buffer | null;
  webhook_prev_secret_until: Date | null;
  webhook_disabled: string | null;
  webhook_failing_since: Date | null;
  created_at: CreatedAt;
  updated_at: Generated<Date>;
  deleted_at: Date | null;
}

export type MonitorRunOutcome = 'claimed' | 'started' | 'skipped';

export interface MonitorRunsTable {
  id: Generated<number>;
  monitor_id: number;
  due_at: Date;
  outcome: MonitorRunOutcome;
  code: string | null;
  job_id: number | null;
  claimed_at: Generated<Date>;
  /** While claimed: when any orchestrator may take it (lease end, or a deferred run's retry; migration 022). */
  reclaim_at: Date | null;
  deferrals: Generated<number>;
  run_at: Date | null;
}

export type MonitorEventStatus = 'pending' | 'delivered' | 'failed';

export interface MonitorEventsTable {
  id: Generated<number>;
  public_id: string;
  monitor_id: number;
  workspace_id: number;
  type: string;
  job_id: number | null;
  job_ref: string | null;
  body: string;
  status: Generated<MonitorEventStatus>;
  attempts: Generated<number>;
  next_attempt_at: Date | null;
  window_started_at: Generated<Date>;
  claim_token: string | null;
  last_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  created_at: CreatedAt;
}

export interface ChangeRunsTable {
  job_id: number;
  baseline_job_id: number;
  after_hash: Buffer | null;
  next_seq: Generated<number>;
  counts: Json;
  done: Generated<number>;
  created_at: CreatedAt;
  updated_at: ColumnType<Date, never, never>;
}

export interface JobChangesTable {
  job_id: number;
  grp: number;
  seq: number;
  subject_type: string;
  subject_key: string;
  object_type: string | null;
  object_id: number | null;
  finding_id: number | null;
  object_ref: string | null;
  baseline_object_ref: string | null;
  finding_ref: string | null;
  baseline_finding_ref: string | null;
  severity: number | null;
  changed_fields: NullableJson;
  reason: string | null;
}

export interface Database {
  change_runs: ChangeRunsTable;
  job_changes: JobChangesTable;
  monitors: MonitorsTable;
  monitor_runs: MonitorRunsTable;
  monitor_events: MonitorEventsTable;
  job_limitations: JobLimitationsTable;
  credit_accounts: CreditAccountsTable;
  credit_entries: CreditEntriesTable;
  key_month_usage: KeyMonthUsageTable;
  jobs: JobsTable;
  outbox: OutboxTable;
  tasks: TasksTable;
  objects: ObjectsTable;
  relations: RelationsTable;
  findings: FindingsTable;
  workspaces: WorkspacesTable;
  workspace_target_scopes: WorkspaceTargetScopesTable;
  scope_challenges: ScopeChallengesTable;
  applications: ApplicationsTable;
  api_keys: ApiKeysTable;
  idempotency_records: IdempotencyRecordsTable;
  schema_migrations: SchemaMigrationsTable;
}

export type Workspace = Selectable<WorkspacesTable>;
export type NewIdempotencyRecord = Insertable<IdempotencyRecordsTable>;
