// Names as a scan handles them: normalised (lower case, no trailing dot, A-labels), placed in the
// target's scope (its registrable domain per the whole public suffix list, private section
// included: a scan of alice.github.io is about alice.github.io, and bob.github.io is someone
// else's), and placed in the tree (the zone level a wildcard probe asks about).
import { suffixParts } from '../../../contract/public-suffix.ts';

export function normalName(name: string): string {
  return name.trim().toLowerCase().replace(/\.$/, '');
}

export interface Scope {
  /** The target's registrable domain. */
  registrable: string;
  inScope(name: string): boolean;
}

/** The registrable domain of `name` (the whole public suffix list); null for a public suffix. */
export function registrableOf(name: string): string | null {
  return suffixParts(normalName(name)).registrable;
}

export function scopeOf(target: string): Scope {
  const t = normalName(target);
  const registrable = registrableOf(t) ?? t;
  return {
    registrable,
    inScope: (name) => {
      const n = normalName(name);
      return n === registrable || n.endsWith(`.${registrable}`);
    },
  };
}

/** The level a wildcard at "*.<level>" would answer for `name`: its parent. */
export function parentLevel(name: string): string {
  const n = normalName(name);
  const i = n.indexOf('.');
  return i < 0 ? '' : n.slice(i + 1);
}

/**
 * Service and policy labels (_tcp, _udp, _dmarc, _domainkey, _mta-sts…): names that are not hosts.
 * They are never web targets and never raise a takeover finding.
 */
export function isServiceName(name: string): boolean {
  return normalName(name)
    .split('.')
    .some((label) => label.startsWith('_'));
}

/** A syntactically usable host name (RFC 1035 lengths, LDH or underscore labels). */
export function isHostName(name: string): boolean {
  const n = normalName(name);
  if (n.length === 0 || n.length > 253 || /^\d+(\.\d+){3}$/.test(n) || n.includes(':')) return false;
  return n.split('.').every((l) => l.length > 0 && l.length <= 63 && /^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9])?$/.test(l));
}

/**
 * In one of the workspace's approved scopes (`example.com` approves it and every name below). A
 * public suffix approves nothing: the admin CLI refuses one, and a row stored before it did
 * (`github.io`) must not approve every owner below it.
 */
export function inApprovedScope(host: string, approved: readonly string[]): boolean {
  const h = normalName(host);
  return approved.some((s) => {
    const suffix = normalName(s);
    return (h === suffix || h.endsWith(`.${suffix}`)) && registrableOf(suffix) !== null;
  });
}

/**
 * The approved scope that holds a scan's active work: among the workspace's approved suffixes that
 * cover the target, the widest, but never above the target's registrable domain (approving
 * example.com and scanning shop.example.com works on example.com; approving only shop.example.com
 * keeps every active check, the zone transfer and the wordlist inside shop.example.com). Null when
 * no approved scope covers the target.
 */
export function activeScopeOf(target: string, registrable: string, approved: readonly string[]): string | null {
  const t = normalName(target);
  const covering = approved.map(normalName).filter((s) => s !== '' && (t === s || t.endsWith(`.${s}`)));
  if (covering.length === 0) return null;
  const widest = covering.reduce((a, b) => (b.length < a.length ? b : a));
  const r = normalName(registrable);
  return widest.length < r.length ? r : widest;
}
