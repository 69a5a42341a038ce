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
  state: 'in_progress' | 'completed';
  lease_token: Buffer | null;
  lease_until: Date;
  response_status: number | null;
  response_body: string | null;
  created_at: CreatedAt;
  expires_at: Date;
}

export interface SchemaMigrationsTable {
  version: string;
  name: string;
  checksum: string;
  applied_at: CreatedAt;
}

export interface Database {
  workspaces: WorkspacesTable;
  workspace_target_scopes: WorkspaceTargetScopesTable;
  applications: ApplicationsTable;
  api_keys: ApiKeysTable;
  idempotency_records: IdempotencyRecordsTable;
  schema_migrations: SchemaMigrationsTable;
}

export type Workspace = Selectable<WorkspacesTable>;
export type NewIdempotencyRecord = Insertable<IdempotencyRecordsTable>;
