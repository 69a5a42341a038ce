-- Suppressions (CONTRACT §15; src/jobs/suppressions/): a finding accepted on purpose, marked and
-- never hidden.
--
--   * suppressions: one row per suppression, revoked ones kept (revoked_at) with their history;
--     ix_suppressions_active reads a workspace's active ones (the cap, and a job's terminal work)
--     without walking its revoked or expired past; match_key is the key as normalized at creation
--     (a name, an address, a URL, or `*.suffix`);
--   * job_suppressions: what a job's terminal work matched, kept with the job (a suppression made,
--     changed or deleted later never rewrites a finished job: a report stays reproducible). Public
--     refs, not ids: the suppression may be purged, the job keeps what it was. (job_id, seq) pages
--     a findings page's `suppressed=only`; (job_id, finding_ref) marks the changes route's items;
--   * jobs.findings_summary: the job's open findings by severity and its suppressed count, written
--     in the transaction that makes the job terminal.
CREATE TABLE suppressions (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  public_id CHAR(30) CHARACTER SET ascii NOT NULL,
  workspace_id BIGINT UNSIGNED NOT NULL,
  code VARCHAR(64) CHARACTER SET ascii NOT NULL,
  match_key VARCHAR(512) NOT NULL,
  product VARCHAR(64) CHARACTER SET ascii NULL,
  reason VARCHAR(32) CHARACTER SET ascii NOT NULL,
  note VARCHAR(500) NOT NULL DEFAULT '',
  expires_at DATETIME(3) NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  created_by VARCHAR(16) CHARACTER SET ascii NOT NULL,
  revoked_at DATETIME(3) NULL,
  history JSON NOT NULL,
  UNIQUE KEY ux_suppressions_public (public_id),
  KEY ix_suppressions_list (workspace_id, id),
  KEY ix_suppressions_active (workspace_id, revoked_at, expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE job_suppressions (
  job_id BIGINT UNSIGNED NOT NULL,
  finding_id BIGINT UNSIGNED NOT NULL,
  seq INT UNSIGNED NOT NULL,
  finding_ref CHAR(30) CHARACTER SET ascii NOT NULL,
  suppression_ref CHAR(30) CHARACTER SET ascii NOT NULL,
  reason VARCHAR(32) CHARACTER SET ascii NOT NULL,
  expires_at DATETIME(3) NULL,
  PRIMARY KEY (job_id, finding_id),
  UNIQUE KEY ux_job_suppressions_seq (job_id, seq),
  KEY ix_job_suppressions_ref (job_id, finding_ref)
) ENGINE=InnoDB;

ALTER TABLE jobs ADD COLUMN findings_summary JSON NULL;
