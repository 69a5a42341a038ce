// What the admission chain learns about a request, kept on res.locals with one typed accessor.
import type { RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import type { Principal } from '../auth/principal.ts';
import type { ApiError } from '../contract/errors.ts';
import type { IdempotencyClaim, LeaseFound } from '../idempotency/lease.ts';

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
  step?: AdmissionStep;
  log: Logger;
  principal?: Principal;
  /** The parsed JSON body exactly as sent (for the fingerprint). */
  rawBody?: unknown;
  /** The validated input. */
  input?: unknown;
  /** A product-limit refusal, reported only after the cheaper local checks (CONTRACT §2 order). */
  deferredLimit?: ApiError;
  idempotencyKey?: string;
  claim?: IdempotencyClaim;
  /** What the admission script found for the Idempotency-Key (step 3 learns it, step 8 acts). */
  lease?: LeaseFound & { fingerprint: string };
  /** A body error, reported at step 5 although the body is read before the limits (step 3). */
  bodyError?: ApiError;
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
