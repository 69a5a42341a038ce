// Step 3 (and 7) for the routes outside the product chain: reads (the application limit) and
// cancel (the application limit and the Idempotency-Key lease), through the same limits step as
// product admission (src/jobs/admission/write-limits.ts).
import type { RequestHandler } from 'express';
import type { RateLimiter } from '../ratelimit/limiter.ts';
import type { IdempotencyLeases } from '../idempotency/lease.ts';
import { WriteLimits } from '../jobs/admission/write-limits.ts';
import { idempotencyKeyOf } from './idempotency.ts';
import { state } from './context.ts';
import { expressPort } from './express-port.ts';

/** Reads: the application limit. */
export function rateLimit(limiter: RateLimiter): RequestHandler {
  const limits = new WriteLimits(limiter, undefined, undefined);
  return (req, res, next) => limits.consume(state(res), req.method, req.path, res, expressPort).then(() => next());
}

/** Writes outside the product chain: the application limit and the Idempotency-Key lease. */
export function admitWrite(limiter: RateLimiter, leases: IdempotencyLeases): RequestHandler {
  const limits = new WriteLimits(limiter, leases, undefined);
  return (req, res, next) => {
    const s = state(res);
    // The key is read here, once: the script claims its lease; step 4 reports a missing one.
    s.idempotencyKey = idempotencyKeyOf(req);
    return limits.consume(s, req.method, req.path, res, expressPort).then(() => next());
  };
}
