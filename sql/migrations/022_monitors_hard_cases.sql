-- Monitors in the hard cases (issue 44; src/jobs/monitors/).

-- A monitor paused by the service rather than by its owner says why: 'key_revoked' when the key
-- its runs are admitted as was revoked (one run_skipped event, then no run until it is resumed).
ALTER TABLE monitors
  ADD COLUMN paused_reason VARCHAR(32) CHARACTER SET ascii NULL AFTER paused,
  -- The retention purge of monitors deleted long ago reads only those (it scanned every monitor).
  ADD KEY ix_monitors_deleted (deleted_at);

-- When any orchestrator may take a claimed run: the claim's lease end (claimed_at + 60 s) while
-- its orchestrator decides it, or the time a run refused for a retryable reason (a rate limit, a
-- lane or dependency unavailable) is tried again. One column for both, so the recovery of stale
-- claims and of deferred runs is one index range (ix_monitor_runs_reclaim).
ALTER TABLE monitor_runs
  ADD COLUMN reclaim_at DATETIME(3) NULL AFTER claimed_at,
  ADD COLUMN deferrals SMALLINT UNSIGNED NOT NULL DEFAULT 0 AFTER reclaim_at,
  DROP KEY ix_monitor_runs_claimed,
  ADD KEY ix_monitor_runs_reclaim (outcome, reclaim_at);
UPDATE monitor_runs SET reclaim_at = claimed_at + INTERVAL 60 SECOND WHERE outcome = 'claimed';

-- The delivery worker's "which monitors have events due" (every 500 ms per orchestrator) reads the
-- due range only: the monitor-led ix_monitor_events_due made it a loose scan of every monitor that
-- ever had an event (100,000 idle monitors: 100,000 index dives per round; bench:monitors).
ALTER TABLE monitor_events
  ADD KEY ix_monitor_events_due_at (status, next_attempt_at, monitor_id);
