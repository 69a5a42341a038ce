// Approved target scopes: which names a workspace's active work may touch (CONTRACT §2), and the
// one rule for what a scope may be. Approval is a name an operator (or the domain's own DNS, with
// proof of control: scope-proof.ts) vouched for, so a scope must name someone's domain:
//
//   - letters, digits and hyphens only (LDH labels, no leading or trailing hyphen, no `_`), two
//     labels at least, at most 253 characters;
//   - not numeric: a last label of digits is an IP address's tail (`10.0.0.1`, `8.8.8`, `0.1`), and
//     as a suffix it would approve every IP literal ending in it;
//   - not a public suffix of either section of the public suffix list (`com`, `co.uk`,
//     `github.io`): nobody's name, it would approve every owner below it; nor below `arpa`;
//   - not special-use (`cluster.local`, `corp.internal`, `home.arpa`, a TLD outside the list…:
//     net/special-use.ts), unless ALLOW_SPECIAL_USE_DOMAINS lists it (the lab's `test`).
//
// The admin CLI refuses such a scope (approvableScope). Rows stored before it did are removed
// (sql/migrations/011 for the shape, pruneUnapprovableScopes at release for the list), and every
// reader applies approvesNames, so a row that slips through approves nothing: the admission gate
// and the scan planner share coveringScope, and the planner's inApprovedScope (names.ts) too.
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { suffixParts } from '../contract/public-suffix.ts';
import { specialUseOf, specialUseText, type SpecialUsePolicy } from '../net/special-use.ts';

/** How a scope was approved: the domain's DNS holds the workspace's token, or an operator said so. */
export type ScopeProof = 'verified' | 'operator_override';

export interface ApprovedScope {
  /** The suffix as stored (lower case A-labels, no trailing dot): it and every name below it. */
  domain: string;
  proof: ScopeProof;
  /** The challenge token the TXT record must hold (verified scopes); null otherwise. */
  token: string | null;
}

/** A name that may not be an approved target scope; the message says why. */
export class InvalidScopeError extends Error {}

const LDH_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

const normal = (name: string) => name.trim().toLowerCase().replace(/\.$/, '');

/** Why a stored or proposed scope approves nothing, from its shape and the list alone; null when it may approve. */
function shapeProblem(s: string): string | null {
  if (s.length === 0 || s.length > 253) return 'not a domain name';
  if (isIP(s) !== 0) return 'an IP address, not a domain name';
  const labels = s.split('.');
  const bad = labels.find((l) => !LDH_LABEL.test(l));
  if (bad !== undefined)
    return `label "${bad}" is not letters, digits and hyphens (LDH, no leading or trailing hyphen)`;
  if (/^\d+$/.test(labels.at(-1)!))
    return 'numeric: it ends like an IP address and would approve every address literal ending in it';
  if (labels.length < 2)
    return suffixParts(s).section === 'unlisted'
      ? 'a public suffix (a top-level domain outside the public suffix list)'
      : 'a public suffix (a top-level domain)';
  if (labels.at(-1) === 'arpa') return 'a name under arpa (infrastructure: no one owns host names there)';
  const p = suffixParts(s);
  if (p.registrable === null)
    return `a public suffix (${p.section === 'unlisted' ? 'a top-level domain outside the public suffix list' : `${p.section} section of the public suffix list`})`;
  return null;
}

/**
 * Does a stored scope approve the names below it? The rule every reader applies (a row stored
 * before the CLI refused it, or a suffix the public suffix list gained since, approves nothing).
 */
export function approvesNames(suffix: string): boolean {
  return shapeProblem(normal(suffix)) === null;
}

/**
 * A domain as the admin CLI takes it (`*.` and a trailing dot dropped, case folded, IDN to
 * A-labels) → the scope to store; InvalidScopeError with the reason otherwise.
 */
export function approvableScope(input: string, policy: SpecialUsePolicy): string {
  let s = normal(input).replace(/^\*\./, '');
  if (!/^[\x21-\x7e]*$/.test(s)) s = domainToASCII(s);
  const problem = shapeProblem(s);
  if (problem !== null) throw new InvalidScopeError(`not an approvable scope: ${input.trim() || '""'} is ${problem}`);
  const special = specialUseOf(s, policy);
  if (special !== null)
    throw new InvalidScopeError(
      `not an approvable scope: ${s} is special-use (${specialUseText(special)}); nobody can prove control of it from the public DNS`,
    );
  return s;
}

const covers = (scope: string, host: string) => host === scope || host.endsWith(`.${scope}`);

/** A host name (never an address literal: a scope is a domain) inside one of the approved suffixes. */
export function inApprovedScope(host: string, approved: readonly string[]): boolean {
  const h = normal(host).replace(/^\[(.*)\]$/, '$1');
  if (isIP(h) !== 0) return false;
  return approved.some((s) => {
    const suffix = normal(s);
    return covers(suffix, h) && approvesNames(suffix);
  });
}

/**
 * The approved scope that holds active work on `host`: the widest of the workspace's scopes that
 * covers it and approves names. One rule for the admission gate and the scan planner (which keeps
 * the zone transfer, the wordlist and every probe inside it). A valid scope is never above its
 * own registrable domain, so the widest is never above the host's either. Null when none covers it.
 */
export function coveringScope<S extends { domain: string }>(host: string, approved: readonly S[]): S | null {
  const h = normal(host).replace(/^\[(.*)\]$/, '$1');
  if (isIP(h) !== 0) return null;
  let widest: S | null = null;
  for (const s of approved) {
    const d = normal(s.domain);
    if (covers(d, h) && approvesNames(d) && (widest === null || d.length < normal(widest.domain).length)) widest = s;
  }
  return widest;
}
