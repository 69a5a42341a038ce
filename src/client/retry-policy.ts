// Which failures are retried and how long to wait (SERVICE.md "Errors" and "Limits"): connection
// failures, 409 idempotency_request_in_progress, 429 and retryable 503. A Retry-After from the
// service is waited out exactly (CONTRACT §5: a retry at that time succeeds if nothing else used
// the quota), so no jitter is added to it; a Retry-After longer than the cap is not waited for at
// all, since retrying earlier would only be refused again. Without one, exponential backoff with
// jitter. The Idempotency-Key is never part of the decision: every retry reuses it.

export interface RetrySettings {
  /** Retries after the first attempt (default 4). */
  maxRetries: number;
  /** The longest Retry-After the client waits for; a longer one is returned to the caller (default 60 s). */
  maxRetryAfterMs: number;
  /** Backoff without Retry-After: base × 2^n, at most max, then "equal jitter" (50–100 %). */
  backoffBaseMs: number;
  backoffMaxMs: number;
  random: () => number;
}

export const defaultRetrySettings: RetrySettings = {
  maxRetries: 4,
  maxRetryAfterMs: 60_000,
  backoffBaseMs: 250,
  backoffMaxMs: 8_000,
  random: Math.random,
};

export type Failure =
  | { kind: 'connection' }
  | { kind: 'timeout' }
  /** A reply; `code`/`retryable` come from its error envelope when it had one. */
  | {
      kind: 'reply';
      status: number;
      code?: string | undefined;
      retryable?: boolean | undefined;
      retryAfterMs?: number | undefined;
    };

export type RetryDecision = { retry: true; delayMs: number } | { retry: false; why: string };

/** Codes that mean "the same request will succeed later": wait, then send it again unchanged. */
const WAIT_CODES = new Set([
  'idempotency_request_in_progress',
  'rate_limit_exceeded',
  'capability_rate_limit_exceeded',
]);
/** Gateways in front of the service may answer these without an envelope. */
const GATEWAY_STATUSES = new Set([502, 503, 504]);

/** Retry-After as delta-seconds or an HTTP-date, in ms; undefined when absent or unreadable. */
export function parseRetryAfter(header: string | null | undefined, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const v = header.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export function backoffDelay(retryIndex: number, s: RetrySettings): number {
  const ceiling = Math.min(s.backoffMaxMs, s.backoffBaseMs * 2 ** retryIndex);
  return Math.round(ceiling * (0.5 + s.random() * 0.5));
}

function waitFor(retryAfterMs: number | undefined, retryIndex: number, s: RetrySettings): RetryDecision {
  if (retryAfterMs === undefined) return { retry: true, delayMs: backoffDelay(retryIndex, s) };
  if (retryAfterMs > s.maxRetryAfterMs)
    return { retry: false, why: `Retry-After ${retryAfterMs} ms exceeds the cap of ${s.maxRetryAfterMs} ms` };
  return { retry: true, delayMs: retryAfterMs };
}

/** `retryIndex` counts the retries already made (0 before the first retry). */
export function decideRetry(f: Failure, retryIndex: number, s: RetrySettings): RetryDecision {
  if (retryIndex >= s.maxRetries) return { retry: false, why: `gave up after ${retryIndex + 1} attempts` };
  if (f.kind === 'connection' || f.kind === 'timeout') return { retry: true, delayMs: backoffDelay(retryIndex, s) };
  if (f.code !== undefined && WAIT_CODES.has(f.code)) return waitFor(f.retryAfterMs, retryIndex, s);
  if (f.status === 503 && f.retryable !== false) return waitFor(f.retryAfterMs, retryIndex, s);
  if (f.code === undefined && GATEWAY_STATUSES.has(f.status)) return waitFor(f.retryAfterMs, retryIndex, s);
  return { retry: false, why: 'not retryable' };
}
