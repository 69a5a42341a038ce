// Where a name sits in the DNS tree according to the public suffix list (ICANN section only:
// registries delegate and register at ICANN suffixes; private suffixes such as blogspot.com are
// one registrant's subdomains, not registrations).
import { parse } from 'tldts';

export interface NameParts {
  /** The target, normalised (A-labels, lower case, no trailing dot). */
  name: string;
  /** The name a registrant registered; null when the target is itself a public suffix. */
  registrableDomain: string | null;
  publicSuffix: string | null;
  /** The zone whose delegation is checked: the registrable domain, else the name itself. */
  zone: string;
  /** The target is a subdomain of its registrable domain. */
  belowRegistrable: boolean;
}

export function nameParts(value: string): NameParts {
  const name = value.toLowerCase().replace(/\.$/, '');
  const p = parse(name, { extractHostname: false, allowPrivateDomains: false, detectIp: false });
  const registrableDomain = p.domain ?? null;
  return {
    name,
    registrableDomain,
    publicSuffix: p.publicSuffix ?? null,
    zone: registrableDomain ?? name,
    belowRegistrable: registrableDomain !== null && registrableDomain !== name,
  };
}
