// Collects finished-task notices per job and applies them in batches (apply-result.ts
// applyTaskResults): one job's results all serialize on its row lock, so one transaction per
// notice spent most of a scan's time taking that lock and committing. Here each job has at most
// one batch in flight in this process; the notices that arrive meanwhile wait (as ids, never
// their work) and form the next batch. A notice's delivery is acknowledged only after the batch
// holding it committed. A batch that fails is applied again one notice at a time, so that one
// result that cannot be written (a bad output) fails alone and the rest are applied; only the
// failing ones are left for redelivery, and after LANE_MAX_DELIVERIES the orchestrator gives up
// on each (apply-failure.ts). A batch that failed because MySQL is away is not split: every
// notice would fail the same way.
import { isConnectionError } from '../../db/transaction.ts';

export type ApplyBatch = (jobId: number, taskIds: number[]) => Promise<void>;

interface Waiting {
  taskId: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class ResultBatcher {
  readonly #apply: ApplyBatch;
  readonly #maxBatch: number;
  readonly #queues = new Map<number, Waiting[]>();
  readonly #active = new Set<number>();

  constructor(apply: ApplyBatch, opts: { maxBatch?: number } = {}) {
    this.#apply = apply;
    this.#maxBatch = opts.maxBatch ?? 256;
  }

  /** Resolves once the task's notice was applied (in some batch), rejects if that batch failed. */
  submit(jobId: number, taskId: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const q = this.#queues.get(jobId) ?? [];
      q.push({ taskId, resolve, reject });
      this.#queues.set(jobId, q);
      if (!this.#active.has(jobId)) {
        this.#active.add(jobId);
        // One turn of the event loop first: a read of the stream dispatches its entries together.
        setImmediate(() => void this.#drain(jobId));
      }
    });
  }

  async #drain(jobId: number): Promise<void> {
    try {
      for (;;) {
        const q = this.#queues.get(jobId);
        if (!q || q.length === 0) break;
        const batch = q.splice(0, this.#maxBatch);
        try {
          await this.#apply(
            jobId,
            batch.map((w) => w.taskId),
          );
          for (const w of batch) w.resolve();
        } catch (err) {
          if (batch.length === 1 || isConnectionError(err)) {
            for (const w of batch) w.reject(err);
            continue;
          }
          for (const w of batch) {
            try {
              await this.#apply(jobId, [w.taskId]);
              w.resolve();
            } catch (alone) {
              w.reject(alone);
            }
          }
        }
      }
    } finally {
      this.#queues.delete(jobId);
      this.#active.delete(jobId);
    }
  }
}
