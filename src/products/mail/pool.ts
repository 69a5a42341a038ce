// Runs a mail pool task in the lane's piscina pool (CheckContext.runInPool), or inline where the
// context has no pool (unit tests, LANE_POOL_THREADS=0): the same function either way.
import type { CheckContext } from '../kit/product-contract.ts';
import { mailPoolTasks, type MailPoolTask } from './pool-entry.ts';

type Tasks = typeof mailPoolTasks;

/**
 * Tasks run inline for now: the pool worker on this branch exports its tasks by name
 * (workers/pool/parse-worker.ts) and does not list these two yet; the worker that runs every
 * registered task (issue 18's parse-pool change) removes the need. Both are capped to milliseconds
 * (test/unit/mail-bimi.test.ts: at most 25 ms + 3 ms per KiB, 64/128 KiB inputs).
 */
const INLINE: ReadonlySet<MailPoolTask> = new Set(['mailBimiSvg', 'mailBimiCertificate']);

export async function inPool<T extends MailPoolTask>(
  ctx: CheckContext,
  task: T,
  payload: Parameters<Tasks[T]>[0],
): Promise<Awaited<ReturnType<Tasks[T]>>> {
  type Out = Awaited<ReturnType<Tasks[T]>>;
  if (ctx.runInPool && !INLINE.has(task)) return ctx.runInPool<Out>(task, payload);
  // Inline: the same wrapper, which loads mailauth here on first use.
  const fn = mailPoolTasks[task] as (p: unknown) => Promise<unknown>;
  return (await fn(payload)) as Out;
}
