-- Change detection (CONTRACT §13; src/jobs/changes/): every retained job is compared with its
-- baseline, the workspace's newest earlier job of the same product and normalized target (scans:
-- and profile) that ended completed or partial and was never asked to cancel.
--
--   * target_key: what "the same product, target and profile" means, as one indexed value, so that
--     picking the baseline when a job starts reads the few jobs of that target (ix_jobs_baseline),
--     newest completion first, not the workspace's jobs;
--   * change_fingerprint: the version of the identity and comparison rules the job was made under
--     (docs/findings.md, "Change fingerprints"): a job is only compared with a baseline made under
--     the same version, never across a change of what "the same object" means;
--   * baseline_*: picked when the job starts, kept with the job (its public ref and completion time
--     outlive the baseline's retention); ix_jobs_baseline_of lets retention keep a baseline while a
--     job that still has to be compared with it is open;
--   * changes: the counts, written in the transaction that makes the job terminal.
ALTER TABLE jobs
  ADD COLUMN target_key BINARY(32) AS (UNHEX(SHA2(CONCAT(product, CHAR(10), target_type, CHAR(10), target_value, CHAR(10), IFNULL(profile, '')), 256))) STORED,
  ADD COLUMN change_fingerprint VARCHAR(32) CHARACTER SET ascii NULL,
  ADD COLUMN baseline_job_id BIGINT UNSIGNED NULL,
  ADD COLUMN baseline_ref CHAR(30) CHARACTER SET ascii NULL,
  ADD COLUMN baseline_completed_at DATETIME(3) NULL,
  ADD COLUMN changes JSON NULL,
  ADD KEY ix_jobs_baseline (workspace_id, target_key, completed_at),
  ADD KEY ix_jobs_baseline_of (baseline_job_id);

-- The comparison of one job with its baseline, made when the job ends, in bounded chunks (each
-- its own transaction): a merge of both jobs' objects in identity order (okey_hash, which hashes
-- type and key), each object's findings paired with it. `after_hash` is the last identity
-- compared, so a crash resumes where the last chunk committed; `counts` are the running totals.
CREATE TABLE change_runs (
  job_id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
  baseline_job_id BIGINT UNSIGNED NOT NULL,
  after_hash BINARY(32) NULL,
  next_seq INT UNSIGNED NOT NULL DEFAULT 0,
  counts JSON NOT NULL,
  done TINYINT(1) NOT NULL DEFAULT 0,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3)
) ENGINE=InnoDB;

-- One row per identity compared (unchanged ones too: every result item carries its mark).
--   grp = kind × 8 + mark (kind 0 object, 1 finding; mark 0 new, 1 changed, 2 gone, 3 resolved,
--   4 unconfirmed, 5 unchanged): the changes route pages by (grp, seq), one keyset range per
--   group its filters allow, so a page costs the same at any depth and under any filter;
--   seq is the merge order within the job.
-- Baseline refs are public ids, kept as text: the baseline may be purged, its comparison stays.
-- object_id / finding_id: this job's rows, for the marks of result items, objects and findings.
CREATE TABLE job_changes (
  job_id BIGINT UNSIGNED NOT NULL,
  grp TINYINT UNSIGNED NOT NULL,
  seq INT UNSIGNED NOT NULL,
  subject_type VARCHAR(64) CHARACTER SET ascii NOT NULL,
  subject_key VARCHAR(512) NOT NULL,
  object_type VARCHAR(32) CHARACTER SET ascii NULL,
  object_id BIGINT UNSIGNED NULL,
  finding_id BIGINT UNSIGNED NULL,
  object_ref CHAR(30) CHARACTER SET ascii NULL,
  baseline_object_ref CHAR(30) CHARACTER SET ascii NULL,
  finding_ref CHAR(30) CHARACTER SET ascii NULL,
  baseline_finding_ref CHAR(30) CHARACTER SET ascii NULL,
  severity TINYINT UNSIGNED NULL,
  changed_fields JSON NULL,
  reason VARCHAR(32) CHARACTER SET ascii NULL,
  PRIMARY KEY (job_id, grp, seq),
  KEY ix_job_changes_object (job_id, object_id),
  KEY ix_job_changes_finding (job_id, finding_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
