-- The inventory written after a job's terminal transaction (src/jobs/inventory/inventory-pending.ts):
-- the terminal transaction inserts one row here with the job's terminal status (the durable marker),
-- and the inventory is then written in pages, each page's rows committed with `after_seq` (the last
-- object seq applied) in one transaction, the last page with the comparison's absences and the
-- row's delete. A process that dies between the terminal commit and the last page leaves the row:
-- the reconciler finds it untouched (`touched_at`, ix_inventory_pending_stale) and resumes at
-- after_seq, so every page is applied exactly once. A workspace's rows are worked oldest first
-- (ix_inventory_pending_workspace): a job's end never overwrites what a later job recorded.
CREATE TABLE inventory_pending (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  job_id BIGINT UNSIGNED NOT NULL,
  workspace_id BIGINT UNSIGNED NOT NULL,
  after_seq BIGINT UNSIGNED NOT NULL DEFAULT 0,
  touched_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  UNIQUE KEY ux_inventory_pending_job (job_id),
  KEY ix_inventory_pending_workspace (workspace_id, id),
  KEY ix_inventory_pending_stale (touched_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
