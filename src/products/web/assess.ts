// The http lane's parsing, as one pool task (workers/pool/parse-tasks.ts → assessWebEvidence):
// evidence in, assessment out, both plain data. HTML (parse5), CSP, cookies (tough-cookie) and
// the Observatory score are CPU work that must not stall the lane's event loop.
import { assessCookies, type CookieFacts } from './cookies.ts';
import { assessCsp, parseCsp, type CspAssessment } from './csp.ts';
import { finalHop, primaryChain, type WebEvidence } from './evidence.ts';
import type { HopRecord } from '../../net/outbound-errors.ts';
import {
  assessCors,
  assessFraming,
  assessHsts,
  assessIsolation,
  assessNosniff,
  assessReferrer,
  hstsDirectives,
  type CorsFacts,
  type FramingFacts,
  type HstsDirective,
  type HstsFacts,
  type IsolationFacts,
  type NosniffFacts,
  type ReferrerFacts,
} from './header-checks.ts';
import { allValues, firstValue } from './headers.ts';
import { readPageMeta, type PageMeta } from './html-meta.ts';
import { scoreObservatory, type ObservatoryScore } from './observatory-score.ts';

export interface WebAssessment {
  /** The final response assessed (of the primary chain). */
  final: { url: string; status: number; contentType: string | null; tlsVerified: boolean | null };
  page: {
    html: boolean;
    metaCsp: number;
    metaReferrer: boolean;
    scripts: number;
    inlineScripts: number;
    scriptsWithIntegrity: number;
    linkedHosts: string[];
    linkedHostsTruncated: boolean;
  } | null;
  csp: CspAssessment;
  hsts: HstsFacts;
  framing: FramingFacts;
  nosniff: NosniffFacts;
  referrer: ReferrerFacts;
  isolation: IsolationFacts;
  cors: CorsFacts;
  cookies: CookieFacts[];
  cookiesTruncated: boolean;
  score: ObservatoryScore | null;
  /** What was left unparsed for being over a cap (docs/products/web.md): reported as limitations. */
  unparsed: { metaCsp: { count: number; longest: number } };
}

const HTML = /^(text\/html|application\/xhtml\+xml)\b/i;

/** Null when no chain produced a response (nothing to assess). */
export function assessWebEvidence(e: WebEvidence): WebAssessment | null {
  const chain = primaryChain(e);
  const last = chain ? finalHop(chain) : null;
  if (!chain || !last) return null;
  const h = last.headers;
  const contentType = firstValue(h, 'content-type');
  let page: PageMeta | null = null;
  if (contentType && HTML.test(contentType) && chain.body !== null) page = readPageMeta(chain.body);
  // Every header and policy is parsed once here; the facts and the score share the results.
  const cspValues = {
    header: allValues(h, 'content-security-policy'),
    reportOnly: allValues(h, 'content-security-policy-report-only'),
  };
  const parsedCsp = parseCsp({ ...cspValues, meta: page?.csp ?? [] });
  const csp = assessCsp(parsedCsp);
  const cookieAssessment = assessCookies(
    chain.hops.map((hop) => ({ url: hop.url, setCookie: allValues(hop.headers, 'set-cookie') })),
  );
  const { cookies, truncated } = cookieAssessment;
  const hstsParsed = new Map<HopRecord, { raw: string; directives: HstsDirective[] } | null>();
  const hstsOf = (hop: HopRecord) => {
    if (!hstsParsed.has(hop)) {
      const values = allValues(hop.headers, 'strict-transport-security');
      const raw = values.length > 0 ? values.join(', ') : null;
      hstsParsed.set(hop, raw === null ? null : { raw, directives: hstsDirectives(raw) });
    }
    return hstsParsed.get(hop)!;
  };
  // HSTS counts only over https (RFC 6797 §8.1: a UA ignores it on http).
  const lastHsts = last.url.startsWith('https:') ? hstsOf(last) : null;
  const hsts = assessHsts(lastHsts?.raw ?? null, lastHsts?.directives ?? []);
  const referrer = assessReferrer(allValues(h, 'referrer-policy'), page?.referrer ?? []);
  return {
    final: {
      url: last.url,
      status: last.status,
      contentType: contentType?.slice(0, 128) ?? null,
      tlsVerified: last.tlsVerified,
    },
    page: page && {
      html: true,
      metaCsp: page.csp.length,
      metaReferrer: page.referrer.length > 0,
      scripts: page.scripts.length,
      inlineScripts: page.inlineScripts,
      scriptsWithIntegrity: page.scripts.filter((s) => s.integrity).length,
      linkedHosts: page.linkedHosts,
      linkedHostsTruncated: page.linkedHostsTruncated,
    },
    csp,
    hsts,
    framing: assessFraming(h, csp.frameAncestors),
    nosniff: assessNosniff(h),
    referrer,
    isolation: assessIsolation(h),
    cors: assessCors(h, e.preflight),
    cookies,
    cookiesTruncated: truncated,
    score: scoreObservatory({
      evidence: e,
      page,
      cookies,
      finalSameSiteInvalid: cookieAssessment.finalSameSiteInvalid,
      csp: { ...cspValues, parsed: parsedCsp },
      referrer,
      hstsOf,
    }),
    unparsed: { metaCsp: page?.cspSkipped ?? { count: 0, longest: 0 } },
  };
}
