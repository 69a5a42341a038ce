// Runs a mail pool task in the lane's piscina pool (CheckContext.runInPool), or inline where the
// context has no pool (unit tests, LANE_POOL_THREADS=0): the same function either way.
import type { CheckContext } from '../kit/product-contract.ts';
import { mailPoolTasks, type MailPoolTask } from './pool-entry.ts';

type Tasks = typeof mailPoolTasks;

export async function inPool<T extends MailPoolTask>(
  ctx: CheckContext,
  task: T,
  payload: Parameters<Tasks[T]>[0],
): Promise<Awaited<ReturnType<Tasks[T]>>> {
  type Out = Awaited<ReturnType<Tasks[T]>>;
  if (ctx.runInPool) return ctx.runInPool<Out>(task, payload);
  // Inline: the same wrapper, which loads mailauth here on first use.
  const fn = mailPoolTasks[task] as (p: unknown) => Promise<unknown>;
  return (await fn(payload)) as Out;
}
