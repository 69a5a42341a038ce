// BIMI mark certificates for the lab, issued by the lab CA: the BIMI extended key usage, the mark
// type in the subject, the domain in the subjectAltName, and the logo in an RFC 3709 logotype
// extension (subjectLogo → direct → image: image/svg+xml, its SHA-256, a gzip base64 data: URI,
// RFC 6170 §5.2). The extension is written here with a few lines of DER (lab code, trusted input);
// test/unit/mail-bimi.test.ts reads it back with @peculiar/asn1-x509-logotype as a cross-check.
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
// @peculiar/x509 resolves its providers through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import type { Issued, LabCa } from './ca.ts';

const LOGOTYPE_OID = '1.3.6.1.5.5.7.1.12';
const SHA256_OID = '2.16.840.1.101.3.4.2.1';
export const BIMI_EKU = '1.3.6.1.5.5.7.3.31';

function tlv(tag: number, content: Buffer): Buffer {
  const n = content.length;
  const len = n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), len, content]);
}
const seq = (...parts: Buffer[]) => tlv(0x30, Buffer.concat(parts));
const ia5 = (s: string) => tlv(0x16, Buffer.from(s, 'latin1'));

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const bytes = [a! * 40 + b!];
  for (const n of rest) {
    const groups: number[] = [];
    let v = n;
    do {
      groups.unshift(v & 0x7f);
      v = Math.floor(v / 128);
    } while (v > 0);
    bytes.push(...groups.map((g, i) => (i < groups.length - 1 ? g | 0x80 : g)));
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** The DER of a LogotypeExtn whose subject logo is `svg` (hash over the SVG, data: URI of its gzip). */
export function logotypeExtension(svg: string, opts: { hashOf?: string } = {}): Buffer {
  const hash = createHash('sha256')
    .update(opts.hashOf ?? svg)
    .digest();
  const details = seq(
    ia5('image/svg+xml'),
    seq(seq(seq(oid(SHA256_OID)), tlv(0x04, hash))),
    seq(ia5(`data:image/svg+xml;base64,${gzipSync(Buffer.from(svg)).toString('base64')}`)),
  );
  const image = seq(details); // LogotypeImage
  const logotypeData = seq(seq(image)); // LogotypeData { image SEQUENCE OF LogotypeImage }
  // LogotypeInfo direct [0] IMPLICIT LogotypeData: the SEQUENCE's content under tag A0.
  const direct = tlv(0xa0, logotypeData.subarray(logotypeData[1]! < 0x80 ? 2 : logotypeData[1] === 0x81 ? 3 : 4));
  return seq(tlv(0xa2, direct)); // subjectLogo [2] EXPLICIT
}

export interface MarkSpec {
  /** subjectAltName DNS names: the domains the mark is for. */
  names: string[];
  svg: string;
  /** Default "Registered Mark" (a VMC). */
  markType?: string;
  /** Leave out the BIMI EKU (serverAuth instead). */
  noBimiEku?: boolean;
  selfSigned?: boolean;
  /** Declare the hash of another SVG than the one embedded. */
  hashOf?: string;
}

/** A mark certificate as its PEM chain (leaf + lab intermediate), what an a= URL serves. */
export async function issueMarkCertificate(ca: LabCa, spec: MarkSpec): Promise<Issued> {
  return ca.issue({
    names: spec.names,
    ...(spec.noBimiEku ? {} : { eku: [BIMI_EKU] }),
    subject: `O=Lab Brand, 1.3.6.1.4.1.53087.1.13=${spec.markType ?? 'Registered Mark'}`,
    selfSigned: spec.selfSigned,
    extraExtensions: [
      new x509.Extension(LOGOTYPE_OID, false, logotypeExtension(spec.svg, spec.hashOf ? { hashOf: spec.hashOf } : {})),
    ],
  });
}

/** A square SVG Tiny PS logo with a title. */
export function tinyPsLogo(title: string, fill = '#2a6'): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" version="1.2" baseProfile="tiny-ps" viewBox="0 0 100 100"><title>${title}</title><rect width="100" height="100" fill="${fill}"/></svg>`;
}
