// A cache of DNS answers above the Resolver interface (./types.ts), so that a name one check of a
// job resolved is not asked again by the next check of the same job within its TTL (a scan's dns
// task asks A and AAAA of a host; its web task, planned from that answer, then connects to it).
//   - Scoped: a resolver from scoped(scope) sees only its scope's answers; the lane runner gives
//     each task the scope "<workspace>:<job>", so nothing crosses jobs, let alone tenants.
//   - Only determinate outcomes are kept: an answer (for the least TTL of its records, at most
//     maxTtlS; a hit's TTLs are counted down by the seconds it was kept, as a resolver's cache's are), NODATA and NXDOMAIN (authoritative absence, for negativeTtlS). SERVFAIL, REFUSED,
//     a timeout, an error or a question never asked is never cached: the next asker asks again,
//     so an indeterminate answer never turns into absence by being remembered.
//   - Concurrent askers of one question share its one query (the first asker's signal does not
//     bind the others: the question runs unbound and each asker's own signal ends its own wait).
//   - Bounded: at most maxEntries answers and maxBytes of answer data in the process, least
//     recently used dropped first; an answer over maxEntryBytes (a target's 64 KiB TXT set) is
//     never kept, so a few large answers cannot fill a lane's heap under an entry count that
//     assumed small ones. Sizes are estimated from the records' text, walked once and no further
//     than the entry cap.
import type { QueryOptions, QueryResult, RecordType, Resolver, ResolverHealth } from './types.ts';

export interface AnswerCacheOptions {
  maxEntries: number;
  /** Estimated bytes of all kept answers together. */
  maxBytes?: number;
  /** An answer estimated larger than this is not kept. */
  maxEntryBytes?: number;
  /** The longest an answer is kept, whatever its TTL (s). */
  maxTtlS: number;
  /** How long NODATA / NXDOMAIN is kept (s): the reply's SOA minimum is not in a QueryResult. */
  negativeTtlS: number;
  now?: () => number;
}

const DETERMINATE = new Set(['answer', 'nodata', 'nxdomain']);

interface Entry {
  result: QueryResult;
  keptAt: number;
  expiresAt: number;
  bytes: number;
}

/** Defaults: the byte bounds of a cache whose caller named only an entry count. */
export const ANSWER_CACHE_BYTES = { maxBytes: 8 * 1024 * 1024, maxEntryBytes: 4096 } as const;

/** What a value holds, in bytes of text (strings by length, numbers 8), counted no further than `limit`. */
function sizeOf(v: unknown, limit: number): number {
  let total = 0;
  const stack: unknown[] = [v];
  while (stack.length > 0 && total <= limit) {
    const x = stack.pop();
    if (typeof x === 'string') total += x.length;
    else if (typeof x === 'number' || typeof x === 'boolean') total += 8;
    else if (Array.isArray(x)) {
      total += 8;
      for (const y of x) stack.push(y);
    } else if (x !== null && typeof x === 'object') {
      total += 16;
      for (const y of Object.values(x)) stack.push(y);
    }
  }
  return total;
}

/** An answer's estimated size: its records' names and data, plus a fixed overhead. */
function answerBytes(r: QueryResult, limit: number): number {
  let total = 64;
  for (const a of r.answers) {
    total += 32 + a.name.length + sizeOf(a.data, limit - total);
    if (total > limit) return total;
  }
  return total;
}

export class AnswerCache {
  readonly #o: Required<AnswerCacheOptions>;
  /** Map order is recency: a hit moves its entry to the end. */
  readonly #entries = new Map<string, Entry>();
  #bytes = 0;
  readonly #inFlight = new Map<string, Promise<QueryResult>>();
  hits = 0;
  misses = 0;

  constructor(o: AnswerCacheOptions) {
    this.#o = { now: () => Date.now(), ...ANSWER_CACHE_BYTES, ...o };
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Estimated bytes of the answers kept now. */
  get bytes(): number {
    return this.#bytes;
  }

  /** `resolver` as seen from one scope (a job): its answers are kept for that scope only. */
  scoped(scope: string, resolver: Resolver): Resolver {
    return {
      query: (name, type, opts) => this.#query(scope, resolver, name, type, opts),
      readiness: (): ResolverHealth => resolver.readiness(),
      retryAfterMs: () => resolver.retryAfterMs?.() ?? null,
      servfailBurst: (zone: string) => resolver.servfailBurst?.(zone) ?? false,
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
      return countedDown(hit, now);
    }
    if (hit) this.#drop(key, hit);
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
    const bytes = answerBytes(r, this.#o.maxEntryBytes);
    if (bytes > this.#o.maxEntryBytes) return;
    const earlier = this.#entries.get(key);
    if (earlier) this.#drop(key, earlier);
    while (this.#entries.size >= this.#o.maxEntries || this.#bytes + bytes > this.#o.maxBytes) {
      const oldest = this.#entries.entries().next();
      if (oldest.done) break;
      this.#drop(oldest.value[0], oldest.value[1]);
    }
    const now = this.#o.now();
    this.#entries.set(key, { result: r, keptAt: now, expiresAt: now + ttl * 1000, bytes });
    this.#bytes += bytes;
  }

  #drop(key: string, e: Entry): void {
    this.#entries.delete(key);
    this.#bytes -= e.bytes;
  }
}

/**
 * A kept answer as a resolver's cache gives it: its TTLs less the whole seconds it has been kept,
 * so that whoever reads a TTL off a cached answer (the scan's dns task, for how long its web task
 * may use the addresses) never counts from a moment later than the answer's.
 */
function countedDown(e: Entry, now: number): QueryResult {
  const kept = Math.floor((now - e.keptAt) / 1000);
  if (kept < 1 || e.result.answers.length === 0) return e.result;
  return { ...e.result, answers: e.result.answers.map((a) => ({ ...a, ttl: Math.max(0, a.ttl - kept) })) };
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
