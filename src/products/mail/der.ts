// A DER reader for the few fields of an X.509 certificate that Node's X509Certificate does not
// expose: the extensions by OID (the logotype of RFC 3709, the SAN's DNS names) and the subject's
// attributes by OID (the BIMI mark type). Certificates are target data: every length is checked
// against its container, only definite lengths of at most 4 bytes are read (DER), and walks are
// over a fixed path with a cap on the children listed, so reading is linear and cannot recurse.
export interface Tlv {
  tag: number;
  /** Offsets into the buffer: the content is [start, end). */
  start: number;
  end: number;
}

export class DerError extends Error {}

const MAX_CHILDREN = 4096;

export function readTlv(buf: Uint8Array, offset: number, limit = buf.length): Tlv {
  if (offset + 2 > limit) throw new DerError('truncated header');
  const tag = buf[offset]!;
  if ((tag & 0x1f) === 0x1f) throw new DerError('multi-byte tags are not used here');
  let length = buf[offset + 1]!;
  let start = offset + 2;
  if (length & 0x80) {
    const n = length & 0x7f;
    if (n === 0 || n > 4) throw new DerError('indefinite or oversized length');
    if (start + n > limit) throw new DerError('truncated length');
    length = 0;
    for (let i = 0; i < n; i++) length = length * 256 + buf[start + i]!;
    start += n;
  }
  const end = start + length;
  if (end > limit) throw new DerError('content past its container');
  return { tag, start, end };
}

/** The TLVs inside a constructed TLV, in order. */
export function children(buf: Uint8Array, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let at = parent.start; at < parent.end; ) {
    if (out.length >= MAX_CHILDREN) throw new DerError('too many elements');
    const t = readTlv(buf, at, parent.end);
    out.push(t);
    at = t.end;
  }
  return out;
}

export function bytesOf(buf: Uint8Array, t: Tlv): Buffer {
  return Buffer.from(buf.subarray(t.start, t.end));
}

/** Dotted text of an OBJECT IDENTIFIER's content. */
export function oidText(buf: Uint8Array, t: Tlv): string {
  if (t.tag !== 0x06 || t.end === t.start) throw new DerError('not an OID');
  const parts: number[] = [];
  let value = 0;
  for (let i = t.start; i < t.end; i++) {
    value = value * 128 + (buf[i]! & 0x7f);
    if (value > Number.MAX_SAFE_INTEGER / 256) throw new DerError('OID arc too large');
    if ((buf[i]! & 0x80) === 0) {
      if (parts.length === 0) parts.push(value < 80 ? Math.floor(value / 40) : 2, value < 80 ? value % 40 : value - 80);
      else parts.push(value);
      value = 0;
    }
  }
  return parts.join('.');
}

/** Text of a string type (IA5String, PrintableString, UTF8String…), latin1 for the ASCII kinds. */
export function stringOf(buf: Uint8Array, t: Tlv): string {
  return bytesOf(buf, t).toString(t.tag === 0x0c ? 'utf8' : 'latin1');
}

/** The TBSCertificate's subject Name and its extensions (OID → extnValue content), from a certificate's DER. */
export function certificateParts(der: Uint8Array): { subject: Tlv; extensions: Map<string, Tlv> } {
  const cert = readTlv(der, 0);
  if (cert.tag !== 0x30 || cert.end !== der.length) throw new DerError('not a certificate');
  const tbs = children(der, cert)[0];
  if (tbs?.tag !== 0x30) throw new DerError('no TBSCertificate');
  const fields = children(der, tbs);
  const base = fields[0]?.tag === 0xa0 ? 1 : 0; // [0] version
  const subject = fields[base + 4];
  if (subject?.tag !== 0x30) throw new DerError('no subject');
  const extensions = new Map<string, Tlv>();
  const wrapped = fields.find((f) => f.tag === 0xa3);
  if (wrapped) {
    const list = children(der, wrapped)[0];
    if (list?.tag !== 0x30) throw new DerError('bad extensions');
    for (const ext of children(der, list)) {
      const parts = children(der, ext);
      const value = parts[parts.length - 1];
      if (!parts[0] || !value || value.tag !== 0x04) throw new DerError('bad extension');
      extensions.set(oidText(der, parts[0]), value);
    }
  }
  return { subject, extensions };
}

/** The values of one attribute type in a Name (RDNSequence). */
export function nameAttribute(der: Uint8Array, name: Tlv, oid: string): string[] {
  const out: string[] = [];
  for (const rdn of children(der, name))
    for (const atv of children(der, rdn)) {
      const [type, value] = children(der, atv);
      if (type && value && oidText(der, type) === oid) out.push(stringOf(der, value));
    }
  return out;
}
