// The MX set of a domain as every mail lane sees it (mx, smtp_starttls, dane, mta_sts, dkim ask it
// themselves: lanes run in parallel, and the resolver answers the repeats from the same zone).
// Null MX (RFC 7505) and the implicit MX of RFC 5321 §5.1 (no MX: the domain's own address) are
// states of the set, not errors.
import { isIP, isIPv6 } from 'node:net';
import type { QueryResult } from '../../dns/types.ts';
import { presence, recordsOf, type Presence } from '../../dns/presence.ts';
import { canonicalIp, hostName } from '../kit/dns-replies.ts';
import type { DnsAsker } from './dns-snapshot.ts';

/** Hosts beyond this are listed but not resolved or connected to (real sets have 1–5). */
export const MAX_MX_HOSTS = 10;

export interface MxEntry {
  name: string;
  preference: number;
  /** The exchange is written as an IP address (a misconfiguration). */
  ipLiteral: boolean;
}

export type MxState = 'mx' | 'null_mx' | 'no_mx' | 'unknown';

export interface MxSet {
  query: QueryResult;
  presence: Presence;
  state: MxState;
  /** A null MX next to other records (RFC 7505 §3 forbids it). */
  nullMixed: boolean;
  /** Preference order, ties by name; "." removed. */
  hosts: MxEntry[];
}

export async function mxSet(asker: DnsAsker, domain: string): Promise<MxSet> {
  const query = await asker.ask(domain, 'MX');
  const p = presence(query);
  const raw = recordsOf(query).map((r) => r.data as { preference: number; exchange: string });
  const isNull = (mx: { exchange: string }) => hostName(mx.exchange) === '' || mx.exchange === '.';
  const nulls = raw.filter(isNull);
  const seen = new Set<string>();
  const hosts: MxEntry[] = [];
  for (const mx of raw
    .filter((m) => !isNull(m))
    .sort((a, b) => a.preference - b.preference || a.exchange.localeCompare(b.exchange))) {
    const name = hostName(mx.exchange);
    if (seen.has(name)) continue;
    seen.add(name);
    hosts.push({ name, preference: mx.preference, ipLiteral: isIP(name) !== 0 });
  }
  let state: MxState;
  if (p === 'indeterminate') state = 'unknown';
  else if (p === 'absent') state = 'no_mx';
  else state = nulls.length > 0 && hosts.length === 0 ? 'null_mx' : 'mx';
  return { query, presence: p, state, nullMixed: nulls.length > 0 && hosts.length > 0, hosts };
}

/**
 * The addresses of a host that are tested (SMTP sessions, reverse DNS): one IPv4 and one IPv6 when
 * there are both, else the first two.
 */
export function pickAddresses(addresses: readonly string[]): string[] {
  const v4 = addresses.find((a) => !isIPv6(a));
  const v6 = addresses.find((a) => isIPv6(a));
  const pair = [v4, v6].filter((a): a is string => a !== undefined);
  return (pair.length === 2 ? pair : addresses).slice(0, 2);
}

export type HostResolution = 'resolved' | 'nxdomain' | 'no_addresses' | 'unknown';

export interface HostAddresses {
  name: string;
  addresses: string[];
  resolution: HostResolution;
  /** The first alias on the way to the addresses (the name itself is a CNAME). */
  cname: string | null;
  a: QueryResult;
  aaaa: QueryResult;
}

/** A and AAAA of a host, with the same present/absent/indeterminate rule as every question. */
export async function hostAddresses(asker: DnsAsker, name: string): Promise<HostAddresses> {
  const [a, aaaa] = await Promise.all([asker.ask(name, 'A'), asker.ask(name, 'AAAA')]);
  const addresses = [...recordsOf(a), ...recordsOf(aaaa)]
    .map((r) => canonicalIp(r.data))
    .filter((x): x is string => x !== null);
  const pa = presence(a);
  const p6 = presence(aaaa);
  let resolution: HostResolution;
  if (addresses.length > 0) resolution = 'resolved';
  else if (pa === 'absent' && p6 === 'absent')
    resolution = a.outcome === 'nxdomain' && aaaa.outcome === 'nxdomain' ? 'nxdomain' : 'no_addresses';
  else resolution = 'unknown';
  const alias = [...a.answers, ...aaaa.answers].find((r) => r.type === 'CNAME' && hostName(r.name) === name);
  return { name, addresses: [...new Set(addresses)], resolution, cname: alias ? hostName(alias.data) : null, a, aaaa };
}

export type Delivery =
  | { kind: 'hosts'; mx: MxSet; hosts: string[]; implicit: boolean }
  /** Null MX, or no MX and no address: the domain receives no mail, so receiving checks do not apply. */
  | { kind: 'no_mail'; mx: MxSet; reason: 'null_mx' | 'no_mx_no_address' }
  /** The MX set (or, without MX, the domain's own addresses) got no usable reply. */
  | { kind: 'unknown'; mx: MxSet; query: QueryResult };

/** The hosts mail for the domain goes to: the MX hosts, or the domain itself (implicit MX). */
export async function deliveryHosts(asker: DnsAsker, domain: string): Promise<Delivery> {
  const mx = await mxSet(asker, domain);
  if (mx.state === 'unknown') return { kind: 'unknown', mx, query: mx.query };
  if (mx.state === 'null_mx') return { kind: 'no_mail', mx, reason: 'null_mx' };
  if (mx.state === 'mx') {
    const hosts = mx.hosts
      .filter((h) => !h.ipLiteral)
      .slice(0, MAX_MX_HOSTS)
      .map((h) => h.name);
    return { kind: 'hosts', mx, hosts, implicit: false };
  }
  const self = await hostAddresses(asker, domain);
  if (self.resolution === 'resolved') return { kind: 'hosts', mx, hosts: [domain], implicit: true };
  if (self.resolution === 'unknown')
    return { kind: 'unknown', mx, query: presence(self.a) === 'indeterminate' ? self.a : self.aaaa };
  return { kind: 'no_mail', mx, reason: 'no_mx_no_address' };
}
