// A job's outputs moved after its comparison began (CONTRACT §13): what it compared may be stale.
// Every writer of a job's objects, relations and findings (src/jobs/output-writer.ts) calls this
// in its own transaction, under the job row lock: a result applied after a cancel or a deadline,
// a late batch, a fold that rewrote an object the comparison had already passed. It puts the run
// back at its start; the next step (./comparison.ts) compares again from the first identity.
//
// Exact: nothing a writer changes can slip past it. A chunk holds the run's row locked, so a
// writer waits for it to commit and then resets it; a writer that got here before the run existed
// still holds the job row lock, which the run's creation waits for (in share mode), so the run
// starts from what that writer committed. Cheap: one point update on change_runs' primary key,
// which matches nothing unless the job has a run that already compared something.
import { sql } from 'kysely';
import type { Trx } from '../../db/transaction.ts';
import { mayHaveChangeRun } from '../locked-job-row.ts';

export async function invalidateComparison(trx: Trx, jobId: number): Promise<void> {
  // Nothing to reset when this transaction's job lock found no run (none can begin meanwhile):
  // a running job's batches of results skip the statement (../locked-job-row.ts).
  if (!mayHaveChangeRun(trx, jobId)) return;
  await sql`UPDATE change_runs SET after_hash = NULL, next_seq = 1, done = 0
    WHERE job_id = ${jobId} AND (done = 1 OR next_seq > 1 OR after_hash IS NOT NULL)`.execute(trx);
}
