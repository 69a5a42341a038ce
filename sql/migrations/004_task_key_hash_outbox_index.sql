-- Task identity on the whole object key: the old unique index saw only its first 255 characters,
-- so two long keys (URLs) sharing a prefix collided and INSERT IGNORE dropped the second task.
ALTER TABLE tasks
  ADD COLUMN object_key_hash BINARY(32) AS (UNHEX(SHA2(object_key, 256))) STORED,
  DROP INDEX uq_tasks,
  ADD UNIQUE KEY uq_tasks (job_id, check_name, object_key_hash);

-- Retention purges outbox rows per job.
ALTER TABLE outbox ADD KEY ix_outbox_job (job_id);
