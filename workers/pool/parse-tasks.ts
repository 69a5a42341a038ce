// The pool task table: every CPU-bound parser a lane may run in its piscina pool (parse-worker.ts)
// or inline when the pool is off. Products register their own tasks (their pool-entry.ts); the
// shared certificate parser comes from src/net/. Plain functions of JSON-serialisable input and
// output: they cross a thread boundary.
import { parseCertificate, parseCertificateChain } from '../../src/net/certificate.ts';
import { loadMailPoolTasks, mailPoolTasks } from '../../src/products/mail/pool-entry.ts';
import { loadWebPoolTasks, webPoolTasks } from '../../src/products/web/pool-entry.ts';

export const parseTasks = {
  parseCertificate,
  parseCertificateChain,
  ...webPoolTasks,
  ...mailPoolTasks,
} as const;
export type ParseTask = keyof typeof parseTasks;

export function isParseTask(task: string): task is ParseTask {
  return Object.hasOwn(parseTasks, task);
}

/**
 * How long one task may run once its thread has started it (docs/operations.md). A web page
 * assessment parses up to 1 MiB of HTML (parse5 needs up to about a second for the worst nesting on
 * a loaded 2-core machine); the other tasks read capped DNS answers or certificates in
 * milliseconds. Past it the thread is terminated and replaced, and the check ends `timeout` with
 * the limitation `parse_deadline_exceeded`. LANE_POOL_DEADLINE_MS overrides all of them.
 */
export const DEFAULT_DEADLINE_MS = 2000;
export const TASK_DEADLINES_MS: Partial<Record<ParseTask, number>> = { assessWebEvidence: 5000 };

export function deadlineOf(task: string, override = 0): number {
  if (override > 0) return override;
  return (isParseTask(task) ? TASK_DEADLINES_MS[task] : undefined) ?? DEFAULT_DEADLINE_MS;
}

/**
 * Loads the modules behind a task: products load theirs on first use, so a thread that only
 * parses certificates stays small. The worker loads them before it reports a task started, so a
 * deadline never pays for module loading (a fresh thread's first web task spends ~200 ms there).
 */
export async function loadTaskModules(task: string): Promise<void> {
  if (Object.hasOwn(webPoolTasks, task)) await loadWebPoolTasks();
  else if (Object.hasOwn(mailPoolTasks, task)) await loadMailPoolTasks();
}

/** What the pool posts to a worker (parse-worker.ts runPoolTask). */
export interface PoolMessage {
  id: number;
  task: string;
  payload: unknown;
}

/** The message a worker posts when a task starts; the pool starts that task's deadline on it. */
export const TASK_STARTED = 'lssPoolTaskStarted';
