// X.509 facts of a certificate a target presented: names, validity, key, signature and the DANE
// digests (RFC 6698 selectors 0 and 1). node:crypto's X509Certificate does the parsing; this module
// only reads its fields. CPU-bound: lanes run it in their parse pool (workers/pool/).
import { createHash, X509Certificate } from 'node:crypto';

export interface CertificateInfo {
  subject: string;
  issuer: string;
  /** DNS names of subjectAltName, lower-cased. */
  sans: string[];
  ipAddresses: string[];
  validFrom: string;
  validTo: string;
  fingerprint256: string;
  serialNumber: string;
  isCA: boolean;
  selfIssued: boolean;
  /** rsa, ec, ed25519… (Node's asymmetricKeyType). */
  keyType: string | null;
  /** RSA/DSA modulus length in bits; EC curve size in bits. */
  keyBits: number | null;
  curve: string | null;
  /** e.g. sha256WithRSAEncryption, ecdsa-with-SHA256. */
  signatureAlgorithm: string | null;
  /** Hex digests for DANE (RFC 6698 selector 0 = full certificate, 1 = SubjectPublicKeyInfo). */
  digests: { certSha256: string; certSha512: string; spkiSha256: string; spkiSha512: string };
}

const CURVE_BITS: Record<string, number> = { prime256v1: 256, secp384r1: 384, secp521r1: 521, secp256k1: 256 };

/** A PEM string, or `{ der: base64 }`. */
export function parseCertificate(input: string | { pem?: string; der?: string }): CertificateInfo {
  const source = typeof input === 'string' ? input : (input.pem ?? Buffer.from(input.der ?? '', 'base64'));
  const cert = new X509Certificate(source);
  const sans: string[] = [];
  const ipAddresses: string[] = [];
  // Node quotes (JSON-style) entries that contain separators; unquote those.
  for (const m of (cert.subjectAltName ?? '').matchAll(
    /(DNS|IP Address|URI|email|othername):("(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)/g,
  )) {
    const value = m[2]!.startsWith('"') ? (JSON.parse(m[2]!) as string) : m[2]!;
    if (m[1] === 'DNS') sans.push(value.toLowerCase());
    else if (m[1] === 'IP Address') ipAddresses.push(value);
  }
  return {
    subject: cert.subject,
    issuer: cert.issuer,
    sans,
    ipAddresses,
    validFrom: new Date(cert.validFrom).toISOString(),
    validTo: new Date(cert.validTo).toISOString(),
    fingerprint256: cert.fingerprint256,
    serialNumber: cert.serialNumber,
    isCA: cert.ca,
    selfIssued: cert.subject === cert.issuer,
    ...keyFacts(cert),
    signatureAlgorithm: cert.signatureAlgorithm ?? null,
    digests: {
      certSha256: hash('sha256', cert.raw),
      certSha512: hash('sha512', cert.raw),
      spkiSha256: hash('sha256', spki(cert)),
      spkiSha512: hash('sha512', spki(cert)),
    },
  };
}

/**
 * A presented chain (base64 DER, leaf first) in one call: one pool task per handshake instead of
 * one per certificate (each task is a message to a thread and two back, on the lane's main thread).
 */
export function parseCertificateChain(input: { chain: string[] }): CertificateInfo[] {
  return input.chain.map((der) => parseCertificate({ der }));
}

function hash(alg: string, data: Buffer): string {
  return createHash(alg).update(data).digest('hex');
}

function spki(cert: X509Certificate): Buffer {
  return cert.publicKey.export({ type: 'spki', format: 'der' });
}

function keyFacts(cert: X509Certificate): Pick<CertificateInfo, 'keyType' | 'keyBits' | 'curve'> {
  const key = cert.publicKey;
  const d = key.asymmetricKeyDetails ?? {};
  const curve = d.namedCurve ?? null;
  const bits =
    d.modulusLength ??
    (curve
      ? (CURVE_BITS[curve] ?? null)
      : key.asymmetricKeyType === 'ed25519'
        ? 256
        : key.asymmetricKeyType === 'ed448'
          ? 456
          : null);
  return { keyType: key.asymmetricKeyType ?? null, keyBits: bits, curve };
}
