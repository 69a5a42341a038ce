// Longest-prefix match over the IEEE MA-S (36-bit), MA-M (28-bit) and MA-L (24-bit) registries
// as shipped by the oui-data package, plus the IAB/CID CSVs an operator may add.
//
// The registry (about 54,000 entries, 11 MB of heap) is loaded on first use, not at import: every
// role imports the product registry, and only the web role runs MAC lookups. The web role loads it
// at start (macProduct.warm, from src/bootstrap.ts) so that no request pays the ~100 ms.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
// The package exports only its JSON, so its version (the registry snapshot) is read from disk.
const pkgDir = path.dirname(require.resolve('oui-data'));
export const OUI_DATA_VERSION: string = (
  JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as { version: string }
).version;

export type AssignmentBlock = 'MA-L' | 'MA-M' | 'MA-S' | 'IAB' | 'CID';

export interface Assignment {
  block: AssignmentBlock;
  /** The assigned prefix in hex, as the registry lists it. */
  prefix: string;
  prefixBits: number;
  organization: string;
  address: string[];
  country: string | null;
  isPrivate: boolean;
}

let loaded: Record<string, string> | undefined;

/** The IEEE table, loaded once. */
export function ouiTable(): Record<string, string> {
  loaded ??= require('oui-data') as Record<string, string>;
  return loaded;
}
const IEEE_RA = /^IEEE Registration Authority\b/i;

export function splitRegistryText(
  text: string,
): Pick<Assignment, 'organization' | 'address' | 'country' | 'isPrivate'> {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const organization = lines[0] ?? '';
  const address = lines.slice(1);
  return {
    organization,
    address,
    country: address.length > 0 ? address[address.length - 1]! : null,
    isPrivate: /^private$/i.test(organization),
  };
}

/** MA-S → MA-M → MA-L, longest first; null when no universally administered block matches. */
export function matchIeeeRegistry(hex12: string): Assignment | null {
  for (const [len, block, bits] of [
    [9, 'MA-S', 36],
    [7, 'MA-M', 28],
    [6, 'MA-L', 24],
  ] as const) {
    const prefix = hex12.slice(0, len);
    const text = ouiTable()[prefix];
    if (text !== undefined) return { block, prefix, prefixBits: bits, ...splitRegistryText(text) };
  }
  return null;
}

/** The IEEE RA holds the MA-L parents of IAB, MA-M and MA-S sub-allocations. */
export function isRegistrationAuthorityBlock(a: Assignment): boolean {
  return IEEE_RA.test(a.organization);
}
