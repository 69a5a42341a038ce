// Builds the compact IP context table (asn-table.ts) from the shipped CSV packages and writes it,
// atomically (temporary file + rename), to the first of the given paths that is writable; with no
// path writable it writes the table to stdout for its parent to load. Run as a short-lived child
// process by packaged-context.ts on a cache miss, so the ~1 s parse and its ~65 MB of garbage never
// stay in a serving process. A release step may run it ahead of time:
//   node src/products/ip/build-context-table.ts          (the default cache paths)
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildAsnTable } from './asn-csv.ts';
import { serializeAsnTable } from './asn-table.ts';
import { contextCachePaths, contextPackage } from './context-package.ts';

const pkg = contextPackage();
if (!pkg) {
  process.stderr.write('the @ip-location-db/asn and @ip-location-db/asn-country packages are not installed\n');
  process.exit(1);
}
const table = buildAsnTable(pkg.version, {
  asn4: readFileSync(path.join(pkg.asnDir, 'asn-ipv4.csv')),
  asn6: readFileSync(path.join(pkg.asnDir, 'asn-ipv6.csv')),
  cc4: readFileSync(path.join(pkg.countryDir, 'asn-country-ipv4.csv')),
  cc6: readFileSync(path.join(pkg.countryDir, 'asn-country-ipv6.csv')),
});
const bytes = serializeAsnTable(table);
const targets = process.argv.length > 2 ? process.argv.slice(2) : contextCachePaths(pkg);
let written = false;
for (const target of targets) {
  const tmp = `${target}.${process.pid}.tmp`;
  try {
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(tmp, bytes);
    renameSync(tmp, target); // readers see the old file or the whole new one, never a torn one
    written = true;
    process.stderr.write(
      `ip context table ${table.version}: ${table.asn4.rows + table.asn6.rows} ASN ranges, ${table.cc4.rows + table.cc6.rows} country ranges, ${table.skipped} rows skipped, ${bytes.length} bytes → ${target}\n`,
    );
    break;
  } catch {
    try {
      rmSync(tmp, { force: true });
    } catch {
      // nothing was written there
    }
  }
}
if (!written) process.stdout.write(bytes);
