-- Credit ledger, retained jobs and everything under them (CONTRACT §6, §9, §10).

-- Balances kept in step with credit_entries in the same transaction; the CHECK makes
-- oversubscription impossible whatever the application does.
CREATE TABLE credit_accounts (
  workspace_id BIGINT UNSIGNED PRIMARY KEY,
  granted BIGINT NOT NULL DEFAULT 0,
  reserved BIGINT NOT NULL DEFAULT 0,
  captured BIGINT NOT NULL DEFAULT 0,
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  CONSTRAINT ck_credit_nonneg CHECK (reserved >= 0 AND captured >= 0 AND granted >= reserved + captured),
  CONSTRAINT fk_credit_ws FOREIGN KEY (workspace_id) REFERENCES workspaces(id)
) ENGINE=InnoDB;

-- Immutable entries. dedupe_key makes each capture (per task) and each release (per job) unique.
CREATE TABLE credit_entries (
  id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
  workspace_id BIGINT UNSIGNED NOT NULL,
  kind ENUM('grant', 'reserve', 'capture', 'release') NOT NULL,
  amount BIGINT NOT NULL,
  job_id BIGINT UNSIGNED NULL,
  api_key_id BIGINT UNSIGNED NULL,
  dedupe_key VARCHAR(191) CHARACTER SET ascii NOT NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  UNIQUE KEY uq_credit_dedupe (dedupe_key),
  KEY ix_credit_ws (workspace_id, id),
  KEY ix_credit_job (job_id)
) ENGINE=InnoDB;

-- Per key and calendar month (UTC): reserved-open + captured of reservations made that month.
CREATE TABLE key_month_usage (
  api_key_id BIGINT UNSIGNED NOT NULL,
  month CHAR(7) CHARACTER SET ascii NOT NULL,
  amount BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (api_key_id, month)
) ENGINE=InnoDB;

CREATE TABLE jobs (
  id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
  public_id CHAR(30) CHARACTER SET ascii NOT NULL,
  workspace_id BIGINT UNSIGNED NOT NULL,
  api_key_id BIGINT UNSIGNED NOT NULL,
  product VARCHAR(64) CHARACTER SET ascii NOT NULL,
  status ENUM('queued', 'running', 'cancelling', 'completed', 'partial', 'cancelled', 'failed', 'unavailable') NOT NULL,
  profile VARCHAR(16) CHARACTER SET ascii NULL,
  target_type VARCHAR(32) CHARACTER SET ascii NOT NULL,
  target_value VARCHAR(2048) NOT NULL,
  input JSON NOT NULL,
  request_id VARCHAR(128) NOT NULL,
  credits_reserved BIGINT NOT NULL DEFAULT 0,
  credits_captured BIGINT NOT NULL DEFAULT 0,
  credits_released BIGINT NULL,
  settled_at DATETIME(3) NULL,
  result JSON NULL,
  coverage JSON NULL,
  month CHAR(7) CHARACTER SET ascii NOT NULL,
  -- Page sequences: taken with UPDATE … LAST_INSERT_ID(seq + 1) in the writer's transaction, so
  -- the row lock orders commits and a page reader never sees seq n+1 before seq n.
  object_seq INT UNSIGNED NOT NULL DEFAULT 0,
  finding_seq INT UNSIGNED NOT NULL DEFAULT 0,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  started_at DATETIME(3) NULL,
  completed_at DATETIME(3) NULL,
  cancel_requested_at DATETIME(3) NULL,
  deadline_at DATETIME(3) NOT NULL,
  UNIQUE KEY uq_jobs_public (public_id),
  KEY ix_jobs_ws (workspace_id, id),
  KEY ix_jobs_open (status, deadline_at),
  KEY ix_jobs_completed (completed_at),
  CONSTRAINT ck_jobs_capture CHECK (credits_captured <= credits_reserved)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Transactional outbox: written with the job, published to the jobs stream after commit, and
-- re-published by the relay when the process died in between.
CREATE TABLE outbox (
  id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
  job_id BIGINT UNSIGNED NOT NULL,
  topic VARCHAR(32) CHARACTER SET ascii NOT NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  published_at DATETIME(3) NULL,
  KEY ix_outbox_unpublished (published_at, id)
) ENGINE=InnoDB;

-- One row per (job, object, check): a redelivered task finds its row and writes nothing twice.
CREATE TABLE tasks (
  id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
  job_id BIGINT UNSIGNED NOT NULL,
  workspace_id BIGINT UNSIGNED NOT NULL,
  object_key VARCHAR(512) NOT NULL,
  check_name VARCHAR(64) CHARACTER SET ascii NOT NULL,
  lane VARCHAR(16) CHARACTER SET ascii NOT NULL,
  product_lane VARCHAR(32) CHARACTER SET ascii NOT NULL,
  required TINYINT(1) NOT NULL DEFAULT 0,
  unit_cost INT NOT NULL DEFAULT 0,
  distance INT NOT NULL DEFAULT 0,
  params JSON NULL,
  status ENUM('pending', 'running', 'completed', 'partial', 'unavailable', 'timeout', 'failed', 'skipped', 'cancelled', 'budget_exhausted') NOT NULL DEFAULT 'pending',
  reason VARCHAR(64) NULL,
  attempts INT NOT NULL DEFAULT 0,
  output JSON NULL,
  -- Set when the orchestrator has applied the outcome (captured credits, updated coverage).
  applied_at DATETIME(3) NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  started_at DATETIME(3) NULL,
  finished_at DATETIME(3) NULL,
  UNIQUE KEY uq_tasks (job_id, check_name, object_key(255)),
  KEY ix_tasks_job (job_id, status)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Retained objects: deduplicated per job by (type, normalised key); seq is the page order.
CREATE TABLE objects (
  id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
  public_id CHAR(30) CHARACTER SET ascii NOT NULL,
  job_id BIGINT UNSIGNED NOT NULL,
  seq INT UNSIGNED NOT NULL,
  workspace_id BIGINT UNSIGNED NOT NULL,
  type VARCHAR(32) CHARACTER SET ascii NOT NULL,
  okey VARCHAR(512) NOT NULL,
  okey_hash BINARY(32) NOT NULL,
  distance INT NOT NULL DEFAULT 0,
  projection JSON NOT NULL,
  lanes JSON NOT NULL,
  evidence JSON NOT NULL,
  first_seen_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  UNIQUE KEY uq_objects_public (public_id),
  UNIQUE KEY uq_objects_key (job_id, type, okey_hash),
  UNIQUE KEY uq_objects_page (job_id, seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE relations (
  job_id BIGINT UNSIGNED NOT NULL,
  from_object_id BIGINT UNSIGNED NOT NULL,
  relation VARCHAR(32) CHARACTER SET ascii NOT NULL,
  to_object_id BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (from_object_id, relation, to_object_id),
  KEY ix_relations_to (to_object_id),
  KEY ix_relations_job (job_id)
) ENGINE=InnoDB;

CREATE TABLE findings (
  id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
  public_id CHAR(30) CHARACTER SET ascii NOT NULL,
  job_id BIGINT UNSIGNED NOT NULL,
  seq INT UNSIGNED NOT NULL,
  workspace_id BIGINT UNSIGNED NOT NULL,
  object_id BIGINT UNSIGNED NOT NULL,
  code VARCHAR(64) CHARACTER SET ascii NOT NULL,
  severity TINYINT UNSIGNED NOT NULL,
  confidence VARCHAR(16) CHARACTER SET ascii NOT NULL,
  title VARCHAR(300) NOT NULL,
  summary VARCHAR(2000) NOT NULL,
  evidence JSON NOT NULL,
  sources JSON NOT NULL,
  detected_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  UNIQUE KEY uq_findings_public (public_id),
  UNIQUE KEY uq_findings_key (job_id, object_id, code),
  UNIQUE KEY uq_findings_page (job_id, seq),
  KEY ix_findings_object (object_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
