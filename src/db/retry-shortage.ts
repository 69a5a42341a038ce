// A statement that failed for want of a database connection (src/resilience/dependency-errors.ts,
// CONNECTION_SHORTAGE_CODES) is retried with backoff until it runs or `signal` aborts: the work it
// belongs to waits for the budget rather than failing for our shortage. Any other error is thrown.
import { setTimeout as sleep } from 'node:timers/promises';
import { connectionShortage } from '../resilience/dependency-errors.ts';

const FIRST_MS = 100;
const MAX_MS = 2000;

export async function retryWhileShort<T>(
  work: () => Promise<T>,
  o: { signal: AbortSignal; onShortage?: (code: string, retry: number) => void },
): Promise<T> {
  for (let retry = 0; ; retry++) {
    try {
      return await work();
    } catch (err) {
      const code = connectionShortage(err);
      if (code === null || o.signal.aborted) throw err;
      o.onShortage?.(code, retry);
      const delay = Math.min(MAX_MS, FIRST_MS * 2 ** Math.min(retry, 5)) * (0.5 + Math.random() / 2);
      try {
        await sleep(delay, undefined, { signal: o.signal });
      } catch {
        throw err;
      }
    }
  }
}
