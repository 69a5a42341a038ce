// The score and grade of the MDN HTTP Observatory, scoring algorithm version 4 (the version of
// @mdn/mdn-http-observatory 1.4.x, whose published tests-and-scoring page lists the same ten tests
// and modifiers), computed here from our own evidence. This is our implementation of the
// published rules, not their code; docs/products/web.md lists every modifier and every place
// where we knowingly differ, and test/reference/observatory.ref.ts replays the lab's evidence
// through the Observatory package itself to show both give the same score.
//
// Rules: start at 100; each test yields one result with a modifier; the score with bonuses counts
// only when the score without them (negative modifiers only) is at least 90; the grade is read
// from the score rounded down to a multiple of 5 (A+ at 100 and above).
import { parse as parseDomain } from 'tldts';
import type { CspPolicy, ParsedCsp } from './csp.ts';
import { firstValue, type HeaderMap } from './headers.ts';
import type { CookieFacts } from './cookies.ts';
import type { HstsDirective, ReferrerFacts } from './header-checks.ts';
import type { PageMeta } from './html-meta.ts';
import { finalHop, type WebEvidence } from './evidence.ts';
import type { HopRecord } from '../../net/outbound-errors.ts';

export const OBSERVATORY_ALGORITHM = 'mdn-http-observatory/4';

/** Every result of every test with its modifier (docs/products/web.md is generated from the same list). */
export const OBSERVATORY_MODIFIERS = {
  'content-security-policy': {
    'csp-implemented-with-no-unsafe-default-src-none': 10,
    'csp-implemented-with-no-unsafe': 5,
    'csp-implemented-with-unsafe-inline-in-style-src-only': 0,
    'csp-implemented-but-duplicate-directives': 0,
    'csp-implemented-with-insecure-scheme-in-passive-content-only': -10,
    'csp-implemented-with-unsafe-eval': -10,
    'csp-implemented-with-unsafe-inline': -20,
    'csp-implemented-with-insecure-scheme': -20,
    'csp-header-invalid': -25,
    'csp-not-implemented': -25,
    'csp-not-implemented-but-reporting-enabled': -25,
  },
  cookies: {
    'cookies-secure-with-httponly-sessions-and-samesite': 5,
    'cookies-secure-with-httponly-sessions': 0,
    'cookies-not-found': 0,
    'cookies-without-secure-flag-but-protected-by-hsts': -5,
    'cookies-session-without-secure-flag-but-protected-by-hsts': -10,
    'cookies-without-secure-flag': -20,
    'cookies-samesite-flag-invalid': -20,
    'cookies-anticsrf-without-samesite-flag': -20,
    'cookies-session-without-httponly-flag': -30,
    'cookies-session-without-secure-flag': -40,
  },
  'cross-origin-resource-sharing': {
    'cross-origin-resource-sharing-not-implemented': 0,
    'cross-origin-resource-sharing-implemented-with-public-access': 0,
    'cross-origin-resource-sharing-implemented-with-restricted-access': 0,
    'cross-origin-resource-sharing-implemented-with-universal-access': -50,
  },
  redirection: {
    'redirection-all-redirects-preloaded': 0,
    'redirection-to-https': 0,
    'redirection-not-needed-no-http': 0,
    'redirection-off-host-from-http': -5,
    'redirection-not-to-https-on-initial-redirection': -10,
    'redirection-not-to-https': -20,
    'redirection-missing': -20,
    'redirection-invalid-cert': -20,
  },
  'referrer-policy': {
    'referrer-policy-private': 5,
    'referrer-policy-not-implemented': 0,
    'referrer-policy-unsafe': -5,
    'referrer-policy-header-invalid': -5,
  },
  'strict-transport-security': {
    'hsts-preloaded': 5,
    'hsts-implemented-max-age-at-least-six-months': 0,
    'hsts-implemented-max-age-less-than-six-months': -10,
    'hsts-not-implemented': -20,
    'hsts-header-invalid': -20,
    'hsts-not-implemented-no-https': -20,
    'hsts-invalid-cert': -20,
  },
  'subresource-integrity': {
    'sri-implemented-and-all-scripts-loaded-securely': 5,
    'sri-implemented-and-external-scripts-loaded-securely': 5,
    'sri-not-implemented-response-not-html': 0,
    'sri-not-implemented-but-no-scripts-loaded': 0,
    'sri-not-implemented-but-all-scripts-loaded-from-secure-origin': 0,
    'sri-not-implemented-but-external-scripts-loaded-securely': -5,
    'sri-implemented-but-external-scripts-not-loaded-securely': -20,
    'sri-not-implemented-and-external-scripts-not-loaded-securely': -50,
  },
  'x-content-type-options': {
    'x-content-type-options-nosniff': 0,
    'x-content-type-options-not-implemented': -5,
    'x-content-type-options-header-invalid': -5,
  },
  'x-frame-options': {
    'x-frame-options-implemented-via-csp': 5,
    'x-frame-options-sameorigin-or-deny': 0,
    'x-frame-options-allow-from-origin': 0,
    'x-frame-options-not-implemented': -20,
    'x-frame-options-header-invalid': -20,
  },
  'cross-origin-resource-policy': {
    'corp-implemented-with-same-site': 10,
    'corp-implemented-with-same-origin': 10,
    'corp-implemented-with-cross-origin': 0,
    'corp-not-implemented': 0,
    'corp-header-invalid': -5,
  },
} as const;

type Modifiers = typeof OBSERVATORY_MODIFIERS;
export type ObservatoryTest = keyof Modifiers;
type ResultOf<T extends ObservatoryTest> = keyof Modifiers[T] & string;

export const GRADE_STEPS: ReadonlyArray<[number, string]> = [
  [100, 'A+'],
  [90, 'A'],
  [85, 'A-'],
  [80, 'B+'],
  [70, 'B'],
  [65, 'B-'],
  [60, 'C+'],
  [50, 'C'],
  [45, 'C-'],
  [40, 'D+'],
  [30, 'D'],
  [25, 'D-'],
  [0, 'F'],
];
const BONUS_NEEDS = 90;

export interface ObservatoryScore {
  algorithm: typeof OBSERVATORY_ALGORITHM;
  score: number;
  grade: string;
  /** The Observatory itself grades only 2xx, 3xx, 401 and 403 replies; we grade any reply and say so. */
  observatoryWouldGrade: boolean;
  tests: Array<{ test: ObservatoryTest; result: string; modifier: number }>;
}

export function gradeFor(score: number): string {
  const key = Math.min(Math.max(score, 0) - (Math.max(score, 0) % 5), 100);
  return GRADE_STEPS.find(([min]) => key >= min)![1];
}

/**
 * What the scoring reads, already parsed by assess.ts: each header and policy of the evidence is
 * parsed once and shared between the facts and the score (issue 18: the CSP used to be parsed
 * three times).
 */
export interface ScoringInput {
  evidence: WebEvidence;
  /** The assessed page's <meta> policies and scripts (null when it is not HTML). */
  page: PageMeta | null;
  /** Cookies the primary chain set. */
  cookies: CookieFacts[];
  /** A Set-Cookie line of the final response has a SameSite outside strict/lax/none (any part). */
  finalSameSiteInvalid: boolean;
  /** The final response's CSP header and report-only values as sent, and every policy parsed. */
  csp: { header: readonly string[]; reportOnly: readonly string[]; parsed: ParsedCsp };
  /** The final response's referrer policy (header and <meta>). */
  referrer: ReferrerFacts;
  /** The Strict-Transport-Security directives of a response (memoised per hop by the caller). */
  hstsOf(hop: HopRecord): { raw: string; directives: HstsDirective[] } | null;
}

// ---- the ten tests ------------------------------------------------------------------------------

const OBS_BROAD = new Set(['ftp:', 'http:', 'https:', '*', 'http://*', 'http://*.*', 'https://*', 'https://*.*']);
const OBS_INLINE = new Set(["'unsafe-inline'", 'data:']);
const isBroadOrInline = (s: string) => OBS_BROAD.has(s) || OBS_INLINE.has(s);
const nonceOrHash = (l: Set<string>) => [...l].some((s) => /^'(nonce-|sha256-|sha384-|sha512-)/.test(s));
const insecureScheme = (s: string) => s.startsWith('http:') || s.startsWith('ftp:');

/** Several policies combine by keeping, per directive, only what every policy that sets it allows. */
function combine(policies: CspPolicy[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const p of policies) {
    for (const [name, raw] of Object.entries(p.directives)) {
      const values = new Set(raw.length === 0 && name.endsWith('-src') ? ["'none'"] : raw.map((v) => v.toLowerCase()));
      const prev = out.get(name);
      out.set(name, prev ? new Set([...prev].filter((v) => values.has(v))) : values);
    }
  }
  for (const [name, v] of out) if (v.size === 0) out.set(name, new Set(["'none'"]));
  return out;
}

interface CspScore {
  result: ResultOf<'content-security-policy'>;
  /** The directives of the combined policy when it could be judged (the X-Frame-Options test reads frame-ancestors). */
  directives: Map<string, Set<string>> | null;
}

function cspTest(input: ScoringInput['csp'], meta: readonly string[], siteHttps: boolean): CspScore {
  const { parsed } = input;
  const all = [...(input.header.length > 0 ? [input.header.join(', ')] : []), ...meta];
  const policies = [...parsed.header, ...parsed.meta];
  // Repeating a directive is an error the Observatory wants noticed (report-uri/report-to excepted);
  // so is a policy too short to hold a directive.
  const tooShort = all.some((p) => p.replace(/[\r\n]/g, '').trim().length < 6);
  const badDuplicate = policies.some((p) => p.duplicates.some((d) => d !== 'report-uri' && d !== 'report-to'));
  if (tooShort || badDuplicate) return { result: 'csp-header-invalid', directives: null };
  const okDuplicate = policies.some((p) => p.duplicates.length > 0);
  const metaPolicies = parsed.meta.map((p) =>
    Object.keys(p.directives).filter((d) => !['frame-ancestors', 'report-uri', 'sandbox'].includes(d)),
  );
  if (parsed.header.length === 0 && metaPolicies.every((d) => d.length === 0)) {
    return {
      result: input.reportOnly.join(', ') ? 'csp-not-implemented-but-reporting-enabled' : 'csp-not-implemented',
      directives: null,
    };
  }
  const csp = combine(policies);
  const get = (...names: string[]) => {
    for (const n of names) {
      const v = csp.get(n);
      if (v) return new Set(v);
    }
    return new Set(['*']);
  };
  const objectSrc = get('object-src', 'default-src');
  const scriptSrc = get('script-src', 'default-src');
  const styleSrc = get('style-src', 'default-src');
  for (const l of [scriptSrc, styleSrc]) if (nonceOrHash(l)) l.delete("'unsafe-inline'");
  let result: CspScore['result'] | null = null;
  if (scriptSrc.has("'strict-dynamic'")) {
    if (nonceOrHash(scriptSrc)) {
      for (const s of [...scriptSrc])
        if ([...OBS_BROAD].some((b) => s.startsWith(b)) || s === "'self'" || s === "'unsafe-inline'")
          scriptSrc.delete(s);
    } else {
      result = 'csp-header-invalid';
    }
  }
  const active = [
    ...[...csp].filter(([d]) => d !== 'img-src' && d !== 'media-src' && d !== 'script-src').flatMap(([, v]) => [...v]),
    ...scriptSrc,
  ];
  const passive = ['img-src', 'media-src'].flatMap((d) => [...(csp.get(d) ?? csp.get('default-src') ?? [])]);
  const set = (r: CspScore['result']) => {
    result ??= r;
  };
  if ([...scriptSrc].some(isBroadOrInline) || [...objectSrc].some((s) => OBS_BROAD.has(s)))
    set('csp-implemented-with-unsafe-inline');
  if (siteHttps && active.some(insecureScheme)) set('csp-implemented-with-insecure-scheme');
  if (scriptSrc.has("'unsafe-eval'") || styleSrc.has("'unsafe-eval'")) set('csp-implemented-with-unsafe-eval');
  if (siteHttps && passive.some(insecureScheme)) set('csp-implemented-with-insecure-scheme-in-passive-content-only');
  if ([...styleSrc].some(isBroadOrInline)) set('csp-implemented-with-unsafe-inline-in-style-src-only');
  const def = csp.get('default-src');
  set(
    def && def.size === 1 && def.has("'none'")
      ? 'csp-implemented-with-no-unsafe-default-src-none'
      : 'csp-implemented-with-no-unsafe',
  );
  const passing = [
    'csp-implemented-with-no-unsafe',
    'csp-implemented-with-no-unsafe-default-src-none',
    'csp-implemented-with-unsafe-inline-in-style-src-only',
    'csp-implemented-with-insecure-scheme-in-passive-content-only',
  ];
  if (passing.includes(result!) && okDuplicate) result = 'csp-implemented-but-duplicate-directives';
  return { result: result!, directives: result === 'csp-header-invalid' ? null : csp };
}

function hstsTest(e: WebEvidence, hstsOf: ScoringInput['hstsOf']): ResultOf<'strict-transport-security'> {
  const res = finalHop(e.https);
  if (!res) return 'hsts-not-implemented-no-https';
  if (e.https.verified === false) return 'hsts-invalid-cert';
  const hsts = hstsOf(res);
  if (hsts === null) return 'hsts-not-implemented';
  // The Observatory reads the first 1,024 characters; we read the directives of the whole value
  // (parsed once for the facts too): only a longer header could be judged differently.
  if (hsts.raw.includes(',')) return 'hsts-header-invalid';
  let maxAge: number | null = null;
  for (const d of hsts.directives) {
    const p = d.text.toLowerCase();
    if (p.startsWith('max-age=')) {
      const digits = /^\d+/.exec(p.slice(8));
      maxAge = digits ? Number(digits[0]) : NaN;
    }
  }
  if (maxAge === null || Number.isNaN(maxAge)) return 'hsts-header-invalid';
  return maxAge < 15_552_000
    ? 'hsts-implemented-max-age-less-than-six-months'
    : 'hsts-implemented-max-age-at-least-six-months';
}

const COOKIE_ORDER: Array<ResultOf<'cookies'>> = [
  'cookies-without-secure-flag-but-protected-by-hsts',
  'cookies-without-secure-flag',
  'cookies-session-without-secure-flag-but-protected-by-hsts',
  'cookies-samesite-flag-invalid',
  'cookies-anticsrf-without-samesite-flag',
  'cookies-session-without-httponly-flag',
  'cookies-session-without-secure-flag',
];

function worse<T extends string>(order: readonly T[], a: T | null, b: T): T {
  return a === null || order.indexOf(b) > order.indexOf(a) ? b : a;
}

function cookiesTest(cookies: CookieFacts[], finalSameSiteInvalid: boolean, hstsPasses: boolean): ResultOf<'cookies'> {
  let result: ResultOf<'cookies'> | null = null;
  if (finalSameSiteInvalid) result = worse(COOKIE_ORDER, result, 'cookies-samesite-flag-invalid');
  // The jar: what a browser kept, the last setting of a (name, host, path) winning.
  const jar = new Map<string, CookieFacts>();
  for (const c of cookies)
    if (c.accepted) jar.set(`${c.name}\u0000${c.domain ?? new URL(c.setBy).hostname}\u0000${c.path ?? ''}`, c);
  if (jar.size === 0) return 'cookies-not-found';
  let missingSameSite = false;
  for (const c of jar.values()) {
    const name = c.name.toLowerCase();
    const session = name.includes('login') || name.includes('sess');
    const sameSite = c.sameSite === 'invalid' ? null : c.sameSite;
    if (!c.secure && sameSite === 'none') result = worse(COOKIE_ORDER, result, 'cookies-samesite-flag-invalid');
    if (!c.secure)
      result = worse(
        COOKIE_ORDER,
        result,
        hstsPasses ? 'cookies-without-secure-flag-but-protected-by-hsts' : 'cookies-without-secure-flag',
      );
    if (name.includes('csrf') && !sameSite)
      result = worse(COOKIE_ORDER, result, 'cookies-anticsrf-without-samesite-flag');
    if (session && !c.secure)
      result = worse(
        COOKIE_ORDER,
        result,
        hstsPasses
          ? 'cookies-session-without-secure-flag-but-protected-by-hsts'
          : 'cookies-session-without-secure-flag',
      );
    if (session && !c.httpOnly) result = worse(COOKIE_ORDER, result, 'cookies-session-without-httponly-flag');
    if (!sameSite) missingSameSite = true;
  }
  return (
    result ??
    (missingSameSite ? 'cookies-secure-with-httponly-sessions' : 'cookies-secure-with-httponly-sessions-and-samesite')
  );
}

function corsTest(e: WebEvidence): ResultOf<'cross-origin-resource-sharing'> {
  const pf = e.preflight;
  const acao = pf ? firstValue(pf.headers, 'access-control-allow-origin') : null;
  if (!pf || !acao) return 'cross-origin-resource-sharing-not-implemented';
  if (acao.slice(0, 256).trim().toLowerCase() === '*')
    return 'cross-origin-resource-sharing-implemented-with-public-access';
  const credentials = firstValue(pf.headers, 'access-control-allow-credentials')?.trim().toLowerCase() === 'true';
  return acao === pf.origin && credentials
    ? 'cross-origin-resource-sharing-implemented-with-universal-access'
    : 'cross-origin-resource-sharing-implemented-with-restricted-access';
}

function redirectionTest(e: WebEvidence): ResultOf<'redirection'> {
  if (!finalHop(e.http)) return 'redirection-not-needed-no-http';
  if (e.http.verified === false) return 'redirection-invalid-cert';
  // No HSTS preload list is configured: no host counts as preloaded (docs/products/web.md).
  const route = e.http.hops.map((h) => new URL(h.url));
  if (route.length === 1) return 'redirection-missing';
  if (route.at(-1)!.protocol !== 'https:') return 'redirection-not-to-https';
  if (route[1]!.protocol === 'http:') return 'redirection-not-to-https-on-initial-redirection';
  if (route[0]!.protocol === 'http:' && route[0]!.hostname !== route[1]!.hostname)
    return 'redirection-off-host-from-http';
  return 'redirection-to-https';
}

const GOOD_REFERRER = ['no-referrer', 'same-origin', 'strict-origin', 'strict-origin-when-cross-origin'];
const BAD_REFERRER = ['origin', 'origin-when-cross-origin', 'unsafe-url', 'no-referrer-when-downgrade'];

function referrerTest(referrer: ReferrerFacts): ResultOf<'referrer-policy'> {
  if (referrer.raw === null) return 'referrer-policy-not-implemented';
  // Both read the last recognised token of the header values and <meta> content joined by ",".
  const policy = referrer.policy;
  if (policy && GOOD_REFERRER.includes(policy)) return 'referrer-policy-private';
  if (policy && BAD_REFERRER.includes(policy)) return 'referrer-policy-unsafe';
  return 'referrer-policy-header-invalid';
}

const SRI_ORDER: Array<ResultOf<'subresource-integrity'>> = [
  'sri-implemented-and-all-scripts-loaded-securely',
  'sri-implemented-and-external-scripts-loaded-securely',
  'sri-implemented-but-external-scripts-not-loaded-securely',
  'sri-not-implemented-but-external-scripts-loaded-securely',
  'sri-not-implemented-and-external-scripts-not-loaded-securely',
  'sri-not-implemented-response-not-html',
];

function sriTest(
  contentType: string | null,
  page: PageMeta | null,
  host: string,
  siteHttps: boolean,
): ResultOf<'subresource-integrity'> {
  const mime = (contentType ?? '').split(';')[0];
  if (mime !== 'text/html' && mime !== 'application/xhtml+xml') return 'sri-not-implemented-response-not-html';
  if (!page || page.scripts.length + page.inlineScripts === 0) return 'sri-not-implemented-but-no-scripts-loaded';
  const siteDomain = parseDomain(host).domain;
  let result: ResultOf<'subresource-integrity'> | null = null;
  let foreign = false;
  for (const s of page.scripts) {
    if (!s.src) continue;
    const protocolRelative = /^\/\/[^/]/.test(s.src);
    const absolute = /^https?:\/\//i.test(s.src);
    const relative = !protocolRelative && !absolute;
    const sameSite = protocolRelative || relative || parseDomain(s.src).domain === siteDomain;
    const sameOrigin = relative || (sameSite && !protocolRelative);
    const secureScheme = (absolute && s.src.toLowerCase().startsWith('https:')) || (relative && siteHttps);
    if (!sameOrigin) {
      foreign = true;
      if (s.integrity && !secureScheme)
        result = worse(SRI_ORDER, result, 'sri-implemented-but-external-scripts-not-loaded-securely');
      else if (!s.integrity && secureScheme)
        result = worse(SRI_ORDER, result, 'sri-not-implemented-but-external-scripts-loaded-securely');
      else if (!s.integrity)
        result = worse(SRI_ORDER, result, 'sri-not-implemented-and-external-scripts-not-loaded-securely');
    } else if (s.integrity && secureScheme && result === null) {
      result = 'sri-implemented-and-all-scripts-loaded-securely';
    }
  }
  return (
    result ??
    (foreign
      ? 'sri-implemented-and-external-scripts-loaded-securely'
      : 'sri-not-implemented-but-all-scripts-loaded-from-secure-origin')
  );
}

function nosniffTest(headers: HeaderMap): ResultOf<'x-content-type-options'> {
  const v = firstValue(headers, 'x-content-type-options');
  if (v === null) return 'x-content-type-options-not-implemented';
  return v.slice(0, 256).trim().toLowerCase() === 'nosniff'
    ? 'x-content-type-options-nosniff'
    : 'x-content-type-options-header-invalid';
}

function framingTest(headers: HeaderMap, csp: CspScore): ResultOf<'x-frame-options'> {
  if (csp.directives?.has('frame-ancestors')) return 'x-frame-options-implemented-via-csp';
  const v = firstValue(headers, 'x-frame-options')?.slice(0, 1024).trim().toLowerCase() ?? null;
  if (v === null) return 'x-frame-options-not-implemented';
  if (v === 'deny' || v === 'sameorigin') return 'x-frame-options-sameorigin-or-deny';
  return v.startsWith('allow-from') ? 'x-frame-options-allow-from-origin' : 'x-frame-options-header-invalid';
}

function corpTest(headers: HeaderMap): ResultOf<'cross-origin-resource-policy'> {
  const v = firstValue(headers, 'cross-origin-resource-policy')?.slice(0, 256).trim().toLowerCase() ?? null;
  if (!v) return 'corp-not-implemented';
  if (v === 'same-site') return 'corp-implemented-with-same-site';
  if (v === 'same-origin') return 'corp-implemented-with-same-origin';
  return v === 'cross-origin' ? 'corp-implemented-with-cross-origin' : 'corp-header-invalid';
}

/** Null when no chain produced a response: there is nothing to score (never a grade of F for "unknown"). */
export function scoreObservatory(input: ScoringInput): ObservatoryScore | null {
  const e = input.evidence;
  const chain = e.primary ? e[e.primary] : null;
  const auto = chain ? finalHop(chain) : null;
  if (!chain || !auto) return null;
  const siteHttps = chain.start.startsWith('https:');
  const headers = auto.headers;
  const csp = cspTest(input.csp, input.page?.csp ?? [], siteHttps);
  const hsts = hstsTest(e, input.hstsOf);
  const results: Array<[ObservatoryTest, string]> = [
    ['content-security-policy', csp.result],
    [
      'cookies',
      cookiesTest(input.cookies, input.finalSameSiteInvalid, hsts === 'hsts-implemented-max-age-at-least-six-months'),
    ],
    ['cross-origin-resource-sharing', corsTest(e)],
    ['redirection', redirectionTest(e)],
    ['referrer-policy', referrerTest(input.referrer)],
    ['strict-transport-security', hsts],
    ['subresource-integrity', sriTest(firstValue(headers, 'content-type'), input.page, e.host, siteHttps)],
    ['x-content-type-options', nosniffTest(headers)],
    ['x-frame-options', framingTest(headers, csp)],
    ['cross-origin-resource-policy', corpTest(headers)],
  ];
  const tests = results.map(([test, result]) => ({
    test,
    result,
    modifier: (OBSERVATORY_MODIFIERS[test] as Record<string, number>)[result]!,
  }));
  const withBonus = 100 + tests.reduce((s, t) => s + t.modifier, 0);
  const withoutBonus = 100 + tests.reduce((s, t) => s + Math.min(t.modifier, 0), 0);
  const score = Math.max(withoutBonus >= BONUS_NEEDS ? withBonus : withoutBonus, 0);
  return {
    algorithm: OBSERVATORY_ALGORITHM,
    score,
    grade: gradeFor(score),
    observatoryWouldGrade: (auto.status >= 200 && auto.status < 400) || auto.status === 401 || auto.status === 403,
    tests,
  };
}
