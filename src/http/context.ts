// What the admission chain learns about a request, kept on res.locals with one typed accessor.
import type { Response } from 'express';
import type { Logger } from 'pino';
import type { Principal } from '../auth/principal.ts';
import type { ApiError } from '../contract/errors.ts';

export interface IdempotencyClaim {
  apiKeyId: number;
  key: string;
  /** hex SHA-256 of method, path and canonical body */
  fingerprint: string;
  /** Identifies this request's Redis lease. */
  token: string;
}

export interface RequestState {
  requestId: string;
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
}

export function state(res: Response): RequestState {
  return res.locals as RequestState;
}
