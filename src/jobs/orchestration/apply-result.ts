// Applying a finished task, in one transaction under the job row lock: capture its cost once
// (completed/partial only; CONTRACT §6), count its limitations for the job's coverage, release
// the tasks gated on it, let the product plan more work from it (a scan's expansion: deduped,
// budgeted, gated), and mark it applied. A repeated notice finds applied_at set and changes
// nothing. When no task is left open, the job is finalized in the same transaction. What became
// pending is enqueued after the commit (the reconciler re-enqueues it if this process dies first).
import { sql } from 'kysely';
import { enqueueTasks, type TaskRef } from '../../queue/task-enqueue.ts';
import { errInfo } from '../../queue/stream-consumer.ts';
import type { CheckOutput, TaskPlan } from '../../contract/tasks.ts';
import { gateResultOf, insertPlannedTasks, releaseGated } from '../tasks/task-insert.ts';
import { isTerminal } from '../job-view.ts';
import type { OrchestrationContext } from './context.ts';
import { finalizeLocked } from './finalize-job.ts';
import { applyFinishedTask, countLimitations, countOpenTasks, countUnsettledTasks } from '../tasks/task-settlement.ts';
import { isOpenTask, isValidPlan, lockJob, type LockedJob } from '../tasks/task-rows.ts';
import { jobOfTask, lockTasksForApply } from '../tasks/task-repo.ts';
import { inTransaction, type Trx } from '../../db/transaction.ts';
import type { TaskStatus } from '../../db/schema.ts';

export async function applyTaskResult(ctx: OrchestrationContext, taskId: number): Promise<void> {
  const jobId = await jobOfTask(ctx.db, taskId);
  if (jobId === null) return; // purged
  const next = await inTransaction(ctx.db, async (trx): Promise<TaskRef[]> => {
    const job = await lockJob(trx, jobId);
    if (!job || isTerminal(job.status)) return [];
    const [row] = await lockTasksForApply(trx, job.id, [taskId]);
    if (!row) return [];
    const task = row;
    if (task.applied_at || isOpenTask(task.status)) return [];
    await applyFinishedTask(trx, job, task);
    if (job.status === 'queued') return [];
    const check = row.check_name;
    const objectKey = row.object_key;
    // Work gated on this task may start now, with what it found; new work only while not cancelling.
    const released = await releaseGated(trx, job.id, {
      check,
      objectKey,
      result: gateResultOf(task.status, task.output),
    });
    const expanded =
      job.status === 'cancelling'
        ? []
        : await expand(trx, ctx, job, {
            check,
            objectKey,
            distance: row.distance,
            status: task.status,
            output: task.output,
          });
    // Cancelling: nothing new will be planned, so finished-but-unapplied tasks need no expansion.
    const waitingFor =
      job.status === 'cancelling' ? await countOpenTasks(trx, job.id) : await countUnsettledTasks(trx, job.id);
    if (waitingFor === 0) {
      await finalizeLocked(trx, ctx, job, job.status === 'cancelling' ? 'cancel' : 'settle');
      return [];
    }
    return [...released, ...expanded];
  });
  if (next.length > 0) await enqueueTasks(ctx.redis, next);
}

/** The product's expansion of a finished task, validated, deduplicated, budgeted and gated. */
async function expand(
  trx: Trx,
  ctx: OrchestrationContext,
  job: LockedJob,
  task: { check: string; objectKey: string; distance: number; status: TaskStatus; output: CheckOutput | null },
): Promise<TaskRef[]> {
  const def = ctx.catalog.get(job.product);
  if (!def?.job?.expand) return [];
  let plans: TaskPlan[];
  try {
    let scopes: Promise<string[]> | undefined;
    plans = await def.job.expand(
      job.input,
      { ...task, status: task.status as never },
      {
        approvedScopes: () => (scopes ??= approvedScopesOf(trx, job.workspace_id)),
      },
    );
  } catch (err) {
    // A bug in one expansion must not wedge the job: it ends with what it has, and says so.
    ctx.log.error({ jobId: job.id, check: task.check, err: errInfo(err) }, 'expansion failed');
    await countLimitations(
      trx,
      job.id,
      {
        id: 0,
        status: 'failed',
        unit_cost: 0,
        applied_at: null,
        output: {
          status: 'failed',
          projection: {},
          objects: [],
          relations: [],
          findings: [],
          sources: [],
          limitations: [
            {
              code: 'expansion_failed',
              message: 'Planning follow-up work from a finished task failed; what it would have found is missing.',
            },
          ],
        },
      },
      true,
    );
    return [];
  }
  const valid = plans.filter((p) => {
    const ok = isValidPlan(p);
    if (!ok) ctx.log.error({ jobId: job.id, check: p.check, lane: p.lane }, 'invalid expansion plan dropped');
    return ok;
  });
  return insertPlannedTasks(trx, job, valid);
}

async function approvedScopesOf(trx: Trx, workspaceId: number): Promise<string[]> {
  const rows = await sql<{
    suffix: string;
  }>`SELECT suffix FROM workspace_target_scopes WHERE workspace_id = ${workspaceId}`.execute(trx);
  return rows.rows.map((r) => r.suffix);
}
