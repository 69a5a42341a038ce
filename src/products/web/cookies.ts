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

function sameSiteOf(line: string): CookieFacts['sameSite'] {
  let out: CookieFacts['sameSite'] = null;
  for (const part of line.split(';').slice(1)) {
    const [k, v] = part.split('=');
    if (k!.trim().toLowerCase() !== 'samesite') continue;
    const value = (v ?? '').trim().toLowerCase();
    out = value === 'strict' || value === 'lax' || value === 'none' ? value : 'invalid';
  }
  return out;
}

function prefixOf(name: string): CookieFacts['prefix'] {
  if (name.startsWith('__Host-')) return '__Host-';
  if (name.startsWith('__Secure-')) return '__Secure-';
  return null;
}

export function assessCookies(settings: readonly CookieSetting[]): { cookies: CookieFacts[]; truncated: boolean } {
  const jar = new CookieJar(undefined, { prefixSecurity: 'strict', rejectPublicSuffixes: true });
  const cookies: CookieFacts[] = [];
  let total = 0;
  for (const s of settings) {
    for (const line of s.setCookie) {
      total++;
      if (cookies.length >= MAX_COOKIES) continue;
      const parsed = Cookie.parse(line);
      if (!parsed) continue;
      let accepted = true;
      try {
        jar.setCookieSync(line, s.url);
      } catch {
        accepted = false;
      }
      const name = parsed.key;
      const overHttps = s.url.startsWith('https:');
      const prefix = prefixOf(name);
      const secure = parsed.secure === true;
      const prefixValid =
        prefix === null
          ? null
          : prefix === '__Secure-'
            ? secure && overHttps
            : secure && overHttps && !parsed.domain && parsed.path === '/';
      const lower = name.toLowerCase();
      cookies.push({
        name: name.slice(0, 128),
        setBy: s.url,
        overHttps,
        secure,
        httpOnly: parsed.httpOnly === true,
        sameSite: sameSiteOf(line),
        domain: parsed.domain ?? null,
        path: parsed.path ?? null,
        prefix,
        prefixValid,
        accepted,
        sessionLike: /sess|login|auth|token/.test(lower) || lower === 'sid',
        csrfLike: lower.includes('csrf') || lower.includes('xsrf'),
      });
    }
  }
  return { cookies, truncated: total > cookies.length };
}
