// Names as a scan handles them: normalised (lower case, no trailing dot, A-labels), placed in the
// target's scope (its registrable domain per the whole public suffix list, private section
// included: a scan of alice.github.io is about alice.github.io, and bob.github.io is someone
// else's), and placed in the tree (the zone level a wildcard probe asks about).
import { suffixParts } from '../../../contract/public-suffix.ts';
import {
  coveringScope,
  inApprovedScope as sharedInApprovedScope,
  type ApprovedScope,
} from '../../../auth/approved-scopes.ts';

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
 * In one of the workspace's approved scopes (`example.com` approves it and every name below it).
 * The one rule of src/auth/approved-scopes.ts: a scope that approves nothing (a public suffix such
 * as `github.io`, a numeric or non-LDH row stored before the admin CLI refused them) is skipped,
 * and an address literal is never in scope.
 */
export const inApprovedScope = sharedInApprovedScope;

/**
 * The approved scope that holds a scan's active work: among the workspace's approved scopes that
 * cover the target, the widest (approving example.com and scanning shop.example.com works on
 * example.com; approving only shop.example.com keeps every active check, the zone transfer and the
 * wordlist inside shop.example.com). The admission gate picks it by the same rule (coveringScope),
 * skipping the same rows. Null when no approved scope covers the target.
 */
export function activeScopeOf(target: string, approved: readonly ApprovedScope[]): ApprovedScope | null {
  return coveringScope(target, approved);
}
