// Strict reading of one IP address in text form, and the few conversions the lanes need.
// ipaddr.js does the IPv6 grammar and RFC 5952 text; this file refuses what ipaddr.js would
// accept but a lookup should not: IPv4 in octal/hex/short forms, leading-zero octets, CIDR
// suffixes, zone indexes, and it reads "::a.b.c.d" as RFC 4291 says (ipaddr.js maps it to ::ffff:).
import ipaddr from 'ipaddr.js';

export interface IpAddress {
  version: 4 | 6;
  /** 32-bit (v4) or 128-bit (v6) unsigned value. */
  value: bigint;
}

export type ParseResult = { ok: true; address: IpAddress } | { ok: false; message: string };

const V4_DOTTED = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function parseDottedQuad(text: string): { value: number } | { error: string } | null {
  const m = V4_DOTTED.exec(text);
  if (!m) return null;
  let value = 0;
  for (let i = 1; i <= 4; i++) {
    const part = m[i]!;
    if (part.length > 1 && part.startsWith('0')) {
      return {
        error: `IPv4 octet "${part}" has a leading zero, which some parsers read as octal: write it without leading zeros`,
      };
    }
    const n = Number(part);
    if (n > 255) return { error: `IPv4 octet "${part}" is greater than 255` };
    value = value * 256 + n;
  }
  return { value };
}

export function parseIp(input: string): ParseResult {
  const text = input;
  if (text.length === 0) return { ok: false, message: 'must be an IPv4 or IPv6 address' };
  if (text !== text.trim()) return { ok: false, message: 'must not have leading or trailing whitespace' };
  if (text.includes('/')) {
    return { ok: false, message: 'must be a single address, not a CIDR prefix (remove the "/length" part)' };
  }
  if (text.includes('%')) {
    return {
      ok: false,
      message: 'must not carry an IPv6 zone index ("%…"): a zone only has meaning on the host that wrote it',
    };
  }
  if (text.startsWith('[') || text.endsWith(']')) {
    return { ok: false, message: 'must be a bare address, without URL brackets' };
  }

  if (!text.includes(':')) {
    const v4 = parseDottedQuad(text);
    if (v4 === null) {
      return { ok: false, message: 'must be an IPv4 address in dotted-decimal form (a.b.c.d) or an IPv6 address' };
    }
    if ('error' in v4) return { ok: false, message: v4.error };
    return { ok: true, address: { version: 4, value: BigInt(v4.value) } };
  }

  // IPv6. An embedded IPv4 tail (RFC 4291 §2.2 form 3) is read strictly here and turned into
  // two hex groups, so ipaddr.js only ever sees the pure hexadecimal grammar.
  let hex = text;
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = parseDottedQuad(tail);
    if (v4 === null)
      return { ok: false, message: 'must be an IPv6 address; the embedded IPv4 part is not dotted-decimal a.b.c.d' };
    if ('error' in v4) return { ok: false, message: v4.error };
    const hi = Math.floor(v4.value / 65536);
    const lo = v4.value % 65536;
    hex = `${text.slice(0, lastColon + 1)}${hi.toString(16)}:${lo.toString(16)}`;
  }
  if (!/^[0-9A-Fa-f:]+$/.test(hex) || !ipaddr.IPv6.isValid(hex)) {
    return { ok: false, message: 'must be an IPv4 or IPv6 address' };
  }
  const parts = ipaddr.IPv6.parse(hex).parts;
  let value = 0n;
  for (const p of parts) value = (value << 16n) | BigInt(p);
  return { ok: true, address: { version: 6, value } };
}

export function widthOf(version: 4 | 6): bigint {
  return version === 4 ? 32n : 128n;
}

export function ipv4Text(value: bigint): string {
  const n = Number(value);
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

function ipv6Parts(value: bigint): number[] {
  const parts: number[] = [];
  for (let i = 7; i >= 0; i--) parts.push(Number((value >> BigInt(i * 16)) & 0xffffn));
  return parts;
}

/**
 * Canonical text: dotted decimal for IPv4; RFC 5952 for IPv6, with the mixed notation RFC 5952 §5
 * recommends for the prefixes that identify an embedded IPv4 address by themselves
 * (IPv4-mapped ::ffff:0:0/96 and IPv4-translated ::ffff:0:0:0/96).
 */
export function formatIp(address: IpAddress): string {
  if (address.version === 4) return ipv4Text(address.value);
  const high96 = address.value >> 32n;
  const low32 = address.value & 0xffffffffn;
  if (high96 === 0xffffn) return `::ffff:${ipv4Text(low32)}`;
  if (high96 === 0xffff0000n) return `::ffff:0:${ipv4Text(low32)}`;
  return new ipaddr.IPv6(ipv6Parts(address.value)).toRFC5952String();
}

export interface Cidr {
  version: 4 | 6;
  base: bigint;
  bits: number;
}

export function parseCidr(text: string): Cidr {
  const [addr, len] = text.split('/');
  const parsed = parseIp(addr ?? '');
  if (!parsed.ok || len === undefined) throw new Error(`bad CIDR in table: ${text}`);
  const bits = Number(len);
  const width = Number(widthOf(parsed.address.version));
  if (!Number.isInteger(bits) || bits < 0 || bits > width) throw new Error(`bad CIDR length in table: ${text}`);
  const c: Cidr = { version: parsed.address.version, base: parsed.address.value, bits };
  if (firstOf(c) !== c.base) throw new Error(`CIDR has host bits set in table: ${text}`);
  return c;
}

export function firstOf(c: Cidr): bigint {
  const host = widthOf(c.version) - BigInt(c.bits);
  return (c.base >> host) << host;
}

export function lastOf(c: Cidr): bigint {
  const host = widthOf(c.version) - BigInt(c.bits);
  return firstOf(c) | ((1n << host) - 1n);
}

export function contains(c: Cidr, a: IpAddress): boolean {
  if (c.version !== a.version) return false;
  const host = widthOf(c.version) - BigInt(c.bits);
  return a.value >> host === c.base >> host;
}

/** The name a PTR lookup asks for: d.c.b.a.in-addr.arpa or the 32 reversed nibbles under ip6.arpa. */
export function reverseName(address: IpAddress): string {
  if (address.version === 4) return `${ipv4Text(address.value).split('.').reverse().join('.')}.in-addr.arpa`;
  const hex = address.value.toString(16).padStart(32, '0');
  return `${[...hex].reverse().join('.')}.ip6.arpa`;
}
