// The web lab's hosts as data: one 127.0.2.n address and one name under weblab.test per posture.
// Each says what its port 80 and port 443 do (the lab serves them on shared real ports, reached
// through OUTBOUND_PORT_MAP) and which certificate it presents. ./web-lab.ts turns this into
// servers; tests and docs refer to the names below.
import type http from 'node:http';
import type tls from 'node:tls';
import type { LeafSpec } from './ca.ts';
import { LAB_REFUSED_ADDRESS, labHost } from './addresses.ts';

export const WEB_ZONE = 'weblab.test';
const DAY = 86_400_000;
const name = (label: string) => `${label}.${WEB_ZONE}`;

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;
/** Hostile peers: played on a raw socket, plain or after the TLS handshake. */
export type Hostile = 'endless_headers' | 'endless_body' | 'silent';

export interface WebHostSpec {
  label: string;
  n: number;
  /** Port 80: a handler, a redirect to https on the same host, a hostile peer, or nothing listening. */
  http: Handler | 'to_https' | Hostile | null;
  /** Port 443. */
  https:
    | {
        handler: Handler | Hostile;
        cert?: Partial<LeafSpec> & { withoutIntermediate?: boolean };
        tls?: tls.SecureContextOptions & { minVersion?: tls.SecureVersion; maxVersion?: tls.SecureVersion };
      }
    | 'silent'
    | null;
}

const PAGE = '<!doctype html><html><head><title>lab</title></head><body><p>web lab</p></body></html>';

export const STRICT_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'strict-transport-security': 'max-age=63072000; includeSubDomains; preload',
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'permissions-policy': 'camera=(), microphone=(), geolocation=()',
  'cross-origin-resource-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-embedder-policy': 'require-corp',
};
const BASE_HEADERS = {
  'strict-transport-security': STRICT_HEADERS['strict-transport-security']!,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
};

/** The header policy of `cspmegabyte`: a 60,000-blank run between two sources. */
export const HOSTILE_CSP_HEADER = `script-src a${' '.repeat(60_000)}b`;
/** The body of `cspmegabyte`: exactly 1 MiB, a <meta> policy whose value is a run of blanks. */
export const HOSTILE_CSP_BODY = (() => {
  const head = '<!doctype html><html><head><meta http-equiv="content-security-policy" content="script-src a';
  const tail = 'b"></head><body>csp</body></html>';
  return head + ' '.repeat(1024 * 1024 - head.length - tail.length) + tail;
})();

/** An HTML page with these headers (and cookies). */
export function page(headers: Record<string, string | string[]> = {}, body = PAGE): Handler {
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...headers });
    res.end(body);
  };
}

function redirect(to: (req: http.IncomingMessage) => string, status = 301): Handler {
  return (req, res) => {
    res.writeHead(status, { location: to(req) });
    res.end();
  };
}

/** Redirects along /r1 … /rN, then answers. */
function chain(n: number, final: Handler): Handler {
  return (req, res) => {
    const m = /^\/r(\d+)$/.exec(req.url ?? '');
    const i = m ? Number(m[1]) : 0;
    if (i >= n) return final(req, res);
    redirect(() => `/r${i + 1}`, 302)(req, res);
  };
}

/** The Observatory's tests read the CORS preflight: answer OPTIONS with these headers. */
function withPreflight(headers: (req: http.IncomingMessage) => Record<string, string>, get: Handler): Handler {
  return (req, res) => {
    if (req.method === 'OPTIONS') {
      res.writeHead(204, headers(req));
      return res.end();
    }
    get(req, res);
  };
}

export const webHosts: WebHostSpec[] = [
  {
    label: 'strict',
    n: 1,
    http: 'to_https',
    https: {
      handler: page({ ...STRICT_HEADERS, 'set-cookie': '__Host-sid=1; Secure; HttpOnly; SameSite=Strict; Path=/' }),
    },
  },
  { label: 'none', n: 2, http: page(), https: { handler: page() } },
  {
    label: 'badcsp',
    n: 3,
    http: 'to_https',
    https: {
      handler: page({
        ...BASE_HEADERS,
        'content-security-policy':
          "default-src 'self'; script-src 'self'; script-src 'unsafe-inline'; objekt-src 'none'",
      }),
    },
  },
  {
    label: 'unsafe',
    n: 4,
    http: 'to_https',
    https: {
      handler: page({
        ...BASE_HEADERS,
        'content-security-policy': "default-src 'self'; script-src 'self' 'unsafe-inline' 'unsafe-eval'",
        'referrer-policy': 'unsafe-url',
      }),
    },
  },
  {
    label: 'reportonly',
    n: 5,
    http: 'to_https',
    https: { handler: page({ ...BASE_HEADERS, 'content-security-policy-report-only': "default-src 'self'" }) },
  },
  {
    label: 'cookies',
    n: 6,
    http: 'to_https',
    https: {
      handler: page({
        ...BASE_HEADERS,
        'content-security-policy': "default-src 'self'",
        'set-cookie': [
          'sessionid=abc; Path=/',
          'pref=1; Secure; SameSite=Bogus',
          '__Host-x=1; Secure; Path=/; Domain=cookies.weblab.test',
        ],
      }),
    },
  },
  {
    label: 'cors',
    n: 7,
    http: 'to_https',
    https: {
      handler: withPreflight(
        () => ({ 'access-control-allow-origin': '*' }),
        page({ ...BASE_HEADERS, 'content-security-policy': "default-src 'self'", 'access-control-allow-origin': '*' }),
      ),
    },
  },
  {
    label: 'reflect',
    n: 8,
    http: 'to_https',
    https: {
      handler: withPreflight(
        (req) => ({
          'access-control-allow-origin': String(req.headers.origin ?? ''),
          'access-control-allow-credentials': 'true',
        }),
        page({ ...BASE_HEADERS, 'content-security-policy': "default-src 'self'" }),
      ),
    },
  },
  // Long chains and loops on the http side; the https side answers.
  {
    label: 'chain7',
    n: 9,
    http: chain(7, page()),
    https: { handler: page({ ...BASE_HEADERS, 'content-security-policy': "default-src 'self'" }) },
  },
  {
    label: 'loop',
    n: 10,
    http: (req, res) => redirect(() => (req.url === '/a' ? '/b' : '/a'), 302)(req, res),
    https: { handler: page({ ...BASE_HEADERS, 'content-security-policy': "default-src 'self'" }) },
  },
  // http redirects to a loopback address outside the allowlist, by literal and by name: never fetched.
  {
    label: 'refusedhop',
    n: 11,
    http: redirect(() => `http://${LAB_REFUSED_ADDRESS}/`, 302),
    https: { handler: redirect(() => `http://internal.${WEB_ZONE}/`, 302) },
  },
  {
    label: 'downgrade',
    n: 12,
    http: page(),
    https: { handler: redirect(() => `http://${name('downgrade')}/landing`) },
  },
  { label: 'slowheaders', n: 13, http: 'endless_headers', https: { handler: 'endless_headers' } },
  { label: 'slowbody', n: 14, http: 'endless_body', https: { handler: 'endless_body' } },
  { label: 'silent', n: 15, http: 'silent', https: 'silent' },
  {
    label: 'expired',
    n: 20,
    http: 'to_https',
    https: {
      handler: page(BASE_HEADERS),
      cert: { notBefore: new Date(Date.now() - 100 * DAY), notAfter: new Date(Date.now() - DAY) },
    },
  },
  {
    label: 'notyet',
    n: 21,
    http: 'to_https',
    https: {
      handler: page(BASE_HEADERS),
      cert: { notBefore: new Date(Date.now() + 10 * DAY), notAfter: new Date(Date.now() + 100 * DAY) },
    },
  },
  { label: 'selfsigned', n: 22, http: 'to_https', https: { handler: page(BASE_HEADERS), cert: { selfSigned: true } } },
  {
    label: 'wronghost',
    n: 23,
    http: 'to_https',
    https: { handler: page(BASE_HEADERS), cert: { names: [name('other')] } },
  },
  {
    label: 'weakkey',
    n: 24,
    http: 'to_https',
    https: {
      handler: page(BASE_HEADERS),
      cert: { key: { type: 'rsa', bits: 1024 } },
      tls: { ciphers: 'DEFAULT@SECLEVEL=0' },
    },
  },
  {
    label: 'sha1',
    n: 25,
    http: 'to_https',
    https: { handler: page(BASE_HEADERS), cert: { hash: 'SHA-1' }, tls: { ciphers: 'DEFAULT@SECLEVEL=0' } },
  },
  {
    label: 'untrusted',
    n: 26,
    http: 'to_https',
    https: { handler: page(BASE_HEADERS), cert: { withoutIntermediate: true } },
  },
  {
    label: 'expiring',
    n: 27,
    http: 'to_https',
    https: { handler: page(BASE_HEADERS), cert: { notAfter: new Date(Date.now() + 10 * DAY) } },
  },
  {
    label: 'tls10',
    n: 28,
    http: 'to_https',
    https: {
      handler: page(BASE_HEADERS),
      tls: { minVersion: 'TLSv1', maxVersion: 'TLSv1', ciphers: 'DEFAULT@SECLEVEL=0' },
    },
  },
  {
    label: 'tls13',
    n: 29,
    http: 'to_https',
    https: { handler: page(BASE_HEADERS), tls: { minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3' } },
  },
  { label: 'nohttps', n: 30, http: page(), https: null },
  {
    label: 'badhsts',
    n: 32,
    http: 'to_https',
    https: {
      handler: page({
        ...BASE_HEADERS,
        'content-security-policy': "default-src 'self'",
        'strict-transport-security': 'max-age=3600',
      }),
    },
  },
  // A page the Observatory does not grade (it grades 2xx, 3xx, 401 and 403 only): we do, and say so.
  {
    label: 'notfound',
    n: 33,
    http: 'to_https',
    https: {
      handler: (_req, res) => {
        res.writeHead(404, { 'content-type': 'text/html; charset=utf-8', ...BASE_HEADERS });
        res.end(PAGE);
      },
    },
  },
  // <meta> policies in the page (CSP and referrer) and scripts, for the HTML parsing and SRI.
  {
    label: 'meta',
    n: 31,
    http: 'to_https',
    https: {
      handler: page(
        BASE_HEADERS,
        `<!doctype html><html><head><meta http-equiv="Content-Security-Policy" content="default-src 'self'; object-src 'none'"><meta name="referrer" content="strict-origin"><script src="/app.js" integrity="sha384-abc" crossorigin="anonymous"></script></head><body>meta</body></html>`,
      ),
    },
  },
  // Issue 18: a page built to stall a backtracking CSP parser. The header carries a policy with a
  // 60,000-blank run (inside the 64 KiB head) and the body is one megabyte: a <meta> policy whose
  // value is one run of blanks. Before the fix, each parse of such a run took tens of minutes.
  {
    label: 'cspmegabyte',
    n: 34,
    http: 'to_https',
    https: { handler: page({ ...BASE_HEADERS, 'content-security-policy': HOSTILE_CSP_HEADER }, HOSTILE_CSP_BODY) },
  },
  // Issue 45: a page of an approved scope (the tenant approves escape.weblab.test alone) whose
  // redirects leave it: https goes to /landing (inside: followed), then to another owner's host;
  // http goes to another host's port 6379. An authorized lookup stops at the scope's edge.
  {
    label: 'escape',
    n: 35,
    http: redirect(() => `http://${name('strict')}:6379/`, 302),
    https: {
      handler: (req, res) =>
        req.url === '/landing'
          ? redirect(() => `https://${name('strict')}/from-escape`, 302)(req, res)
          : redirect(() => '/landing', 302)(req, res),
    },
  },
  // Issue 45: an approved host whose address the lab's ACTIVE_DENY_CIDRS lists: active work
  // (an authorized lookup) never connects to it, a passive lookup does.
  { label: 'denied', n: 36, http: 'to_https', https: { handler: page(BASE_HEADERS) } },
];

export const webLabNames = Object.fromEntries(webHosts.map((h) => [h.label, name(h.label)])) as Record<string, string>;
export const webLabAddress = (label: string) => labHost('web', webHosts.find((h) => h.label === label)!.n);
export const webUrl = (label: string, scheme: 'http' | 'https' = 'https', path = '/') =>
  `${scheme}://${name(label)}${path}`;
