// The certificate chain an MX presented, parsed in the pool with the shared parser
// (certificate.ts parseCertificate): the leaf's facts for the projection, and
// the DANE digests of every chain element (leaf first) for TLSA matching at assembly. The exact
// DER (TLSA matching type 0) is kept only for elements small enough to store.
import { X509Certificate } from 'node:crypto';
import { parseCertificate } from './certificate.ts';

const EXACT_MAX_BYTES = 2048;
const MAX_SANS = 50;

export interface ChainDigests {
  certSha256: string;
  certSha512: string;
  spkiSha256: string;
  spkiSha512: string;
  /** Hex DER of the certificate / its SubjectPublicKeyInfo; null when over 2 KiB. */
  certHex: string | null;
  spkiHex: string | null;
}

export interface LeafFacts {
  subject: string;
  issuer: string;
  sans: string[];
  sanCount: number;
  validFrom: string;
  validTo: string;
  expired: boolean;
  notYetValid: boolean;
  keyType: string | null;
  keyBits: number | null;
  signatureAlgorithm: string | null;
  fingerprint256: string;
  serialNumber: string;
  selfIssued: boolean;
}

export interface CertificateChainFacts {
  leaf: LeafFacts;
  digests: ChainDigests[];
}

export function certificateChainFacts(input: { chain: string[]; now: string }): CertificateChainFacts {
  const now = new Date(input.now).getTime();
  const digests = input.chain.slice(0, 6).map((b64) => {
    const info = parseCertificate({ der: b64 });
    const der = Buffer.from(b64, 'base64');
    const spki = new X509Certificate(der).publicKey.export({ type: 'spki', format: 'der' });
    return {
      ...info.digests,
      certHex: der.length <= EXACT_MAX_BYTES ? der.toString('hex') : null,
      spkiHex: spki.length <= EXACT_MAX_BYTES ? spki.toString('hex') : null,
    };
  });
  const leaf = parseCertificate({ der: input.chain[0]! });
  return {
    leaf: {
      subject: leaf.subject,
      issuer: leaf.issuer,
      sans: leaf.sans.slice(0, MAX_SANS),
      sanCount: leaf.sans.length,
      validFrom: leaf.validFrom,
      validTo: leaf.validTo,
      expired: new Date(leaf.validTo).getTime() < now,
      notYetValid: new Date(leaf.validFrom).getTime() > now,
      keyType: leaf.keyType,
      keyBits: leaf.keyBits,
      signatureAlgorithm: leaf.signatureAlgorithm,
      fingerprint256: leaf.fingerprint256,
      serialNumber: leaf.serialNumber,
      selfIssued: leaf.selfIssued,
    },
    digests,
  };
}
