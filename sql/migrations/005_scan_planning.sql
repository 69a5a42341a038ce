-- Recursive scans (and any job that plans as results arrive):
--   * a task may wait for another (its gate: the check and object key of the task it waits for,
--     e.g. names under a zone level wait for that level's wildcard probe); waiting tasks are open
--     work, never enqueued until the orchestrator releases them;
--   * a job may cap its objects (the scan profile's object cap), enforced where objects are written;
--   * limitations of finished tasks are counted per job as results are applied, so a job with
--     thousands of tasks is finalized from this table, not by reading every task's output; `gap`
--     marks the ones that make coverage incomplete by themselves (an object cap reached, a
--     failed expansion), as opposed to a completed task's informational notes.
ALTER TABLE tasks
  MODIFY COLUMN status ENUM('pending', 'running', 'completed', 'partial', 'unavailable', 'timeout', 'failed', 'skipped', 'cancelled', 'budget_exhausted', 'waiting') NOT NULL DEFAULT 'pending',
  ADD COLUMN gate_key_hash BINARY(32) NULL,
  ADD KEY ix_tasks_gate (job_id, gate_key_hash, status);

ALTER TABLE jobs
  ADD COLUMN object_cap INT UNSIGNED NULL;

CREATE TABLE job_limitations (
  job_id BIGINT UNSIGNED NOT NULL,
  code VARCHAR(64) CHARACTER SET ascii NOT NULL,
  occurrences INT UNSIGNED NOT NULL DEFAULT 0,
  message VARCHAR(500) NOT NULL,
  gap TINYINT(1) NOT NULL DEFAULT 0,
  PRIMARY KEY (job_id, code)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
