// Steps 1-2 of admission: a valid Bearer key, then the scopes the route needs.
import type { RequestHandler } from 'express';
import { ApiError } from '../contract/errors.ts';
import type { Authenticator } from '../auth/authenticator.ts';
import type { Scope } from '../auth/principal.ts';
import { state } from './context.ts';

const BEARER = /^Bearer +(\S+) *$/i;

export function authenticate(auth: Authenticator, required: readonly Scope[]): RequestHandler {
  return async (req, res, next) => {
    state(res).step = 'authentication';
    const m = BEARER.exec(req.get('authorization') ?? '');
    const principal = m ? await auth.verify(m[1]!) : null;
    if (!principal) {
      throw new ApiError('authentication_required', { headers: { 'WWW-Authenticate': 'Bearer realm="lss"' } });
    }
    state(res).principal = principal;
    const missing = required.filter((s) => !principal.scopes.has(s));
    if (missing.length > 0) throw new ApiError('insufficient_scope', { details: { requiredScopes: missing } });
    next();
  };
}

/** Any valid key, whatever its scopes (GET /v2/products). */
export function authenticateAny(auth: Authenticator): RequestHandler {
  return authenticate(auth, []);
}
