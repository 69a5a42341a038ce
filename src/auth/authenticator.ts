// Verifies Bearer keys. A malformed key or bad checksum is refused without a database read; a
// verified key is trusted for AUTH_CACHE_TTL_MS, which is therefore the documented upper bound for
// a revocation (or a grant, scope or limit change) to take effect.
//
// Unknown keys cost a read once: the answer "no such key" is kept in a negative cache of its own
// (NEGATIVE_CACHE: 10,000 entries, 60 s), apart from the cache of real principals, so a flood of
// random keys can neither make the database read for each repetition nor push real keys out. And
// reads for unknown keys are limited per client address before they happen (failure-limiter.ts),
// except for keys this process found valid recently: an address may be shared with, or spoofed by,
// the client flooding it, and a real key must not be locked out by someone else's failures.
//
// Before any of that, the key's public id (its first 8 random characters) must be one that was
// issued (key-id-index.ts, an index shared by every worker through Redis): a key whose id never
// was is refused without a read and without spending its address's allowance, so a flood of
// random keys throttles nobody, and the address limiter only bounds reads of ids that exist.
import { hash } from 'node:crypto';
import { hashApiKey, isWellFormedApiKey } from './api-key.ts';
import type { Principal } from './principal.ts';
import type { Db } from '../db/database.ts';
import { FailureLimiter, RecentlyValidKeys, clientBlock } from './failure-limiter.ts';
import { findPrincipalByKeyHash } from './keys-repo.ts';
import { keyIdOf, type KeyIdIndex } from './key-id-index.ts';

interface Entry {
  principal: Principal;
  expires: number;
}

const MAX_ENTRIES = 10_000;
/** Unknown (or revoked) keys: how many are remembered, and for how long. */
export const NEGATIVE_CACHE = { entries: 10_000, ttlMs: 60_000 } as const;

/** The client address has used up its allowance of failed authentications: no read was made. */
export class AuthThrottledError extends Error {
  readonly retryAfterSeconds: number;
  constructor(retryAfterSeconds: number) {
    super('too many failed authentications from this client address');
    this.name = 'AuthThrottledError';
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

function cacheKeyOf(key: string): string {
  return hash('sha256', key, 'base64url');
}

export class Authenticator {
  readonly #db: Db;
  readonly #pepper: string;
  readonly #ttlMs: number;
  readonly #cache = new Map<string, Entry>();
  /** Digest → expiry of keys the database did not know (or knew revoked). */
  readonly #unknown = new Map<string, number>();
  readonly #inflight = new Map<string, Promise<Principal | null>>();
  readonly #failures: FailureLimiter;
  /** Keys found valid recently: never throttled by the per-address limit (failure-limiter.ts). */
  readonly #valid: RecentlyValidKeys;
  /** Issued key ids (null: every well-formed key may need a read, as before the index). */
  readonly #ids: KeyIdIndex | null;

  constructor(
    db: Db,
    pepper: string,
    ttlMs: number,
    opts: { failures?: FailureLimiter; recentlyValid?: RecentlyValidKeys; keyIds?: KeyIdIndex } = {},
  ) {
    this.#db = db;
    this.#pepper = pepper;
    this.#ttlMs = ttlMs;
    this.#failures = opts.failures ?? new FailureLimiter();
    this.#valid = opts.recentlyValid ?? new RecentlyValidKeys();
    this.#ids = opts.keyIds ?? null;
  }

  /**
   * null = not a valid, unrevoked key. Throws when the database is unreachable, and
   * AuthThrottledError when `client` (the request's address) has too many failed reads behind it
   * and this key would need one.
   */
  async verify(key: string, client?: string | (() => string)): Promise<Principal | null> {
    return this.cached(key) ?? this.#verify(key, client);
  }

  /**
   * The principal of a key verified within AUTH_CACHE_TTL_MS, without a promise: the admission
   * chain's common case stays synchronous. Undefined means verify() must decide.
   */
  cached(key: string): Principal | undefined {
    // The cache is keyed by a one-shot SHA-256 of the key (a digest, so a heap dump does not
    // disclose live keys). The peppered HMAC that the database stores is computed on a miss only:
    // it was a per-request cost (HMAC object set-up) the admission benchmark showed at ~5 %.
    // Only well-formed keys enter the caches, so a hit needs no format check either.
    const hit = this.#cache.get(cacheKeyOf(key));
    return hit && hit.expires > Date.now() ? hit.principal : undefined;
  }

  async #verify(key: string, clientOrLazy?: string | (() => string)): Promise<Principal | null> {
    const cacheKey = cacheKeyOf(key);
    const now = Date.now();
    const hit = this.#cache.get(cacheKey);
    if (hit && hit.expires > now) return hit.principal;
    const unknownUntil = this.#unknown.get(cacheKey);
    if (unknownUntil !== undefined) {
      if (unknownUntil > now) return null;
      this.#unknown.delete(cacheKey);
    }
    if (!isWellFormedApiKey(key)) return null;
    // An id never issued: refused without a read, and no address is charged for it.
    if (this.#ids && !(await this.#ids.issued(keyIdOf(key)))) {
      remember(this.#unknown, cacheKey, now + NEGATIVE_CACHE.ttlMs, NEGATIVE_CACHE.entries);
      return null;
    }
    // The client's address (req.ip: proxy-addr over X-Forwarded-For as far as TRUST_PROXY goes)
    // is worked out only here, where a read may be made; a key found valid recently is not
    // counted against any address.
    const client = this.#valid.has(cacheKey, now)
      ? undefined
      : typeof clientOrLazy === 'function'
        ? clientOrLazy()
        : clientOrLazy;
    // With the index, an address's allowance is per issued id: reads of ids that exist are
    // bounded, and someone else's failures on other ids never refuse this key's read.
    // An IPv6 client by its /64 (clientBlock): a network's own addresses are one client.
    const block = client === undefined ? undefined : clientBlock(client);
    const bucket = block === undefined ? undefined : this.#ids ? `${block}|${keyIdOf(key)}` : block;
    let pending = this.#inflight.get(cacheKey);
    if (!pending) {
      // Only the request that makes the read pays for it; concurrent identical ones share it.
      if (client !== undefined) {
        const allowance = this.#failures.take(bucket!, now);
        if (!allowance.allowed) throw new AuthThrottledError(allowance.retryAfterSeconds);
      }
      pending = findPrincipalByKeyHash(this.#db, hashApiKey(key, this.#pepper))
        .then(
          (principal) => {
            if (principal && client !== undefined) this.#failures.refund(bucket!);
            return principal;
          },
          (err: unknown) => {
            // The database could not say: not a failed authentication.
            if (client !== undefined) this.#failures.refund(bucket!);
            throw err;
          },
        )
        .finally(() => this.#inflight.delete(cacheKey));
      this.#inflight.set(cacheKey, pending);
    }
    const principal = await pending;
    if (!principal) {
      this.#valid.delete(cacheKey);
      remember(this.#unknown, cacheKey, now + NEGATIVE_CACHE.ttlMs, NEGATIVE_CACHE.entries);
      return null;
    }
    this.#valid.add(cacheKey, now);
    if (this.#ttlMs > 0) remember(this.#cache, cacheKey, { principal, expires: now + this.#ttlMs }, MAX_ENTRIES);
    return principal;
  }
}

/** Sets `key` in a bounded map; the oldest entry leaves first. */
function remember<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  map.delete(key);
  if (map.size >= max) map.delete(map.keys().next().value!);
  map.set(key, value);
}
