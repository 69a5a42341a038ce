// Failed authentications per client address, in process memory (GCRA): a well-formed key costs a
// MySQL read, and the key checksum is public, so without a bound one client could make the
// database read as fast as it can send random keys. Each read of an unknown key consumes one unit
// of the address's allowance (AUTH_FAILURES.burst at once, then AUTH_FAILURES.perMinute); a key
// that turns out valid gives its unit back, so real clients are never slowed by this. Over the
// allowance, the request is refused with Retry-After before the read.
//
// Per process: with N web workers a client may get N times the allowance (docs/api.md says so).
// The table holds at most `addresses` entries, least recently used first out.

export const AUTH_FAILURES = { burst: 10, perMinute: 20, addresses: 50_000 } as const;

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
