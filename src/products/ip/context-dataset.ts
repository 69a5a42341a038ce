// The IP context dataset (IP_CONTEXT_DB): the open iptoasn.com "ip2asn-combined" TSV, optionally
// gzip-compressed (.gz). One line per range, tab-separated:
//   range_start  range_end  AS_number  country_code  AS_description
// IPv4 and IPv6 ranges in one file; AS 0 with description "Not routed" marks unrouted space.
// Loaded once per process and per path, at first use (parsing yields to the event loop between
// chunks so other requests keep flowing); looked up by binary search, BigInt for IPv6.
import { readFile, stat } from 'node:fs/promises';
import { accessSync, constants as fsConstants, statSync } from 'node:fs';
import { basename } from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { gunzip } from 'node:zlib';
import { promisify } from 'node:util';
import ipaddr from 'ipaddr.js';
import { Breaker } from '../../resilience/breaker.ts';

const gunzipAsync = promisify(gunzip);

export interface ContextRow {
  start: bigint;
  end: bigint;
  asn: number;
  country: string | null;
  description: string | null;
}

/** Sorted ranges of one address family. IPv4 bounds are plain numbers, IPv6 bounds BigInt. */
interface Table<N extends number | bigint> {
  starts: N[];
  ends: N[];
  asns: number[];
  countries: (string | null)[];
  descriptions: (string | null)[];
}

export interface ContextDataset {
  path: string;
  /** Shown in sources: file name and modification time. */
  version: string;
  v4: Table<number>;
  v6: Table<bigint>;
  rows: number;
  skippedLines: number;
}

export class DatasetUnreadableError extends Error {}

function parseV4(text: string): number | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  let v = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return null;
    const n = Number(p);
    if (n > 255) return null;
    v = v * 256 + n;
  }
  return v;
}

function parseV6(text: string): bigint | null {
  try {
    let v = 0n;
    for (const p of ipaddr.IPv6.parse(text).parts) v = (v << 16n) | BigInt(p);
    return v;
  } catch {
    return null;
  }
}

interface Pending<N> {
  start: N;
  end: N;
  asn: number;
  country: string | null;
  description: string | null;
}

function toTable<N extends number | bigint>(rows: Pending<N>[]): Table<N> {
  rows.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
  return {
    starts: rows.map((r) => r.start),
    ends: rows.map((r) => r.end),
    asns: rows.map((r) => r.asn),
    countries: rows.map((r) => r.country),
    descriptions: rows.map((r) => r.description),
  };
}

const CHUNK = 20_000;

/** Parses the TSV text. Malformed lines are counted and skipped, never guessed at. */
export async function parseContextTsv(
  text: string,
): Promise<{ v4: Table<number>; v6: Table<bigint>; rows: number; skipped: number }> {
  const v4: Pending<number>[] = [];
  const v6: Pending<bigint>[] = [];
  // AS names and country codes repeat across many ranges: keep one copy of each.
  const interned = new Map<string, string>();
  const intern = (s: string): string => {
    const hit = interned.get(s);
    if (hit !== undefined) return hit;
    interned.set(s, s);
    return s;
  };
  let skipped = 0;
  let lineNo = 0;
  let pos = 0;
  while (pos < text.length) {
    let nl = text.indexOf('\n', pos);
    if (nl < 0) nl = text.length;
    let line = text.slice(pos, nl);
    pos = nl + 1;
    if (++lineNo % CHUNK === 0) await yieldToLoop();
    if (line.endsWith('\r')) line = line.slice(0, -1);
    if (line === '' || line.startsWith('#')) continue;
    const cols = line.split('\t');
    if (cols.length < 4) {
      skipped++;
      continue;
    }
    const a = cols[0]!.trim();
    const b = cols[1]!.trim();
    const asn = Number(cols[2]!.trim());
    if (!Number.isInteger(asn) || asn < 0 || asn > 4294967295 || cols[2]!.trim() === '') {
      skipped++;
      continue;
    }
    const cc = cols[3]!.trim();
    const desc = (cols[4] ?? '').trim();
    const country = /^[A-Za-z]{2}$/.test(cc) ? intern(cc.toUpperCase()) : null;
    const description = desc === '' ? null : intern(desc);
    if (a.includes(':') && b.includes(':')) {
      const start = parseV6(a);
      const end = parseV6(b);
      if (start === null || end === null || end < start) {
        skipped++;
        continue;
      }
      v6.push({ start, end, asn, country, description });
    } else {
      const start = parseV4(a);
      const end = parseV4(b);
      if (start === null || end === null || end < start) {
        skipped++;
        continue;
      }
      v4.push({ start, end, asn, country, description });
    }
  }
  return { v4: toTable(v4), v6: toTable(v6), rows: v4.length + v6.length, skipped };
}

export async function loadContextDataset(path: string): Promise<ContextDataset> {
  let buf: Buffer;
  let mtime: Date;
  try {
    [buf, mtime] = await Promise.all([readFile(path), stat(path).then((s) => s.mtime)]);
  } catch (err) {
    throw new DatasetUnreadableError(`cannot read ${path}: ${(err as Error).message}`);
  }
  let text: string;
  try {
    text = (path.endsWith('.gz') || (buf[0] === 0x1f && buf[1] === 0x8b) ? await gunzipAsync(buf) : buf).toString(
      'utf8',
    );
  } catch (err) {
    throw new DatasetUnreadableError(`cannot decompress ${path}: ${(err as Error).message}`);
  }
  const parsed = await parseContextTsv(text);
  if (parsed.rows === 0) throw new DatasetUnreadableError(`${path} has no iptoasn TSV rows`);
  return {
    path,
    version: `${basename(path)}@${mtime.toISOString()}`,
    v4: parsed.v4,
    v6: parsed.v6,
    rows: parsed.rows,
    skippedLines: parsed.skipped,
  };
}

function search<N extends number | bigint>(table: Table<N>, value: N): ContextRow | null {
  let lo = 0;
  let hi = table.starts.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (table.starts[mid]! <= value) {
      found = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  if (found < 0 || value > table.ends[found]!) return null;
  return {
    start: BigInt(table.starts[found]!),
    end: BigInt(table.ends[found]!),
    asn: table.asns[found]!,
    country: table.countries[found]!,
    description: table.descriptions[found]!,
  };
}

/** The range containing the address, if the dataset has one. */
export function lookupContext(ds: ContextDataset, version: 4 | 6, value: bigint): ContextRow | null {
  return version === 4 ? search(ds.v4, Number(value)) : search(ds.v6, value);
}

// Per-process cache. A failed load is not retried on every request: the path's circuit breaker
// (src/resilience/breaker.ts) opens and, about once a second, looks at the file; once it has
// changed since the failed attempt (size, mtime or inode) the probe loads it again, so a fixed or
// replaced file is picked up within about a second, without a restart and without traffic.
interface CacheEntry {
  promise: Promise<ContextDataset>;
  loaded?: ContextDataset;
  /** The file as it was when the failed attempt started. */
  failedSignature?: string;
}
const cache = new Map<string, CacheEntry>();
const breakers = new Map<string, Breaker>();

/** What identifies one version of the file; 'missing' when it cannot be stat'ed. */
function signature(path: string): string {
  try {
    const st = statSync(path);
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return 'missing';
  }
}

function breakerOf(path: string): Breaker {
  let b = breakers.get(path);
  if (!b) {
    b = new Breaker({
      name: 'ip-context',
      failuresToOpen: 1,
      // A load of the full iptoasn file takes seconds; the probe is the load itself.
      probeTimeoutMs: 120_000,
      probe: async () => {
        const hit = cache.get(path);
        if (hit?.failedSignature !== undefined && signature(path) === hit.failedSignature) return false;
        await load(path).promise;
        return true;
      },
    });
    breakers.set(path, b);
  }
  return b;
}

function load(path: string): CacheEntry {
  const before = signature(path);
  const entry: CacheEntry = { promise: loadContextDataset(path) };
  entry.promise.then(
    (ds) => {
      entry.loaded = ds;
      breakerOf(path).success();
    },
    () => {
      entry.failedSignature = before;
      breakerOf(path).failure();
    },
  );
  cache.set(path, entry);
  return entry;
}

export function contextDataset(path: string): Promise<ContextDataset> {
  // A failed attempt stays the answer until the breaker's probe has loaded a changed file.
  return (cache.get(path) ?? load(path)).promise;
}

/** Cheap readiness: loaded, or (not yet tried) the file is a readable file; a failed load is not. */
export function contextDatasetUsable(path: string): boolean {
  const hit = cache.get(path);
  if (hit?.loaded) return true;
  if (breakers.get(path)?.isOpen()) return false;
  try {
    accessSync(path, fsConstants.R_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Tests only: forget what was loaded. */
export function resetContextCache(): void {
  cache.clear();
  for (const b of breakers.values()) b.stop();
  breakers.clear();
}
