// The reconciler rebuilds the queues from MySQL (Redis may be flushed, an entry may be lost) and
// closes gaps a crash can leave. Every step is idempotent and bounded per tick.
//   1. pending tasks older than the visibility timeout whose stream entry is gone → re-enqueue
//   2. running tasks older than their check timeout + visibility (their runner died) → back to
//      pending (CAS on attempts); re-enqueue only if their entry is gone too
//   3. finished tasks not applied after a few seconds whose notice is lost (not still waiting in
//      its results stream, delivered or not) → re-publish it
//   4. queued jobs whose plan was published long ago → publish `plan` again
//   5. cancelling jobs → run the cancel op again (cancels pending tasks, finalizes when idle)
//   6. running jobs with nothing open and nothing unapplied → finalize (crash after the last apply)
//   7. inventory markers nobody has touched for a while (a crash between a job's terminal commit
//      and its inventory's last page) → written from where they stopped (inventory-pending.ts)
import { sql } from 'kysely';
import { queuedNoticeTasks } from '../../queue/queued-notices.ts';
import { groups, isLaneName, publishJob, publishTaskResult, streams, type LaneName } from '../../queue/streams.ts';
import { ensureTasksEnqueued } from '../../queue/task-enqueue.ts';
import { cancelJob } from './cancel-job.ts';
import type { OrchestrationContext } from './context.ts';
import { finalizeJob } from './finalize-job.ts';
import { drainStaleInventory } from '../inventory/inventory-pending.ts';
import {
  idleRunningJobs,
  longRunningTasks,
  RECONCILE_BATCH,
  resetRunningTask,
  stalePendingTasks,
  stillPending,
  stillUnapplied,
  unappliedFinishedTasks,
} from '../tasks/task-repo.ts';

/** Most entries of one lane's results stream read per tick to tell a queued notice from a lost one. */
const QUEUED_NOTICES_READ_MAX = 20_000;

export interface ReconcileOptions {
  /** Finished-but-unapplied tasks younger than this are left to their notice. */
  unappliedAfterMs?: number;
  /**
   * An inventory marker untouched this long has lost its drainer (each page touches it): resumed.
   * A live drainer's page takes well under this; one that does not only shares its pages.
   */
  inventoryStaleAfterMs?: number;
}

export class Reconciler {
  readonly #ctx: OrchestrationContext;
  readonly #opts: Required<ReconcileOptions>;
  /** Rotates through a large backlog of pending tasks across ticks; any start value is correct. */
  #pendingCursor = 0;

  constructor(ctx: OrchestrationContext, opts: ReconcileOptions = {}) {
    this.#ctx = ctx;
    this.#opts = { unappliedAfterMs: 5000, inventoryStaleAfterMs: 10_000, ...opts };
  }

  async tick(): Promise<void> {
    await this.requeueLostPending();
    await this.resetStuckRunning();
    await this.republishUnapplied();
    await this.republishQueuedPlans();
    await this.recancel();
    await this.finalizeIdle();
    await this.resumeInventory();
  }

  #products() {
    return sql.join(this.#ctx.catalog.ids);
  }

  #visibilityUs(): number {
    return this.#ctx.settings.LANE_VISIBILITY_MS * 1000;
  }

  async requeueLostPending(): Promise<number> {
    const rows = await stalePendingTasks(
      this.#ctx.db,
      this.#ctx.catalog.ids,
      this.#visibilityUs(),
      this.#pendingCursor,
    );
    this.#pendingCursor = rows.length < RECONCILE_BATCH ? 0 : rows[rows.length - 1]!.id;
    const n = await ensureTasksEnqueued(this.#ctx.redis, rows, (lost) => stillPending(this.#ctx.db, lost));
    if (n > 0) this.#ctx.log.warn({ tasks: n }, 'reconciler re-enqueued lost pending tasks');
    return n;
  }

  async resetStuckRunning(): Promise<number> {
    const rows = await longRunningTasks(this.#ctx.db, this.#ctx.catalog.ids, this.#visibilityUs());
    const reset = [];
    for (const r of rows) {
      if (r.age_ms <= this.#ctx.checkTimeoutMs(r.check_name) + this.#ctx.settings.LANE_VISIBILITY_MS) continue;
      // attempts fences the reset: a runner that took the task over meanwhile keeps it.
      if (await resetRunningTask(this.#ctx.db, r.id, r.attempts))
        reset.push({ id: r.id, jobId: r.job_id, lane: r.lane });
    }
    // An entry still pending in a dead consumer's list reaches a runner through XAUTOCLAIM, with
    // its delivery count intact (poison tasks must still end in the dead letter): only lost
    // entries are replaced.
    const requeued = await ensureTasksEnqueued(this.#ctx.redis, reset, (lost) => stillPending(this.#ctx.db, lost));
    if (reset.length > 0) this.#ctx.log.warn({ tasks: reset.length, requeued }, 'reconciler reset stuck running tasks');
    return reset.length;
  }

  /**
   * Finished tasks left unapplied get their notice again, but only when it is lost: a notice still
   * in its lane's results stream, undelivered or pending (an orchestrator's batcher holds its
   * notices pending until their batch commits), is only waiting (queued-notices.ts). A lane whose
   * backlog is too long to read is left for a later tick.
   */
  async republishUnapplied(): Promise<number> {
    const rows = await unappliedFinishedTasks(this.#ctx.db, this.#ctx.catalog.ids, this.#opts.unappliedAfterMs * 1000);
    const queued = new Map<LaneName, Set<number> | null>();
    const lost: Array<{ id: number; jobId: number; lane: LaneName }> = [];
    let n = 0;
    for (const r of rows) {
      if (!isLaneName(r.lane)) continue; // a lane this build does not know: nothing could read its notice
      if (!queued.has(r.lane)) {
        const held = await queuedNoticeTasks(
          this.#ctx.redis,
          streams.laneResults(r.lane),
          groups.orchestrator,
          QUEUED_NOTICES_READ_MAX,
        );
        if (held === null) this.#ctx.log.info({ lane: r.lane }, 'results backlog too long to check: re-publish later');
        queued.set(r.lane, held);
      }
      const held = queued.get(r.lane);
      if (held === null || held?.has(r.id)) continue;
      lost.push({ id: r.id, jobId: r.jobId, lane: r.lane });
    }
    // Read after the streams: a notice applied and acknowledged since the first read is in no
    // stream any more, and its task is applied now (the batch commits before it acknowledges).
    const unapplied = await stillUnapplied(
      this.#ctx.db,
      lost.map((t) => t.id),
    );
    for (const t of lost) {
      if (!unapplied.has(t.id)) continue;
      await publishTaskResult(this.#ctx.redis, t.lane, t.id, t.jobId);
      n++;
    }
    if (n > 0) this.#ctx.log.warn({ tasks: n }, 'reconciler re-published lost result notices');
    return n;
  }

  async republishQueuedPlans(): Promise<number> {
    // Only plans the relay already published: an unpublished outbox row is the relay's to send.
    const rows = await sql<{ id: number }>`
      SELECT j.id FROM jobs j
      WHERE j.status = 'queued' AND j.product IN (${this.#products()})
        AND j.created_at < NOW(3) - INTERVAL ${this.#visibilityUs()} MICROSECOND
        AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.job_id = j.id AND o.topic = 'plan' AND o.published_at IS NULL)
      ORDER BY j.id LIMIT 100`.execute(this.#ctx.db);
    for (const r of rows.rows) await publishJob(this.#ctx.redis, Number(r.id), 'plan');
    return rows.rows.length;
  }

  async recancel(): Promise<number> {
    const rows = await sql<{ id: number }>`
      SELECT id FROM jobs WHERE status = 'cancelling' AND product IN (${this.#products()})
        AND cancel_requested_at < NOW(3) - INTERVAL 2 SECOND
      ORDER BY id LIMIT 100`.execute(this.#ctx.db);
    for (const r of rows.rows) await cancelJob(this.#ctx, Number(r.id));
    return rows.rows.length;
  }

  async finalizeIdle(): Promise<number> {
    const ids = await idleRunningJobs(this.#ctx.db, this.#ctx.catalog.ids, this.#opts.unappliedAfterMs * 1000);
    let n = 0;
    for (const id of ids) if (await finalizeJob(this.#ctx, id, 'settle')) n++;
    return n;
  }

  async resumeInventory(): Promise<number> {
    const n = await drainStaleInventory(this.#ctx.db, (product) => this.#ctx.catalog.get(product)?.job?.changes, {
      staleMs: this.#opts.inventoryStaleAfterMs,
      log: this.#ctx.log,
    });
    if (n > 0) this.#ctx.log.warn({ jobs: n }, "reconciler wrote the inventory of jobs whose end's writer stopped");
    return n;
  }
}
