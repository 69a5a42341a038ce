// Where a name sits under the Public Suffix List (tldts), read two ways:
//   - the whole list (ICANN and private sections): who controls a name. `alice.github.io` and
//     `bob.github.io` are two owners under the private suffix `github.io`; `github.io`,
//     `s3.amazonaws.com` and `co.uk` are public suffixes that belong to nobody. Every scope decision
//     (scan targets, scan scope and distance, approved scopes) reads the list this way.
//   - the ICANN section alone: where registries delegate and register (`alice.github.io` is a name
//     inside the registration `github.io`). RDAP and delegation read it this way.
// A name whose last label is in neither section (`.test`, `.lab`, `.corp`…) gets tldts' default
// rule: its TLD is taken as the suffix, and the section is `unlisted`.
import { parse } from 'tldts';

export type SuffixSection = 'icann' | 'private' | 'unlisted';

export interface SuffixParts {
  /** The registrable domain under the whole list; null when the name is itself a public suffix. */
  registrable: string | null;
  /** The longest public suffix of the name (the TLD for an unlisted one). */
  suffix: string | null;
  /** The list section the suffix was found in. */
  section: SuffixSection;
}

const normal = (name: string) => name.trim().toLowerCase().replace(/\.$/, '');

/** The whole list, private section included. */
export function suffixParts(name: string): SuffixParts {
  const p = parse(normal(name), { allowPrivateDomains: true, extractHostname: false, detectIp: false });
  return {
    registrable: p.domain ?? null,
    suffix: p.publicSuffix ?? null,
    section: p.isPrivate ? 'private' : p.isIcann ? 'icann' : 'unlisted',
  };
}

/** The ICANN section alone: where registries register (RDAP, delegation). */
export function icannParts(name: string): { registrable: string | null; suffix: string | null } {
  const p = parse(normal(name), { allowPrivateDomains: false, extractHostname: false, detectIp: false });
  return { registrable: p.domain ?? null, suffix: p.publicSuffix ?? null };
}

/** A public suffix of either section (or an unlisted TLD): no registrable domain, nobody's name. */
export function isPublicSuffix(name: string): boolean {
  return suffixParts(name).registrable === null;
}
