// Forward-confirmed reverse DNS of the MX addresses (FCrDNS, the "iprev" of RFC 8601 §3): the PTR
// of each address, then the A or AAAA of each name it gives, which must lead back to the address.
// Receivers score it (RFC 5321 §4.1.4 forbids refusing mail on it alone). The same addresses the
// smtp_starttls lane connects to (first 5 hosts, one IPv4 and one IPv6 each), in two waves.
//
// PTR is asked only where reverse DNS is allowed (mayAskReverse: globally reachable, or inside
// ALLOW_PRIVATE_TARGETS): the reverse zones of private ranges are answered by the resolver the
// service runs next to, so their names would describe our network, not the target.
import { presence, recordsOf } from '../../dns/presence.ts';
import { ptrName } from '../../dns/reverse-name.ts';
import type { QueryResult } from '../../dns/types.ts';
import { mayAskReverse } from '../../net/special-use.ts';
import { canonicalIp, hostName } from '../kit/dns-replies.ts';
import { evidenceLine, type DnsAsker } from './dns-snapshot.ts';
import { mailFinding } from './findings.ts';
import { pickAddresses } from './mx-hosts.ts';
import type { LaneOutput } from './output.ts';
import type { MxProjection } from './schema.ts';

export const MAX_REVERSE_HOSTS = 5;
/** PTR names followed forward per address (a PTR set rarely has more than one). */
export const MAX_PTR_NAMES = 3;

export type ReverseState = 'pass' | 'fail' | 'permerror' | 'temperror' | 'not_asked';

export interface ReverseRow {
  address: string;
  /** RFC 8601 §2.7.3 iprev results; not_asked: outside the reverse-DNS policy. */
  state: ReverseState;
  ptr: string[];
  /** The PTR name whose A/AAAA leads back to the address. */
  confirmedBy: string | null;
  /** The replies that decided the state (evidence), the indeterminate one first for temperror. */
  replies: QueryResult[];
}

export async function reverseRows(
  asker: DnsAsker,
  addresses: readonly string[],
  allow: readonly string[],
): Promise<ReverseRow[]> {
  const asked = addresses.map((address) => {
    const name = mayAskReverse(address, allow) ? ptrName(address) : null;
    return { address, name };
  });
  const ptrReplies = await Promise.all(asked.map((a) => (a.name ? asker.ask(a.name, 'PTR') : null)));
  const names = ptrReplies.map((r) =>
    r && presence(r) === 'present'
      ? [...new Set(recordsOf(r).map((p) => hostName(p.data)))].filter((n) => n.length > 0).slice(0, MAX_PTR_NAMES)
      : [],
  );
  const forward = await Promise.all(
    asked.map((a, i) => Promise.all(names[i]!.map((n) => asker.ask(n, a.address.includes(':') ? 'AAAA' : 'A')))),
  );
  return asked.map(({ address }, i): ReverseRow => {
    const ptr = ptrReplies[i];
    if (!ptr) return { address, state: 'not_asked', ptr: [], confirmedBy: null, replies: [] };
    const p = presence(ptr);
    if (p === 'indeterminate') return { address, state: 'temperror', ptr: [], confirmedBy: null, replies: [ptr] };
    if (p === 'absent') return { address, state: 'permerror', ptr: [], confirmedBy: null, replies: [ptr] };
    const fwd = forward[i]!;
    const back = fwd.findIndex((r) => recordsOf(r).some((rec) => canonicalIp(rec.data) === address));
    const ptrNames = names[i]!;
    if (back >= 0)
      return { address, state: 'pass', ptr: ptrNames, confirmedBy: ptrNames[back]!, replies: [ptr, fwd[back]!] };
    const failed = fwd.find((r) => presence(r) === 'indeterminate');
    if (failed) return { address, state: 'temperror', ptr: ptrNames, confirmedBy: null, replies: [failed, ptr] };
    return { address, state: 'fail', ptr: ptrNames, confirmedBy: null, replies: [ptr, ...fwd] };
  });
}

type Host = MxProjection['hosts'][number];

/**
 * Sets `reverse` on the first hosts of the MX set and reports on the lane: a finding per host for
 * addresses without PTR (permerror) or whose PTR names do not lead back (fail), a limitation for
 * every address whose answer failed (temperror) or that was not asked.
 */
export async function checkReverse(
  asker: DnsAsker,
  out: LaneOutput,
  hosts: Host[],
  allow: readonly string[],
): Promise<void> {
  const tested = hosts.slice(0, MAX_REVERSE_HOSTS).filter((h) => !h.ipLiteral && h.addresses.length > 0);
  const picked = tested.map((h) => pickAddresses(h.addresses));
  const rows = await reverseRows(asker, picked.flat(), allow);
  let at = 0;
  tested.forEach((h, i) => {
    const mine = rows.slice(at, at + picked[i]!.length);
    at += picked[i]!.length;
    h.reverse = mine.map(({ replies: _r, ...row }) => row);
    const ref = { type: 'mx_host', key: h.name };
    const missing = mine.filter((r) => r.state === 'permerror');
    if (missing.length > 0)
      out.finding(
        mailFinding(
          'mx_reverse_dns_missing',
          ref,
          `The MX host ${h.name} has no reverse DNS for ${missing.map((r) => r.address).join(', ')}.`,
          missing.flatMap((r) => r.replies.map(evidenceLine)),
        ),
      );
    const failing = mine.filter((r) => r.state === 'fail');
    if (failing.length > 0)
      out.finding(
        mailFinding(
          'mx_reverse_dns_mismatch',
          ref,
          `The reverse DNS of ${h.name} (${failing.map((r) => `${r.address} → ${r.ptr.join(', ')}`).join('; ')}) does not resolve back to the address.`,
          failing.flatMap((r) => r.replies.map(evidenceLine)),
        ),
      );
    for (const r of mine) {
      if (r.state === 'temperror') out.indeterminate(r.replies[0]!, `reverse DNS of ${r.address} (MX ${h.name})`);
      if (r.state === 'not_asked')
        out.partial({
          code: 'reverse_dns_not_allowed',
          message: `The reverse DNS of ${r.address} (MX ${h.name}) was not asked: the address is neither globally reachable nor inside ALLOW_PRIVATE_TARGETS, so its PTR would come from the resolver the service runs next to.`,
        });
    }
  });
}
