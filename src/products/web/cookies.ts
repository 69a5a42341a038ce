// Cookies the chain set, read with tough-cookie (RFC 6265 / 6265bis): each Set-Cookie of every
// response of the chain, in order, as a browser's jar would take it — so a cookie a browser
// refuses (Secure over http, a broken __Host- prefix) is reported as refused, not as set. The
// flags come from the Set-Cookie line itself.
import { Cookie, CookieJar } from 'tough-cookie';

export interface CookieSetting {
  /** The URL of the response that sent it. */
  url: string;
  setCookie: string[];
}

export interface CookieFacts {
  name: string;
  setBy: string;
  overHttps: boolean;
  secure: boolean;
  httpOnly: boolean;
  /** strict, lax, none; `invalid` for another value; null when the attribute is absent. */
  sameSite: 'strict' | 'lax' | 'none' | 'invalid' | null;
  domain: string | null;
  path: string | null;
  prefix: '__Host-' | '__Secure-' | null;
  /** The prefix's rules hold (RFC 6265bis §4.1.3); null without a prefix. */
  prefixValid: boolean | null;
  /** A browser's jar accepted it (tough-cookie's verdict). */
  accepted: boolean;
  /** The name suggests a session or login cookie (contains sess, login, auth, token, or is sid). */
  sessionLike: boolean;
  /** The name suggests an anti-CSRF token. */
  csrfLike: boolean;
}

const MAX_COOKIES = 100;
const SAME_SITE_VALUES = new Set(['strict', 'lax', 'none']);

/**
 * One pass over a Set-Cookie line's ";"-separated parts: the SameSite attribute as the jar would
 * see it (the last one wins; the name=value part is not an attribute), and whether ANY part,
 * the first included, is a SameSite with a value outside strict/lax/none — how the Observatory's
 * cookie test reads the raw line.
 */
function sameSiteScan(line: string): { sameSite: CookieFacts['sameSite']; observatoryInvalid: boolean } {
  let sameSite: CookieFacts['sameSite'] = null;
  let observatoryInvalid = false;
  const parts = line.split(';');
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    const eq = part.indexOf('=');
    if ((eq < 0 ? part : part.slice(0, eq)).trim().toLowerCase() !== 'samesite') continue;
    // Like split('=')[1]: the text up to a second "=", if any.
    const rest = eq < 0 ? null : part.slice(eq + 1);
    const cut = rest === null ? null : rest.indexOf('=') < 0 ? rest : rest.slice(0, rest.indexOf('='));
    const value = (cut ?? '').trim().toLowerCase();
    if (!cut || !SAME_SITE_VALUES.has(value)) observatoryInvalid = true;
    if (i > 0) sameSite = SAME_SITE_VALUES.has(value) ? (value as 'strict' | 'lax' | 'none') : 'invalid';
  }
  return { sameSite, observatoryInvalid };
}

function prefixOf(name: string): CookieFacts['prefix'] {
  if (name.startsWith('__Host-')) return '__Host-';
  if (name.startsWith('__Secure-')) return '__Secure-';
  return null;
}

export interface CookieAssessment {
  cookies: CookieFacts[];
  truncated: boolean;
  /** Some Set-Cookie line of the last response (the final one) has an invalid SameSite, as the Observatory reads it. */
  finalSameSiteInvalid: boolean;
}

/**
 * Each line is read once by tough-cookie (Cookie.parse; the jar takes the parsed cookie, not the
 * text) and once by the SameSite scan above; the Observatory score reuses both.
 */
export function assessCookies(settings: readonly CookieSetting[]): CookieAssessment {
  const jar = new CookieJar(undefined, { prefixSecurity: 'strict', rejectPublicSuffixes: true });
  const cookies: CookieFacts[] = [];
  let total = 0;
  let finalSameSiteInvalid = false;
  settings.forEach((s, index) => {
    const final = index === settings.length - 1;
    for (const line of s.setCookie) {
      total++;
      const scan = cookies.length < MAX_COOKIES || final ? sameSiteScan(line) : null;
      if (final && scan?.observatoryInvalid) finalSameSiteInvalid = true;
      if (cookies.length >= MAX_COOKIES) continue;
      const parsed = Cookie.parse(line);
      if (!parsed) continue;
      // Read before the jar sees it: setCookie fills in a host-only domain and a default path.
      const name = parsed.key;
      const secure = parsed.secure === true;
      const httpOnly = parsed.httpOnly === true;
      const domain = parsed.domain ?? null;
      const path = parsed.path ?? null;
      let accepted = true;
      try {
        jar.setCookieSync(parsed, s.url);
      } catch {
        accepted = false;
      }
      const overHttps = s.url.startsWith('https:');
      const prefix = prefixOf(name);
      const prefixValid =
        prefix === null
          ? null
          : prefix === '__Secure-'
            ? secure && overHttps
            : secure && overHttps && !domain && path === '/';
      const lower = name.toLowerCase();
      cookies.push({
        name: name.slice(0, 128),
        setBy: s.url,
        overHttps,
        secure,
        httpOnly,
        sameSite: scan!.sameSite,
        domain,
        path,
        prefix,
        prefixValid,
        accepted,
        sessionLike: /sess|login|auth|token/.test(lower) || lower === 'sid',
        csrfLike: lower.includes('csrf') || lower.includes('xsrf'),
      });
    }
  });
  return { cookies, truncated: total > cookies.length, finalSameSiteInvalid };
}
