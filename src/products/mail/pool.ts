// Runs a mail pool task in the lane's piscina pool (CheckContext.runInPool), or inline where the
// context has no pool (unit tests, LANE_POOL_THREADS=0): the same function either way.
import type { CheckContext } from '../types.ts';
import type { MailPoolTask, mailPoolTasks } from './pool-tasks.ts';

type Tasks = typeof mailPoolTasks;

export async function inPool<T extends MailPoolTask>(ctx: CheckContext, task: T, payload: Parameters<Tasks[T]>[0]): Promise<Awaited<ReturnType<Tasks[T]>>> {
  type Out = Awaited<ReturnType<Tasks[T]>>;
  if (ctx.runInPool) return ctx.runInPool<Out>(task, payload);
  // Loaded on first inline use only: with a pool, mailauth stays in the pool's threads. The task
  // registry is imported (not ./pool-tasks.ts) so that it always loads first.
  const { parseTasks } = await import('../../../workers/pool/parse-tasks.ts');
  const fn = parseTasks[task] as (p: unknown) => unknown;
  return (await fn(payload)) as Out;
}
