// When a webhook event is attempted again (CONTRACT §14): after 5 s, 30 s, 2 min, 10 min, 30 min,
// 1 h, then every 3 h until 24 h have passed since the first attempt; then it is failed. A 429 or
// 503 with Retry-After is honoured within the schedule: the wait is the longer of the schedule's
// and the receiver's, but never longer than the schedule's longest step (3 h), and never past the
// window (the last attempt is then made at the window's end). Tests shorten the schedule and the
// window through WEBHOOK_RETRY_SCHEDULE_SECONDS / WEBHOOK_RETRY_WINDOW_SECONDS (refused in
// production by the config schema).
import type { Config } from '../../config/config.ts';

export const CONTRACT_SCHEDULE_SECONDS: readonly number[] = [5, 30, 120, 600, 1800, 3600, 10_800];
export const CONTRACT_WINDOW_SECONDS = 24 * 3600;

export interface RetrySchedule {
  /** Delays between attempts, seconds; the last one repeats. */
  readonly delays: readonly number[];
  readonly windowSeconds: number;
}

export function retryScheduleOf(
  config: Pick<Config, 'WEBHOOK_RETRY_SCHEDULE_SECONDS' | 'WEBHOOK_RETRY_WINDOW_SECONDS'>,
): RetrySchedule {
  return {
    delays: config.WEBHOOK_RETRY_SCHEDULE_SECONDS ?? CONTRACT_SCHEDULE_SECONDS,
    windowSeconds: config.WEBHOOK_RETRY_WINDOW_SECONDS ?? CONTRACT_WINDOW_SECONDS,
  };
}

/**
 * After `attempts` failed attempts (1 = the first failed), when the next is due, in ms since the
 * epoch; null when the window is over (the event fails). `windowStart` is the first attempt's
 * due time; `retryAfterSeconds` a 429/503's Retry-After.
 */
export function nextAttemptAt(
  schedule: RetrySchedule,
  attempts: number,
  nowMs: number,
  windowStartMs: number,
  retryAfterSeconds?: number,
): number | null {
  const d = schedule.delays;
  const stepSeconds = d[Math.min(Math.max(attempts, 1), d.length) - 1]!;
  const longest = Math.max(...d);
  const waitSeconds =
    retryAfterSeconds !== undefined && retryAfterSeconds > stepSeconds
      ? Math.min(retryAfterSeconds, longest)
      : stepSeconds;
  const end = windowStartMs + schedule.windowSeconds * 1000;
  if (nowMs >= end) return null;
  const at = nowMs + waitSeconds * 1000;
  if (at <= end) return at;
  // The schedule's own next step lies past the window: the event has had its day.
  if (waitSeconds === stepSeconds) return null;
  // A Retry-After that would pass the window: one last attempt at its end.
  return end;
}

/** A Retry-After header (delta-seconds or an HTTP date) as seconds from now; undefined when absent or unreadable. */
export function retryAfterSeconds(value: string | string[] | undefined, nowMs: number): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined) return undefined;
  const t = v.trim();
  if (/^\d{1,10}$/.test(t)) return Number(t);
  const date = Date.parse(t);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, Math.ceil((date - nowMs) / 1000));
}
