// The compact form of the packaged IP context dataset: sorted typed arrays, no object per range,
// looked up by binary search. Written once per dataset version into one file (its serialised form
// below) and loaded as zero-copy views over that file's bytes.
//   ASN ranges    starts/ends: Uint32Array, 1 word per bound (IPv4) or 4 big-endian words (IPv6),
//                 so bounds compare as plain numbers (no BigInt on the hot path); asn: Uint32Array;
//                 name: Uint32Array index into the name table
//   names         the AS organisation names, deduplicated: UTF-8 bytes + Uint32Array offsets
//   country       separate ranges (another dataset): starts/ends as above, cc: Uint16Array (two
//                 ASCII letters packed)
// File: "LSSASN01" | u32 LE header length | JSON header {version, skipped, layout} | pad to 8 |
// sections, each 8-byte aligned.

export interface RangeTable {
  /** 1 (IPv4) or 4 (IPv6) Uint32 words per bound. */
  stride: 1 | 4;
  rows: number;
  starts: Uint32Array;
  ends: Uint32Array;
}
export interface AsnRanges extends RangeTable {
  asn: Uint32Array;
  name: Uint32Array;
}
export interface CountryRanges extends RangeTable {
  cc: Uint16Array;
}
export interface NameTable {
  bytes: Uint8Array;
  offsets: Uint32Array;
}
export interface AsnTable {
  /** What `sources` shows: the packages and their versions. */
  version: string;
  asn4: AsnRanges;
  asn6: AsnRanges;
  cc4: CountryRanges;
  cc6: CountryRanges;
  names: NameTable;
  /** Rows of the source files that were malformed, out of order or inside the previous row. */
  skipped: number;
}

/** What one address maps to. `asn` null: no ASN row covers it (the country may still be known). */
export interface AsnHit {
  asn: number | null;
  asName: string | null;
  country: string | null;
  /** The ASN row's range (the country row's when only that one covers the address). */
  start: bigint;
  end: bigint;
}

const MAGIC = 'LSSASN01';
type Section = Uint32Array | Uint16Array | Uint8Array;

function sections(t: AsnTable): [string, Section][] {
  return [
    ['asn4.starts', t.asn4.starts],
    ['asn4.ends', t.asn4.ends],
    ['asn4.asn', t.asn4.asn],
    ['asn4.name', t.asn4.name],
    ['asn6.starts', t.asn6.starts],
    ['asn6.ends', t.asn6.ends],
    ['asn6.asn', t.asn6.asn],
    ['asn6.name', t.asn6.name],
    ['cc4.starts', t.cc4.starts],
    ['cc4.ends', t.cc4.ends],
    ['cc4.cc', t.cc4.cc],
    ['cc6.starts', t.cc6.starts],
    ['cc6.ends', t.cc6.ends],
    ['cc6.cc', t.cc6.cc],
    ['names.offsets', t.names.offsets],
    ['names.bytes', t.names.bytes],
  ];
}

/** Bytes of the typed arrays (what the table costs in memory once loaded). */
export function tableBytes(t: AsnTable): number {
  return sections(t).reduce((n, [, a]) => n + a.byteLength, 0);
}

export function serializeAsnTable(t: AsnTable): Buffer {
  const secs = sections(t);
  const layout: Record<string, [number, number]> = {};
  let off = 0;
  for (const [k, a] of secs) {
    layout[k] = [off, a.byteLength];
    off += Math.ceil(a.byteLength / 8) * 8;
  }
  const header = Buffer.from(JSON.stringify({ version: t.version, skipped: t.skipped, layout }), 'utf8');
  const base = Math.ceil((12 + header.length) / 8) * 8;
  const out = Buffer.alloc(base + off);
  out.write(MAGIC, 0, 'latin1');
  out.writeUInt32LE(header.length, 8);
  header.copy(out, 12);
  for (const [k, a] of secs) Buffer.from(a.buffer, a.byteOffset, a.byteLength).copy(out, base + layout[k]![0]);
  return out;
}

export class AsnTableFormatError extends Error {}

/**
 * The table over a serialised file's bytes (views, no copy when aligned). Throws AsnTableFormatError
 * on anything that is not a whole, consistent file of this format, so a torn or foreign cache file
 * is rebuilt rather than trusted.
 */
export function deserializeAsnTable(file: Buffer): AsnTable {
  const bad = (why: string): never => {
    throw new AsnTableFormatError(`not an LSS ASN table: ${why}`);
  };
  if (file.length < 12 || file.toString('latin1', 0, 8) !== MAGIC) bad('magic');
  const hlen = file.readUInt32LE(8);
  if (12 + hlen > file.length) bad('header length');
  let h: { version?: unknown; skipped?: unknown; layout?: Record<string, [number, number]> };
  try {
    h = JSON.parse(file.toString('utf8', 12, 12 + hlen));
  } catch {
    return bad('header');
  }
  if (typeof h.version !== 'string' || typeof h.skipped !== 'number' || !h.layout) return bad('header fields');
  const layout = h.layout;
  const base = Math.ceil((12 + hlen) / 8) * 8;
  const ab = file.buffer as ArrayBuffer;
  const view = <T extends Section>(
    k: string,
    C: { new (b: ArrayBuffer, o: number, n: number): T; BYTES_PER_ELEMENT: number },
  ): T => {
    const entry = layout[k];
    if (!Array.isArray(entry)) return bad(`section ${k}`);
    const [o, n] = entry;
    if (!Number.isInteger(o) || !Number.isInteger(n) || o < 0 || n < 0 || n % C.BYTES_PER_ELEMENT !== 0)
      bad(`section ${k}`);
    if (base + o + n > file.length) bad(`section ${k} past the end`);
    const at = file.byteOffset + base + o;
    // A small file may sit unaligned in Node's shared pool: copy it then (never for the real file).
    if (at % C.BYTES_PER_ELEMENT !== 0) return new C(ab.slice(at, at + n), 0, n / C.BYTES_PER_ELEMENT);
    return new C(ab, at, n / C.BYTES_PER_ELEMENT);
  };
  const ranges = (p: string, stride: 1 | 4, rows: number): RangeTable => {
    const starts = view(`${p}.starts`, Uint32Array);
    const ends = view(`${p}.ends`, Uint32Array);
    if (starts.length !== rows * stride || ends.length !== rows * stride) bad(`${p} lengths`);
    return { stride, rows, starts, ends };
  };
  const asnRanges = (p: string, stride: 1 | 4): AsnRanges => {
    const asn = view(`${p}.asn`, Uint32Array);
    const name = view(`${p}.name`, Uint32Array);
    if (name.length !== asn.length) bad(`${p} lengths`);
    return { ...ranges(p, stride, asn.length), asn, name };
  };
  const ccRanges = (p: string, stride: 1 | 4): CountryRanges => {
    const cc = view(`${p}.cc`, Uint16Array);
    return { ...ranges(p, stride, cc.length), cc };
  };
  const names = { offsets: view('names.offsets', Uint32Array), bytes: view('names.bytes', Uint8Array) };
  const count = names.offsets.length - 1;
  if (count < 0 || names.offsets[count] !== names.bytes.length) bad('name table');
  const table: AsnTable = {
    version: h.version,
    skipped: h.skipped,
    asn4: asnRanges('asn4', 1),
    asn6: asnRanges('asn6', 4),
    cc4: ccRanges('cc4', 1),
    cc6: ccRanges('cc6', 4),
    names,
  };
  for (const t of [table.asn4, table.asn6]) for (const i of t.name) if (i >= count) bad('name index');
  return table;
}

// ------------------------------------------------------------------------------------- lookup

function find4(t: RangeTable, x: number): number {
  const s = t.starts;
  let lo = 0;
  let hi = t.rows - 1;
  let f = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (s[mid]! <= x) {
      f = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return f >= 0 && x <= t.ends[f]! ? f : -1;
}

/** Compares the 4-word bound at a[i*4…] with q: negative, zero or positive. */
function cmp6(a: Uint32Array, i: number, q: Uint32Array): number {
  const o = i * 4;
  for (let w = 0; w < 4; w++) {
    const x = a[o + w]!;
    const y = q[w]!;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

function find6(t: RangeTable, q: Uint32Array): number {
  let lo = 0;
  let hi = t.rows - 1;
  let f = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (cmp6(t.starts, mid, q) <= 0) {
      f = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return f >= 0 && cmp6(t.ends, f, q) >= 0 ? f : -1;
}

// Buffer#toString over the one name table: several times faster than TextDecoder on short names.
const nameBuffers = new WeakMap<Uint8Array, Buffer>();
function nameAt(n: NameTable, i: number): string {
  let b = nameBuffers.get(n.bytes);
  if (!b) {
    b = Buffer.from(n.bytes.buffer, n.bytes.byteOffset, n.bytes.byteLength);
    nameBuffers.set(n.bytes, b);
  }
  return b.toString('utf8', n.offsets[i]!, n.offsets[i + 1]!);
}

function bound(t: RangeTable, a: Uint32Array, i: number): bigint {
  if (t.stride === 1) return BigInt(a[i]!);
  const o = i * 4;
  return (BigInt(a[o]!) << 96n) | (BigInt(a[o + 1]!) << 64n) | (BigInt(a[o + 2]!) << 32n) | BigInt(a[o + 3]!);
}

const query6 = new Uint32Array(4);

/** The ASN row and the country row covering the address (the service's {version, value}). */
export function lookupAsn(t: AsnTable, version: 4 | 6, value: bigint): AsnHit | null {
  let ai: number;
  let ci: number;
  if (version === 4) {
    const x = Number(value);
    ai = find4(t.asn4, x);
    ci = find4(t.cc4, x);
  } else {
    for (let w = 0; w < 4; w++) query6[w] = Number((value >> BigInt(96 - 32 * w)) & 0xffffffffn);
    ai = find6(t.asn6, query6);
    ci = find6(t.cc6, query6);
  }
  if (ai < 0 && ci < 0) return null;
  const a = version === 4 ? t.asn4 : t.asn6;
  const c = version === 4 ? t.cc4 : t.cc6;
  const cc = ci >= 0 ? c.cc[ci]! : 0;
  return {
    asn: ai >= 0 ? a.asn[ai]! : null,
    asName: ai >= 0 ? nameAt(t.names, a.name[ai]!) : null,
    country: cc === 0 ? null : String.fromCharCode(cc >> 8, cc & 0xff),
    start: ai >= 0 ? bound(a, a.starts, ai) : bound(c, c.starts, ci),
    end: ai >= 0 ? bound(a, a.ends, ai) : bound(c, c.ends, ci),
  };
}
