// The BIMI evidence behind a record: the logo at l= and the mark certificate at a=, fetched through
// the outbound guard (https only, every hop vetted and recorded, 64 KiB for a logo and 128 KiB for
// a certificate, 10 s each, at most 3 redirects, both at once), then checked in the parse pool
// (./svg-profile.ts, ./mark-certificate.ts). mailauth's own BIMI code is never used: its fetches
// bypass any address policy and its VMC reader checks no signature (docs/products/mail.md).
//
// A fetch failure that says something about the target (the host does not exist, a certificate
// invalid for it, a redirect off https, a body over the cap, a status other than 200) is a finding;
// one that says nothing (a timeout, an unreachable host, an address or a port our policy refuses)
// is a limitation, and the lane is partial. The URLs are the record's: they are fetched only on
// the passive ports (a record naming port 22 is refused before any connection: port_not_allowed),
// and a host that gives no answer is `unreachable` whatever the reason, so the lookup cannot be
// used to tell open, closed and filtered ports apart (src/net/passive-ports.ts).

import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ObjectRef } from '../../contract/tasks.ts';
import type { GuardedResponse } from '../../net/outbound-guard.ts';
import type { CheckContext } from '../kit/product-contract.ts';
import { mailFinding } from './findings.ts';
import type { MarkCertificateFacts } from './mark-certificate.ts';
import { judgeOutbound } from './outbound-failure.ts';
import type { LaneOutput } from './output.ts';
import { inPool } from './pool.ts';
import type { BimiProjection } from './schema.ts';
import { SVG_MAX_BYTES } from './svg-profile.ts';

export const BIMI_FETCH_TIMEOUT_MS = 10_000;
const CERTIFICATE_MAX_BYTES = 128 * 1024;
const MAX_REDIRECTS = 3;

type Logo = NonNullable<BimiProjection['logo']>;
type Certificate = NonNullable<BimiProjection['certificate']>;

const BUILT_IN = path.join(import.meta.dirname, 'bimi-roots.pem');
const anchorCache = new Map<string, string>();

/** The built-in BIMI roots and the operator's (BIMI_TRUST_ANCHORS), read once per process. */
export function bimiTrustAnchors(extraFile: string | undefined): string {
  const key = extraFile ?? '';
  let hit = anchorCache.get(key);
  if (hit === undefined) {
    hit = readFileSync(BUILT_IN, 'utf8') + (extraFile ? `\n${readFileSync(extraFile, 'utf8')}` : '');
    anchorCache.set(key, hit);
  }
  return hit;
}

interface Fetched {
  url: string;
  response: GuardedResponse | null;
  failure: { kind: 'fact' | 'gap'; code: string; detail: string } | null;
}

async function fetchEvidence(ctx: CheckContext, url: string, maxBytes: number, timeoutMs: number): Promise<Fetched> {
  const guard = ctx.runtime.services.outbound!;
  try {
    // The record's URL, the target's word: passive ports, one code for an unreachable host.
    const response = await guard.fetchReferenced(url, {
      maxBytes,
      maxRedirects: MAX_REDIRECTS,
      timeoutMs,
      signal: ctx.signal,
      headers: { accept: '*/*' },
    });
    // Every hop must stay on https (the BIMI draft: "MUST be a URI with a HTTPS transport").
    const plain = response.hops.find((h) => !h.url.startsWith('https:'));
    if (plain)
      return {
        url,
        response,
        failure: { kind: 'fact', code: 'redirect_off_https', detail: `a redirect to ${plain.url.slice(0, 120)}` },
      };
    if (response.status !== 200)
      return {
        url,
        response,
        failure: { kind: 'fact', code: 'http_status', detail: `HTTP status ${response.status}` },
      };
    return { url, response, failure: null };
  } catch (err) {
    const v = judgeOutbound(err);
    return { url, response: null, failure: { kind: v.kind, code: v.code, detail: v.detail } };
  }
}

const header = (r: GuardedResponse | null, name: string) => {
  const v = r?.headers[name];
  return (Array.isArray(v) ? v[0] : v) ?? null;
};
const mediaTypeOf = (r: GuardedResponse | null) =>
  (header(r, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();

export interface BimiEvidenceInput {
  domain: string;
  /** The domain whose BIMI record applied (the domain, or its organisational domain). */
  recordDomain: string;
  location: string | null;
  authority: string | null;
  /** Deadline of each fetch (default 10 s; tests shorten it). */
  fetchTimeoutMs?: number;
}

export async function bimiEvidence(
  ctx: CheckContext,
  out: LaneOutput,
  posture: ObjectRef,
  input: BimiEvidenceInput,
): Promise<{ logo: Logo | null; certificate: Certificate | null }> {
  const { location, authority } = input;
  if (!location && !authority) return { logo: null, certificate: null };
  if (!ctx.runtime.services.outbound) {
    out.partial({
      code: 'bimi_evidence_not_fetched',
      message: 'No outbound guard is configured: the BIMI logo and mark certificate were not fetched.',
    });
    return { logo: null, certificate: null };
  }
  out.source({ source: 'bimi_fetch' });
  const [logoFetch, certFetch] = await Promise.all([
    location ? fetchEvidence(ctx, location, SVG_MAX_BYTES, input.fetchTimeoutMs ?? BIMI_FETCH_TIMEOUT_MS) : null,
    authority
      ? fetchEvidence(ctx, authority, CERTIFICATE_MAX_BYTES, input.fetchTimeoutMs ?? BIMI_FETCH_TIMEOUT_MS)
      : null,
  ]);
  const logo = logoFetch ? await checkLogo(ctx, out, posture, input, logoFetch) : null;
  const certificate = certFetch
    ? await checkCertificate(ctx, out, posture, input, certFetch, logo?.svg?.sha256 ?? null)
    : null;
  if (logo?.svg?.valid && !authority)
    out.finding(
      mailFinding(
        'bimi_no_evidence_document',
        posture,
        `The BIMI record of ${input.domain} has a usable logo but no mark certificate (a=): providers that require a VMC or CMC show no logo.`,
        [`l=${location}`],
      ),
    );
  return { logo, certificate };
}

function fetchFacts(f: Fetched) {
  return {
    url: f.url,
    fetched: f.response !== null && f.failure === null,
    status: f.response?.status ?? null,
    contentType: header(f.response, 'content-type'),
    bytes: f.response?.body.length ?? null,
    hops: (f.response?.hops ?? []).map((h) => ({ url: h.url.slice(0, 300), status: h.status })),
    failure: f.failure ? f.failure.code : null,
  };
}

async function checkLogo(
  ctx: CheckContext,
  out: LaneOutput,
  posture: ObjectRef,
  input: BimiEvidenceInput,
  f: Fetched,
): Promise<Logo> {
  const logo: Logo = { ...fetchFacts(f), compressed: null, svg: null };
  const evidence = [`l=${f.url}`, ...logo.hops.map((h) => `${h.status} ${h.url}`)];
  if (f.failure?.kind === 'gap') {
    out.partial({
      code: 'bimi_logo_unreachable',
      message: `The BIMI logo at ${f.url} could not be fetched (${f.failure.code}); whether it is usable is unknown.`,
    });
    return logo;
  }
  const failure = f.failure?.detail ?? null;
  if (failure) {
    logo.fetched = false;
    out.finding(
      mailFinding(
        'bimi_logo_unusable',
        posture,
        `The BIMI logo of ${input.domain} cannot be used: ${failure}.`,
        evidence,
      ),
    );
    return logo;
  }
  const svg = await inPool(ctx, 'mailBimiSvg', { base64: f.response!.body.toString('base64') });
  // The type is advice, not a verdict: the content decides (a logo that is not SVG fails the profile).
  if (mediaTypeOf(f.response) !== 'image/svg+xml')
    svg.advice.push(`served as "${header(f.response, 'content-type') ?? 'no Content-Type'}", not image/svg+xml`);
  logo.compressed = svg.compressed;
  logo.svg = svg;
  if (!svg.valid)
    out.finding(
      mailFinding(
        'bimi_logo_not_tiny_ps',
        posture,
        `The BIMI logo of ${input.domain} breaks SVG Tiny PS: ${svg.violations.slice(0, 3).join('; ')}${svg.violations.length > 3 || svg.moreViolations ? '…' : ''}.`,
        [`l=${f.url}`, ...svg.violations],
      ),
    );
  return logo;
}

async function checkCertificate(
  ctx: CheckContext,
  out: LaneOutput,
  posture: ObjectRef,
  input: BimiEvidenceInput,
  f: Fetched,
  logoSha256: string | null,
): Promise<Certificate> {
  const base = { ...fetchFacts(f), facts: null };
  const evidence = [`a=${f.url}`, ...base.hops.map((h) => `${h.status} ${h.url}`)];
  if (f.failure?.kind === 'gap') {
    out.partial({
      code: 'bimi_certificate_unreachable',
      message: `The BIMI mark certificate at ${f.url} could not be fetched (${f.failure.code}); whether it is valid is unknown.`,
    });
    return base;
  }
  if (f.failure) {
    out.finding(
      mailFinding(
        'bimi_certificate_invalid',
        posture,
        `The BIMI mark certificate of ${input.domain} cannot be used: ${f.failure.detail}.`,
        evidence,
      ),
    );
    return base;
  }
  const facts: MarkCertificateFacts = await inPool(ctx, 'mailBimiCertificate', {
    pem: f.response!.body.toString('latin1'),
    domain: input.domain,
    recordDomain: input.recordDomain,
    anchors: bimiTrustAnchors(ctx.runtime.config.BIMI_TRUST_ANCHORS),
    now: new Date().toISOString(),
    logoSha256,
  });
  out.limit({
    code: 'bimi_certificate_revocation_not_checked',
    message: 'The BIMI mark certificate was checked without revocation (no CRL or OCSP is fetched).',
  });
  const lines = [
    `a=${f.url}`,
    `${facts.kind ?? 'mark certificate'} ${facts.subject ?? ''}`.trim(),
    `issuer ${facts.issuer ?? 'unknown'}, until ${facts.notAfter ?? 'unknown'}`,
  ];
  if (facts.problems.length > 0)
    out.finding(
      mailFinding(
        'bimi_certificate_invalid',
        posture,
        `The BIMI mark certificate of ${input.domain} is not valid: ${facts.problems.slice(0, 3).join('; ')}.`,
        [...lines, ...facts.problems],
      ),
    );
  if (facts.chainTrusted && !facts.domainMatch)
    out.finding(
      mailFinding(
        'bimi_certificate_domain_mismatch',
        posture,
        `The BIMI mark certificate at ${f.url} is for ${facts.sans.slice(0, 5).join(', ') || 'no domain'}, not ${input.domain}.`,
        [...lines, `subjectAltName: ${facts.sans.join(', ') || 'none'}`],
      ),
    );
  if (facts.logoMatch === false)
    out.finding(
      mailFinding(
        'bimi_certificate_logo_mismatch',
        posture,
        `The BIMI logo at l= of ${input.domain} is not the logo in its mark certificate.`,
        [
          ...lines,
          `l= SHA-256 ${logoSha256}`,
          `certificate logo ${facts.logo?.hashAlgorithm ?? ''} ${facts.logo?.declaredHash ?? ''}`,
        ],
      ),
    );
  return { ...base, facts };
}
