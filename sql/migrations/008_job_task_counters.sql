-- Running task counters on the job row, so that applying a batch of results asks the job row
-- (already locked by every change to a job's tasks) instead of every task of the job: a
-- 20,000-host scan has ~60,000 tasks, and the sums and counts below read a share of them that grew
-- with the job on every batch (src/jobs/tasks/task-counters.ts says what each counter counts and
-- who maintains it; docs/products/scan.md, "Budget").
--   * tasks_planned_cost: what the reservation stands for (CONTRACT §6): the unit cost of every
--     task scheduled (not budget_exhausted) except those applied without paid work;
--   * tasks_unapplied: tasks whose result is not applied yet, open ones included (may the job
--     settle?);
--   * budget_stopped: a plan was recorded budget_exhausted; scheduling has stopped for good.
-- Lane runners change a task's status without the job lock; none of the three depends on a
-- status change that is not an insert or an apply, so only holders of the job lock write them.
ALTER TABLE jobs
  ADD COLUMN tasks_planned_cost BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN tasks_unapplied INT NOT NULL DEFAULT 0,
  ADD COLUMN budget_stopped TINYINT(1) NOT NULL DEFAULT 0;

-- The jobs still open get their counters from their tasks (the same definition as
-- recountTaskCounters); terminal jobs never read them.
UPDATE jobs j SET
  tasks_planned_cost = (SELECT COALESCE(SUM(t.unit_cost), 0) FROM tasks t WHERE t.job_id = j.id
    AND t.status <> 'budget_exhausted'
    AND (t.applied_at IS NULL OR t.status IN ('pending', 'running', 'waiting', 'completed', 'partial'))),
  tasks_unapplied = (SELECT COUNT(*) FROM tasks t WHERE t.job_id = j.id
    AND (t.applied_at IS NULL OR t.status IN ('pending', 'running', 'waiting'))),
  budget_stopped = EXISTS (SELECT 1 FROM tasks t WHERE t.job_id = j.id AND t.status = 'budget_exhausted')
WHERE j.status IN ('queued', 'running', 'cancelling');
