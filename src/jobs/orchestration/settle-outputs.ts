// Settling finished tasks and writing what they found, under the job row lock, in one go:
// capture once each (task-settlement.ts), then their outputs (objects, relations, findings,
// folds) in multi-row statements (output-writer.ts writeOutputs). Lane runners record only the
// task row; the orchestrator writes every output, so all writers of a job's objects hold its row
// lock in the orchestrator's transactions and a lane never waits on that lock. Shared by applying
// results (apply-result.ts) and the terminal transition (finalize-job.ts), which settles what
// was not applied yet. The capture of what was settled is the caller's last work before its
// commit (captureTasks with the returned request), so the workspace's credit row is not held
// while the outputs, gate releases and expansion are written.
import type { CaptureRequest } from '../../credits/ledger.ts';
import type { Trx } from '../../db/transaction.ts';
import { writeOutputs } from '../output-writer.ts';
import { settleTasks, type ApplicableTask } from '../tasks/task-settlement.ts';
import type { LockedJob } from '../tasks/task-rows.ts';

export interface SettleableTask extends ApplicableTask {
  product_lane: string;
  distance?: number;
}

/**
 * Caller holds the job row lock. Returns the tasks settled now (repeats excluded), in order, and
 * what to capture for them (captureTasks, last before the commit). `rowsLocked`: the caller read
 * the tasks' rows FOR UPDATE in this transaction (settleTasks).
 */
export async function settleAndWrite<T extends SettleableTask>(
  trx: Trx,
  job: LockedJob,
  tasks: readonly T[],
  opts: { rowsLocked?: boolean } = {},
): Promise<{ settled: T[]; capture: CaptureRequest }> {
  const { settled, capture } = await settleTasks(trx, job, tasks, opts);
  await writeOutputs(
    trx,
    settled.flatMap((t) =>
      t.output
        ? [
            {
              origin: {
                jobId: job.id,
                workspaceId: job.workspace_id,
                productLane: t.product_lane,
                distance: t.distance ?? 0,
              },
              out: t.output,
            },
          ]
        : [],
    ),
  );
  return { settled, capture };
}
