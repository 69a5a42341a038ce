// The IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890, as amended by RFC 8190),
// transcribed row by row, plus the address-space structure those registries leave out (IPv4 and
// IPv6 multicast, the IPv6 Address Space registry's top-level allocations).
//
//   https://www.iana.org/assignments/iana-ipv4-special-registry/   (Last Updated 2025-10-09, 25 rows)
//   https://www.iana.org/assignments/iana-ipv6-special-registry/   (Last Updated 2025-10-09, 25 rows)
//
// Columns kept as the registry has them. Boolean columns are true/false; "N/A" is null; the
// terminated rows (192.88.99.0/24, 2001:10::/28) have empty attribute cells, also null.
// `scope` is this service's classification of the row, not a registry column.
// When IANA updates a registry, update the rows and REGISTRY_VERSION together.

export const REGISTRY_VERSION = 'ipv4-special 2025-10-09; ipv6-special 2025-10-09';

export const scopes = [
  'public', // ordinary unicast outside every special-purpose row
  'private', // RFC 1918
  'shared', // RFC 6598 carrier-grade NAT space
  'loopback',
  'link_local',
  'unspecified',
  'this_network',
  'broadcast',
  'multicast',
  'reserved', // reserved for future use / not allocated for any use today
  'documentation',
  'benchmarking',
  'discard',
  'dummy',
  'protocol_assignment', // IETF protocol assignments (192.0.0.0/24, 2001::/23) without a more specific use
  'anycast', // a service anycast address or prefix (PCP, TURN, AS112, AMT, DNS-SD SRP)
  'translation', // IPv4/IPv6 translation prefixes (NAT64)
  'transition', // tunnelling transition mechanisms (Teredo, 6to4, 6a44)
  'ipv4_mapped',
  'unique_local',
  'site_local', // fec0::/10, deprecated by RFC 3879
  'overlay_identifier', // ORCHIDv2, DRIP entity tags: identifiers, not locators
  'segment_routing',
  'deprecated', // a terminated registry row
] as const;
export type Scope = (typeof scopes)[number];

export interface SpecialPurposeRow {
  registry: 'ipv4' | 'ipv6';
  /** Usually one block; the registry lists 192.0.0.170/32 and 192.0.0.171/32 as one row. */
  blocks: readonly string[];
  name: string;
  rfc: string;
  allocationDate: string;
  terminationDate: string | null;
  source: boolean | null;
  destination: boolean | null;
  forwardable: boolean | null;
  globallyReachable: boolean | null;
  reservedByProtocol: boolean | null;
  /** Registry footnotes attached to the row, verbatim in substance. */
  note?: string;
  scope: Scope;
}

type Flags = [
  source: boolean | null,
  destination: boolean | null,
  forwardable: boolean | null,
  globallyReachable: boolean | null,
  reservedByProtocol: boolean | null,
];

function row(
  registry: 'ipv4' | 'ipv6',
  blocks: string | string[],
  name: string,
  rfc: string,
  allocationDate: string,
  terminationDate: string | null,
  flags: Flags,
  scope: Scope,
  note?: string,
): SpecialPurposeRow {
  const [source, destination, forwardable, globallyReachable, reservedByProtocol] = flags;
  return {
    registry,
    blocks: Array.isArray(blocks) ? blocks : [blocks],
    name,
    rfc,
    allocationDate,
    terminationDate,
    source,
    destination,
    forwardable,
    globallyReachable,
    reservedByProtocol,
    ...(note ? { note } : {}),
    scope,
  };
}

const T = true;
const F = false;
const NA = null;
const EMPTY: Flags = [NA, NA, NA, NA, NA];

const LOOPBACK_NOTE =
  'Several protocols have been granted exceptions to this rule. For examples, see RFC 8029 and RFC 5884.';
const PROTOCOL_ASSIGNMENTS_V4_NOTE = 'Not usable unless by virtue of a more specific reservation.';
const PROTOCOL_ASSIGNMENTS_V6_NOTE = 'Unless allowed by a more specific allocation.';
const ULA_NOTE =
  'See RFC 4193 for more details on the routability of Unique-Local addresses. The Unique-Local prefix is drawn from the IPv6 Global Unicast Address range, but is specified as not globally routed.';

// Order as in the registry.            source destination forwardable global reservedByProtocol
export const ipv4SpecialRegistry: readonly SpecialPurposeRow[] = [
  row('ipv4', '0.0.0.0/8', '"This network"', 'RFC 791, Section 3.2', '1981-09', null, [T, F, F, F, T], 'this_network'),
  row(
    'ipv4',
    '0.0.0.0/32',
    '"This host on this network"',
    'RFC 1122, Section 3.2.1.3',
    '1981-09',
    null,
    [T, F, F, F, T],
    'unspecified',
  ),
  row('ipv4', '10.0.0.0/8', 'Private-Use', 'RFC 1918', '1996-02', null, [T, T, T, F, F], 'private'),
  row('ipv4', '100.64.0.0/10', 'Shared Address Space', 'RFC 6598', '2012-04', null, [T, T, T, F, F], 'shared'),
  row(
    'ipv4',
    '127.0.0.0/8',
    'Loopback',
    'RFC 1122, Section 3.2.1.3',
    '1981-09',
    null,
    [F, F, F, F, T],
    'loopback',
    LOOPBACK_NOTE,
  ),
  row('ipv4', '169.254.0.0/16', 'Link Local', 'RFC 3927', '2005-05', null, [T, T, F, F, T], 'link_local'),
  row('ipv4', '172.16.0.0/12', 'Private-Use', 'RFC 1918', '1996-02', null, [T, T, T, F, F], 'private'),
  row(
    'ipv4',
    '192.0.0.0/24',
    'IETF Protocol Assignments',
    'RFC 6890, Section 2.1',
    '2010-01',
    null,
    [F, F, F, F, F],
    'protocol_assignment',
    PROTOCOL_ASSIGNMENTS_V4_NOTE,
  ),
  row(
    'ipv4',
    '192.0.0.0/29',
    'IPv4 Service Continuity Prefix',
    'RFC 7335',
    '2011-06',
    null,
    [T, T, T, F, F],
    'transition',
  ),
  row('ipv4', '192.0.0.8/32', 'IPv4 dummy address', 'RFC 7600', '2015-03', null, [T, F, F, F, F], 'dummy'),
  row('ipv4', '192.0.0.9/32', 'Port Control Protocol Anycast', 'RFC 7723', '2015-10', null, [T, T, T, T, F], 'anycast'),
  row(
    'ipv4',
    '192.0.0.10/32',
    'Traversal Using Relays around NAT Anycast',
    'RFC 8155',
    '2017-02',
    null,
    [T, T, T, T, F],
    'anycast',
  ),
  row(
    'ipv4',
    ['192.0.0.170/32', '192.0.0.171/32'],
    'NAT64/DNS64 Discovery',
    'RFC 8880; RFC 7050, Section 2.2',
    '2013-02',
    null,
    [F, F, F, F, T],
    'protocol_assignment',
  ),
  row(
    'ipv4',
    '192.0.2.0/24',
    'Documentation (TEST-NET-1)',
    'RFC 5737',
    '2010-01',
    null,
    [F, F, F, F, F],
    'documentation',
  ),
  row('ipv4', '192.31.196.0/24', 'AS112-v4', 'RFC 7535', '2014-12', null, [T, T, T, T, F], 'anycast'),
  row('ipv4', '192.52.193.0/24', 'AMT', 'RFC 7450', '2014-12', null, [T, T, T, T, F], 'anycast'),
  row(
    'ipv4',
    '192.88.99.0/24',
    'Deprecated (6to4 Relay Anycast)',
    'RFC 7526',
    '2001-06',
    '2015-03',
    EMPTY,
    'deprecated',
  ),
  row(
    'ipv4',
    '192.88.99.2/32',
    '6a44-relay anycast address',
    'RFC 6751',
    '2012-10',
    null,
    [T, T, T, F, F],
    'transition',
  ),
  row('ipv4', '192.168.0.0/16', 'Private-Use', 'RFC 1918', '1996-02', null, [T, T, T, F, F], 'private'),
  row(
    'ipv4',
    '192.175.48.0/24',
    'Direct Delegation AS112 Service',
    'RFC 7534',
    '1996-01',
    null,
    [T, T, T, T, F],
    'anycast',
  ),
  row('ipv4', '198.18.0.0/15', 'Benchmarking', 'RFC 2544', '1999-03', null, [T, T, T, F, F], 'benchmarking'),
  row(
    'ipv4',
    '198.51.100.0/24',
    'Documentation (TEST-NET-2)',
    'RFC 5737',
    '2010-01',
    null,
    [F, F, F, F, F],
    'documentation',
  ),
  row(
    'ipv4',
    '203.0.113.0/24',
    'Documentation (TEST-NET-3)',
    'RFC 5737',
    '2010-01',
    null,
    [F, F, F, F, F],
    'documentation',
  ),
  row('ipv4', '240.0.0.0/4', 'Reserved', 'RFC 1112, Section 4', '1989-08', null, [F, F, F, F, T], 'reserved'),
  row(
    'ipv4',
    '255.255.255.255/32',
    'Limited Broadcast',
    'RFC 8190; RFC 919, Section 7',
    '1984-10',
    null,
    [F, T, F, F, T],
    'broadcast',
  ),
];

export const ipv6SpecialRegistry: readonly SpecialPurposeRow[] = [
  row('ipv6', '::1/128', 'Loopback Address', 'RFC 4291', '2006-02', null, [F, F, F, F, T], 'loopback'),
  row('ipv6', '::/128', 'Unspecified Address', 'RFC 4291', '2006-02', null, [T, F, F, F, T], 'unspecified'),
  row('ipv6', '::ffff:0:0/96', 'IPv4-mapped Address', 'RFC 4291', '2006-02', null, [F, F, F, F, T], 'ipv4_mapped'),
  row('ipv6', '64:ff9b::/96', 'IPv4-IPv6 Translat.', 'RFC 6052', '2010-10', null, [T, T, T, T, F], 'translation'),
  row('ipv6', '64:ff9b:1::/48', 'IPv4-IPv6 Translat.', 'RFC 8215', '2017-06', null, [T, T, T, F, F], 'translation'),
  row('ipv6', '100::/64', 'Discard-Only Address Block', 'RFC 6666', '2012-06', null, [T, T, T, F, F], 'discard'),
  row('ipv6', '100:0:0:1::/64', 'Dummy IPv6 Prefix', 'RFC 9780', '2025-04', null, [T, F, F, F, F], 'dummy'),
  row(
    'ipv6',
    '2001::/23',
    'IETF Protocol Assignments',
    'RFC 2928',
    '2000-09',
    null,
    [F, F, F, F, F],
    'protocol_assignment',
    PROTOCOL_ASSIGNMENTS_V6_NOTE,
  ),
  row(
    'ipv6',
    '2001::/32',
    'TEREDO',
    'RFC 4380; RFC 8190',
    '2006-01',
    null,
    [T, T, T, NA, F],
    'transition',
    'Globally reachable: N/A. See Section 5 of RFC 4380 for details.',
  ),
  row(
    'ipv6',
    '2001:1::1/128',
    'Port Control Protocol Anycast',
    'RFC 7723',
    '2015-10',
    null,
    [T, T, T, T, F],
    'anycast',
  ),
  row(
    'ipv6',
    '2001:1::2/128',
    'Traversal Using Relays around NAT Anycast',
    'RFC 8155',
    '2017-02',
    null,
    [T, T, T, T, F],
    'anycast',
  ),
  row(
    'ipv6',
    '2001:1::3/128',
    'DNS-SD Service Registration Protocol Anycast',
    'RFC 9665',
    '2024-04',
    null,
    [T, T, T, T, F],
    'anycast',
  ),
  row(
    'ipv6',
    '2001:2::/48',
    'Benchmarking',
    'RFC 5180; RFC Errata 1752',
    '2008-04',
    null,
    [T, T, T, F, F],
    'benchmarking',
  ),
  row('ipv6', '2001:3::/32', 'AMT', 'RFC 7450', '2014-12', null, [T, T, T, T, F], 'anycast'),
  row('ipv6', '2001:4:112::/48', 'AS112-v6', 'RFC 7535', '2014-12', null, [T, T, T, T, F], 'anycast'),
  row('ipv6', '2001:10::/28', 'Deprecated (previously ORCHID)', 'RFC 4843', '2007-03', '2014-03', EMPTY, 'deprecated'),
  row('ipv6', '2001:20::/28', 'ORCHIDv2', 'RFC 7343', '2014-07', null, [T, T, T, T, F], 'overlay_identifier'),
  row(
    'ipv6',
    '2001:30::/28',
    'Drone Remote ID Protocol Entity Tags (DETs) Prefix',
    'RFC 9374',
    '2022-12',
    null,
    [T, T, T, T, F],
    'overlay_identifier',
  ),
  row('ipv6', '2001:db8::/32', 'Documentation', 'RFC 3849', '2004-07', null, [F, F, F, F, F], 'documentation'),
  row(
    'ipv6',
    '2002::/16',
    '6to4',
    'RFC 3056',
    '2001-02',
    null,
    [T, T, T, NA, F],
    'transition',
    'Globally reachable: N/A. See RFC 3056 for details.',
  ),
  row(
    'ipv6',
    '2620:4f:8000::/48',
    'Direct Delegation AS112 Service',
    'RFC 7534',
    '2011-05',
    null,
    [T, T, T, T, F],
    'anycast',
  ),
  row('ipv6', '3fff::/20', 'Documentation', 'RFC 9637', '2024-07', null, [F, F, F, F, F], 'documentation'),
  row(
    'ipv6',
    '5f00::/16',
    'Segment Routing (SRv6) SIDs',
    'RFC 9602',
    '2024-04',
    null,
    [T, T, T, F, F],
    'segment_routing',
  ),
  row(
    'ipv6',
    'fc00::/7',
    'Unique-Local',
    'RFC 4193; RFC 8190',
    '2005-10',
    null,
    [T, T, T, F, F],
    'unique_local',
    ULA_NOTE,
  ),
  row('ipv6', 'fe80::/10', 'Link-Local Unicast', 'RFC 4291', '2006-02', null, [T, T, F, F, T], 'link_local'),
];

export const specialRegistry: readonly SpecialPurposeRow[] = [...ipv4SpecialRegistry, ...ipv6SpecialRegistry];

/**
 * Address-space structure outside the special-purpose registries: the IPv4 multicast block
 * (RFC 5771) and the IANA IPv6 Address Space registry's top-level allocations (RFC 4291).
 * Used for `addressSpace` and for the scope of addresses no special-purpose row covers.
 */
export interface AddressSpaceBlock {
  block: string;
  name: string;
  rfc: string;
  scope: Scope;
}

export const ipv4AddressSpace: readonly AddressSpaceBlock[] = [
  { block: '0.0.0.0/1', name: 'Unicast (former class A)', rfc: 'RFC 791', scope: 'public' },
  { block: '128.0.0.0/2', name: 'Unicast (former class B)', rfc: 'RFC 791', scope: 'public' },
  { block: '192.0.0.0/3', name: 'Unicast (former class C)', rfc: 'RFC 791', scope: 'public' },
  { block: '224.0.0.0/4', name: 'Multicast', rfc: 'RFC 5771', scope: 'multicast' },
  { block: '240.0.0.0/4', name: 'Reserved for future use', rfc: 'RFC 1112, Section 4', scope: 'reserved' },
];

export const ipv6AddressSpace: readonly AddressSpaceBlock[] = [
  { block: '::/8', name: 'Reserved by IETF', rfc: 'RFC 4291', scope: 'reserved' },
  { block: '100::/8', name: 'Reserved by IETF', rfc: 'RFC 4291', scope: 'reserved' },
  {
    block: '200::/7',
    name: 'Reserved by IETF (formerly OSI NSAP-mapped, deprecated)',
    rfc: 'RFC 4048',
    scope: 'reserved',
  },
  { block: '400::/6', name: 'Reserved by IETF', rfc: 'RFC 4291', scope: 'reserved' },
  { block: '800::/5', name: 'Reserved by IETF', rfc: 'RFC 4291', scope: 'reserved' },
  { block: '1000::/4', name: 'Reserved by IETF', rfc: 'RFC 4291', scope: 'reserved' },
  { block: '2000::/3', name: 'Global Unicast', rfc: 'RFC 4291', scope: 'public' },
  { block: '4000::/3', name: 'Reserved by IETF', rfc: 'RFC 4291', scope: 'reserved' },
  { block: '6000::/3', name: 'Reserved by IETF', rfc: 'RFC 4291', scope: 'reserved' },
  { block: '8000::/3', name: 'Reserved by IETF', rfc: 'RFC 4291', scope: 'reserved' },
  { block: 'a000::/3', name: 'Reserved by IETF', rfc: 'RFC 4291', scope: 'reserved' },
  { block: 'c000::/3', name: 'Reserved by IETF', rfc: 'RFC 4291', scope: 'reserved' },
  { block: 'e000::/4', name: 'Reserved by IETF', rfc: 'RFC 4291', scope: 'reserved' },
  { block: 'f000::/5', name: 'Reserved by IETF', rfc: 'RFC 4291', scope: 'reserved' },
  { block: 'f800::/6', name: 'Reserved by IETF', rfc: 'RFC 4291', scope: 'reserved' },
  { block: 'fc00::/7', name: 'Unique Local Unicast', rfc: 'RFC 4193', scope: 'unique_local' },
  { block: 'fe00::/9', name: 'Reserved by IETF', rfc: 'RFC 4291', scope: 'reserved' },
  { block: 'fe80::/10', name: 'Link-Scoped Unicast', rfc: 'RFC 4291', scope: 'link_local' },
  {
    block: 'fec0::/10',
    name: 'Reserved by IETF (formerly Site-Local, deprecated)',
    rfc: 'RFC 3879',
    scope: 'site_local',
  },
  { block: 'ff00::/8', name: 'Multicast', rfc: 'RFC 4291', scope: 'multicast' },
];

/** RFC 4291 §2.7 as updated by RFC 7346 §2: the 4-bit scope of an IPv6 multicast address. */
export const ipv6MulticastScopes: readonly string[] = [
  'reserved', // 0
  'interface_local', // 1
  'link_local', // 2
  'realm_local', // 3
  'admin_local', // 4
  'site_local', // 5
  'unassigned', // 6
  'unassigned', // 7
  'organization_local', // 8
  'unassigned', // 9
  'unassigned', // a
  'unassigned', // b
  'unassigned', // c
  'unassigned', // d
  'global', // e
  'reserved', // f
];

/** IPv4 multicast sub-blocks (IANA IPv4 Multicast Address Space registry, RFC 5771), most specific first. */
export const ipv4MulticastBlocks: readonly { block: string; name: string; scope: string }[] = [
  { block: '224.0.0.0/24', name: 'Local Network Control Block', scope: 'link_local' },
  { block: '224.0.1.0/24', name: 'Internetwork Control Block', scope: 'global' },
  { block: '232.0.0.0/8', name: 'Source-Specific Multicast Block', scope: 'global' },
  { block: '233.252.0.0/14', name: 'AD-HOC Block III', scope: 'global' },
  { block: '233.0.0.0/8', name: 'GLOP Block', scope: 'global' },
  { block: '234.0.0.0/8', name: 'Unicast-Prefix-based IPv4 Multicast Addresses', scope: 'global' },
  { block: '239.255.0.0/16', name: 'Administratively Scoped: IPv4 Local Scope', scope: 'admin_local' },
  {
    block: '239.192.0.0/14',
    name: 'Administratively Scoped: IPv4 Organization Local Scope',
    scope: 'organization_local',
  },
  { block: '239.0.0.0/8', name: 'Administratively Scoped Block', scope: 'admin_local' },
  { block: '224.0.0.0/4', name: 'Multicast', scope: 'global' },
];

/** A few well-known groups, enough to name the ones people actually look up. */
export const wellKnownGroups: Readonly<Record<string, string>> = {
  '224.0.0.1': 'All Systems on this Subnet',
  '224.0.0.2': 'All Routers on this Subnet',
  '224.0.0.5': 'OSPFIGP All Routers',
  '224.0.0.6': 'OSPFIGP Designated Routers',
  '224.0.0.9': 'RIP2 Routers',
  '224.0.0.13': 'All PIM Routers',
  '224.0.0.22': 'IGMP',
  '224.0.0.251': 'mDNS',
  '224.0.0.252': 'Link-local Multicast Name Resolution',
  '224.0.1.1': 'NTP',
  '239.255.255.250': 'SSDP',
  'ff01::1': 'All Nodes Address (interface-local)',
  'ff02::1': 'All Nodes Address',
  'ff01::2': 'All Routers Address (interface-local)',
  'ff02::2': 'All Routers Address',
  'ff05::2': 'All Routers Address (site-local)',
  'ff02::5': 'OSPFIGP',
  'ff02::6': 'OSPFIGP Designated Routers',
  'ff02::9': 'RIP Routers',
  'ff02::d': 'All PIM Routers',
  'ff02::16': 'All MLDv2-capable routers',
  'ff02::fb': 'mDNSv6',
  'ff02::1:2': 'All-dhcp-agents',
  'ff05::1:3': 'All-dhcp-servers',
  'ff02::1:3': 'Link-local Multicast Name Resolution',
  'ff0e::101': 'NTP',
};
