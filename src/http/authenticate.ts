// Steps 1-2 of admission: a valid Bearer key, then the scopes the route needs.
//
// A client address with too many failed authentications behind it (src/auth/failure-limiter.ts)
// is answered 429 rate_limit_exceeded (details.scope client_address, Retry-After) instead of a
// database read for a key the cache does not know; cached keys, valid or not, and keys found
// valid recently are answered as usual. The address is req.ip: the socket's, or the one the
// proxies TRUST_PROXY names saw (a hop count or their addresses; never every hop).
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ApiError } from '../contract/errors.ts';
import { AuthThrottledError, type Authenticator } from '../auth/authenticator.ts';
import { AUTH_FAILURES } from '../auth/failure-limiter.ts';
import type { Principal, Scope } from '../auth/principal.ts';
import { state } from './context.ts';

const BEARER = /^Bearer +(\S+) *$/i;

export function authenticate(auth: Authenticator, required: readonly Scope[]): RequestHandler {
  const admit = (res: Response, principal: Principal | null, next: NextFunction) => {
    if (!principal) {
      throw new ApiError('authentication_required', { headers: { 'WWW-Authenticate': 'Bearer realm="lss"' } });
    }
    state(res).principal = principal;
    const missing = required.filter((s) => !principal.scopes.has(s));
    if (missing.length > 0) throw new ApiError('insufficient_scope', { details: { requiredScopes: missing } });
    next();
  };
  return (req, res, next) => {
    state(res).step = 'authentication';
    const m = BEARER.exec(req.headers.authorization ?? '');
    if (!m) return admit(res, null, next);
    // A key verified recently is answered from the cache without a promise (the common case).
    const hit = auth.cached(m[1]!);
    if (hit) return admit(res, hit, next);
    return verify(auth, m[1]!, req).then((principal) => admit(res, principal, next));
  };
}

async function verify(auth: Authenticator, key: string, req: Request): Promise<Principal | null> {
  try {
    return await auth.verify(key, () => req.ip ?? req.socket.remoteAddress ?? 'unknown');
  } catch (err) {
    if (!(err instanceof AuthThrottledError)) throw err;
    throw new ApiError('rate_limit_exceeded', {
      message: 'Too many failed authentications from this client address.',
      retryAfterSeconds: err.retryAfterSeconds,
      details: {
        scope: 'client_address',
        policy: 'auth_failures',
        limit: AUTH_FAILURES.perMinute,
        windowSeconds: 60,
        burst: AUTH_FAILURES.burst,
      },
      cause: 'failed authentications from this client address over the limit',
    });
  }
}

/** Any valid key, whatever its scopes (GET /v2/products). */
export function authenticateAny(auth: Authenticator): RequestHandler {
  return authenticate(auth, []);
}
