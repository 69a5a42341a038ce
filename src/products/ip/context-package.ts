// The IP context dataset that ships with the service (used when IP_CONTEXT_DB is not set): the
// npm packages @ip-location-db/asn (IP → ASN and organisation, IPv4 and IPv6) and
// @ip-location-db/asn-country (IP → RIR registration country), pinned in package.json. This module
// only knows where they are and what they are called; it loads nothing big, so readiness can ask
// it. The table itself is loaded by packaged-context.ts, on the first lookup that asks for context.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

/** CC BY 4.0 asks for it wherever results are shown; docs/products/ip.md carries it too. */
export const PACKAGED_CONTEXT_ATTRIBUTION =
  'IP to ASN data: RouteViews (routeviews.org), the RIRs via NRO (nro.net) and DB-IP IP to ASN Lite ' +
  '(https://db-ip.com, "IP Geolocation by DB-IP"), CC BY 4.0 (https://creativecommons.org/licenses/by/4.0/), ' +
  'compiled by ip-location-db; merged and converted to a binary table by LSS.';

export interface ContextPackage {
  /** What `sources` shows: both packages and their versions. */
  version: string;
  asnDir: string;
  countryDir: string;
}

let resolved: ContextPackage | null | undefined;

/** The installed packages, or null when they are not installed (then the lane is unconfigured). */
export function contextPackage(): ContextPackage | null {
  if (resolved === undefined) {
    try {
      const require = createRequire(import.meta.url);
      const asnPkg = require.resolve('@ip-location-db/asn/package.json');
      const ccPkg = require.resolve('@ip-location-db/asn-country/package.json');
      const version = (file: string) => (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
      resolved = {
        version: `@ip-location-db/asn@${version(asnPkg)}, @ip-location-db/asn-country@${version(ccPkg)}`,
        asnDir: path.dirname(asnPkg),
        countryDir: path.dirname(ccPkg),
      };
    } catch {
      resolved = null;
    }
  }
  return resolved;
}

/**
 * Where the compact table of this version is kept, in order of preference: beside the packages
 * (node_modules/.cache/lss, the usual home of build caches), else the system's temporary directory
 * (a read-only node_modules). The name carries the versions: a new dataset is a new file.
 */
export function contextCachePaths(pkg: ContextPackage): string[] {
  const file = `ip-context-${pkg.version.replace(/[^A-Za-z0-9.]+/g, '_')}.bin`;
  const nodeModules = path.resolve(pkg.asnDir, '..', '..');
  return [path.join(nodeModules, '.cache', 'lss', file), path.join(os.tmpdir(), 'lss-ip-context', file)];
}

// A failed load is remembered for a minute (readiness says unconfigured meanwhile), so a broken
// install does not cost a build on every request and a repaired one is picked up without a restart.
export const PACKAGED_FAILURE_TTL_MS = 60_000;
let failedAt: number | undefined;

export function notePackagedFailure(at: number | undefined): void {
  failedAt = at;
}

/** Cheap readiness: the packages are installed and did not fail to load in the last minute. */
export function packagedContextUsable(now = Date.now()): boolean {
  if (failedAt !== undefined && now - failedAt < PACKAGED_FAILURE_TTL_MS) return false;
  return contextPackage() !== null;
}
