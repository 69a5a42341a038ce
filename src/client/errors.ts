// Typed exceptions. Callers branch on `code` (a registry code, or one of the client's own codes
// below), never on `message`. Nothing here carries the API key or request headers.
import type { Envelope, ErrorCode } from './types.ts';

/** Codes the client itself produces when there is no error envelope to read. */
export type ClientErrorCode =
  /** No HTTP reply at all (refused, reset, dropped, DNS) after every retry. */
  | 'connection_failed'
  /** An attempt took longer than the client's per-attempt timeout, after every retry. */
  | 'request_timeout'
  /** A reply that is not the contract's (no JSON error envelope, unexpected status). */
  | 'unexpected_response'
  /** The caller aborted (its AbortSignal). */
  | 'aborted'
  /** Waiting for a job ran past the caller's `timeoutMs` (the job itself goes on). */
  | 'wait_timeout'
  /** `requireComplete` was asked for and the answer was partial. */
  | 'partial_coverage';

export interface LssErrorInit {
  code: ErrorCode | ClientErrorCode;
  message: string;
  status: number;
  retryable: boolean;
  requestId?: string | undefined;
  details?: Record<string, unknown> | undefined;
  retryAfterMs?: number | undefined;
  attempts?: number;
  cause?: unknown;
}

export class LssError extends Error {
  readonly code: ErrorCode | ClientErrorCode;
  /** HTTP status; 0 when no reply was received. */
  readonly status: number;
  readonly retryable: boolean;
  /** X-Request-Id of the failing reply (also in the service's logs), when there was one. */
  readonly requestId: string | undefined;
  readonly details: Record<string, unknown> | undefined;
  /** The Retry-After the service sent, in ms, when it sent one. */
  readonly retryAfterMs: number | undefined;
  /** How many attempts were made before giving up. */
  readonly attempts: number;

  constructor(init: LssErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.code = init.code;
    this.status = init.status;
    this.retryable = init.retryable;
    this.requestId = init.requestId;
    this.details = init.details;
    this.retryAfterMs = init.retryAfterMs;
    this.attempts = init.attempts ?? 1;
  }
}

/** The service answered with a CONTRACT §3 error envelope (4xx: refused; 5xx: service error). */
export class LssApiError extends LssError {
  declare readonly code: ErrorCode;
  /** A 4xx: the service refused this request (admission, validation, credits, not found…). */
  get refused(): boolean {
    return this.status >= 400 && this.status < 500;
  }
}

/** No usable reply: connection failures, timeouts, replies outside the contract. */
export class LssTransportError extends LssError {}

/** Thrown only when the caller asked for `requireComplete` and the answer was partial. */
export class LssPartialError<R = Record<string, unknown>> extends LssError {
  readonly envelope: Envelope<R>;
  constructor(envelope: Envelope<R>) {
    super({
      code: 'partial_coverage',
      message: `${envelope.product} answered partial: ${envelope.limitations.map((l) => l.code).join(', ') || 'coverage incomplete'}`,
      status: 200,
      retryable: false,
      requestId: envelope.requestId,
    });
    this.envelope = envelope;
  }
}
