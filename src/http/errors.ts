// The one place a thrown error becomes a reply: the CONTRACT §3 envelope, Retry-After where the
// registry says so, the idempotency claim released (a failure stores nothing), no internals leaked.
import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { ApiError, errorEnvelope, errorRegistry } from '../contract/errors.ts';
import { admissionOutcomes } from '../metrics.ts';
import { state } from './context.ts';
import type { Idempotency } from '../idempotency/idempotency.ts';
import { finishClaim } from './idempotency.ts';
import { dependencyCause, isDependencyDown } from '../resilience/dependency-errors.ts';

// Kept importable from here: the routes and the HTTP steps have always found them in this file.
export { dependencyCause, isDependencyDown };

/** Maps body-parser and other framework errors onto registry codes. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as { type?: string; status?: number; expose?: boolean; message?: string };
  if (e?.type === 'entity.too.large') return tooLargeError();
  if (e?.type === 'entity.parse.failed') return malformedJsonError();
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported')
    return new ApiError('unsupported_media_type');
  if (e?.type === 'request.aborted') return new ApiError('invalid_request', { message: 'The request was aborted.' });
  if (isDependencyDown(err))
    return new ApiError('service_unavailable', { retryAfterSeconds: 5, cause: dependencyCause(err) });
  // A deadlock victim's transaction was rolled back whole: nothing happened, retrying is safe.
  // (Write transactions retry deadlocks themselves: one that still surfaces was retried out.)
  if ((err as { code?: string })?.code === 'ER_LOCK_DEADLOCK')
    return new ApiError('service_unavailable', { retryAfterSeconds: 1, cause: dependencyCause(err) });
  return new ApiError('internal_error');
}

/** A body over the limit, whichever reader met it (body-parser or src/http/json-reader.ts). */
export function tooLargeError(): ApiError {
  return new ApiError('payload_too_large');
}

/** A body that is not JSON, whichever reader met it. */
export function malformedJsonError(): ApiError {
  return new ApiError('invalid_request', {
    message: 'The body is not valid JSON.',
    details: { issues: [{ path: '', message: 'malformed JSON' }] },
  });
}

export function sendError(res: Response, err: ApiError): void {
  const s = state(res);
  const spec = errorRegistry[err.code];
  for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
  if (err.retryAfterSeconds !== undefined && spec.retryAfter !== 'never') {
    res.setHeader('Retry-After', String(Math.max(1, Math.ceil(err.retryAfterSeconds))));
  }
  if (err.code === 'method_not_allowed' && err.details?.allow) res.setHeader('Allow', String(err.details.allow));
  res.status(err.status).json(errorEnvelope(err, s.requestId));
}

export function errorHandler(idempotency: Idempotency): ErrorRequestHandler {
  return async (err, _req, res, _next) => {
    const s = state(res);
    const apiError = toApiError(err);
    if (apiError.code === 'internal_error') s.log?.error({ err, step: s.step }, 'unhandled error');
    // Every 503 says why, where, for which request (requestId is on the child logger).
    if (apiError.status === 503) {
      s.log?.warn(
        { status: 503, code: apiError.code, step: s.step ?? 'routing', cause: apiError.logCause ?? 'unspecified' },
        'request answered 503',
      );
    }
    // A failure before commit stores nothing: the lease goes, so the same key may be retried.
    await finishClaim(idempotency, res, false);
    if (s.principal || res.req.path.startsWith('/v2/')) admissionOutcomes.inc({ code: apiError.code });
    if (res.headersSent) return;
    sendError(res, apiError);
  };
}

export const routeNotFound: RequestHandler = () => {
  throw new ApiError('route_not_found');
};
