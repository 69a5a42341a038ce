// CPU-bound parsers run in the lane's piscina pool (parse-worker.ts) or inline when the pool is
// off. Plain functions of JSON-serialisable input and output: they cross a thread boundary.
import { createHash, X509Certificate } from 'node:crypto';
import type { WebEvidence } from '../../src/products/web/evidence.ts';
import type { WebAssessment } from '../../src/products/web/assess.ts';
import { mailPoolTasks } from '../../src/products/mail/pool-entry.ts';

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
  const source = typeof input === 'string' ? input : input.pem ?? Buffer.from(input.der ?? '', 'base64');
  const cert = new X509Certificate(source);
  const sans: string[] = [];
  const ipAddresses: string[] = [];
  // Node quotes (JSON-style) entries that contain separators; unquote those.
  for (const m of (cert.subjectAltName ?? '').matchAll(/(DNS|IP Address|URI|email|othername):("(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)/g)) {
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
      certSha256: hash('sha256', cert.raw), certSha512: hash('sha512', cert.raw),
      spkiSha256: hash('sha256', spki(cert)), spkiSha512: hash('sha512', spki(cert)),
    },
  };
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
  const bits = d.modulusLength ?? (curve ? CURVE_BITS[curve] ?? null : key.asymmetricKeyType === 'ed25519' ? 256 : key.asymmetricKeyType === 'ed448' ? 456 : null);
  return { keyType: key.asymmetricKeyType ?? null, keyBits: bits, curve };
}

export interface SpfTerm {
  qualifier: '+' | '-' | '~' | '?';
  mechanism: 'all' | 'include' | 'a' | 'mx' | 'ptr' | 'ip4' | 'ip6' | 'exists';
  value: string | null;
}

export interface SpfInfo {
  /** False when the record is not SPF or has a syntax error (`errors` says which). */
  valid: boolean;
  terms: SpfTerm[];
  modifiers: Record<string, string>;
  /** Terms that cost a DNS lookup (RFC 7208 §4.6.4: limit 10). */
  lookupCount: number;
  includes: string[];
  errors: string[];
}

const MECHANISMS = new Set(['all', 'include', 'a', 'mx', 'ptr', 'ip4', 'ip6', 'exists']);
const LOOKUP_TERMS = new Set(['include', 'a', 'mx', 'ptr', 'exists']);

/** Parses one SPF TXT record (the strings of a TXT RR already concatenated). */
export function parseSpf(record: string): SpfInfo {
  const out: SpfInfo = { valid: false, terms: [], modifiers: {}, lookupCount: 0, includes: [], errors: [] };
  const parts = record.trim().split(/\s+/);
  if ((parts[0] ?? '').toLowerCase() !== 'v=spf1') {
    out.errors.push('not an SPF record (no v=spf1)');
    return out;
  }
  for (const raw of parts.slice(1)) {
    const mod = /^([a-z][a-z0-9_.-]*)=(.*)$/i.exec(raw);
    if (mod) {
      const name = mod[1]!.toLowerCase();
      if (name in out.modifiers) out.errors.push(`duplicate modifier ${name}`);
      out.modifiers[name] = mod[2]!;
      if (name === 'redirect') out.lookupCount++;
      continue;
    }
    const m = /^([+\-~?]?)([a-z0-9]+)(?:([:/])(.*))?$/i.exec(raw);
    const mechanism = m?.[2]?.toLowerCase() ?? '';
    if (!m || !MECHANISMS.has(mechanism)) {
      out.errors.push(`unknown term ${raw}`);
      continue;
    }
    // `ip4:192.0.2.0/24` → value `192.0.2.0/24`; `a/24` (prefix only) → value `/24`.
    const value = m[3] === ':' ? m[4]! : m[3] === '/' ? `/${m[4]!}` : null;
    if ((mechanism === 'include' || mechanism === 'exists' || mechanism === 'ip4' || mechanism === 'ip6') && !value) {
      out.errors.push(`${mechanism} needs a value`);
      continue;
    }
    out.terms.push({ qualifier: (m[1] || '+') as SpfTerm['qualifier'], mechanism: mechanism as SpfTerm['mechanism'], value });
    if (LOOKUP_TERMS.has(mechanism)) out.lookupCount++;
    if (mechanism === 'include') out.includes.push(value!.toLowerCase());
  }
  if (out.lookupCount > 10) out.errors.push(`too many DNS lookups (${out.lookupCount} > 10)`);
  out.valid = out.errors.length === 0;
  return out;
}

/** The web lane's parsing, loaded on first use: parse5 and tough-cookie stay out of every thread's start-up. */
export async function assessWebEvidence(e: WebEvidence): Promise<WebAssessment | null> {
  return (await import('../../src/products/web/assess.ts')).assessWebEvidence(e);
}

export const parseTasks = {
  parseCertificate,
  parseSpf,
  assessWebEvidence,
  ...mailPoolTasks,
} as const;
export type ParseTask = keyof typeof parseTasks;
