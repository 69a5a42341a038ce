// The piscina worker. One entry, runPoolTask: it loads the task's modules, tells the lane's pool
// that the task has started (the pool's deadline counts from there: parse-pool.ts), then runs it.
import { parentPort } from 'node:worker_threads';
import { isParseTask, loadTaskModules, parseTasks, TASK_STARTED, type PoolMessage } from './parse-tasks.ts';

export async function runPoolTask(m: PoolMessage): Promise<unknown> {
  if (!isParseTask(m.task)) throw new Error(`unknown pool task ${m.task}`);
  await loadTaskModules(m.task);
  parentPort?.postMessage({ [TASK_STARTED]: m.id });
  return (parseTasks[m.task] as (p: unknown) => unknown)(m.payload);
}
