// A BIMI mark certificate (the a= evidence document): a Verified Mark Certificate or a Common Mark
// Certificate, leaf first, as PEM. Checked here, pure, in the parse pool:
//   - the chain, element by element: each certificate names the next as issuer AND carries its
//     signature (X509Certificate.verify with the issuer's key: a forged certificate with the right
//     names is refused), every issuer is a CA, and the last one is a BIMI trust anchor or is signed
//     by one (RFC 5280 §6); every certificate inside its validity;
//   - the leaf's extended key usage holds id-kp-BrandIndicatorforMessageIdentification
//     (1.3.6.1.5.5.7.3.31);
//   - its subjectAltName names the domain (or the organisational domain whose BIMI record applies);
//   - its logotype extension (RFC 3709, 1.3.6.1.5.5.7.1.12) carries the logo as an image/svg+xml
//     data: URI (gzip, RFC 6170 §5.2), inflated within 64 KiB, whose SHA-256 is the one declared,
//     and which meets SVG Tiny PS itself;
//   - the mark type (subject attribute 1.3.6.1.4.1.53087.1.13): registered or government mark →
//     VMC, prior use or modified registered mark → CMC.
// Revocation is not checked. Linear in the input: the PEM is split line by line (at most 8
// certificates from at most 128 KiB), the DER is read by ./der.ts.
import { createHash, X509Certificate } from 'node:crypto';
import {
  bytesOf,
  certificateParts,
  children,
  DerError,
  nameAttribute,
  oidText,
  readTlv,
  stringOf,
  type Tlv,
} from './der.ts';
import { checkSvgProfile, svgBytes, type SvgProfile } from './svg-profile.ts';

export const MARK_CERTIFICATE_MAX_BYTES = 128 * 1024;
const MAX_CERTIFICATES = 8;
const MAX_SANS = 50;
export const BIMI_EKU = '1.3.6.1.5.5.7.3.31';
const EKU = '2.5.29.37';
const SAN = '2.5.29.17';
const LOGOTYPE = '1.3.6.1.5.5.7.1.12';
const MARK_TYPE = '1.3.6.1.4.1.53087.1.13';
const SUBJECT_O = '2.5.4.10';
const HASHES: Record<string, string> = {
  '2.16.840.1.101.3.4.2.1': 'sha256',
  '2.16.840.1.101.3.4.2.2': 'sha384',
  '2.16.840.1.101.3.4.2.3': 'sha512',
};
const VMC_MARKS = new Set(['registered mark', 'government mark']);
const CMC_MARKS = new Set(['prior use mark', 'modified registered mark']);

export interface MarkCertificateInput {
  pem: string;
  /** The domain looked up, and the domain whose BIMI record applied (its organisational domain). */
  domain: string;
  recordDomain: string;
  /** PEM text of the trust anchors (the BIMI roots and BIMI_TRUST_ANCHORS). */
  anchors: string;
  now: string;
  /** SHA-256 (hex) of the l= logo as fetched and inflated, when it was. */
  logoSha256: string | null;
}

export interface EmbeddedLogo {
  mediaType: string | null;
  /** The hash the certificate declares, and whether the embedded SVG has it. */
  hashAlgorithm: string | null;
  declaredHash: string | null;
  hashValid: boolean | null;
  svg: SvgProfile | null;
  error: string | null;
}

export interface MarkCertificateFacts {
  certificates: number;
  kind: 'VMC' | 'CMC' | null;
  markType: string | null;
  chainTrusted: boolean;
  trustError: string | null;
  bimiEku: boolean;
  sans: string[];
  domainMatch: boolean;
  subject: string | null;
  organization: string | null;
  issuer: string | null;
  notAfter: string | null;
  fingerprint256: string | null;
  logo: EmbeddedLogo | null;
  /** The l= logo is the certificate's logo (same SHA-256); null when either is missing. */
  logoMatch: boolean | null;
  /** Why the certificate cannot be used (bimi_certificate_invalid), empty when it can. */
  problems: string[];
}

/** The base64 bodies of the PEM CERTIFICATE blocks, one pass over the lines. */
export function pemBlocks(pem: string, max = MAX_CERTIFICATES + 1): string[] {
  const out: string[] = [];
  let body: string[] | null = null;
  for (const raw of pem.split('\n')) {
    const line = raw.trim();
    if (line === '-----BEGIN CERTIFICATE-----') body = [];
    else if (line === '-----END CERTIFICATE-----') {
      if (body) out.push(body.join(''));
      body = null;
      if (out.length >= max) break;
    } else if (body) body.push(line);
  }
  return out;
}

function parseAll(blocks: string[]): X509Certificate[] | string {
  const certs: X509Certificate[] = [];
  for (const b of blocks) {
    try {
      certs.push(new X509Certificate(Buffer.from(b, 'base64')));
    } catch {
      return `certificate ${certs.length + 1} of the chain does not parse`;
    }
  }
  return certs;
}

const issuedBy = (c: X509Certificate, issuer: X509Certificate) => {
  try {
    return c.checkIssued(issuer) && issuer.ca && c.verify(issuer.publicKey);
  } catch {
    return false;
  }
};

function dnsNames(der: Uint8Array, ext: Tlv | undefined): string[] {
  if (!ext) return [];
  const names = readTlv(der, ext.start, ext.end);
  return children(der, names)
    .filter((g) => g.tag === 0x82)
    .slice(0, MAX_SANS)
    .map((g) => stringOf(der, g).toLowerCase().replace(/\.$/, ''));
}

function ekus(der: Uint8Array, ext: Tlv | undefined): string[] {
  if (!ext) return [];
  return children(der, readTlv(der, ext.start, ext.end)).map((o) => oidText(der, o));
}

/** The first image of the subject logo (RFC 3709 §4.1: subjectLogo [2] → direct [0] → image). */
function embeddedLogo(der: Uint8Array, ext: Tlv | undefined): EmbeddedLogo {
  const logo: EmbeddedLogo = {
    mediaType: null,
    hashAlgorithm: null,
    declaredHash: null,
    hashValid: null,
    svg: null,
    error: null,
  };
  if (!ext) return { ...logo, error: 'no logotype extension' };
  const extn = readTlv(der, ext.start, ext.end);
  const subjectLogo = children(der, extn).find((t) => t.tag === 0xa2);
  const info = subjectLogo ? children(der, subjectLogo)[0] : undefined;
  if (info?.tag !== 0xa0) return { ...logo, error: 'no direct subject logo' };
  const images = children(der, info).find((t) => t.tag === 0x30);
  const image = images ? children(der, images)[0] : undefined;
  const details = image ? children(der, image)[0] : undefined;
  if (!details) return { ...logo, error: 'no logotype image' };
  const [mediaType, hashes, uris] = children(der, details);
  if (!mediaType || !hashes || !uris) return { ...logo, error: 'incomplete logotype details' };
  logo.mediaType = stringOf(der, mediaType);
  const firstHash = children(der, hashes)[0];
  if (firstHash) {
    const [alg, value] = children(der, firstHash);
    const algOid = alg ? children(der, alg)[0] : undefined;
    logo.hashAlgorithm = algOid ? (HASHES[oidText(der, algOid)] ?? oidText(der, algOid)) : null;
    logo.declaredHash = value ? bytesOf(der, value).toString('hex') : null;
  }
  const uri = children(der, uris)[0];
  const text = uri ? stringOf(der, uri) : '';
  const comma = text.indexOf(',');
  if (!text.startsWith('data:') || comma < 0 || !text.slice(0, comma).endsWith(';base64'))
    return { ...logo, error: 'the logotype URI is not a base64 data: URI' };
  const raw = Buffer.from(text.slice(comma + 1), 'base64');
  const inflated = svgBytes(raw);
  if ('error' in inflated) return { ...logo, error: inflated.error };
  if (logo.hashAlgorithm && ['sha256', 'sha384', 'sha512'].includes(logo.hashAlgorithm))
    logo.hashValid = createHash(logo.hashAlgorithm).update(inflated.bytes).digest('hex') === logo.declaredHash;
  logo.svg = checkSvgProfile({ base64: inflated.bytes.toString('base64') });
  return logo;
}

export function checkMarkCertificate(input: MarkCertificateInput): MarkCertificateFacts {
  const facts: MarkCertificateFacts = {
    certificates: 0,
    kind: null,
    markType: null,
    chainTrusted: false,
    trustError: null,
    bimiEku: false,
    sans: [],
    domainMatch: false,
    subject: null,
    organization: null,
    issuer: null,
    notAfter: null,
    fingerprint256: null,
    logo: null,
    logoMatch: null,
    problems: [],
  };
  const problem = (p: string) => {
    if (!facts.problems.includes(p)) facts.problems.push(p);
  };
  if (input.pem.length > MARK_CERTIFICATE_MAX_BYTES) {
    problem(`larger than ${MARK_CERTIFICATE_MAX_BYTES} bytes`);
    return facts;
  }
  const blocks = pemBlocks(input.pem);
  facts.certificates = blocks.length;
  if (blocks.length === 0) {
    facts.trustError = 'no_certificate';
    problem('no PEM certificate');
    return facts;
  }
  if (blocks.length > MAX_CERTIFICATES) {
    facts.trustError = 'too_many_certificates';
    problem(`more than ${MAX_CERTIFICATES} certificates`);
    return facts;
  }
  const certs = parseAll(blocks);
  if (typeof certs === 'string') {
    facts.trustError = 'unparseable';
    problem(certs);
    return facts;
  }
  const leaf = certs[0]!;
  facts.subject = leaf.subject.replace(/\n/g, ', ');
  facts.issuer = leaf.issuer.replace(/\n/g, ', ');
  facts.notAfter = leaf.validToDate.toISOString();
  facts.fingerprint256 = leaf.fingerprint256;

  // The chain: each element signed by the next, the last by (or equal to) a trust anchor.
  const anchors = parseAll(pemBlocks(input.anchors, 64));
  const roots = typeof anchors === 'string' ? [] : anchors;
  for (let i = 0; i + 1 < certs.length && !facts.trustError; i++)
    if (!issuedBy(certs[i]!, certs[i + 1]!))
      facts.trustError = `certificate ${i + 1} is not signed by certificate ${i + 2}`;
  if (!facts.trustError) {
    const last = certs[certs.length - 1]!;
    const anchored =
      roots.some((r) => r.fingerprint256 === last.fingerprint256) || roots.some((r) => issuedBy(last, r));
    if (!anchored) facts.trustError = 'the chain does not lead to a BIMI trust anchor';
  }
  const now = new Date(input.now);
  const outside = certs.findIndex((c) => c.validFromDate > now || c.validToDate < now);
  if (!facts.trustError && outside >= 0)
    facts.trustError = `certificate ${outside + 1} is ${certs[outside]!.validToDate < now ? 'expired' : 'not yet valid'}`;
  facts.chainTrusted = facts.trustError === null;
  if (facts.trustError) problem(facts.trustError);

  try {
    const der = leaf.raw;
    const { subject, extensions } = certificateParts(der);
    facts.bimiEku = ekus(der, extensions.get(EKU)).includes(BIMI_EKU);
    if (!facts.bimiEku) problem('no BIMI extended key usage (1.3.6.1.5.5.7.3.31)');
    facts.sans = dnsNames(der, extensions.get(SAN));
    const accepted = new Set([
      input.domain,
      input.recordDomain,
      `default._bimi.${input.domain}`,
      `default._bimi.${input.recordDomain}`,
    ]);
    facts.domainMatch = facts.sans.some((s) => accepted.has(s));
    facts.markType = nameAttribute(der, subject, MARK_TYPE)[0] ?? null;
    facts.organization = nameAttribute(der, subject, SUBJECT_O)[0] ?? null;
    const mark = facts.markType?.toLowerCase() ?? '';
    facts.kind = VMC_MARKS.has(mark) ? 'VMC' : CMC_MARKS.has(mark) ? 'CMC' : null;
    try {
      facts.logo = embeddedLogo(der, extensions.get(LOGOTYPE));
    } catch (err) {
      facts.logo = {
        mediaType: null,
        hashAlgorithm: null,
        declaredHash: null,
        hashValid: null,
        svg: null,
        error: `malformed logotype extension (${err instanceof DerError ? err.message : 'unreadable'})`,
      };
    }
  } catch (err) {
    problem(`the leaf certificate cannot be read (${err instanceof DerError ? err.message : 'malformed'})`);
    return facts;
  }
  const logo = facts.logo;
  if (logo.error) problem(`logotype: ${logo.error}`);
  else {
    if (logo.mediaType !== 'image/svg+xml')
      problem(`the logotype's media type is ${logo.mediaType}, not image/svg+xml`);
    if (logo.hashValid === false) problem('the embedded logo does not have the hash the certificate declares');
    if (logo.hashValid === null) problem(`the logotype hash (${logo.hashAlgorithm ?? 'none'}) cannot be checked`);
    if (logo.svg && !logo.svg.valid) problem('the embedded logo breaks SVG Tiny PS');
  }
  const certLogo = logo.hashAlgorithm === 'sha256' ? logo.declaredHash : (logo.svg?.sha256 ?? null);
  facts.logoMatch = input.logoSha256 && certLogo ? input.logoSha256 === certLogo : null;
  return facts;
}
