// The single-header assessments of the final response: HSTS (RFC 6797 §6.1), X-Frame-Options
// (RFC 7034) with CSP frame-ancestors, X-Content-Type-Options (Fetch §3.5), Referrer-Policy
// (W3C Referrer Policy §4.1: the last recognised token of the comma list wins), Permissions-
// Policy (names of the features it sets), CORP / COOP / COEP (HTML and Fetch), and CORS as the
// preflight answered it. Facts only; findings and the score are derived from these elsewhere.
import { allValues, firstValue, type HeaderMap } from './headers.ts';

export const HSTS_SIX_MONTHS = 15_552_000; // the Observatory's "six months" (180 days)
export const HSTS_PRELOAD_MIN = 31_536_000; // hstspreload.org: one year

export interface HstsFacts {
  present: boolean;
  raw: string | null;
  valid: boolean;
  maxAge: number | null;
  includeSubDomains: boolean;
  preload: boolean;
  problems: string[];
}

/** One directive of a Strict-Transport-Security value as written (RFC 6797 §6.1). */
export interface HstsDirective {
  /** The directive, trimmed. */
  text: string;
  /** Its name, lower-cased, without the value. */
  name: string;
  /** Everything after the first "=", trimmed; "" when there is none. */
  value: string;
}

/** The directives of a Strict-Transport-Security value, read once (assessHsts and the score share them). */
export function hstsDirectives(raw: string): HstsDirective[] {
  const out: HstsDirective[] = [];
  for (const part of raw.split(';')) {
    const text = part.trim();
    if (!text) continue;
    const eq = text.indexOf('=');
    out.push({
      text,
      name: (eq < 0 ? text : text.slice(0, eq)).trim().toLowerCase(),
      value: eq < 0 ? '' : text.slice(eq + 1).trim(),
    });
  }
  return out;
}

/** `raw` is every value of the header joined by ", " (a repeat is itself a problem). */
export function assessHsts(raw: string | null, directives = raw === null ? [] : hstsDirectives(raw)): HstsFacts {
  const out: HstsFacts = {
    present: raw !== null,
    raw: raw?.slice(0, 1024) ?? null,
    valid: false,
    maxAge: null,
    includeSubDomains: false,
    preload: false,
    problems: [],
  };
  if (raw === null) return out;
  const seen = new Set<string>();
  for (const { name, value } of directives) {
    if (seen.has(name))
      out.problems.push(`directive ${name.slice(0, 40)} repeated (RFC 6797 §6.1: the header is ignored)`);
    seen.add(name);
    if (name === 'max-age') {
      // A quoted-string value (RFC 6797 §6.1.1): the quotes are not part of the number.
      const v = value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
      if (/^\d{1,12}$/.test(v)) out.maxAge = Number(v);
      else out.problems.push(`max-age is not a number of seconds: ${v.slice(0, 40)}`);
    } else if (name === 'includesubdomains') out.includeSubDomains = true;
    else if (name === 'preload') out.preload = true;
    if (out.problems.length >= 20) break; // a header of thousands of repeats says nothing more
  }
  if (raw.includes(',')) out.problems.push('the header is sent more than once (values joined by ",")');
  if (out.maxAge === null && !out.problems.some((p) => p.startsWith('max-age')))
    out.problems.push('max-age is missing');
  out.valid = out.problems.length === 0 && out.maxAge !== null;
  return out;
}

export interface FramingFacts {
  xFrameOptions: string | null;
  /** deny, sameorigin, allow-from (obsolete: browsers ignore it) or invalid. */
  xFrameOptionsKind: 'deny' | 'sameorigin' | 'allow-from' | 'invalid' | null;
  frameAncestors: string[] | null;
  /** Some browser-honoured control limits framing: XFO deny/sameorigin or a frame-ancestors without broad sources. */
  protected: boolean;
}

export function assessFraming(h: HeaderMap, frameAncestors: string[] | null): FramingFacts {
  const xfo = firstValue(h, 'x-frame-options');
  const v = xfo?.trim().toLowerCase() ?? null;
  const kind =
    v === null
      ? null
      : v === 'deny' || v === 'sameorigin'
        ? v
        : v.startsWith('allow-from')
          ? ('allow-from' as const)
          : ('invalid' as const);
  const faRestricts =
    frameAncestors !== null && !frameAncestors.some((s) => s === '*' || s === 'http:' || s === 'https:');
  return {
    xFrameOptions: xfo?.slice(0, 256) ?? null,
    xFrameOptionsKind: kind,
    frameAncestors,
    protected: faRestricts || kind === 'deny' || kind === 'sameorigin',
  };
}

export interface NosniffFacts {
  raw: string | null;
  nosniff: boolean;
}

export function assessNosniff(h: HeaderMap): NosniffFacts {
  const raw = firstValue(h, 'x-content-type-options');
  return { raw: raw?.slice(0, 256) ?? null, nosniff: raw?.trim().toLowerCase() === 'nosniff' };
}

const REFERRER_TOKENS = [
  'no-referrer',
  'no-referrer-when-downgrade',
  'same-origin',
  'origin',
  'strict-origin',
  'origin-when-cross-origin',
  'strict-origin-when-cross-origin',
  'unsafe-url',
] as const;
export type ReferrerToken = (typeof REFERRER_TOKENS)[number];
/** Policies that send the full URL (path and query) to other origins. */
const LEAKS_PATH = new Set<ReferrerToken>(['unsafe-url', 'no-referrer-when-downgrade']);

export interface ReferrerFacts {
  raw: string | null;
  source: 'header' | 'meta' | null;
  /** The effective policy: the last recognised token; null when none is recognised. */
  policy: ReferrerToken | null;
  /** The policy sends full URLs cross-origin. */
  leaksPath: boolean;
}

export function assessReferrer(header: readonly string[], meta: readonly string[]): ReferrerFacts {
  const values = [...header, ...meta];
  if (values.length === 0) return { raw: null, source: null, policy: null, leaksPath: false };
  const tokens = values
    .join(',')
    .split(',')
    .map((t) => t.trim().toLowerCase())
    .filter((t): t is ReferrerToken => (REFERRER_TOKENS as readonly string[]).includes(t));
  const policy = tokens.at(-1) ?? null;
  return {
    raw: values.join(', ').slice(0, 256),
    source: header.length ? 'header' : 'meta',
    policy,
    leaksPath: policy !== null && LEAKS_PATH.has(policy),
  };
}

export interface IsolationFacts {
  permissionsPolicy: { raw: string | null; features: string[] };
  crossOriginResourcePolicy: string | null;
  crossOriginOpenerPolicy: string | null;
  crossOriginEmbedderPolicy: string | null;
}

export function assessIsolation(h: HeaderMap): IsolationFacts {
  const pp = allValues(h, 'permissions-policy').join(', ');
  const features = pp
    ? [
        ...new Set(
          pp
            .split(',')
            .map((f) => f.split('=')[0]!.trim().toLowerCase())
            .filter((f) => /^[a-z][a-z0-9-]*$/.test(f)),
        ),
      ].sort()
    : [];
  const low = (name: string) => firstValue(h, name)?.trim().toLowerCase().slice(0, 128) ?? null;
  return {
    permissionsPolicy: { raw: pp ? pp.slice(0, 1024) : null, features },
    crossOriginResourcePolicy: low('cross-origin-resource-policy'),
    crossOriginOpenerPolicy: low('cross-origin-opener-policy'),
    crossOriginEmbedderPolicy: low('cross-origin-embedder-policy'),
  };
}

export interface CorsFacts {
  /** Access-Control-Allow-Origin of the page itself (a GET without Origin). */
  pageAllowOrigin: string | null;
  /** The preflight (OPTIONS with a foreign Origin): null when it was not answered. */
  preflight: { status: number; origin: string; allowOrigin: string | null; allowCredentials: boolean } | null;
  wildcard: boolean;
  /** The foreign Origin came back in Access-Control-Allow-Origin together with credentials. */
  reflectedWithCredentials: boolean;
}

export function assessCors(
  page: HeaderMap,
  preflight: { status: number; origin: string; headers: HeaderMap } | null,
): CorsFacts {
  const pageAllowOrigin = firstValue(page, 'access-control-allow-origin')?.trim().slice(0, 256) ?? null;
  const pf = preflight
    ? {
        status: preflight.status,
        origin: preflight.origin,
        allowOrigin: firstValue(preflight.headers, 'access-control-allow-origin')?.trim().slice(0, 256) ?? null,
        allowCredentials:
          firstValue(preflight.headers, 'access-control-allow-credentials')?.trim().toLowerCase() === 'true',
      }
    : null;
  return {
    pageAllowOrigin,
    preflight: pf,
    wildcard: pageAllowOrigin === '*' || pf?.allowOrigin === '*',
    reflectedWithCredentials: !!pf && pf.allowOrigin === pf.origin && pf.allowCredentials,
  };
}
