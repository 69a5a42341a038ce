// Which IP addresses outbound checks may connect to. Everything that is not globally reachable
// unicast is refused — loopback, private, link-local (with the cloud metadata endpoints), CGNAT,
// unspecified, multicast, documentation and other reserved blocks, and the IPv4-mapped / NAT64
// forms of those — unless an operator CIDR (ALLOW_PRIVATE_TARGETS) explicitly allows it.
//
// The table is explicit rather than ipaddr.js's range() names so a reviewer can audit it against
// the IANA special-purpose registries line by line. IPv6 is allow-listed: only 2000::/3 (global
// unicast) minus the reserved blocks inside it is public.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export type RefusedRange =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'metadata'
  | 'cgnat'
  | 'multicast'
  | 'documentation'
  | 'reserved'
  | 'invalid'
  /** In ACTIVE_DENY_CIDRS: active work never connects there (vetting.ts), whatever else allows it. */
  | 'active_denied';

type Addr = ipaddr.IPv4 | ipaddr.IPv6;
type Block = { net: Addr; bits: number; range: Exclude<RefusedRange, 'invalid' | 'active_denied'> };

function blocks(rows: Array<[string, Block['range']]>): Block[] {
  return rows.map(([cidr, range]) => {
    const [net, bits] = ipaddr.parseCIDR(cidr);
    return { net, bits, range };
  });
}

// First match wins: specific entries (metadata) come before the block that contains them.
const V4_REFUSED = blocks([
  ['0.0.0.0/8', 'unspecified'], // "this network" (RFC 791); 0.0.0.0 reaches the local host on Linux
  ['10.0.0.0/8', 'private'],
  ['100.100.100.200/32', 'metadata'], // Alibaba Cloud metadata (inside CGNAT)
  ['100.64.0.0/10', 'cgnat'], // RFC 6598 shared address space
  ['127.0.0.0/8', 'loopback'],
  ['169.254.169.254/32', 'metadata'], // AWS, GCP, Azure, OpenStack… instance metadata
  ['169.254.0.0/16', 'link_local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'], // IETF protocol assignments
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', 'reserved'], // deprecated 6to4 relay anycast
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'reserved'], // benchmarking
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['168.63.129.16/32', 'metadata'], // Azure WireServer: public-looking, reachable only from inside Azure
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'], // includes 255.255.255.255
]);

const V6_REFUSED = blocks([
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::/96', 'reserved'], // deprecated IPv4-compatible addresses
  ['64:ff9b:1::/48', 'private'], // local-use NAT64 (RFC 8215)
  ['100::/64', 'reserved'], // discard-only
  ['2001::/23', 'reserved'], // IETF protocol assignments: Teredo, benchmarking, ORCHID…
  ['2001:db8::/32', 'documentation'],
  ['2002::/16', 'reserved'], // 6to4 embeds an arbitrary IPv4 address: refused as a whole
  ['3fff::/20', 'documentation'], // RFC 9637
  ['5f00::/16', 'reserved'], // SRv6 SIDs
  ['fd00:ec2::254/128', 'metadata'], // AWS IMDS over IPv6
  ['fc00::/7', 'private'], // unique local
  ['fe80::/10', 'link_local'],
  ['fec0::/10', 'reserved'], // deprecated site-local
  ['ff00::/8', 'multicast'],
]);

const [GLOBAL_UNICAST, GLOBAL_UNICAST_BITS] = ipaddr.parseCIDR('2000::/3');
const [NAT64, NAT64_BITS] = ipaddr.parseCIDR('64:ff9b::/96');

/** Strict parse: only the canonical textual forms (no "127.1", no "0x7f.0.0.1"); zone ids allowed. */
export function parseAddress(ip: string): Addr | null {
  const bare = ip.trim().replace(/^\[(.*)\]$/, '$1');
  if (isIP(bare.replace(/%.*$/, '')) === 0) return null;
  try {
    return ipaddr.parse(bare);
  } catch {
    return null;
  }
}

/**
 * The deployment's network-specific NAT64 prefixes (NAT64_PREFIXES), set once at start
 * (kit/runtime.ts): a DNS64 that synthesizes AAAA records under one of them turns every IPv4
 * address, private ones included, into an IPv6 address the table above would call public.
 */
let nat64Prefixes: Array<[ipaddr.IPv6, number]> = [];

export function setNat64Prefixes(cidrs: readonly string[]): void {
  nat64Prefixes = cidrs.map((c) => ipaddr.parseCIDR(c.trim()) as [ipaddr.IPv6, number]);
}

/** RFC 6052 §2.2: where the IPv4 octets sit for each prefix length (bits 64-71, octet 8, are skipped). */
function nat64Decode(b: number[], bits: number): ipaddr.IPv4 {
  const at = bits / 8;
  const octets = [...b.slice(at, 8), ...b.slice(9)].slice(0, 4);
  return new ipaddr.IPv4(bits === 96 ? b.slice(12) : octets);
}

/** The IPv4 address an IPv6 address stands for (IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::a.b.c.d or NAT64_PREFIXES). */
function embeddedV4(a: ipaddr.IPv6): ipaddr.IPv4 | null {
  if (a.isIPv4MappedAddress()) return a.toIPv4Address();
  if (a.match(NAT64, NAT64_BITS)) {
    const b = a.toByteArray();
    return new ipaddr.IPv4(b.slice(12));
  }
  for (const [net, bits] of nat64Prefixes) if (a.match(net, bits)) return nat64Decode(a.toByteArray(), bits);
  return null;
}

function matchTable(a: Addr, table: Block[]): Block['range'] | null {
  for (const b of table) if (a.kind() === b.net.kind() && a.match(b.net, b.bits)) return b.range;
  return null;
}

/** 'public' for a globally reachable unicast address, else the refused range it belongs to. */
export function classifyAddress(ip: string): 'public' | RefusedRange {
  const a = parseAddress(ip);
  if (!a) return 'invalid';
  if (a.kind() === 'ipv4') return matchTable(a, V4_REFUSED) ?? 'public';
  // ipaddr.js reads any "::a.b.c.d" as IPv4-mapped; only ::ffff: and NAT64 prefixes really are.
  if (/\d\.\d+$/.test(ip) && !/^\[?(::ffff:|(0{1,4}:){5}ffff:|64:ff9b::)/i.test(ip.trim())) return 'reserved';
  const v6 = a as ipaddr.IPv6;
  const v4 = embeddedV4(v6);
  if (v4) return matchTable(v4, V4_REFUSED) ?? 'public';
  const hit = matchTable(v6, V6_REFUSED);
  if (hit) return hit;
  return v6.match(GLOBAL_UNICAST, GLOBAL_UNICAST_BITS) ? 'public' : 'reserved';
}

const cidrCache = new Map<string, [Addr, number] | null>();
function parseCidr(cidr: string): [Addr, number] | null {
  let hit = cidrCache.get(cidr);
  if (hit === undefined) {
    try {
      hit = ipaddr.parseCIDR(cidr.trim());
    } catch {
      hit = null; // config validation rejects bad CIDRs; one that slips through allows nothing
    }
    if (cidrCache.size < 1024) cidrCache.set(cidr, hit);
  }
  return hit;
}

/** True when `ip` lies in one of the CIDRs (an IPv4-mapped/NAT64 address also matches IPv4 CIDRs). */
export function inAllowList(ip: string, allow: readonly string[]): boolean {
  const a = parseAddress(ip);
  if (!a || allow.length === 0) return false;
  const forms: Addr[] = [a];
  if (a.kind() === 'ipv6') {
    const v4 = embeddedV4(a as ipaddr.IPv6);
    if (v4) forms.push(v4);
  }
  for (const cidr of allow) {
    const c = parseCidr(cidr);
    if (!c) continue;
    for (const f of forms) if (f.kind() === c[0].kind() && f.match(c[0], c[1])) return true;
  }
  return false;
}

/** The IPv6 prefixes whose addresses classifyAddress reads as the IPv4 address they embed. */
const V4_CARRIERS: Array<[ipaddr.IPv6, number]> = [
  ipaddr.parseCIDR('::ffff:0:0/96') as [ipaddr.IPv6, number],
  [NAT64 as ipaddr.IPv6, NAT64_BITS],
];

/** The half of a prefix one bit longer (0 or 1 for that bit). */
function half(net: Addr, bits: number, bit: 0 | 1): Addr {
  const bytes = net.toByteArray();
  const i = bits >> 3;
  if (bit === 1) bytes[i] = bytes[i]! | (0x80 >> (bits & 7));
  return ipaddr.fromByteArray(bytes);
}

/** `inner` lies inside the block (b, bBits). */
const within = (net: Addr, bits: number, b: Addr, bBits: number) =>
  net.kind() === b.kind() && bits >= bBits && net.match(b, bBits);
/** The block (b, bBits) lies inside the prefix (and is smaller). */
const holds = (net: Addr, bits: number, b: Addr, bBits: number) =>
  net.kind() === b.kind() && bBits > bits && b.match(net, bits);

/**
 * Is every address of the prefix refused by classifyAddress (no globally reachable address in it)?
 * Used for reverse zones: `10.in-addr.arpa` is wholly private, `192.in-addr.arpa` is not. The
 * prefix is split in halves only where a table boundary runs through it, so the walk is short.
 */
export function isPrefixNonGlobal(net: Addr, bits: number): boolean {
  if (net.kind() === 'ipv4') {
    if (V4_REFUSED.some((b) => within(net, bits, b.net, b.bits))) return true;
    if (!V4_REFUSED.some((b) => holds(net, bits, b.net, b.bits))) return false;
  } else {
    if (V6_REFUSED.some((b) => within(net, bits, b.net, b.bits))) return true;
    for (const [carrier, cBits] of V4_CARRIERS) {
      if (within(net, bits, carrier, cBits)) {
        const bytes = net.toByteArray().slice(12);
        return isPrefixNonGlobal(new ipaddr.IPv4(bytes), Math.max(0, bits - 96));
      }
    }
    const touchesCarrier = V4_CARRIERS.some(([c, b]) => holds(net, bits, c, b));
    const touchesGlobal =
      within(net, bits, GLOBAL_UNICAST, GLOBAL_UNICAST_BITS) || holds(net, bits, GLOBAL_UNICAST, GLOBAL_UNICAST_BITS);
    if (!touchesGlobal && !touchesCarrier) return true; // outside 2000::/3 and the IPv4 carriers: reserved
    if (
      within(net, bits, GLOBAL_UNICAST, GLOBAL_UNICAST_BITS) &&
      !V6_REFUSED.some((b) => holds(net, bits, b.net, b.bits))
    )
      return false;
  }
  const max = net.kind() === 'ipv4' ? 32 : 128;
  if (bits >= max) return classifyAddress(net.toString()) !== 'public';
  return isPrefixNonGlobal(half(net, bits, 0), bits + 1) && isPrefixNonGlobal(half(net, bits, 1), bits + 1);
}

/** The prefix lies wholly inside one of the CIDRs (ALLOW_PRIVATE_TARGETS); IPv4-mapped and NAT64 prefixes also match IPv4 CIDRs. */
export function prefixInAllowList(net: Addr, bits: number, allow: readonly string[]): boolean {
  const forms: Array<[Addr, number]> = [[net, bits]];
  if (net.kind() === 'ipv6' && bits >= 96 && V4_CARRIERS.some(([c, b]) => within(net, bits, c, b)))
    forms.push([new ipaddr.IPv4(net.toByteArray().slice(12)), bits - 96]);
  for (const cidr of allow) {
    const c = parseCidr(cidr);
    if (c && forms.some(([n, b]) => within(n, b, c[0], c[1]))) return true;
  }
  return false;
}

/**
 * May an outbound check connect to `ip`? Public unicast: yes. Anything else only when it lies in
 * one of `allow` (ALLOW_PRIVATE_TARGETS). An unparseable address is never allowed.
 */
export function isAllowedTarget(ip: string, allow: readonly string[]): boolean {
  const range = classifyAddress(ip);
  if (range === 'public') return true;
  if (range === 'invalid') return false;
  return inAllowList(ip, allow);
}
