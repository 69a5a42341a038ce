// The one rule every product and lane applies to a DNS question (SERVICE.md "missing coverage
// never reads as an all-clear"):
//
//   present        the reply holds records of the asked type (at the name or at the end of its
//                  CNAME chain)
//   absent         the resolver answered, and the answer is an authoritative denial: NXDOMAIN, or
//                  NOERROR without records of the type (NODATA, including a CNAME chain that ends
//                  at a name without them)
//   indeterminate  anything else: SERVFAIL, REFUSED, FORMERR, NOTIMP, another rcode, a timeout, an
//                  unreachable resolver or a malformed reply. Nothing is known.
//
// "Authoritative" is the resolver's rcode, not the AA bit: the service asks recursive resolvers,
// whose answers carry AA=0 even when they come straight from the zone's servers. Only `absent` may
// ever produce a "missing X" finding; `indeterminate` makes the lane at best `partial` and adds a
// limitation naming the type (indeterminateLimitation below).
import type { DnsRecord, QueryResult } from './types.ts';

export type Presence = 'present' | 'absent' | 'indeterminate';

/** Records of the asked type (the CNAMEs of the chain are left out, except for a CNAME question). */
export function recordsOf(r: QueryResult): DnsRecord[] {
  return r.answers.filter((a) => a.type === r.type);
}

export function presence(r: QueryResult): Presence {
  if (r.outcome === 'answer' || r.outcome === 'nodata') return recordsOf(r).length > 0 ? 'present' : 'absent';
  if (r.outcome === 'nxdomain') return 'absent';
  return 'indeterminate';
}

/** The reply said something about the name (present or absent). */
export function isDeterminate(r: QueryResult): boolean {
  return presence(r) !== 'indeterminate';
}

/** "SERVFAIL", "no reply before the deadline"… for messages. */
export function outcomeText(r: QueryResult): string {
  if (r.notAsked) return `not asked (${r.notAsked})`;
  if (r.zoneBackoff) return `not asked: ${r.zoneBackoff} did not answer its recent questions in time`;
  if (r.congested)
    return `not asked: our questions to ${r.congested} waited in our own queue (congestion window) too long`;
  if (r.leftPublicDns && r.outcome === 'left_public_dns')
    return `the answer left public DNS after ${r.leftPublicDns.name} (${r.leftPublicDns.why}) and was cut there`;
  if (r.rateLimited && r.outcome === 'timeout')
    return `no reply before the deadline, while ${r.rateLimited} answered other questions (rate limiting)`;
  if (r.outcome === 'timeout') return 'no reply before the deadline';
  if (r.outcome === 'error') return 'no usable reply';
  return r.rcode ?? r.outcome;
}

export interface DnsLimitation {
  code: 'dns_indeterminate';
  message: string;
}

/**
 * The limitation an indeterminate question adds: it names the type and the name, says what came
 * back, and says that nothing is known (so no reader takes the gap for an absence).
 */
export function indeterminateLimitation(r: QueryResult, purpose?: string): DnsLimitation {
  const what = purpose ? ` (${purpose})` : '';
  return {
    code: 'dns_indeterminate',
    message: `${r.type} ${r.name}${what}: ${outcomeText(r)}; whether it has ${r.type} records is unknown.`,
  };
}
