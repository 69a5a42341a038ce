-- Results are applied in batches (src/jobs/orchestration/apply-result.ts), and each batch asks the
-- job's tasks a few questions whose cost grew with the job (a 20,000-host scan has ~60,000 tasks):
--   * which of these object keys already have a task (dedupe; the pending ones to enqueue):
--     uq_tasks starts (job_id, check_name, …), so without check_name every one of the job's rows
--     was read; ix_tasks_key answers by (job_id, object_key_hash);
--   * what the reservation already stands for (SUM(unit_cost) by status): ix_tasks_budget covers
--     it, so the sum reads the index, not every row;
--   * how many tasks are still unapplied (may the job settle?): ix_tasks_unapplied counts only
--     those (open tasks are never applied, so they are among them);
--   * which of these objects the job already has (the output writer, by okey_hash of any type):
--     uq_objects_key starts (job_id, type, …), so each batch read every object of the job (and,
--     FOR UPDATE, locked its way through them); ix_objects_hash answers by (job_id, okey_hash).
ALTER TABLE tasks
  ADD KEY ix_tasks_key (job_id, object_key_hash),
  ADD KEY ix_tasks_budget (job_id, status, unit_cost),
  ADD KEY ix_tasks_unapplied (job_id, applied_at);

ALTER TABLE objects
  ADD KEY ix_objects_hash (job_id, okey_hash);
