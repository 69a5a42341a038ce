// The name a PTR question asks for an address (RFC 1035 §3.5, RFC 3596 §2.5): the IPv4 octets
// reversed under in-addr.arpa, the 32 IPv6 nibbles reversed under ip6.arpa.
import ipaddr from 'ipaddr.js';

/** null for anything that is not an IP address. */
export function ptrName(address: string): string | null {
  let a: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    a = ipaddr.parse(address);
  } catch {
    return null;
  }
  if (a.kind() === 'ipv4') return `${(a as ipaddr.IPv4).octets.slice().reverse().join('.')}.in-addr.arpa`;
  const hex = Buffer.from((a as ipaddr.IPv6).toByteArray()).toString('hex');
  return `${[...hex].reverse().join('.')}.ip6.arpa`;
}
