// The lane's piscina pool for CPU-heavy parsing, exposed to checks as CheckContext.runInPool.
// With 0 threads the same functions run inline (tests, tiny deployments).
import { Piscina } from 'piscina';
import { parseTasks, type ParseTask } from './parse-tasks.ts';

export interface ParsePool {
  run<T>(task: string, payload: unknown): Promise<T>;
  destroy(): Promise<void>;
}

function isParseTask(task: string): task is ParseTask {
  return Object.hasOwn(parseTasks, task);
}

export function createParsePool(threads: number): ParsePool {
  if (threads <= 0) {
    return {
      async run<T>(task: string, payload: unknown): Promise<T> {
        if (!isParseTask(task)) throw new Error(`unknown pool task ${task}`);
        return (parseTasks[task] as (p: unknown) => unknown)(payload) as T;
      },
      async destroy() {},
    };
  }
  const pool = new Piscina({
    filename: new URL('./parse-worker.ts', import.meta.url).href,
    minThreads: Math.min(1, threads),
    maxThreads: threads,
    idleTimeout: 30_000,
  });
  let destroying: Promise<void> | undefined;
  return {
    run<T>(task: string, payload: unknown): Promise<T> {
      if (!isParseTask(task)) return Promise.reject(new Error(`unknown pool task ${task}`));
      return pool.run(payload, { name: task }) as Promise<T>;
    },
    destroy() {
      destroying ??= pool.destroy();
      return destroying;
    },
  };
}
