// Failed authentications per client address, in process memory (GCRA): a well-formed key costs a
// MySQL read, and the key checksum is public, so without a bound one client could make the
// database read as fast as it can send random keys. Each read of an unknown key consumes one unit
// of the address's allowance (AUTH_FAILURES.burst at once, then AUTH_FAILURES.perMinute); a key
// that turns out valid gives its unit back, so real clients are never slowed by this. Over the
// allowance, the request is refused with Retry-After before the read.
//
// Only ids that were issued get this far (key-id-index.ts refuses the others without a read), and
// the authenticator keys the allowance by address and key id: failures on one id never refuse a
// read of another's key.
//
// Per process: with N web workers a client may get N times the allowance (docs/api.md says so).
// The table holds at most `addresses` entries, least recently used first out.
//
// An address is not a client: behind a NAT, a corporate egress or a misconfigured proxy, a
// flood of random keys and a real client share one. So a key this process has found valid within
// RECENTLY_VALID.ttlMs (RecentlyValidKeys) is never throttled here, whatever its address has
// spent: its read proceeds without taking a unit. Only valid keys enter that set, so it cannot be
// used to make reads for unknown keys; a key found revoked leaves it.

export const AUTH_FAILURES = { burst: 10, perMinute: 20, addresses: 50_000 } as const;

/**
 * The client an address stands for: an IPv4 address (also written IPv4-mapped, ::ffff:a.b.c.d)
 * as it is, an IPv6 address by its /64, the smallest block a network is given. Keyed by /128,
 * one client owning a /64 had 2^64 fresh allowances, and rotating through them flushed the table
 * (at most AUTH_FAILURES.addresses entries) of everyone else's history too.
 */
export function clientBlock(address: string): string {
  const a = address
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) return mapped[1]!;
  if (!a.includes(':')) return a;
  const [head = '', tail] = a.split('::');
  const h = head ? head.split(':') : [];
  const t = tail === undefined ? [] : tail ? tail.split(':') : [];
  // An embedded IPv4 tail counts as two groups.
  const groups = [...h, ...Array(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t];
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/** Keys found valid: remembered this long after their last verification, this many at most. */
export const RECENTLY_VALID = { entries: 50_000, ttlMs: 24 * 60 * 60_000 } as const;

/**
 * Digests (never the keys) of keys this process found valid recently, oldest verification first
 * out: such a key's read is never refused by the per-address limit.
 */
export class RecentlyValidKeys {
  readonly #until = new Map<string, number>();
  readonly #max: number;
  readonly #ttlMs: number;

  constructor(opts: { entries?: number; ttlMs?: number } = {}) {
    this.#max = opts.entries ?? RECENTLY_VALID.entries;
    this.#ttlMs = opts.ttlMs ?? RECENTLY_VALID.ttlMs;
  }

  has(digest: string, now = Date.now()): boolean {
    const until = this.#until.get(digest);
    if (until === undefined) return false;
    if (until > now) return true;
    this.#until.delete(digest);
    return false;
  }

  /** The key verified valid now. */
  add(digest: string, now = Date.now()): void {
    this.#until.delete(digest);
    if (this.#until.size >= this.#max) this.#until.delete(this.#until.keys().next().value!);
    this.#until.set(digest, now + this.#ttlMs);
  }

  /** The key turned out unknown or revoked. */
  delete(digest: string): void {
    this.#until.delete(digest);
  }

  get size(): number {
    return this.#until.size;
  }
}

export interface FailureAllowance {
  allowed: boolean;
  /** When refused: whole seconds until one more read is allowed (≥ 1). */
  retryAfterSeconds: number;
}

export class FailureLimiter {
  readonly #intervalMs: number;
  readonly #toleranceMs: number;
  readonly #max: number;
  /** address → theoretical arrival time (ms); Map order = least recently used first. */
  readonly #tat = new Map<string, number>();

  constructor(opts: { burst?: number; perMinute?: number; addresses?: number } = {}) {
    const burst = opts.burst ?? AUTH_FAILURES.burst;
    this.#intervalMs = 60_000 / (opts.perMinute ?? AUTH_FAILURES.perMinute);
    this.#toleranceMs = burst * this.#intervalMs;
    this.#max = opts.addresses ?? AUTH_FAILURES.addresses;
  }

  /** Takes one unit for a read about to happen; refused when the address has none left. */
  take(address: string, now = Date.now()): FailureAllowance {
    const tat = Math.max(this.#tat.get(address) ?? now, now);
    const next = tat + this.#intervalMs;
    if (next - now > this.#toleranceMs) {
      this.#touch(address, tat);
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((next - now - this.#toleranceMs) / 1000)) };
    }
    this.#touch(address, next);
    return { allowed: true, retryAfterSeconds: 0 };
  }

  /** Gives the unit back: the read found a valid key (or could not say, the database being down). */
  refund(address: string, now = Date.now()): void {
    const tat = this.#tat.get(address);
    if (tat === undefined) return;
    const back = tat - this.#intervalMs;
    if (back <= now) this.#tat.delete(address);
    else this.#tat.set(address, back);
  }

  /** Addresses tracked now (tests, diagnostics). */
  get size(): number {
    return this.#tat.size;
  }

  #touch(address: string, tat: number): void {
    this.#tat.delete(address);
    if (this.#tat.size >= this.#max) {
      const oldest = this.#tat.keys().next().value;
      if (oldest !== undefined) this.#tat.delete(oldest);
    }
    this.#tat.set(address, tat);
  }
}
