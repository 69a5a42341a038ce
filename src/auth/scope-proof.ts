// Proof of control of an approved scope, as scanners that sell active testing ask for it: the
// operator runs `scope challenge`, the domain's owner publishes the token as a TXT record at
// `_lss-challenge.<domain>`, and `scope approve --verify` approves only when the zone's own servers
// hold it there. The scope is then `verified`, and active work on it asks again (at most
// SCOPE_PROOF_CACHE_SECONDS after the last answer that held the token, one hour by default): once
// the record is gone, active work stops (admission refuses with approved_target_scope_required,
// details.reason proof_missing; an active task already queued ends unavailable with proof_missing).
//
// What a question can say, by the one DNS rule (dns/presence.ts):
//   present        a TXT record at the name holds exactly the token
//   missing        the zone's server answered (AA): no such name, no TXT there (NXDOMAIN, NODATA),
//                  or TXT records none of which is the token
//   indeterminate  no authoritative answer (SERVFAIL, REFUSED, timeout, AA=0, servers
//                  unreachable, zone unknown…: `reason`): nothing is known. Never read
//                  as proof (nothing runs) and never as its absence (the scope stays approved);
//                  admission answers 503 service_unavailable with Retry-After, a lane task ends
//                  unavailable with proof_indeterminate. Not cached: the next request asks again.
// Only `present` is cached, per process, so a removal takes effect within the cache time. A
// verified scope is also proven again on a schedule (./scope-reproof.ts, SCOPE_REPROVE_HOURS):
// a re-proof that finds the token gone suspends the scope.
//
// What counts as the record (issue 45): a TXT answer proves control only when its owner is
// `_lss-challenge.<scope>` itself or a name reached from it through CNAMEs that all stay inside
// the scope's registrable domain: a dangling `*.victim.example CNAME x.expired.example` must not
// let whoever registers expired.example prove victim.example. And a random sibling
// (`_lss-nonce-<random>.<scope>`) that answers TXT too means a wildcard answers for every name
// there: not a proof of anything published for us (missing; indeterminate if the sibling's
// question is).
//
// Where the answer comes from (issue 45): the zone's own servers, never a cache. Each name is asked
// of the servers of its zone (dns/authoritative.ts: the zone cut found through the project's
// resolver, then a server asked directly over TCP through the outbound guard, RD=0, and only a
// reply with AA=1 counts). A recursive resolver's answer, fresh or stale, proves nothing and
// disproves nothing. No authoritative answer (zone unknown, servers unreachable, timeout,
// SERVFAIL, REFUSED, AA=0) is `indeterminate` with its `reason` (AuthoritativeFailure).
import { randomBytes } from 'node:crypto';
import { suffixParts } from '../contract/public-suffix.ts';
import { askAuthoritative, type AuthoritativeFailure, type ServerDialer } from '../dns/authoritative.ts';
import type { Resolver } from '../dns/types.ts';

/** The label under the scope where the token is published. */
export const CHALLENGE_LABEL = '_lss-challenge';
/** What a cached `present` is worth at most (SCOPE_PROOF_CACHE_SECONDS is capped to this). */
export const PROOF_CACHE_MAX_SECONDS = 3600;
/** CNAME hops from the challenge name followed across zones at most. */
const MAX_HOPS = 8;

export function challengeName(domain: string): string {
  return `${CHALLENGE_LABEL}.${domain}`;
}

/** A fresh token: 160 random bits, hex, prefixed so an operator recognises it in a zone file. */
export function newChallengeToken(): string {
  return `lss-${randomBytes(20).toString('hex')}`;
}

export type ProofState = 'present' | 'missing' | 'indeterminate';

export interface ProofCheck {
  state: ProofState;
  /** The name asked. */
  name: string;
  /** Human text: what the zone's servers said. */
  detail: string;
  /** Indeterminate only: why no authoritative answer came (dns/authoritative.ts). */
  reason?: AuthoritativeFailure;
}

/** How a proof is asked: the resolver finds the zone cut, the outbound guard reaches its servers. */
export interface ProofDns {
  resolver: Resolver;
  servers: ServerDialer;
}

const normal = (n: unknown) => String(n).toLowerCase().replace(/\.$/, '');

type TxtAt =
  | { kind: 'values'; values: string[] }
  | { kind: 'away'; target: string }
  | { kind: 'indeterminate'; reason: AuthoritativeFailure; detail: string };

/**
 * The TXT values at `name` as its zone's servers hold them, following a CNAME into another zone
 * (asked of that zone's servers in turn); `away` when the chain leaves `owner` (the registrable domain).
 */
async function txtAt(dns: ProofDns, name: string, owner: string, signal?: AbortSignal): Promise<TxtAt> {
  const inside = (n: string) => n === owner || n.endsWith(`.${owner}`);
  let current = normal(name);
  const seen = new Set<string>();
  for (let hop = 0; hop < MAX_HOPS; hop++) {
    seen.add(current);
    const a = await askAuthoritative(dns.resolver, dns.servers, current, 'TXT', owner, signal);
    if (a.kind === 'indeterminate') return a;
    const cnames = new Map<string, string>();
    for (const r of a.result.answers) if (r.type === 'CNAME') cnames.set(normal(r.name), normal(r.data));
    const chain = [current];
    for (let n = cnames.get(current); n !== undefined && !chain.includes(n); n = cnames.get(n)) chain.push(n);
    const away = chain.find((n) => !inside(n));
    if (away !== undefined) return { kind: 'away', target: away };
    // A TXT record is one or more character strings: the value is their concatenation (RFC 7208 §3.3 style).
    const values = a.result.answers
      .filter((r) => r.type === 'TXT' && chain.includes(normal(r.name)))
      .map((r) => (Array.isArray(r.data) ? r.data.map(String).join('') : String(r.data)).trim());
    const end = chain.at(-1)!;
    // The chain ends in another zone (its server answered with the CNAME alone): ask that zone.
    if (values.length > 0 || end === current || seen.has(end)) return { kind: 'values', values };
    current = end;
  }
  return { kind: 'values', values: [] };
}

/** One question: does the TXT record at _lss-challenge.<domain> hold `token`, as its zone's servers say? */
export async function askProof(
  dns: ProofDns,
  domain: string,
  token: string,
  signal?: AbortSignal,
): Promise<ProofCheck> {
  const name = challengeName(domain);
  const owner = suffixParts(domain).registrable ?? domain;
  const found = await txtAt(dns, name, owner, signal);
  if (found.kind === 'indeterminate')
    return {
      state: 'indeterminate',
      name,
      reason: found.reason,
      detail: `TXT ${name}: ${found.detail}; whether it holds the token is unknown`,
    };
  if (found.kind === 'away')
    return {
      state: 'missing',
      name,
      detail: `${name} is reached through a CNAME to ${found.target}, outside ${owner}: not a proof of control of ${domain}`,
    };
  if (found.values.length === 0) return { state: 'missing', name, detail: `${name} has no TXT record` };
  if (!found.values.includes(token))
    return {
      state: 'missing',
      name,
      detail: `${name} has ${found.values.length} TXT record(s), none of them this workspace's token`,
    };
  // The token is there: is it there for every name (a wildcard)? Ask a sibling nobody published.
  const sibling = `_lss-nonce-${randomBytes(8).toString('hex')}.${domain}`;
  const other = await txtAt(dns, sibling, owner, signal);
  if (other.kind === 'indeterminate')
    return {
      state: 'indeterminate',
      name,
      reason: other.reason,
      detail: `TXT ${sibling} (the wildcard check): ${other.detail}; whether the token is published for ${name} alone is unknown`,
    };
  // A sibling led out of the domain (a wildcard CNAME) did not give the token we found inside it.
  if (other.kind === 'values' && other.values.length > 0)
    return {
      state: 'missing',
      name,
      detail: `a random name beside ${name} answers TXT too: a wildcard, not a record published for this challenge`,
    };
  return { state: 'present', name, detail: `${name} holds the token` };
}

/**
 * Per-process proof checks: a `present` answer is reused for `cacheSeconds` (at most an hour);
 * concurrent questions about one (domain, token) share one query; nothing else is cached.
 */
export class ScopeProofs {
  readonly #dns: ProofDns;
  readonly #cacheMs: number;
  readonly #present = new Map<string, number>();
  readonly #inflight = new Map<string, Promise<ProofCheck>>();

  constructor(dns: ProofDns, opts: { cacheSeconds?: number } = {}) {
    this.#dns = dns;
    this.#cacheMs = Math.min(opts.cacheSeconds ?? PROOF_CACHE_MAX_SECONDS, PROOF_CACHE_MAX_SECONDS) * 1000;
  }

  /** The shared question is bounded by its own deadlines (the resolver's, each server's), not by one asker's signal. */
  async check(domain: string, token: string): Promise<ProofCheck> {
    const key = `${domain}\n${token}`;
    const now = Date.now();
    const until = this.#present.get(key);
    if (until !== undefined) {
      if (until > now)
        return { state: 'present', name: challengeName(domain), detail: 'held the token when last asked' };
      this.#present.delete(key);
    }
    let pending = this.#inflight.get(key);
    if (!pending) {
      pending = askProof(this.#dns, domain, token).finally(() => this.#inflight.delete(key));
      this.#inflight.set(key, pending);
    }
    const r = await pending;
    if (r.state === 'present' && this.#cacheMs > 0) {
      // Bounded: one entry per verified scope in use; the oldest leaves first past 10,000.
      if (this.#present.size >= 10_000) this.#present.delete(this.#present.keys().next().value!);
      this.#present.set(key, now + this.#cacheMs);
    }
    return r;
  }
}
