// Step 3 (and 7): the application limit and, on product writes, the product's minute and hour
// limits, checked and consumed together in one atomic script. A product refusal is remembered and
// reported after the local checks (Idempotency-Key, body, active gates), as CONTRACT §2 orders.
// On writes the same script also claims the Idempotency-Key's lease (reported at step 8), so an
// admitted write costs one Redis round trip before it executes.
import type { RequestHandler } from 'express';
import { ApiError } from '../contract/errors.ts';
import { appPolicy, productPolicies, type RateOverrides, type RatePolicy } from '../ratelimit/policies.ts';
import { rateLimitHeaders, type RateLimiter } from '../ratelimit/limiter.ts';
import { leaseFound, type IdempotencyLeases, type LeaseRequest } from '../idempotency/lease.ts';
import { requestFingerprint } from '../idempotency/fingerprint.ts';
import { idempotencyKeyOf } from './idempotency.ts';
import type { ProductDefinition } from '../products/kit/product-contract.ts';
import { rateLimitDecisions } from '../metrics.ts';
import { state } from './context.ts';
import { dependencyCause } from './errors.ts';

/** Reads: the application limit. */
export function rateLimit(limiter: RateLimiter): RequestHandler {
  return limitAndClaim(limiter, undefined, undefined);
}

/** Writes: the application limit, the product's limits if any, and the Idempotency-Key lease. */
export function admitWrite(
  limiter: RateLimiter,
  leases: IdempotencyLeases,
  product?: ProductDefinition,
): RequestHandler {
  return limitAndClaim(limiter, leases, product);
}

function limitAndClaim(
  limiter: RateLimiter,
  leases: IdempotencyLeases | undefined,
  product: ProductDefinition | undefined,
): RequestHandler {
  // A principal's overrides object lives as long as its authentication cache entry, so its
  // policies are built once per entry, not per request (and the limiter keys its per-policy
  // script arguments on these same objects).
  const built = new WeakMap<RateOverrides, RatePolicy[]>();
  const policiesFor = (o: RateOverrides): RatePolicy[] => {
    let policies = built.get(o);
    if (!policies) {
      policies = [appPolicy(o), ...(product ? productPolicies(o, product.id, product.rateClass) : [])];
      built.set(o, policies);
    }
    return policies;
  };
  return async (req, res, next) => {
    const s = state(res);
    s.step = 'rate_limit';
    const p = s.principal!;
    const policies = policiesFor(p.rateOverrides);
    // A lease is asked for only when step 4 and 5a will pass: a valid key and a readable body.
    // The key is read here, once: the script claims its lease; step 4 reports a missing one.
    const key = leases ? idempotencyKeyOf(req) : undefined;
    if (key) s.idempotencyKey = key;
    let lease: LeaseRequest | undefined;
    if (leases && key && !s.bodyError) {
      const fingerprint = requestFingerprint(req.method, req.path, s.rawBody);
      lease = leases.request(p.applicationId, p.keyId, key, fingerprint);
    }
    let decision;
    try {
      decision = await limiter.consume(String(p.applicationId), policies, lease?.tail);
    } catch (err) {
      // Fail closed: without Redis there is no limit, so there is no service.
      rateLimitDecisions.inc({ scope: 'application', decision: 'error' });
      throw new ApiError('service_unavailable', {
        retryAfterSeconds: 5,
        cause: `rate limiter: ${dependencyCause(err)}`,
      });
    }
    const headers = rateLimitHeaders(decision);
    if (headers) {
      res.setHeader('RateLimit-Policy', headers.policy);
      res.setHeader('RateLimit', headers.state);
    }
    if (lease && decision.tail) {
      const found = leaseFound(decision.tail);
      s.lease = { ...found, fingerprint: lease.fingerprint };
      if (found.state === 'claimed') {
        // From here every failure releases it (the error handler), every commit finishes it.
        s.claim = {
          applicationId: p.applicationId,
          apiKeyId: p.keyId,
          key: key!,
          fingerprint: lease.fingerprint,
          token: lease.token,
          keyHash: lease.keyHash,
        };
      }
    }
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
