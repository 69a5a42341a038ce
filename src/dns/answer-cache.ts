// A cache of DNS answers above the Resolver interface (./types.ts), so that a name one check of a
// job resolved is not asked again by the next check of the same job within its TTL (a scan's dns
// task asks A and AAAA of a host; its web task, planned from that answer, then connects to it).
//   - Scoped: a resolver from scoped(scope) sees only its scope's answers; the lane runner gives
//     each task the scope "<workspace>:<job>", so nothing crosses jobs, let alone tenants.
//   - Only determinate outcomes are kept: an answer (for the least TTL of its records, at most
//     maxTtlS), NODATA and NXDOMAIN (authoritative absence, for negativeTtlS). SERVFAIL, REFUSED,
//     a timeout, an error or a question never asked is never cached: the next asker asks again,
//     so an indeterminate answer never turns into absence by being remembered.
//   - Concurrent askers of one question share its one query (the first asker's signal does not
//     bind the others: the question runs unbound and each asker's own signal ends its own wait).
//   - Bounded: at most maxEntries answers in the process, least recently used dropped first.
import type { QueryOptions, QueryResult, RecordType, Resolver, ResolverHealth } from './types.ts';

export interface AnswerCacheOptions {
  maxEntries: number;
  /** The longest an answer is kept, whatever its TTL (s). */
  maxTtlS: number;
  /** How long NODATA / NXDOMAIN is kept (s): the reply's SOA minimum is not in a QueryResult. */
  negativeTtlS: number;
  now?: () => number;
}

const DETERMINATE = new Set(['answer', 'nodata', 'nxdomain']);

interface Entry {
  result: QueryResult;
  expiresAt: number;
}

export class AnswerCache {
  readonly #o: Required<AnswerCacheOptions>;
  /** Map order is recency: a hit moves its entry to the end. */
  readonly #entries = new Map<string, Entry>();
  readonly #inFlight = new Map<string, Promise<QueryResult>>();
  hits = 0;
  misses = 0;

  constructor(o: AnswerCacheOptions) {
    this.#o = { now: () => Date.now(), ...o };
  }

  get size(): number {
    return this.#entries.size;
  }

  /** `resolver` as seen from one scope (a job): its answers are kept for that scope only. */
  scoped(scope: string, resolver: Resolver): Resolver {
    return {
      query: (name, type, opts) => this.#query(scope, resolver, name, type, opts),
      readiness: (): ResolverHealth => resolver.readiness(),
      retryAfterMs: () => resolver.retryAfterMs?.() ?? null,
    };
  }

  async #query(
    scope: string,
    resolver: Resolver,
    name: string,
    type: RecordType,
    opts: QueryOptions | undefined,
  ): Promise<QueryResult> {
    const key = `${scope}\u0000${type}\u0000${name.toLowerCase().replace(/\.$/, '')}`;
    const now = this.#o.now();
    const hit = this.#entries.get(key);
    if (hit && hit.expiresAt > now) {
      this.#entries.delete(key);
      this.#entries.set(key, hit);
      this.hits++;
      return hit.result;
    }
    if (hit) this.#entries.delete(key);
    let pending = this.#inFlight.get(key);
    if (!pending) {
      this.misses++;
      const { signal: _ignored, ...rest } = opts ?? {};
      pending = resolver.query(name, type, rest).then((result) => {
        this.#keep(key, result);
        return result;
      });
      pending.catch(() => {}).finally(() => this.#inFlight.delete(key));
      this.#inFlight.set(key, pending);
    }
    return opts?.signal ? raceAbort(pending, opts.signal) : pending;
  }

  #keep(key: string, r: QueryResult): void {
    if (!DETERMINATE.has(r.outcome) || r.notAsked) return;
    const ttl =
      r.outcome === 'answer'
        ? Math.min(this.#o.maxTtlS, ...r.answers.map((a) => (Number.isFinite(a.ttl) ? a.ttl : 0)))
        : this.#o.negativeTtlS;
    if (!(ttl > 0)) return;
    while (this.#entries.size >= this.#o.maxEntries) {
      const oldest = this.#entries.keys().next();
      if (oldest.done) break;
      this.#entries.delete(oldest.value);
    }
    this.#entries.set(key, { result: r, expiresAt: this.#o.now() + ttl * 1000 });
  }
}

function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
