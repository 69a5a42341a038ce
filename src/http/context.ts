// What the admission chain learns about a request, kept on res.locals with one typed accessor.
import type { RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import type { Principal } from '../auth/principal.ts';
import type { ApiError } from '../contract/errors.ts';
import type { IdempotencyClaim, LeaseFound } from '../idempotency/lease.ts';
import type { ActiveGrant } from '../products/kit/active-admission.ts';

/** Where in the admission chain a request is (CONTRACT §2), for the log line of a failure. */
export type AdmissionStep =
  | 'authentication'
  | 'rate_limit'
  | 'idempotency_key'
  | 'validation'
  | 'active_gates'
  | 'product_limit'
  | 'idempotency'
  | 'readiness'
  | 'credits_and_dispatch'
  | 'execution'
  | 'job_read'
  | 'cancel';

export interface RequestState {
  requestId: string;
  /** performance.now() when the request reached the app (the access line's duration). */
  readonly startedAt: number;
  step?: AdmissionStep;
  log: Logger;
  principal?: Principal;
  /** The parsed JSON body exactly as sent (for the fingerprint). */
  rawBody?: unknown;
  /** The validated input. */
  input?: unknown;
  /** Active work: the approved scope it runs under and its proof (step 6), kept with the job. */
  activeGrant?: ActiveGrant;
  /** A product-limit refusal, reported only after the cheaper local checks (CONTRACT §2 order). */
  deferredLimit?: ApiError;
  idempotencyKey?: string;
  claim?: IdempotencyClaim;
  /** What the admission script found for the Idempotency-Key (step 3 learns it, step 8 acts). */
  lease?: LeaseFound & { fingerprint: string };
  /** A body error, reported at step 5 although the body is read before the limits (step 3). */
  bodyError?: ApiError;
  /** The controller of a running inline execution: the response's 'close' aborts it. */
  execution?: AbortController;
}

/**
 * res.locals of every request (request-id.ts puts it there first). A class so that every request's
 * state has one shape from the start, and so that the request's child logger is made on first use:
 * most requests log only their access line, which app.ts writes through the parent with the id as
 * a field (a child per request showed in the admission profile).
 */
export class RequestContext implements RequestState {
  readonly requestId: string;
  readonly startedAt: number;
  step?: AdmissionStep = undefined;
  principal?: Principal = undefined;
  rawBody?: unknown = undefined;
  input?: unknown = undefined;
  activeGrant?: ActiveGrant = undefined;
  deferredLimit?: ApiError = undefined;
  idempotencyKey?: string = undefined;
  claim?: IdempotencyClaim = undefined;
  lease?: LeaseFound & { fingerprint: string } = undefined;
  bodyError?: ApiError = undefined;
  execution?: AbortController = undefined;
  readonly #parent: Logger;
  #child: Logger | undefined = undefined;

  constructor(requestId: string, parent: Logger, startedAt: number) {
    this.requestId = requestId;
    this.#parent = parent;
    this.startedAt = startedAt;
  }

  get log(): Logger {
    this.#child ??= this.#parent.child({ requestId: this.requestId });
    return this.#child;
  }

  set log(l: Logger) {
    this.#child = l;
  }
}

export function state(res: Response): RequestState {
  return res.locals as RequestState;
}

/** The handler, recording its admission step first (async handlers keep their promise). */
export function atStep(step: AdmissionStep, handler: RequestHandler): RequestHandler {
  return (req, res, next) => {
    state(res).step = step;
    return handler(req, res, next);
  };
}
