// Which URL texts outbound checks accept, judged on the text as written, before the WHATWG parser
// normalises it. The parser is generous: `http://2130706433/`, `http://0x7f.1/`, `http://127.1/`,
// `http://017700000001/`, `http://%31%32%37.0.0.1/` and fullwidth digits all become 127.0.0.1, so
// a filter that looked only at the parsed URL would pass forms that other software (proxies, log
// readers, the target's own redirect logic) reads differently. We refuse them: the only numeric
// host accepted is the canonical dotted-decimal form, written as the parser would print it.
//
// Used twice: the product input schema (400 invalid_request before anything is reserved) and the
// guard, on the first URL and on every redirect Location (a refused hop is never connected to).
import { isIPv4 } from 'node:net';

export const MAX_URL_LENGTH = 2048;

export type UrlProblem =
  | 'too_long'
  | 'not_a_url'
  | 'scheme_not_allowed'
  | 'credentials_not_allowed'
  | 'missing_host'
  | 'control_characters'
  | 'numeric_host_form'
  | 'encoded_host'
  | 'authority_form'
  | 'bad_port';

export type UrlVerdict = { ok: true; url: URL } | { ok: false; problem: UrlProblem };

/** scheme ":" then any mix of "/" and "\" (the parser treats both alike for http and https). */
const AUTHORITY = /^([a-zA-Z][a-zA-Z0-9+.-]*):[\\/]*([^\\/?#]*)/;

/** The host as written in the authority (no userinfo, no port, brackets kept), lower-cased. */
function writtenHost(authority: string): string {
  if (authority.startsWith('[')) return authority.slice(0, authority.indexOf(']') + 1).toLowerCase();
  const colon = authority.lastIndexOf(':');
  return (colon >= 0 ? authority.slice(0, colon) : authority).toLowerCase();
}

function decoded(host: string): string {
  try {
    return decodeURIComponent(host);
  } catch {
    return host;
  }
}

/** Accepts an absolute http(s) URL in a form every reader agrees on; otherwise says why not. */
export function checkUrl(text: string): UrlVerdict {
  if (text.length > MAX_URL_LENGTH) return { ok: false, problem: 'too_long' };
  // The parser silently strips tabs and newlines anywhere and spaces/C0 at the ends.
  if (/[\u0000-\u0020\u007f]/.test(text)) return { ok: false, problem: 'control_characters' };
  const m = AUTHORITY.exec(text);
  if (!m) return { ok: false, problem: 'not_a_url' };
  const scheme = m[1]!.toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') return { ok: false, problem: 'scheme_not_allowed' };
  const authority = m[2]!;
  if (authority.includes('@')) return { ok: false, problem: 'credentials_not_allowed' };
  // Exactly "scheme://" then the host: "https:///x", "http:\\host" and "http:host" are parsed
  // by WHATWG into something else than most readers see.
  if (!/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^\\/]/.test(text))
    return { ok: false, problem: authority.length === 0 ? 'missing_host' : 'authority_form' };
  if (/%/.test(writtenHost(authority).replace(/%25[^\]]*\]$|%[^\]]*\]$/, ']')))
    return { ok: false, problem: 'encoded_host' };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, problem: authority.length === 0 ? 'missing_host' : 'not_a_url' };
  }
  if (!url.hostname) return { ok: false, problem: 'missing_host' };
  if (url.username || url.password) return { ok: false, problem: 'credentials_not_allowed' };
  if (url.port === '0') return { ok: false, problem: 'bad_port' };
  // The parser read the host as an IPv4 address: it must have been written exactly so.
  if (isIPv4(url.hostname) && decoded(writtenHost(authority)) !== url.hostname) {
    return { ok: false, problem: 'numeric_host_form' };
  }
  return { ok: true, url };
}

export const URL_PROBLEM_TEXT: Record<UrlProblem, string> = {
  too_long: `longer than ${MAX_URL_LENGTH} characters`,
  not_a_url: 'not an absolute URL',
  scheme_not_allowed: 'only http and https URLs are checked',
  credentials_not_allowed: 'URLs with user information (user:password@) are refused',
  missing_host: 'the URL has no host',
  control_characters: 'the URL contains spaces or control characters',
  encoded_host: 'a percent-encoded host is refused',
  authority_form: 'the URL must be written scheme://host…',
  numeric_host_form:
    'a numeric host must be written as a canonical dotted-decimal IPv4 address (no decimal, octal, hex or shortened forms)',
  bad_port: 'port 0 is not a port',
};
