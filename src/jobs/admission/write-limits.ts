// Step 3 (and 7) of admission: the application limit and, on product writes, the product's minute
// and hour limits, checked and consumed together in one atomic script. A product refusal is
// remembered and reported after the local checks (Idempotency-Key, body, active gates), as
// CONTRACT §2 orders. On writes the same script also claims the Idempotency-Key's lease (reported
// at step 8), so an admitted write costs one Redis round trip before it executes.
// A monitor's run is limited by its product's limits only, not the application's per-minute
// request limit (CONTRACT §14): `applicationLimit: false`.
import { ApiError } from '../../contract/errors.ts';
import { appPolicy, productPolicies, type RateOverrides, type RatePolicy } from '../../ratelimit/policies.ts';
import { rateLimitHeaders, type RateLimiter } from '../../ratelimit/limiter.ts';
import { leaseFound, type IdempotencyLeases, type LeaseRequest } from '../../idempotency/lease.ts';
import { requestFingerprint } from '../../idempotency/fingerprint.ts';
import { rateLimitDecisions } from '../../metrics.ts';
import { dependencyCause } from '../../resilience/dependency-errors.ts';
import type { ProductDefinition } from '../../products/kit/product-contract.ts';
import type { AdmissionState } from './admission-state.ts';
import type { AdmissionPort } from './admission-port.ts';

export interface WriteLimitsOptions {
  /** The application's per-minute request limit applies (every API request; not a monitor's run). */
  applicationLimit?: boolean;
}

export class WriteLimits {
  readonly #limiter: RateLimiter;
  readonly #leases: IdempotencyLeases | undefined;
  readonly #product: ProductDefinition | undefined;
  readonly #applicationLimit: boolean;
  // A principal's overrides object lives as long as its authentication cache entry, so its
  // policies are built once per entry, not per request (and the limiter keys its per-policy
  // script arguments on these same objects).
  readonly #built = new WeakMap<RateOverrides, RatePolicy[]>();

  constructor(
    limiter: RateLimiter,
    leases: IdempotencyLeases | undefined,
    product: ProductDefinition | undefined,
    opts: WriteLimitsOptions = {},
  ) {
    this.#limiter = limiter;
    this.#leases = leases;
    this.#product = product;
    this.#applicationLimit = opts.applicationLimit ?? true;
  }

  #policiesFor(o: RateOverrides): RatePolicy[] {
    let policies = this.#built.get(o);
    if (!policies) {
      const product = this.#product;
      policies = [
        ...(this.#applicationLimit ? [appPolicy(o)] : []),
        ...(product ? productPolicies(o, product.id, product.rateClass) : []),
      ];
      this.#built.set(o, policies);
    }
    return policies;
  }

  /**
   * Consumes the request's limits and claims its lease (st.idempotencyKey, when leases are kept).
   * An application refusal throws; a product refusal is kept in st.deferredLimit for step 7.
   */
  async consume<T>(st: AdmissionState, method: string, path: string, target: T, port: AdmissionPort<T>): Promise<void> {
    st.step = 'rate_limit';
    const p = st.principal!;
    const policies = this.#policiesFor(p.rateOverrides);
    // A lease is asked for only when step 4 and 5a will pass: a valid key and a readable body.
    const key = this.#leases ? st.idempotencyKey : undefined;
    let lease: LeaseRequest | undefined;
    if (key && !st.bodyError) {
      const fingerprint = requestFingerprint(method, path, st.rawBody);
      lease = this.#leases!.request(p.applicationId, p.keyId, key, fingerprint);
    }
    let decision;
    try {
      decision = await this.#limiter.consume(String(p.applicationId), policies, lease?.tail);
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
      port.header(target, 'RateLimit-Policy', headers.policy);
      port.header(target, 'RateLimit', headers.state);
    }
    if (lease && decision.tail) {
      const found = leaseFound(decision.tail);
      st.lease = { ...found, fingerprint: lease.fingerprint };
      if (found.state === 'claimed') {
        // From here every failure releases it, every commit finishes it.
        st.claim = {
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
      rateLimitDecisions.inc({ scope: this.#product ? 'product' : 'application', decision: 'allowed' });
      return;
    }
    const refusedBy = decision.refusedBy!;
    rateLimitDecisions.inc({ scope: refusedBy.scope, decision: 'refused' });
    const code = refusedBy.scope === 'application' ? 'rate_limit_exceeded' : 'capability_rate_limit_exceeded';
    const err = new ApiError(code, {
      retryAfterSeconds: decision.retryAfterSeconds,
      details: { policy: refusedBy.name, limit: refusedBy.limit, windowSeconds: refusedBy.windowSeconds },
    });
    if (code === 'rate_limit_exceeded') throw err;
    st.deferredLimit = err;
  }
}

/** Step 7: a product refusal found at step 3, reported now that the local checks passed. */
export function reportDeferredLimit(st: AdmissionState): void {
  st.step = 'product_limit';
  if (st.deferredLimit) throw st.deferredLimit;
}
