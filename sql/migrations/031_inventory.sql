-- The inventory (CONTRACT §16; src/jobs/inventory/): everything the workspace's jobs have seen, one
-- row per identity (type, normalized key; okey_hash as the objects table hashes it), updated in each
-- job's terminal work from its comparison. Rows outlive job retention (summaries, no evidence) and
-- go INVENTORY_RETENTION_DAYS after they were last seen (ix_inventory_seen).
--
-- Pages are keyset ranges, each on an index that starts with the workspace and the filter's
-- equality and ends with the page order, so a page 100,000 rows deep costs what the first costs:
--   ix_inventory_page      (type, okey): no filter, or `type`
--   ix_inventory_state     state = ?, then (type, okey)
--   ix_inventory_severity  max_open = s for each s ≥ minSeverity, merged by (type, okey)
--   ix_inventory_q         rhost in [q, q + '/'): the host's labels reversed with a '.' after each
--                          (www.example.com → com.example.www.), so `q` and every name below it are
--                          one range, ordered (rhost, type, okey)
-- max_open: the highest severity among the open findings (-1: none), from the last job that held it.
CREATE TABLE inventory (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  workspace_id BIGINT UNSIGNED NOT NULL,
  okey_hash BINARY(32) NOT NULL,
  type VARCHAR(32) CHARACTER SET ascii NOT NULL,
  okey VARCHAR(512) NOT NULL,
  rhost VARCHAR(255) CHARACTER SET ascii NOT NULL,
  state ENUM('present', 'gone', 'unconfirmed') NOT NULL,
  first_seen_at DATETIME(3) NOT NULL,
  last_seen_at DATETIME(3) NOT NULL,
  last_checked_at DATETIME(3) NULL,
  changed_at DATETIME(3) NULL,
  last_job_id BIGINT UNSIGNED NULL,
  last_job_ref CHAR(30) CHARACTER SET ascii NOT NULL,
  last_object_ref CHAR(30) CHARACTER SET ascii NULL,
  products VARCHAR(255) CHARACTER SET ascii NOT NULL,
  open_critical INT UNSIGNED NOT NULL DEFAULT 0,
  open_high INT UNSIGNED NOT NULL DEFAULT 0,
  open_medium INT UNSIGNED NOT NULL DEFAULT 0,
  open_low INT UNSIGNED NOT NULL DEFAULT 0,
  open_info INT UNSIGNED NOT NULL DEFAULT 0,
  max_open TINYINT NOT NULL DEFAULT -1,
  UNIQUE KEY ux_inventory_identity (workspace_id, okey_hash),
  KEY ix_inventory_page (workspace_id, type, okey),
  KEY ix_inventory_state (workspace_id, state, type, okey),
  KEY ix_inventory_severity (workspace_id, max_open, type, okey),
  KEY ix_inventory_q (workspace_id, rhost, type, okey),
  KEY ix_inventory_seen (last_seen_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The open findings across the estate, one per finding identity (code, object type and key: the
-- comparison's pairing, docs/findings.md), from the last job that held its object; a finding leaves
-- when a comparison observes it resolved or its object gone. Suppressed ones stay, marked.
CREATE TABLE inventory_findings (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  workspace_id BIGINT UNSIGNED NOT NULL,
  identity_hash BINARY(32) NOT NULL,
  okey_hash BINARY(32) NOT NULL,
  code VARCHAR(64) CHARACTER SET ascii NOT NULL,
  severity TINYINT UNSIGNED NOT NULL,
  object_type VARCHAR(32) CHARACTER SET ascii NOT NULL,
  object_key VARCHAR(512) NOT NULL,
  rhost VARCHAR(255) CHARACTER SET ascii NOT NULL,
  first_seen_at DATETIME(3) NOT NULL,
  last_seen_at DATETIME(3) NOT NULL,
  job_ref CHAR(30) CHARACTER SET ascii NOT NULL,
  finding_ref CHAR(30) CHARACTER SET ascii NOT NULL,
  suppression_ref CHAR(30) CHARACTER SET ascii NULL,
  suppression_reason VARCHAR(32) CHARACTER SET ascii NULL,
  suppression_expires_at DATETIME(3) NULL,
  UNIQUE KEY ux_inventory_findings_identity (workspace_id, identity_hash),
  KEY ix_inventory_findings_object (workspace_id, okey_hash),
  KEY ix_inventory_findings_page (workspace_id, id),
  KEY ix_inventory_findings_seen (last_seen_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
