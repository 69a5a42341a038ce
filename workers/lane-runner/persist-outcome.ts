// Persists a check's outcome in ONE transaction: the task row (compare-and-set from this run's
// `running` attempt, so a redelivered or superseded run writes nothing), then the objects,
// relations and findings of its output (src/jobs/output-writer.ts). The job row is locked first,
// which serialises every writer of the job.
import { sql } from 'kysely';
import type { Db } from '../../src/db/database.ts';
import type { TaskStatus } from '../../src/db/schema.ts';
import { inTransaction } from '../../src/db/transaction.ts';
import { writeOutput } from '../../src/jobs/output-writer.ts';
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
  return inTransaction(db, async (trx) => {
    await sql`SELECT id FROM jobs WHERE id = ${t.jobId} FOR UPDATE`.execute(trx);
    if (!(await recordOutcome(trx, t.id, t.attempt, r))) return false;
    if (r.output) await writeOutput(trx, t, r.output);
    return true;
  });
}
