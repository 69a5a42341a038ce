// The http lane's parsing, as one pool task (workers/pool/parse-tasks.ts → assessWebEvidence):
// evidence in, assessment out, both plain data. HTML (parse5), CSP, cookies (tough-cookie) and
// the Observatory score are CPU work that must not stall the lane's event loop.
import { assessCookies, type CookieFacts } from './cookies.ts';
import { assessCsp, type CspAssessment } from './csp.ts';
import { finalHop, primaryChain, type WebEvidence } from './evidence.ts';
import {
  assessCors,
  assessFraming,
  assessHsts,
  assessIsolation,
  assessNosniff,
  assessReferrer,
  type CorsFacts,
  type FramingFacts,
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
  const csp = assessCsp({
    header: allValues(h, 'content-security-policy'),
    meta: page?.csp ?? [],
    reportOnly: allValues(h, 'content-security-policy-report-only'),
  });
  const { cookies, truncated } = assessCookies(
    chain.hops.map((hop) => ({ url: hop.url, setCookie: allValues(hop.headers, 'set-cookie') })),
  );
  // HSTS counts only over https (RFC 6797 §8.1: a UA ignores it on http).
  const hsts = assessHsts(last.url.startsWith('https:') ? firstValue(h, 'strict-transport-security') : null);
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
    referrer: assessReferrer(allValues(h, 'referrer-policy'), page?.referrer ?? []),
    isolation: assessIsolation(h),
    cors: assessCors(h, e.preflight),
    cookies,
    cookiesTruncated: truncated,
    score: scoreObservatory({ evidence: e, page, cookies }),
  };
}
