-- Monitors and signed webhooks (CONTRACT §14; src/jobs/monitors/).

-- A monitor: a product request run again every interval, admitted as its creator's key. Paused or
-- deleted monitors have next_run_at NULL, so the scheduler's due scan (ix_monitors_due) never
-- sees them. Webhook secrets are AES-256-GCM under WEBHOOK_SECRET_KEY (never stored in clear);
-- after a rotation the previous secret keeps signing beside the new one until prev_secret_until.
CREATE TABLE monitors (
  id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
  public_id CHAR(30) CHARACTER SET ascii NOT NULL,
  workspace_id BIGINT UNSIGNED NOT NULL,
  api_key_id BIGINT UNSIGNED NOT NULL,
  product VARCHAR(64) CHARACTER SET ascii NOT NULL,
  request JSON NOT NULL,
  interval_seconds INT UNSIGNED NOT NULL,
  paused TINYINT(1) NOT NULL DEFAULT 0,
  next_run_at DATETIME(3) NULL,
  last_job_id BIGINT UNSIGNED NULL,
  webhook_url VARCHAR(2048) NULL,
  webhook_secret VARBINARY(255) NULL,
  webhook_prev_secret VARBINARY(255) NULL,
  webhook_prev_secret_until DATETIME(3) NULL,
  -- 'gone' after a 410: no delivery until a PATCH of the URL.
  webhook_disabled VARCHAR(16) CHARACTER SET ascii NULL,
  -- The first failed attempt since the last delivered one; 24 h of it marks the webhook failing.
  webhook_failing_since DATETIME(3) NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  deleted_at DATETIME(3) NULL,
  UNIQUE KEY uq_monitors_public (public_id),
  KEY ix_monitors_ws (workspace_id, deleted_at, id),
  KEY ix_monitors_due (next_run_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per due time of a monitor: the unique key is what makes a due run start once across
-- any number of orchestrators. `claimed` until the run is decided; `started` is written in the
-- job's own transaction (job_id), `skipped` with the refusal's code in the transaction that
-- writes its event.
CREATE TABLE monitor_runs (
  id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
  monitor_id BIGINT UNSIGNED NOT NULL,
  due_at DATETIME(3) NOT NULL,
  outcome ENUM('claimed', 'started', 'skipped') NOT NULL,
  code VARCHAR(64) CHARACTER SET ascii NULL,
  job_id BIGINT UNSIGNED NULL,
  claimed_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  run_at DATETIME(3) NULL,
  UNIQUE KEY uq_monitor_runs_due (monitor_id, due_at),
  KEY ix_monitor_runs_claimed (outcome, claimed_at),
  KEY ix_monitor_runs_job (job_id),
  KEY ix_monitor_runs_age (due_at)
) ENGINE=InnoDB;

-- Runs, events and deleted monitors are purged after JOB_RETENTION_DAYS, like jobs
-- (src/jobs/monitors/monitor-retention.ts; the *_age indexes).

-- The event outbox and delivery log: an event row is written in the transaction that ends the
-- job (monitor.job_finished) or records the skip (monitor.run_skipped), with its body fixed, so
-- every attempt sends the same bytes under the same webhook-id (public_id). Delivery workers claim
-- due rows with FOR UPDATE SKIP LOCKED, per monitor. ix_monitor_events_due leads with the monitor
-- so that "which monitors have events due" is a loose index scan (two index dives per monitor,
-- whatever its backlog: a dead endpoint's 10,000 pending rows are not read each round) and each
-- monitor's claim an index range in due order.
CREATE TABLE monitor_events (
  id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
  public_id CHAR(30) CHARACTER SET ascii NOT NULL,
  monitor_id BIGINT UNSIGNED NOT NULL,
  workspace_id BIGINT UNSIGNED NOT NULL,
  type VARCHAR(32) CHARACTER SET ascii NOT NULL,
  job_id BIGINT UNSIGNED NULL,
  job_ref CHAR(30) CHARACTER SET ascii NULL,
  body MEDIUMTEXT NOT NULL,
  status ENUM('pending', 'delivered', 'failed') NOT NULL DEFAULT 'pending',
  attempts INT UNSIGNED NOT NULL DEFAULT 0,
  -- When the next attempt is due; while an attempt runs, the end of its lease (a worker that died
  -- mid-attempt leaves the row to be claimed again then).
  next_attempt_at DATETIME(3) NULL,
  -- The start of the retry window (CONTRACT §14: retried until 24 h have passed); reset by redeliver.
  window_started_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  claim_token CHAR(16) CHARACTER SET ascii NULL,
  last_attempt_at DATETIME(3) NULL,
  last_status_code SMALLINT UNSIGNED NULL,
  last_error VARCHAR(200) NULL,
  delivered_at DATETIME(3) NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  UNIQUE KEY uq_monitor_events_public (public_id),
  KEY ix_monitor_events_due (monitor_id, status, next_attempt_at),
  KEY ix_monitor_events_monitor (monitor_id, id),
  KEY ix_monitor_events_age (created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
