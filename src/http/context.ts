// What the admission chain learns about a request, kept on res.locals with one typed accessor.
import type { Response } from 'express';
import type { Logger } from 'pino';
import type { Principal } from '../auth/principal.ts';
import type { ApiError } from '../contract/errors.ts';
import type { IdempotencyClaim, LeaseFound } from '../idempotency/lease.ts';
import type { AdmissionState, AdmissionStep } from '../jobs/admission/admission-state.ts';
import type { ActiveGrant } from '../products/kit/active-admission.ts';

export type { AdmissionStep } from '../jobs/admission/admission-state.ts';

/** Admission's state (src/jobs/admission/admission-state.ts) plus what only the web role knows. */
export interface RequestState extends AdmissionState {
  /** performance.now() when the request reached the app (the access line's duration). */
  readonly startedAt: number;
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
