-- Why a job that ended completed or partial may still never be a baseline (CONTRACT §13; NULL:
-- it may be). Picking a baseline (src/jobs/changes/baseline.ts) skips every job that has one:
--   * 'deadline': the deadline sweeper ended it (a `partial` job): it saw only part of its target,
--     like a cancelled one, and a job compared with it would read the rest as new;
--   * 'purging': retention began to purge it (src/jobs/orchestration/retention.ts), under its row
--     lock, after checking that no open job had taken it: its rows are going, and a job that took
--     it now would compare with what is left of it. Set once, never cleared.
ALTER TABLE jobs ADD COLUMN baseline_unfit VARCHAR(16) CHARACTER SET ascii NULL;
