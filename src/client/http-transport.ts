// One logical call = one or more HTTP attempts. A write gets its Idempotency-Key here, once,
// before the first attempt (the caller's own key wins), and every retry sends that same key with
// the same body: an uncertain write is repeated, never duplicated (SERVICE.md Limits 5).
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { LssApiError, type LssError, LssTransportError } from './errors.ts';
import { decideRetry, parseRetryAfter, type Failure, type RetrySettings } from './retry-policy.ts';
import type { ErrorCode, ErrorEnvelope } from './types.ts';

export interface RetryEvent {
  method: string;
  path: string;
  /** The attempt that failed (1 = the first). */
  attempt: number;
  delayMs: number;
  /** The error code of the failed attempt, or connection_failed / request_timeout. */
  reason: string;
  status: number;
  requestId: string | undefined;
  idempotencyKey: string | undefined;
}

export interface TransportOptions {
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  retry: RetrySettings;
  userAgent: string;
  onRetry?: ((e: RetryEvent) => void) | undefined;
}

export interface CallOptions {
  /** Success statuses of this route; anything else is an error. */
  expect: readonly number[];
  query?: Record<string, string | number | undefined> | undefined;
  body?: unknown;
  idempotencyKey?: string | undefined;
  signal?: AbortSignal | undefined;
}

export interface Reply<T> {
  status: number;
  body: T;
  requestId: string | undefined;
  /** The service replayed a committed reply for this Idempotency-Key. */
  replayed: boolean;
  idempotencyKey: string | undefined;
  attempts: number;
}

/** What one attempt produced: a reply (any status) or a failure without one. */
type Attempt =
  | { ok: true; status: number; text: string; headers: Headers }
  | { ok: false; failure: Failure; cause: unknown };

/** A success whose body is still to be read (HttpTransport.stream). */
export interface StreamReply {
  status: number;
  headers: Headers;
  body: ReadableStream<Uint8Array>;
  requestId: string | undefined;
}

export function newIdempotencyKey(): string {
  return `lss-${randomUUID()}`;
}

function isErrorEnvelope(body: unknown): body is ErrorEnvelope {
  const e = (body as { error?: { code?: unknown; status?: unknown } } | null)?.error;
  return typeof e?.code === 'string' && typeof e.status === 'number';
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export class HttpTransport {
  readonly #apiKey: string;
  readonly #opts: Omit<TransportOptions, 'apiKey'>;

  constructor(opts: TransportOptions) {
    const { apiKey, ...rest } = opts;
    this.#apiKey = apiKey;
    this.#opts = { ...rest, baseUrl: rest.baseUrl.replace(/\/+$/, '') };
  }

  get baseUrl(): string {
    return this.#opts.baseUrl;
  }

  async call<T>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, opts: CallOptions): Promise<Reply<T>> {
    // Every POST carries a key; a PATCH when its caller gives one (a secret rotation must: CONTRACT §14).
    const idempotencyKey = method === 'POST' ? (opts.idempotencyKey ?? newIdempotencyKey()) : opts.idempotencyKey;
    const url = new URL(this.#opts.baseUrl + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#apiKey}`,
      accept: 'application/json',
      'user-agent': this.#opts.userAgent,
    };
    let body: string | undefined;
    if (method === 'POST') {
      headers['content-type'] = 'application/json';
      headers['idempotency-key'] = idempotencyKey!;
      body = JSON.stringify(opts.body ?? {});
    } else if (method === 'PATCH') {
      headers['content-type'] = 'application/json';
      if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
      body = JSON.stringify(opts.body ?? {});
    }

    for (let retries = 0; ; retries++) {
      const attempt = await this.#attempt(method, url, headers, body, opts.signal);
      const attempts = retries + 1;
      if (attempt.ok) {
        const parsed = parseJson(attempt.text);
        // 204 No Content (a DELETE) is the one success without a body.
        if (opts.expect.includes(attempt.status) && (parsed !== undefined || attempt.status === 204)) {
          return {
            status: attempt.status,
            body: parsed as T,
            requestId: attempt.headers.get('x-request-id') ?? undefined,
            replayed: attempt.headers.get('idempotent-replayed') === 'true',
            idempotencyKey,
            attempts,
          };
        }
      }
      const { failure, error } = this.#classify(method, path, attempt, attempts);
      const decision = decideRetry(failure, retries, this.#opts.retry);
      if (!decision.retry) throw error();
      this.#opts.onRetry?.({
        method,
        path,
        attempt: attempts,
        delayMs: decision.delayMs,
        reason: retryReason(failure),
        status: failure.kind === 'reply' ? failure.status : 0,
        requestId: attempt.ok ? (attempt.headers.get('x-request-id') ?? undefined) : undefined,
        idempotencyKey,
      });
      await pause(decision.delayMs, opts.signal);
    }
  }

  /** Why an attempt failed: what the retry policy decides on, and the error if it is not retried. */
  #classify(
    method: string,
    path: string,
    attempt: Attempt,
    attempts: number,
  ): { failure: Failure; error: () => LssError } {
    if (attempt.ok) {
      const parsed = parseJson(attempt.text);
      const requestId = attempt.headers.get('x-request-id') ?? undefined;
      const retryAfterMs = parseRetryAfter(attempt.headers.get('retry-after'));
      if (isErrorEnvelope(parsed)) {
        const e = parsed.error;
        return {
          failure: { kind: 'reply', status: attempt.status, code: e.code, retryable: e.retryable, retryAfterMs },
          error: () =>
            new LssApiError({
              code: e.code as ErrorCode,
              message: e.message,
              status: attempt.status,
              retryable: e.retryable,
              requestId: e.requestId ?? requestId,
              details: e.details,
              retryAfterMs,
              attempts,
            }),
        };
      }
      return {
        failure: { kind: 'reply', status: attempt.status, retryAfterMs },
        error: () =>
          new LssTransportError({
            code: 'unexpected_response',
            message: `${method} ${path} answered ${attempt.status} without the contract's body`,
            status: attempt.status,
            retryable: attempt.status >= 500,
            requestId,
            retryAfterMs,
            attempts,
          }),
      };
    }
    const failure = attempt.failure;
    const timeout = failure.kind === 'timeout';
    return {
      failure,
      error: () =>
        new LssTransportError({
          code: timeout ? 'request_timeout' : 'connection_failed',
          message: timeout
            ? `${method} ${path}: no reply within ${this.#opts.timeoutMs} ms`
            : `${method} ${path}: ${describeCause(attempt.cause)}`,
          status: 0,
          retryable: true,
          attempts,
          cause: attempt.cause,
        }),
    };
  }

  /**
   * A GET whose success body is handed over as a stream, not read (exports: a file of any size).
   * Retried as call() is until a success's headers arrive; from then on the body is the caller's,
   * and a body cut short errors the stream (never retried halfway: the bytes already read are the
   * caller's). The timeout covers the wait for the headers, not the download.
   */
  async stream(path: string, opts: Omit<CallOptions, 'body' | 'idempotencyKey'>): Promise<StreamReply> {
    const url = new URL(this.#opts.baseUrl + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers = { authorization: `Bearer ${this.#apiKey}`, 'user-agent': this.#opts.userAgent };
    for (let retries = 0; ; retries++) {
      throwIfAborted(opts.signal);
      const timer = new AbortController();
      const timeout = setTimeout(() => timer.abort(), this.#opts.timeoutMs);
      let attempt: Attempt;
      try {
        const res = await fetch(url, {
          headers,
          redirect: 'error',
          signal: opts.signal ? AbortSignal.any([opts.signal, timer.signal]) : timer.signal,
        });
        clearTimeout(timeout);
        if (opts.expect.includes(res.status) && res.body) {
          return {
            status: res.status,
            headers: res.headers,
            body: res.body,
            requestId: res.headers.get('x-request-id') ?? undefined,
          };
        }
        attempt = { ok: true, status: res.status, text: await res.text(), headers: res.headers };
      } catch (cause) {
        clearTimeout(timeout);
        throwIfAborted(opts.signal);
        attempt = { ok: false, failure: timer.signal.aborted ? { kind: 'timeout' } : { kind: 'connection' }, cause };
      }
      const { failure, error } = this.#classify('GET', path, attempt, retries + 1);
      const decision = decideRetry(failure, retries, this.#opts.retry);
      if (!decision.retry) throw error();
      this.#opts.onRetry?.({
        method: 'GET',
        path,
        attempt: retries + 1,
        delayMs: decision.delayMs,
        reason: retryReason(failure),
        status: failure.kind === 'reply' ? failure.status : 0,
        requestId: attempt.ok ? (attempt.headers.get('x-request-id') ?? undefined) : undefined,
        idempotencyKey: undefined,
      });
      await pause(decision.delayMs, opts.signal);
    }
  }

  async #attempt(
    method: string,
    url: URL,
    headers: Record<string, string>,
    body: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Attempt> {
    throwIfAborted(signal);
    const timeout = AbortSignal.timeout(this.#opts.timeoutMs);
    try {
      const res = await fetch(url, {
        method,
        headers,
        body,
        // The API never redirects; following one could carry the key elsewhere.
        redirect: 'error',
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      return { ok: true, status: res.status, text: await res.text(), headers: res.headers };
    } catch (cause) {
      throwIfAborted(signal);
      return { ok: false, failure: timeout.aborted ? { kind: 'timeout' } : { kind: 'connection' }, cause };
    }
  }
}

/** What a retry notice says of the failure it retries: the error code, or what went wrong on the way. */
function retryReason(failure: Failure): string {
  if (failure.kind === 'reply') return failure.code ?? `http_${failure.status}`;
  return failure.kind === 'timeout' ? 'request_timeout' : 'connection_failed';
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted)
    throw new LssTransportError({
      code: 'aborted',
      message: 'aborted by the caller',
      status: 0,
      retryable: false,
      cause: signal.reason,
    });
}

async function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  try {
    await sleep(ms, undefined, signal ? { signal } : undefined);
  } catch {
    throwIfAborted(signal);
  }
}

/** fetch reports "fetch failed"; the useful part (ECONNREFUSED, socket closed…) is its cause. */
function describeCause(cause: unknown): string {
  const inner = (cause as { cause?: { code?: string; message?: string } })?.cause;
  return inner?.code ?? inner?.message ?? (cause instanceof Error ? cause.message : String(cause));
}
