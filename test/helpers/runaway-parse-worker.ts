// The real parse-pool worker, except that a web page from one host never finishes parsing: what
// the CSP parser did with a megabyte run of blanks before issue 18 (tens of minutes), kept as a
// stand-in now that every parser is linear, so the pool's deadline can be tested end to end
// (test/integration/web-fairness.test.ts). Every other task is the real one.
import { parentPort } from 'node:worker_threads';
import { runPoolTask as realTask } from '../../workers/pool/parse-worker.ts';
import { TASK_STARTED, type PoolMessage } from '../../workers/pool/parse-tasks.ts';

export const RUNAWAY_HOST = 'cspmegabyte.weblab.test';

export async function runPoolTask(m: PoolMessage): Promise<unknown> {
  if (m.task === 'assessWebEvidence' && (m.payload as { host?: string }).host === RUNAWAY_HOST) {
    parentPort?.postMessage({ [TASK_STARTED]: m.id });
    for (;;) {} // a synchronous runaway: only terminating the thread ends it
  }
  return realTask(m);
}
