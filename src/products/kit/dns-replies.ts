// Shared by the domain checks: what a resolver reply proves, and how a check that got no usable
// reply reports itself (lane status, reason, limitation) instead of reporting absence.
import ipaddr from 'ipaddr.js';
import type { QueryResult, Resolver } from '../../dns/types.ts';
import { isDeterminate } from '../../dns/presence.ts';

export { outcomeText } from '../../dns/presence.ts';
import type { CheckOutput, ObjectOut } from '../../contract/tasks.ts';
import type { LaneStatus, Limitation, SourceRef } from '../../contract/lanes.ts';
import type { ProductRuntime } from './product-contract.ts';

export const DNS_SOURCE: SourceRef = { source: 'dns_resolver' };

export function resolverOf(runtime: ProductRuntime): Resolver | undefined {
  return runtime.services.resolver;
}

/** A reply that says something about the name (present or absent: src/dns/presence.ts). */
export const known = isDeterminate;

/** Lane status and reason when none of `results` is known. */
export function failureOf(results: QueryResult[]): {
  status: Extract<LaneStatus, 'timeout' | 'unavailable'>;
  reason: string;
} {
  // Never sent (src/dns/congestion.ts, zone-backoff.ts): our outcome, not the target's silence.
  if (results.some((r) => r.congested)) return { status: 'unavailable', reason: 'dns_not_asked' };
  if (results.every((r) => r.zoneBackoff)) return { status: 'timeout', reason: 'dns_zone_backed_off' };
  if (results.every((r) => r.outcome === 'timeout')) return { status: 'timeout', reason: 'dns_timeout' };
  // Every answer led out of public DNS and was cut (src/net/special-use-resolver.ts).
  if (results.every((r) => r.outcome === 'left_public_dns'))
    return { status: 'unavailable', reason: 'answer_leaves_public_dns' };
  if (results.some((r) => r.outcome === 'servfail')) return { status: 'unavailable', reason: 'dns_servfail' };
  if (results.some((r) => r.outcome === 'refused')) return { status: 'unavailable', reason: 'dns_refused' };
  return { status: 'unavailable', reason: 'dns_error' };
}

export function queryStatus(r: QueryResult): { outcome: QueryResult['outcome']; rcode: string | null } {
  return { outcome: r.outcome, rcode: r.rcode };
}

export function hostName(v: unknown): string {
  return String(v).toLowerCase().replace(/\.$/, '');
}

/** Canonical text of an address (RFC 5952 for IPv6); null for anything that is not one. */
export function canonicalIp(v: unknown): string | null {
  try {
    const a = ipaddr.parse(String(v));
    return a.kind() === 'ipv6' ? (a as ipaddr.IPv6).toRFC5952String() : a.toString();
  } catch {
    return null;
  }
}

export function ipObject(address: string, distance: number): ObjectOut {
  return {
    type: 'ip_address',
    key: address,
    distance,
    projection: { address, version: address.includes(':') ? 6 : 4 },
  };
}

/** A check that could not run or got nothing usable: its status, no objects beyond `objects`. */
export function notRun(
  status: LaneStatus,
  reason: string,
  limitations: Limitation[],
  sources: SourceRef[],
  projection: Record<string, unknown> = {},
  objects: ObjectOut[] = [],
): CheckOutput {
  return { status, reason, projection, objects, relations: [], findings: [], limitations, sources };
}
