// Builds the compact ASN table (asn-table.ts) from the CSV files of the packaged datasets:
//   @ip-location-db/asn          asn-ipv{4,6}.csv:          start,end,as_number,as_organization
//                                (the organisation quoted as RFC 4180 when it holds , or ")
//   @ip-location-db/asn-country  asn-country-ipv{4,6}.csv:  start,end,country_code
// Parsed from the bytes in one pass per file (no string per line; a string only for an
// organisation name not seen before). Costs about 1 s of CPU and leaves ~65 MB of garbage behind,
// so it runs in a short-lived child process (build-context-table.ts), never in a serving process.
import type { AsnRanges, AsnTable, CountryRanges, NameTable, RangeTable } from './asn-table.ts';

const COMMA = 0x2c;
const NL = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
const DOT = 0x2e;
const COLON = 0x3a;

/** Dotted IPv4 in buf[a, b) → uint32, or -1. */
function ipv4At(buf: Uint8Array, a: number, b: number): number {
  let v = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = a; i < b; i++) {
    const c = buf[i]!;
    if (c === DOT) {
      if (digits === 0 || ++dots > 3) return -1;
      v = v * 256 + part;
      part = 0;
      digits = 0;
    } else if (c >= 0x30 && c <= 0x39) {
      part = part * 10 + (c - 0x30);
      if (++digits > 3 || part > 255) return -1;
    } else return -1;
  }
  if (dots !== 3 || digits === 0) return -1;
  return v * 256 + part;
}

function hexVal(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const l = c | 0x20;
  return l >= 0x61 && l <= 0x66 ? l - 0x61 + 10 : -1;
}

const groups = new Uint16Array(8);
/**
 * IPv6 text in buf[a, b) (hex groups and '::'; the packages write no embedded IPv4) into
 * out[o…o+4) as 4 big-endian 32-bit words. False when malformed.
 */
function ipv6At(buf: Uint8Array, a: number, b: number, out: Uint32Array, o: number): boolean {
  let n = 0;
  let gap = -1;
  let i = a;
  if (b - a >= 2 && buf[a] === COLON && buf[a + 1] === COLON) {
    gap = 0;
    i = a + 2;
  } else if (buf[a] === COLON) return false;
  while (i < b) {
    let v = 0;
    let d = 0;
    while (i < b && buf[i] !== COLON) {
      const h = hexVal(buf[i]!);
      if (h < 0 || ++d > 4) return false;
      v = (v << 4) | h;
      i++;
    }
    if (d === 0 || n === 8) return false;
    groups[n++] = v;
    if (i < b) {
      i++; // ':'
      if (i < b && buf[i] === COLON) {
        if (gap >= 0) return false;
        gap = n;
        i++;
      } else if (i === b) return false;
    }
  }
  if (gap < 0 ? n !== 8 : n > 7) return false;
  if (gap >= 0) {
    const tail = n - gap;
    for (let k = 0; k < tail; k++) groups[7 - k] = groups[n - 1 - k]!;
    for (let k = gap; k < 8 - tail; k++) groups[k] = 0;
  }
  for (let w = 0; w < 4; w++) out[o + w] = ((groups[2 * w]! << 16) | groups[2 * w + 1]!) >>> 0;
  return true;
}

function countLines(buf: Uint8Array): number {
  let n = 1;
  for (let i = 0; i < buf.length; i++) if (buf[i] === NL) n++;
  return n;
}

/** Index of byte c in buf[from, to), or -1 (a plain loop: fields are short). */
function find(buf: Uint8Array, c: number, from: number, to: number): number {
  for (let i = from; i < to; i++) if (buf[i] === c) return i;
  return -1;
}

function cmpWords(a: Uint32Array, i: number, b: Uint32Array, j: number, stride: number): number {
  for (let w = 0; w < stride; w++) {
    const x = a[i * stride + w]!;
    const y = b[j * stride + w]!;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

/**
 * Keeps the rows sorted and disjoint, which the binary search needs. The packages are sorted but
 * not always disjoint (asn-ipv4.csv 2.3.2026061719: 214.95.0.0-215.0.255.255 AS749, then
 * 215.0.0.0-215.1.3.255 AS721): a row overlapping the previous one keeps only its part past the
 * previous end (the earlier row wins); a row inside the previous one, out of order or inverted is
 * dropped. False: skip the row.
 */
function keepInOrder(t: RangeTable, r: number): boolean {
  const s = t.stride;
  if (cmpWords(t.starts, r, t.ends, r, s) > 0) return false;
  if (r === 0 || cmpWords(t.starts, r, t.ends, r - 1, s) > 0) return true;
  if (cmpWords(t.ends, r, t.ends, r - 1, s) <= 0) return false;
  if (cmpWords(t.starts, r, t.starts, r - 1, s) < 0) return false;
  for (let w = 0; w < s; w++) t.starts[r * s + w] = t.ends[(r - 1) * s + w]!;
  for (let w = s - 1; w >= 0; w--) {
    const v = (t.starts[r * s + w]! + 1) >>> 0;
    t.starts[r * s + w] = v;
    if (v !== 0) break;
  }
  return true;
}

/** Interns organisation names from raw bytes: FNV-1a picks candidates, a byte loop confirms. */
class NameInterner {
  private readonly byHash = new Map<number, number[]>();
  private readonly index = new Map<string, number>();
  private readonly list: Buffer[] = [];
  private readonly lastByAsn = new Map<number, number>();

  intern(asn: number, buf: Buffer, a: number, b: number, quoted: boolean): number {
    const last = this.lastByAsn.get(asn);
    if (last !== undefined && this.same(last, buf, a, b)) return last;
    let h = 0x811c9dc5;
    for (let k = a; k < b; k++) h = Math.imul(h ^ buf[k]!, 0x01000193);
    const known = this.byHash.get(h);
    let i = known?.find((c) => this.same(c, buf, a, b));
    if (i === undefined) {
      let text = buf.toString('utf8', a, b);
      if (quoted) text = text.replaceAll('""', '"');
      i = this.index.get(text);
      if (i === undefined) {
        i = this.list.length;
        this.list.push(Buffer.from(text, 'utf8'));
        this.index.set(text, i);
      }
      if (known) known.push(i);
      else this.byHash.set(h, [i]);
    }
    this.lastByAsn.set(asn, i);
    return i;
  }

  private same(i: number, buf: Buffer, a: number, b: number): boolean {
    const s = this.list[i]!;
    if (s.length !== b - a) return false;
    for (let k = 0; k < s.length; k++) if (s[k] !== buf[a + k]) return false;
    return true;
  }

  table(): NameTable {
    const total = this.list.reduce((n, b) => n + b.length, 0);
    const bytes = new Uint8Array(total);
    const offsets = new Uint32Array(this.list.length + 1);
    let o = 0;
    this.list.forEach((b, i) => {
      offsets[i] = o;
      bytes.set(b, o);
      o += b.length;
    });
    offsets[this.list.length] = o;
    return { bytes, offsets };
  }
}

interface Parsed {
  ranges: RangeTable;
  asn: Uint32Array;
  name: Uint32Array;
  cc: Uint16Array;
  skipped: number;
}

/** One CSV file: kind 'asn' reads start,end,asn,name; 'cc' reads start,end,country. */
function parseCsv(buf: Buffer, family: 4 | 6, kind: 'asn' | 'cc', names: NameInterner): Parsed {
  const stride = family === 4 ? 1 : 4;
  const cap = countLines(buf);
  const t: RangeTable = { stride, rows: 0, starts: new Uint32Array(cap * stride), ends: new Uint32Array(cap * stride) };
  const asn = new Uint32Array(kind === 'asn' ? cap : 0);
  const name = new Uint32Array(kind === 'asn' ? cap : 0);
  const cc = new Uint16Array(kind === 'cc' ? cap : 0);
  let skipped = 0;
  let pos = 0;
  while (pos < buf.length) {
    let eol = find(buf, NL, pos, buf.length);
    if (eol < 0) eol = buf.length;
    let end = eol;
    if (end > pos && buf[end - 1] === CR) end--;
    const line = pos;
    pos = eol + 1;
    if (end === line) continue;
    const c1 = find(buf, COMMA, line, end);
    const c2 = c1 < 0 ? -1 : find(buf, COMMA, c1 + 1, end);
    const r = t.rows;
    let ok = c2 >= 0;
    if (ok && family === 4) {
      const s = ipv4At(buf, line, c1);
      const e = ipv4At(buf, c1 + 1, c2);
      ok = s >= 0 && e >= 0;
      t.starts[r] = s;
      t.ends[r] = e;
    } else if (ok) {
      ok = ipv6At(buf, line, c1, t.starts, r * 4) && ipv6At(buf, c1 + 1, c2, t.ends, r * 4);
    }
    if (ok && kind === 'cc') {
      const a = buf[c2 + 1]! & 0xdf;
      const b = buf[c2 + 2]! & 0xdf;
      ok = end - c2 === 3 && a >= 0x41 && a <= 0x5a && b >= 0x41 && b <= 0x5a;
      cc[r] = (a << 8) | b;
    } else if (ok) {
      const c3 = find(buf, COMMA, c2 + 1, end);
      let n = 0;
      ok = c3 > c2 + 1 && c3 - c2 <= 11;
      for (let i = c2 + 1; ok && i < c3; i++) {
        const d = buf[i]! - 0x30;
        if (d < 0 || d > 9) ok = false;
        n = n * 10 + d;
      }
      ok &&= n <= 0xffffffff;
      if (ok) {
        asn[r] = n;
        const quoted = buf[c3 + 1] === QUOTE;
        if (quoted && (end - c3 < 3 || buf[end - 1] !== QUOTE)) ok = false;
        else name[r] = quoted ? names.intern(n, buf, c3 + 2, end - 1, true) : names.intern(n, buf, c3 + 1, end, false);
      }
    }
    if (!ok || !keepInOrder(t, r)) {
      skipped++;
      continue;
    }
    t.rows++;
  }
  const rows = t.rows;
  return {
    ranges: { stride, rows, starts: t.starts.slice(0, rows * stride), ends: t.ends.slice(0, rows * stride) },
    asn: asn.slice(0, kind === 'asn' ? rows : 0),
    name: name.slice(0, kind === 'asn' ? rows : 0),
    cc: cc.slice(0, kind === 'cc' ? rows : 0),
    skipped,
  };
}

export interface AsnCsvFiles {
  asn4: Buffer;
  asn6: Buffer;
  cc4: Buffer;
  cc6: Buffer;
}

export function buildAsnTable(version: string, files: AsnCsvFiles): AsnTable {
  const names = new NameInterner();
  const a4 = parseCsv(files.asn4, 4, 'asn', names);
  const a6 = parseCsv(files.asn6, 6, 'asn', names);
  const c4 = parseCsv(files.cc4, 4, 'cc', names);
  const c6 = parseCsv(files.cc6, 6, 'cc', names);
  const asnRanges = (p: Parsed): AsnRanges => ({ ...p.ranges, asn: p.asn, name: p.name });
  const ccRanges = (p: Parsed): CountryRanges => ({ ...p.ranges, cc: p.cc });
  return {
    version,
    asn4: asnRanges(a4),
    asn6: asnRanges(a6),
    cc4: ccRanges(c4),
    cc6: ccRanges(c6),
    names: names.table(),
    skipped: a4.skipped + a6.skipped + c4.skipped + c6.skipped,
  };
}
