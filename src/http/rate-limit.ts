// Step 3 (and 7): the application limit and, on product writes, the product's minute and hour
// limits, checked and consumed together in one atomic script. A product refusal is remembered and
// reported after the local checks (Idempotency-Key, body, active gates), as CONTRACT §2 orders.
import type { RequestHandler } from 'express';
import { ApiError } from '../contract/errors.ts';
import { appPolicy, productPolicies } from '../ratelimit/policies.ts';
import { rateLimitHeaders, type RateLimiter } from '../ratelimit/limiter.ts';
import type { ProductDefinition } from '../products/types.ts';
import { rateLimitDecisions } from '../metrics.ts';
import { state } from './context.ts';

export function rateLimit(limiter: RateLimiter, product?: ProductDefinition): RequestHandler {
  return async (_req, res, next) => {
    const s = state(res);
    const p = s.principal!;
    const policies = [appPolicy(p.rateOverrides)];
    if (product) policies.push(...productPolicies(p.rateOverrides, product.id, product.rateClass));
    let decision;
    try {
      decision = await limiter.consume(String(p.applicationId), policies);
    } catch (err) {
      // Fail closed: without Redis there is no limit, so there is no service.
      rateLimitDecisions.inc({ scope: 'application', decision: 'error' });
      s.log.warn({ err }, 'rate limiter unavailable');
      throw new ApiError('service_unavailable', { retryAfterSeconds: 5 });
    }
    for (const [k, v] of Object.entries(rateLimitHeaders(decision))) res.setHeader(k, v);
    if (decision.allowed) {
      rateLimitDecisions.inc({ scope: product ? 'product' : 'application', decision: 'allowed' });
      return next();
    }
    const refusedBy = decision.refusedBy!;
    rateLimitDecisions.inc({ scope: refusedBy.scope, decision: 'refused' });
    const code = refusedBy.scope === 'application' ? 'rate_limit_exceeded' : 'capability_rate_limit_exceeded';
    const err = new ApiError(code, {
      retryAfterSeconds: decision.retryAfterSeconds,
      details: { policy: refusedBy.name, limit: refusedBy.limit, windowSeconds: refusedBy.windowSeconds },
    });
    if (code === 'rate_limit_exceeded') throw err;
    s.deferredLimit = err;
    next();
  };
}

export const reportDeferredLimit: RequestHandler = (_req, res, next) => {
  const deferred = state(res).deferredLimit;
  if (deferred) throw deferred;
  next();
};
