// Runs a mail pool task in the lane's piscina pool (CheckContext.runInPool), or inline where the
// context has no pool (unit tests, LANE_POOL_THREADS=0): the same function either way.
import { parseTasks } from '../../../workers/pool/parse-tasks.ts';
import type { CheckContext } from '../types.ts';
import type { MailPoolTask, mailPoolTasks } from './pool-tasks.ts';

type Tasks = typeof mailPoolTasks;

export function inPool<T extends MailPoolTask>(ctx: CheckContext, task: T, payload: Parameters<Tasks[T]>[0]): Promise<Awaited<ReturnType<Tasks[T]>>> {
  if (ctx.runInPool) return ctx.runInPool(task, payload);
  const fn = parseTasks[task] as (p: unknown) => unknown;
  return Promise.resolve().then(() => fn(payload)) as Promise<Awaited<ReturnType<Tasks[T]>>>;
}
