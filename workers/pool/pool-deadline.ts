// The error of a pool task that ran past its deadline, in a module of its own: the lane runner
// recognises it without loading piscina, which a lane loads only with its first pool task.
/** A task ran past its deadline: its thread was terminated and replaced. */
export class PoolDeadlineExceeded extends Error {
  readonly task: string;
  readonly deadlineMs: number;
  constructor(task: string, deadlineMs: number) {
    super(`pool task ${task} did not finish within ${deadlineMs} ms; its thread was stopped`);
    this.name = 'PoolDeadlineExceeded';
    this.task = task;
    this.deadlineMs = deadlineMs;
  }
}
