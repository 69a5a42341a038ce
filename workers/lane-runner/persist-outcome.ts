// Persists a check's outcome: the task row, compare-and-set from this run's `running` attempt, so
// a redelivered or superseded run writes nothing. The output rides in the row; the orchestrator
// writes its objects, relations and findings when it applies the result (under the job row lock,
// src/jobs/orchestration/settle-outputs.ts), so a lane never waits on a job's row lock and holds
// its tenant permit only for the check and this one-row update.
import type { Db } from '../../src/db/database.ts';
import type { TaskStatus } from '../../src/db/schema.ts';
import type { CheckOutput } from '../../src/contract/tasks.ts';
import { recordOutcome } from '../../src/jobs/tasks/lane-task-repo.ts';

export interface PersistTask {
  id: number;
  jobId: number;
  workspaceId: number;
  productLane: string;
  distance: number;
  attempt: number;
}

export interface PersistOutcome {
  status: TaskStatus;
  reason: string | null;
  output: CheckOutput | null;
}

/** False when this run no longer owns the task: nothing was written. */
export async function persistOutcome(db: Db, t: PersistTask, r: PersistOutcome): Promise<boolean> {
  return recordOutcome(db, t.id, t.attempt, r);
}
