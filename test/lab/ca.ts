// The lab's certificate authority: a root (trusted by the service under test through Node's own
// NODE_EXTRA_CA_CERTS, set by ops/test.ts and ops/up.ts before any process starts) and an
// intermediate that issues every lab server certificate, so servers present a real chain
// (leaf + intermediate) as on the internet. Lab servers issue their leaves at start: valid,
// expired, not yet valid, wrong host, weak key, self-signed… from one call.
//
// The root and intermediate are made once and kept in a directory (default .data/lab-ca, ignored
// by git): NODE_EXTRA_CA_CERTS is read when a process starts, so the file must outlive any one
// test run. Creation is atomic (built in a temporary directory, then renamed into place), so two
// runs starting together end up with the same CA.
import { webcrypto } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
// @peculiar/x509 resolves its providers through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

export const LAB_CA_DIR_ENV = 'LSS_LAB_CA_DIR';
const ROOT_DIR = path.resolve(import.meta.dirname, '..', '..');
export const DEFAULT_LAB_CA_DIR = path.join(ROOT_DIR, '.data', 'lab-ca');

export type KeySpec = { type: 'ec'; curve?: 'P-256' | 'P-384' } | { type: 'rsa'; bits: number };

export interface LeafSpec {
  /** DNS names for the subjectAltName; the first is also the subject CN. */
  names: string[];
  ips?: string[];
  notBefore?: Date;
  notAfter?: Date;
  key?: KeySpec;
  /** Signed by its own key instead of the lab intermediate (not trusted). */
  selfSigned?: boolean;
  /** Hash of the issuer's signature (SHA-1 makes a weak-signature certificate). */
  hash?: 'SHA-1' | 'SHA-256' | 'SHA-384';
  /** Extended key usage; default serverAuth. */
  serverAuth?: boolean;
  /** Extended key usage OIDs instead of serverAuth (a BIMI mark certificate: 1.3.6.1.5.5.7.3.31). */
  eku?: string[];
  /** More subject attributes after the CN, as a name string ("O=Brand, 1.3.6.1.4.1.53087.1.13=Registered Mark"). */
  subject?: string;
  /** More extensions (the logotype of a mark certificate). */
  extraExtensions?: x509.Extension[];
}

export interface Issued {
  /** The leaf alone. */
  certPem: string;
  keyPem: string;
  /** Leaf + intermediate: what a server should present. Self-signed leaves: the leaf alone. */
  chainPem: string;
  /** DER of the leaf and of its SubjectPublicKeyInfo (for TLSA fixtures). */
  certDer: Buffer;
  spkiDer: Buffer;
}

export interface LabCa {
  dir: string;
  /** The root certificate file: the value of NODE_EXTRA_CA_CERTS. */
  caFile: string;
  rootPem: string;
  intermediatePem: string;
  issue(spec: LeafSpec): Promise<Issued>;
}

const DAY = 24 * 60 * 60 * 1000;
const subtle = webcrypto.subtle;

function algorithm(
  key: KeySpec,
  hash: string,
): webcrypto.RsaHashedKeyGenParams | (webcrypto.EcKeyGenParams & { hash: string }) {
  if (key.type === 'rsa') {
    return { name: 'RSASSA-PKCS1-v1_5', modulusLength: key.bits, publicExponent: new Uint8Array([1, 0, 1]), hash };
  }
  return { name: 'ECDSA', namedCurve: key.curve ?? 'P-256', hash };
}

async function generate(key: KeySpec, hash = 'SHA-256'): Promise<CryptoKeyPair> {
  return (await subtle.generateKey(algorithm(key, hash) as never, true, ['sign', 'verify'])) as CryptoKeyPair;
}

async function keyPem(k: CryptoKey): Promise<string> {
  const der = Buffer.from(await subtle.exportKey('pkcs8', k));
  return `-----BEGIN PRIVATE KEY-----\n${der
    .toString('base64')
    .match(/.{1,64}/g)!
    .join('\n')}\n-----END PRIVATE KEY-----\n`;
}

async function importKey(pem: string, key: KeySpec, hash = 'SHA-256'): Promise<CryptoKey> {
  const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  const alg =
    key.type === 'rsa' ? { name: 'RSASSA-PKCS1-v1_5', hash } : { name: 'ECDSA', namedCurve: key.curve ?? 'P-256' };
  return subtle.importKey('pkcs8', der, alg, true, ['sign']);
}

function serial(): string {
  // Positive, 16 random bytes (RFC 5280 §4.1.2.2 allows up to 20).
  const b = Buffer.from(webcrypto.getRandomValues(new Uint8Array(16)));
  b[0] = b[0]! & 0x7f;
  return b.toString('hex');
}

const CA_KEY: KeySpec = { type: 'ec', curve: 'P-256' };

async function createCa(dir: string): Promise<void> {
  const notBefore = new Date('2020-01-01T00:00:00Z');
  const notAfter = new Date('2046-01-01T00:00:00Z');
  const signingAlgorithm = { name: 'ECDSA', hash: 'SHA-256' };
  const rootKeys = await generate(CA_KEY);
  const root = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: 'CN=LSS Lab Root CA, O=LSS Lab',
    notBefore,
    notAfter,
    keys: rootKeys,
    signingAlgorithm,
    extensions: [
      new x509.BasicConstraintsExtension(true, 1, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(rootKeys.publicKey),
    ],
  });
  const interKeys = await generate(CA_KEY);
  const inter = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: 'CN=LSS Lab Issuing CA, O=LSS Lab',
    issuer: root.subject,
    notBefore,
    notAfter,
    signingKey: rootKeys.privateKey,
    publicKey: interKeys.publicKey,
    signingAlgorithm,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(interKeys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(root),
    ],
  });
  mkdirSync(path.dirname(dir), { recursive: true });
  const tmp = mkdtempSync(`${dir}.tmp-`);
  writeFileSync(path.join(tmp, 'root.pem'), `${root.toString('pem')}\n`);
  writeFileSync(path.join(tmp, 'intermediate.pem'), `${inter.toString('pem')}\n`);
  writeFileSync(path.join(tmp, 'intermediate-key.pem'), await keyPem(interKeys.privateKey), { mode: 0o600 });
  try {
    renameSync(tmp, dir);
  } catch {
    rmSync(tmp, { recursive: true, force: true }); // another run got there first: use its CA
  }
}

const cache = new Map<string, Promise<LabCa>>();

/** The lab CA in `dir` (LSS_LAB_CA_DIR, else .data/lab-ca), created when missing. */
export function loadLabCa(dir: string = process.env[LAB_CA_DIR_ENV] || DEFAULT_LAB_CA_DIR): Promise<LabCa> {
  let hit = cache.get(dir);
  if (!hit) {
    hit = openCa(dir);
    cache.set(dir, hit);
  }
  return hit;
}

async function openCa(dir: string): Promise<LabCa> {
  if (!existsSync(path.join(dir, 'root.pem'))) await createCa(dir);
  const rootPem = readFileSync(path.join(dir, 'root.pem'), 'utf8');
  const intermediatePem = readFileSync(path.join(dir, 'intermediate.pem'), 'utf8');
  const inter = new x509.X509Certificate(intermediatePem);
  const interKey = await importKey(readFileSync(path.join(dir, 'intermediate-key.pem'), 'utf8'), CA_KEY);
  return {
    dir,
    caFile: path.join(dir, 'root.pem'),
    rootPem,
    intermediatePem,
    issue: (spec) => issueLeaf(spec, inter, interKey, intermediatePem),
  };
}

async function issueLeaf(
  spec: LeafSpec,
  inter: x509.X509Certificate,
  interKey: CryptoKey,
  intermediatePem: string,
): Promise<Issued> {
  const now = Date.now();
  const notBefore = spec.notBefore ?? new Date(now - DAY);
  const notAfter = spec.notAfter ?? new Date(now + 90 * DAY);
  const key = spec.key ?? { type: 'ec', curve: 'P-256' };
  const hash = spec.hash ?? 'SHA-256';
  const keys = await generate(key, hash);
  const cn = spec.names[0] ?? spec.ips?.[0] ?? 'lab';
  const san = [
    ...spec.names.map((value) => ({ type: 'dns' as const, value })),
    ...(spec.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(
      x509.KeyUsageFlags.digitalSignature | (key.type === 'rsa' ? x509.KeyUsageFlags.keyEncipherment : 0),
      true,
    ),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
  ];
  if (spec.eku) extensions.push(new x509.ExtendedKeyUsageExtension(spec.eku));
  else if (spec.serverAuth !== false)
    extensions.push(new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]));
  if (san.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(san));
  extensions.push(...(spec.extraExtensions ?? []));
  const subjectName = `CN=${cn}${spec.subject ? `, ${spec.subject}` : ''}`;
  let cert: x509.X509Certificate;
  if (spec.selfSigned) {
    cert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: serial(),
      name: subjectName,
      notBefore,
      notAfter,
      keys,
      extensions,
      signingAlgorithm: key.type === 'rsa' ? { name: 'RSASSA-PKCS1-v1_5', hash } : { name: 'ECDSA', hash },
    });
  } else {
    extensions.push(await x509.AuthorityKeyIdentifierExtension.create(inter));
    cert = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: subjectName,
      issuer: inter.subject,
      notBefore,
      notAfter,
      signingKey: interKey,
      publicKey: keys.publicKey,
      signingAlgorithm: { name: 'ECDSA', hash },
      extensions,
    });
  }
  const certPem = `${cert.toString('pem')}\n`;
  return {
    certPem,
    keyPem: await keyPem(keys.privateKey),
    chainPem: spec.selfSigned ? certPem : certPem + intermediatePem,
    certDer: Buffer.from(cert.rawData),
    spkiDer: Buffer.from(cert.publicKey.rawData),
  };
}
