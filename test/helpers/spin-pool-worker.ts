// A parse-pool worker for tests of the pool itself (test/unit/parse-pool.test.ts): it speaks the
// protocol of workers/pool/parse-worker.ts (report the start, then run) but ignores what the task
// is: a payload { spin: true } never returns (a parser stuck in a backtrack), any other payload
// answers with the thread's id after { ms } of busy work.
import { parentPort, threadId } from 'node:worker_threads';
import { TASK_STARTED, type PoolMessage } from '../../workers/pool/parse-tasks.ts';

export function runPoolTask(m: PoolMessage): { threadId: number } {
  parentPort?.postMessage({ [TASK_STARTED]: m.id });
  const p = (m.payload ?? {}) as { spin?: boolean; ms?: number };
  const until = performance.now() + (p.ms ?? 0);
  // A synchronous spin, as a runaway regex would.
  while (p.spin || performance.now() < until) {}
  return { threadId };
}
