// Persists a check's outcome: the task row, compare-and-set from this run's `running` attempt, so
// a redelivered or superseded run writes nothing. The output rides in the row; the orchestrator
// writes its objects, relations and findings when it applies the result (under the job row lock,
// src/jobs/orchestration/settle-outputs.ts), so a lane never waits on a job's row lock and holds
// its tenant permit only for the check and this one-row update.
//
// The outcomes of checks that end while a write is on its way to MySQL go together in the next
// statement (issue 48 item 4: CPU per task): one statement and one commit for several rows, as a
// database's group commit does, instead of one each. Nothing waits on purpose: with no write in
// flight an outcome leaves at once (the next turn of the event loop), so a lone lookup's task is
// not slowed; under a scan's load the batch is what finished meanwhile. A batch is bounded by
// rows and by bytes (outputs are capped, src/products/kit/stored-output.ts). A failed statement
// fails every outcome in it: each caller retries its own (a connection shortage is waited out by
// the runner's retryWhileShort), and the next batch forms anew.
import type { Db } from '../../src/db/database.ts';
import type { TaskStatus } from '../../src/db/schema.ts';
import type { CheckOutput } from '../../src/contract/tasks.ts';
import { recordOutcomes, type OutcomeRow } from '../../src/jobs/tasks/lane-task-repo.ts';

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

interface Pending {
  row: OutcomeRow;
  bytes: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Outcomes in one statement at most; and their outputs' bytes at most (well under max_allowed_packet). */
const MAX_ROWS = 64;
const MAX_BYTES = 4 * 1024 * 1024;

export class OutcomeWriter {
  readonly #db: Db;
  #queue: Pending[] = [];
  #writing = false;
  /** Outcomes written and the statements that wrote them (tests, the bench). */
  readonly stats = { outcomes: 0, statements: 0 };

  constructor(db: Db) {
    this.#db = db;
  }

  /** Resolves once the row is written (or left alone: another run owns the task). */
  write(t: PersistTask, r: PersistOutcome): Promise<void> {
    const output = r.output ? JSON.stringify(r.output) : null;
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({
        row: { taskId: t.id, attempt: t.attempt, status: r.status, reason: r.reason, output },
        bytes: output?.length ?? 0,
        resolve,
        reject,
      });
      this.#kick();
    });
  }

  #kick(): void {
    if (this.#writing || this.#queue.length === 0) return;
    this.#writing = true;
    // The next turn: outcomes that end in this one go in the same statement.
    setImmediate(() => void this.#flush());
  }

  async #flush(): Promise<void> {
    const batch: Pending[] = [];
    let bytes = 0;
    while (this.#queue.length > 0 && batch.length < MAX_ROWS) {
      const next = this.#queue[0]!;
      if (batch.length > 0 && bytes + next.bytes > MAX_BYTES) break;
      batch.push(this.#queue.shift()!);
      bytes += next.bytes;
    }
    try {
      await recordOutcomes(
        this.#db,
        batch.map((p) => p.row),
      );
      this.stats.outcomes += batch.length;
      this.stats.statements++;
      for (const p of batch) p.resolve();
    } catch (err) {
      for (const p of batch) p.reject(err);
    } finally {
      this.#writing = false;
      this.#kick();
    }
  }
}
