// Proof of control of an approved scope, as scanners that sell active testing ask for it: the
// operator runs `scope challenge`, the domain's owner publishes the token as a TXT record at
// `_lss-challenge.<domain>`, and `scope approve --verify` approves only when the project's resolver
// finds it there. The scope is then `verified`, and active work on it asks again (at most
// SCOPE_PROOF_CACHE_SECONDS after the last answer that held the token, one hour by default): once
// the record is gone, active work stops (admission refuses with approved_target_scope_required,
// details.reason proof_missing; an active task already queued ends unavailable with proof_missing).
//
// What a question can say, by the one DNS rule (dns/presence.ts):
//   present        a TXT record at the name holds exactly the token
//   missing        the resolver answered: no such name, no TXT there (NXDOMAIN, NODATA), or TXT
//                  records none of which is the token
//   indeterminate  SERVFAIL, REFUSED, timeout, unreachable resolver…: nothing is known. Never read
//                  as proof (nothing runs) and never as its absence (the scope stays approved);
//                  admission answers 503 service_unavailable with Retry-After, a lane task ends
//                  unavailable with proof_indeterminate. Not cached: the next request asks again.
// Only `present` is cached, per process, so a removal takes effect within the cache time.
//
// What counts as the record (issue 45): a TXT answer proves control only when its owner is
// `_lss-challenge.<scope>` itself or a name reached from it through CNAMEs that all stay inside
// the scope's registrable domain: a dangling `*.victim.example CNAME x.expired.example` must not
// let whoever registers expired.example prove victim.example. And a random sibling
// (`_lss-nonce-<random>.<scope>`) that answers TXT too means a wildcard answers for every name
// there: not a proof of anything published for us (missing; indeterminate if the sibling's
// question is).
import { randomBytes } from 'node:crypto';
import { suffixParts } from '../contract/public-suffix.ts';
import { outcomeText, presence } from '../dns/presence.ts';
import type { Resolver } from '../dns/types.ts';

/** The label under the scope where the token is published. */
export const CHALLENGE_LABEL = '_lss-challenge';
/** What a cached `present` is worth at most (SCOPE_PROOF_CACHE_SECONDS is capped to this). */
export const PROOF_CACHE_MAX_SECONDS = 3600;

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
  /** Human text: what the resolver said. */
  detail: string;
}

/** One question: does the TXT record at _lss-challenge.<domain> hold `token`? */
export async function askProof(
  resolver: Resolver,
  domain: string,
  token: string,
  signal?: AbortSignal,
): Promise<ProofCheck> {
  const name = challengeName(domain);
  const reply = await resolver.query(name, 'TXT', signal ? { signal } : {});
  const p = presence(reply);
  if (p === 'indeterminate')
    return {
      state: 'indeterminate',
      name,
      detail: `TXT ${name}: ${outcomeText(reply)}; whether it holds the token is unknown`,
    };
  if (p === 'absent') return { state: 'missing', name, detail: `${name} has no TXT record (${outcomeText(reply)})` };
  const owner = suffixParts(domain).registrable ?? domain;
  const inside = (n: unknown) => {
    const h = String(n).toLowerCase().replace(/\.$/, '');
    return h === owner || h.endsWith(`.${owner}`);
  };
  const away = reply.answers.find((a) => a.type === 'CNAME' && !inside(a.data));
  if (away)
    return {
      state: 'missing',
      name,
      detail: `${name} is reached through a CNAME to ${String(away.data)}, outside ${owner}: not a proof of control of ${domain}`,
    };
  // A TXT record is one or more character strings: the value is their concatenation (RFC 7208 §3.3 style).
  const values = reply.answers
    .filter((a) => a.type === 'TXT' && inside(a.name))
    .map((a) => (Array.isArray(a.data) ? a.data.map(String).join('') : String(a.data)).trim());
  if (!values.includes(token))
    return {
      state: 'missing',
      name,
      detail: `${name} has ${values.length} TXT record(s), none of them this workspace's token`,
    };
  // The token is there: is it there for every name (a wildcard)? Ask a sibling nobody published.
  const sibling = `_lss-nonce-${randomBytes(8).toString('hex')}.${domain}`;
  const other = await resolver.query(sibling, 'TXT', signal ? { signal } : {});
  const seen = presence(other);
  if (seen === 'indeterminate')
    return {
      state: 'indeterminate',
      name,
      detail: `TXT ${sibling} (the wildcard check): ${outcomeText(other)}; whether the token is published for ${name} alone is unknown`,
    };
  if (seen === 'present' && other.answers.some((a) => a.type === 'TXT'))
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
  readonly #resolver: Resolver;
  readonly #cacheMs: number;
  readonly #present = new Map<string, number>();
  readonly #inflight = new Map<string, Promise<ProofCheck>>();

  constructor(resolver: Resolver, opts: { cacheSeconds?: number } = {}) {
    this.#resolver = resolver;
    this.#cacheMs = Math.min(opts.cacheSeconds ?? PROOF_CACHE_MAX_SECONDS, PROOF_CACHE_MAX_SECONDS) * 1000;
  }

  /** The shared question is bounded by the resolver's own deadline (DNS_TIMEOUT_MS), not by one asker's signal. */
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
      pending = askProof(this.#resolver, domain, token).finally(() => this.#inflight.delete(key));
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
