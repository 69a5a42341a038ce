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
//
// Jobs take turns (issue 32): at most `maxConcurrent` batches run at once in this process, and a
// job whose batch committed goes to the back of the line of jobs with notices waiting. So a job
// with a backlog of thousands of notices holds one batch slot at a time, and another job's notice
// waits for at most one batch of each job ahead of it, never for the backlog.
import { isConnectionError } from '../../db/transaction.ts';

export type ApplyBatch = (jobId: number, taskIds: number[]) => Promise<void>;

interface Waiting {
  taskId: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export interface ResultBatcherOptions {
  /** Most notices of one job in one batch. */
  maxBatch?: number;
  /** Batches (of different jobs) applied at once. */
  maxConcurrent?: number;
}

export class ResultBatcher {
  readonly #apply: ApplyBatch;
  readonly #maxBatch: number;
  readonly #maxConcurrent: number;
  /** Notices waiting for a batch, per job. */
  readonly #queues = new Map<number, Waiting[]>();
  /** Jobs with notices waiting and no batch in flight, in their turn's order. */
  readonly #line: number[] = [];
  readonly #inLine = new Set<number>();
  /** Jobs with a batch in flight. */
  readonly #active = new Set<number>();
  #pumpScheduled = false;

  constructor(apply: ApplyBatch, opts: ResultBatcherOptions = {}) {
    this.#apply = apply;
    this.#maxBatch = opts.maxBatch ?? 256;
    this.#maxConcurrent = Math.max(1, opts.maxConcurrent ?? 8);
  }

  /** Jobs with a batch being applied now (tests, metrics). */
  get applying(): number {
    return this.#active.size;
  }

  /** Resolves once the task's notice was applied (in some batch), rejects if that batch failed. */
  submit(jobId: number, taskId: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const q = this.#queues.get(jobId);
      if (q) q.push({ taskId, resolve, reject });
      else this.#queues.set(jobId, [{ taskId, resolve, reject }]);
      this.#enterLine(jobId);
      if (!this.#pumpScheduled) {
        this.#pumpScheduled = true;
        // One turn of the event loop first: a read of the stream dispatches its entries together.
        setImmediate(() => {
          this.#pumpScheduled = false;
          this.#pump();
        });
      }
    });
  }

  #enterLine(jobId: number): void {
    if (this.#active.has(jobId) || this.#inLine.has(jobId)) return;
    this.#inLine.add(jobId);
    this.#line.push(jobId);
  }

  #pump(): void {
    while (this.#active.size < this.#maxConcurrent && this.#line.length > 0) {
      const jobId = this.#line.shift()!;
      this.#inLine.delete(jobId);
      this.#active.add(jobId);
      void this.#run(jobId);
    }
  }

  /** One batch of the job, then the job goes to the back of the line if more of its notices wait. */
  async #run(jobId: number): Promise<void> {
    try {
      const q = this.#queues.get(jobId);
      if (!q || q.length === 0) return;
      const batch = q.splice(0, this.#maxBatch);
      if (q.length === 0) this.#queues.delete(jobId);
      await this.#applyBatch(jobId, batch);
    } finally {
      this.#active.delete(jobId);
      if (this.#queues.has(jobId)) this.#enterLine(jobId);
      this.#pump();
    }
  }

  async #applyBatch(jobId: number, batch: Waiting[]): Promise<void> {
    try {
      await this.#apply(
        jobId,
        batch.map((w) => w.taskId),
      );
      for (const w of batch) w.resolve();
    } catch (err) {
      if (batch.length === 1 || isConnectionError(err)) {
        for (const w of batch) w.reject(err);
        return;
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
}
