// Names the public DNS does not answer: any answer for them comes from the resolver the service
// runs next to (a Kubernetes cluster's DNS, a PaaS's, a corporate forwarder), so asking would give
// a caller a view into the deployment's own network. Refused on input (400 invalid_request) and
// never asked by any check (./special-use-resolver.ts), unless ALLOW_SPECIAL_USE_DOMAINS lists the
// suffix (the test lab lists `test`). docs/products/dns.md lists the table and the rules.
//
// A name is special-use when:
//   1. it is, or is below, a suffix of SPECIAL_USE_SUFFIXES: the IANA Special-Use Domain Names
//      registry, the IANA Locally-Served DNS Zones registry (its non-reverse rows), and a few names
//      ICANN will never delegate;
//   2. it is below in-addr.arpa or ip6.arpa and the address prefix it names is wholly non-global
//      (address-policy.ts), unless ALLOW_PRIVATE_TARGETS covers the prefix: this covers every
//      reverse zone of both registries (10.in-addr.arpa, 168.192.in-addr.arpa, d.f.ip6.arpa…)
//      and of every other non-global range, by the same rule outbound connections follow;
//   3. its TLD is in neither section of the public suffix list (tldts, bundled): such a TLD is not
//      delegated in the root, so only a local resolver can answer. A TLD delegated after the
//      bundled list was built is refused until tldts is updated (the trade-off, documented).
// example.com, example.net and example.org are in the IANA registry but are not refused: they are
// delegated in the public DNS, answer the same everywhere and reveal nothing about the deployment
// (RFC 6761 §6.5 asks applications not to treat them specially). The `example` TLD is refused.
import ipaddr from 'ipaddr.js';
import { suffixParts } from '../contract/public-suffix.ts';
import { isAllowedTarget, isPrefixNonGlobal, prefixInAllowList } from './address-policy.ts';

/** The suffixes refused by rule 1, with where each comes from. */
export const SPECIAL_USE_SUFFIXES: ReadonlyArray<{ suffix: string; source: string }> = [
  { suffix: 'localhost', source: 'RFC 6761' },
  { suffix: 'invalid', source: 'RFC 6761' },
  { suffix: 'test', source: 'RFC 6761' },
  { suffix: 'example', source: 'RFC 6761' },
  { suffix: 'local', source: 'RFC 6762 (mDNS; also *.svc.cluster.local)' },
  { suffix: 'onion', source: 'RFC 7686' },
  { suffix: 'alt', source: 'RFC 9476' },
  { suffix: 'home.arpa', source: 'RFC 8375' },
  { suffix: 'ipv4only.arpa', source: 'RFC 8880' },
  { suffix: 'resolver.arpa', source: 'RFC 9462' },
  { suffix: 'service.arpa', source: 'RFC 9665' },
  { suffix: '6tisch.arpa', source: 'RFC 9031' },
  { suffix: 'eap-noob.arpa', source: 'RFC 9140' },
  { suffix: 'empty.as112.arpa', source: 'RFC 7534 (locally-served zones registry)' },
  { suffix: 'internal', source: 'ICANN, reserved for private use (2024)' },
  { suffix: 'corp', source: 'ICANN, never to be delegated (name collision)' },
  { suffix: 'home', source: 'ICANN, never to be delegated (name collision)' },
  { suffix: 'mail', source: 'ICANN, never to be delegated (name collision)' },
];

export type SpecialUseReason = 'special_use_domain' | 'non_global_reverse_zone' | 'unlisted_tld';

export interface SpecialUse {
  reason: SpecialUseReason;
  /** The refused suffix: the registry row, the reverse zone of the prefix, or the TLD. */
  suffix: string;
}

export interface SpecialUsePolicy {
  /** ALLOW_SPECIAL_USE_DOMAINS: suffixes asked despite all of the above. */
  allowSuffixes: readonly string[];
  /** ALLOW_PRIVATE_TARGETS: the reverse zones of these ranges may be asked. */
  allowCidrs: readonly string[];
}

export function specialUsePolicy(config: {
  ALLOW_SPECIAL_USE_DOMAINS: readonly string[];
  ALLOW_PRIVATE_TARGETS: readonly string[];
}): SpecialUsePolicy {
  return { allowSuffixes: config.ALLOW_SPECIAL_USE_DOMAINS, allowCidrs: config.ALLOW_PRIVATE_TARGETS };
}

const normal = (name: string) => name.trim().toLowerCase().replace(/\.$/, '');
const under = (name: string, suffix: string) => name === suffix || name.endsWith(`.${suffix}`);

/** The prefix a reverse name stands for (its labels read right to left until one is not an octet or nibble). */
export function reversePrefix(name: string): { net: ipaddr.IPv4 | ipaddr.IPv6; bits: number; zone: string } | null {
  const n = normal(name);
  if (under(n, 'in-addr.arpa')) {
    const labels = n.slice(0, -'in-addr.arpa'.length).split('.').filter(Boolean).reverse();
    const octets: number[] = [];
    for (const l of labels) {
      if (octets.length === 4 || !/^(0|[1-9]\d{0,2})$/.test(l) || Number(l) > 255) break;
      octets.push(Number(l));
    }
    const bytes = [...octets, 0, 0, 0, 0].slice(0, 4);
    return {
      net: new ipaddr.IPv4(bytes),
      bits: octets.length * 8,
      zone: reverseZone(octets.map(String), 'in-addr.arpa'),
    };
  }
  if (under(n, 'ip6.arpa')) {
    const labels = n.slice(0, -'ip6.arpa'.length).split('.').filter(Boolean).reverse();
    const nibbles: string[] = [];
    for (const l of labels) {
      if (nibbles.length === 32 || !/^[0-9a-f]$/.test(l)) break;
      nibbles.push(l);
    }
    const hex = nibbles.join('').padEnd(32, '0');
    const bytes = Array.from({ length: 16 }, (_, i) => Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16));
    return { net: ipaddr.fromByteArray(bytes), bits: nibbles.length * 4, zone: reverseZone(nibbles, 'ip6.arpa') };
  }
  return null;
}

function reverseZone(labels: string[], apex: string): string {
  return [...labels].reverse().concat(apex).join('.');
}

/** Why `name` may not be asked or looked up; null when it may. */
export function specialUseOf(name: string, policy: SpecialUsePolicy): SpecialUse | null {
  const n = normal(name);
  if (n === '' || policy.allowSuffixes.some((s) => under(n, normal(s)))) return null;
  const row = SPECIAL_USE_SUFFIXES.find((r) => under(n, r.suffix));
  if (row) return { reason: 'special_use_domain', suffix: row.suffix };
  const reverse = reversePrefix(n);
  if (reverse) {
    if (
      isPrefixNonGlobal(reverse.net, reverse.bits) &&
      !prefixInAllowList(reverse.net, reverse.bits, policy.allowCidrs)
    )
      return { reason: 'non_global_reverse_zone', suffix: reverse.zone };
    return null;
  }
  const tld = n.slice(n.lastIndexOf('.') + 1);
  if (suffixParts(tld).section === 'unlisted') return { reason: 'unlisted_tld', suffix: tld };
  return null;
}

/**
 * May the service ask the PTR of `address`? Only for an address outbound checks may reach: a
 * globally reachable one (IPv4-mapped and NAT64 forms judged by the IPv4 address they carry), or
 * one inside ALLOW_PRIVATE_TARGETS. The reverse zones of private ranges are answered by the local
 * resolver, so their names describe the deployment's network, not the target's.
 */
export function mayAskReverse(address: string, allowCidrs: readonly string[]): boolean {
  return isAllowedTarget(address, allowCidrs);
}

/** Human text for a refusal (error messages, limitations). */
export function specialUseText(s: SpecialUse): string {
  switch (s.reason) {
    case 'special_use_domain':
      return `${s.suffix} is a special-use domain: only a local resolver answers for it`;
    case 'non_global_reverse_zone':
      return `${s.suffix} is the reverse zone of a range that is not globally reachable: only a local resolver answers for it`;
    case 'unlisted_tld':
      return `.${s.suffix} is not a top-level domain of the public suffix list: only a local resolver answers for it`;
  }
}
