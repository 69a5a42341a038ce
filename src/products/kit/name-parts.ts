// Where a name sits in the DNS tree according to the public suffix list (src/contract/public-suffix.ts).
// Delegation and registration follow the ICANN section: registries delegate and register at ICANN
// suffixes, and private suffixes such as blogspot.com are one registrant's subdomains. The whole
// list (private section included) says who controls the name: `alice.github.io` is its own owner's,
// not GitHub's, and that is what the domain lookup reports beside the ICANN view.
import { icannParts, suffixParts, type SuffixSection } from '../../contract/public-suffix.ts';

export interface NameParts {
  /** The target, normalised (A-labels, lower case, no trailing dot). */
  name: string;
  /** The name a registrant registered (ICANN section); null when the target is itself a public suffix. */
  registrableDomain: string | null;
  /** ICANN section. */
  publicSuffix: string | null;
  /** The zone whose delegation is checked: the registrable domain, else the name itself. */
  zone: string;
  /** The target is a subdomain of its registrable domain. */
  belowRegistrable: boolean;
  /** Which section of the whole list matched the name's longest suffix ('unlisted': neither). */
  suffixSection: SuffixSection;
  /** The private-section suffix the name is under (github.io); null unless suffixSection is 'private'. */
  privateSuffix: string | null;
  /** The owner's name under that private suffix (alice.github.io); null unless below a private suffix. */
  privateRegistrableDomain: string | null;
}

export function nameParts(value: string): NameParts {
  const name = value.toLowerCase().replace(/\.$/, '');
  const icann = icannParts(name);
  const full = suffixParts(name);
  const registrableDomain = icann.registrable;
  const isPrivate = full.section === 'private';
  return {
    name,
    registrableDomain,
    publicSuffix: icann.suffix,
    zone: registrableDomain ?? name,
    belowRegistrable: registrableDomain !== null && registrableDomain !== name,
    suffixSection: full.section,
    privateSuffix: isPrivate ? full.suffix : null,
    privateRegistrableDomain: isPrivate ? full.registrable : null,
  };
}
