// The address_registry lane: every special-purpose row that contains the address (most specific
// first), the address-space block it sits in, multicast structure, and any IPv4 address the
// format embeds (IPv4-mapped, NAT64 well-known prefix, 6to4, Teredo).
import { contains, formatIp, ipv4Text, parseCidr, type Cidr, type IpAddress } from './address.ts';
import {
  ipv4AddressSpace,
  ipv4MulticastBlocks,
  ipv6AddressSpace,
  ipv6MulticastScopes,
  specialRegistry,
  wellKnownGroups,
  type Scope,
  type SpecialPurposeRow,
} from './special-registry.ts';

/** A registry row as the projection shows it: the one block that matched, note always present. */
export type SpecialPurposeMatch = Omit<SpecialPurposeRow, 'registry' | 'blocks' | 'note' | 'scope'> & {
  addressBlock: string;
  note: string | null;
};

export interface MulticastInfo {
  /** interface_local, link_local, realm_local, admin_local, site_local, organization_local, global… */
  scope: string;
  block: string | null;
  group: string | null;
  /** IPv6 only (RFC 4291 §2.7, RFC 3306, RFC 3956): the T, P and R flags. */
  flags: { transient: boolean; prefixBased: boolean; rendezvousPointEmbedded: boolean } | null;
}

export interface EmbeddedIpv4 {
  address: string;
  mechanism: 'ipv4_mapped' | 'nat64_well_known_prefix' | '6to4' | 'teredo';
  /** Teredo only: the Teredo server's IPv4 address and the client's (de-obfuscated) UDP port. */
  teredoServer?: string;
  teredoClientPort?: number;
  /** What the embedded IPv4 address is, on its own. */
  scope: Scope;
  globallyReachable: boolean | null;
}

export interface Classification {
  normalized: string;
  version: 4 | 6;
  specialPurpose: SpecialPurposeMatch[];
  scope: Scope;
  globallyReachable: boolean | null;
  addressSpace: { block: string; name: string; rfc: string };
  multicast: MulticastInfo | null;
  embeddedIpv4: EmbeddedIpv4 | null;
}

interface CompiledRow {
  row: SpecialPurposeRow;
  cidr: Cidr;
  text: string;
}

const compiledRows: CompiledRow[] = specialRegistry.flatMap((row) =>
  row.blocks.map((text) => ({ row, cidr: parseCidr(text), text })),
);
const compiledV4Space = ipv4AddressSpace.map((b) => ({ ...b, cidr: parseCidr(b.block) }));
const compiledV6Space = ipv6AddressSpace.map((b) => ({ ...b, cidr: parseCidr(b.block) }));
const compiledV4Multicast = ipv4MulticastBlocks.map((b) => ({ ...b, cidr: parseCidr(b.block) }));

/** Every registry row containing the address, most specific (longest prefix) first. */
export function matchRows(address: IpAddress): CompiledRow[] {
  return compiledRows.filter((r) => contains(r.cidr, address)).sort((a, b) => b.cidr.bits - a.cidr.bits);
}

function toMatch(r: CompiledRow): SpecialPurposeMatch {
  const { row } = r;
  return {
    addressBlock: r.text,
    name: row.name,
    rfc: row.rfc,
    allocationDate: row.allocationDate,
    terminationDate: row.terminationDate,
    source: row.source,
    destination: row.destination,
    forwardable: row.forwardable,
    globallyReachable: row.globallyReachable,
    reservedByProtocol: row.reservedByProtocol,
    note: row.note ?? null,
  };
}

function multicastOf(address: IpAddress): MulticastInfo | null {
  const normalized = formatIp(address);
  if (address.version === 4) {
    const block = compiledV4Multicast.find((b) => contains(b.cidr, address));
    if (!block) return null;
    return { scope: block.scope, block: block.block, group: wellKnownGroups[normalized] ?? null, flags: null };
  }
  if (address.value >> 120n !== 0xffn) return null;
  const flags = Number((address.value >> 116n) & 0xfn);
  const scope = ipv6MulticastScopes[Number((address.value >> 112n) & 0xfn)] ?? 'reserved';
  let group = wellKnownGroups[normalized] ?? null;
  // Solicited-node multicast, ff02::1:ff00:0/104 (RFC 4291 §2.7.1).
  if (!group && address.value >> 24n === 0xff0200000000000000000001ffn) group = 'Solicited-Node Address';
  return {
    scope,
    block: 'ff00::/8',
    group,
    flags: { transient: (flags & 1) !== 0, prefixBased: (flags & 2) !== 0, rendezvousPointEmbedded: (flags & 4) !== 0 },
  };
}

type EmbeddedRaw = { value: bigint } & Pick<EmbeddedIpv4, 'mechanism' | 'teredoServer' | 'teredoClientPort'>;

function embeddedOf(address: IpAddress): EmbeddedRaw | null {
  if (address.version !== 6) return null;
  const a = address.value;
  const low32 = a & 0xffffffffn;
  if (a >> 32n === 0xffffn) return { value: low32, mechanism: 'ipv4_mapped' };
  if (a >> 32n === 0x0064ff9b0000000000000000n) return { value: low32, mechanism: 'nat64_well_known_prefix' };
  if (a >> 112n === 0x2002n) return { value: (a >> 80n) & 0xffffffffn, mechanism: '6to4' };
  if (a >> 96n === 0x20010000n) {
    // RFC 4380 §4: prefix | server IPv4 | flags | port XOR 0xffff | client IPv4 XOR 0xffffffff.
    return {
      value: low32 ^ 0xffffffffn,
      mechanism: 'teredo',
      teredoServer: ipv4Text((a >> 64n) & 0xffffffffn),
      teredoClientPort: Number(((a >> 32n) & 0xffffn) ^ 0xffffn),
    };
  }
  return null;
}

export function classify(address: IpAddress): Classification {
  const rows = matchRows(address);
  const specialPurpose = rows.map(toMatch);
  const space = (address.version === 4 ? compiledV4Space : compiledV6Space).find((b) => contains(b.cidr, address))!;
  const multicast = multicastOf(address);

  let scope: Scope;
  let globallyReachable: boolean | null;
  const top = rows[0];
  if (top) {
    scope = top.row.scope;
    globallyReachable = top.row.globallyReachable;
  } else if (multicast) {
    scope = 'multicast';
    // A group's reach is bounded by its scope; a global-scope group is not confined by its
    // address, but whether it reaches anyone depends on inter-domain multicast routing.
    globallyReachable = multicast.scope === 'global' ? null : false;
  } else {
    scope = space.scope;
    globallyReachable = space.scope === 'public';
  }

  const embedded = embeddedOf(address);
  let embeddedIpv4: EmbeddedIpv4 | null = null;
  if (embedded) {
    const { value, ...rest } = embedded;
    const inner = classify({ version: 4, value });
    embeddedIpv4 = {
      address: inner.normalized,
      ...rest,
      scope: inner.scope,
      globallyReachable: inner.globallyReachable,
    };
  }

  return {
    normalized: formatIp(address),
    version: address.version,
    specialPurpose,
    scope,
    globallyReachable,
    addressSpace: { block: space.block, name: space.name, rfc: space.rfc },
    multicast,
    embeddedIpv4,
  };
}
