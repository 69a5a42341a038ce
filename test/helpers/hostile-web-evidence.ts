// A web host as hostile as the fetch caps let it be (issue 30 item 7): both chains at the redirect
// cap (11 responses each), every response carrying a Strict-Transport-Security header that fills
// the 64 KiB head, the final one also a CSP header, and a 1 MiB HTML body of <meta> CSP policies
// at the <meta> caps. What the http lane builds from it is what a target may make us store.
import type { WebEvidence } from '../../src/products/web/evidence.ts';
import { CHAIN_MAX_REDIRECTS, MAX_BODY_BYTES } from '../../src/products/web/collect-evidence.ts';
import { MAX_META_CSP, MAX_META_CSP_CHARS } from '../../src/products/web/html-meta.ts';

const HEAD = 63 * 1024;

export interface HostileWeb {
  /** Characters of each HSTS header (up to 63 KiB). */
  hstsChars?: number;
  /** Characters of the body (up to 1 MiB). */
  bodyChars?: number;
  /** What the hostile values are made of (repeated). */
  unit?: string;
}

export function hostileWebEvidence(o: HostileWeb = {}): WebEvidence {
  const unit = o.unit ?? 'x';
  const fill = (n: number) => unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
  const hsts = `max-age=31536000; includeSubDomains; ${fill(Math.max(0, (o.hstsChars ?? HEAD) - 40))}`;
  const hops = CHAIN_MAX_REDIRECTS + 1;
  const policy = (i: number) =>
    `script-src ${`h${i}.example.com `.repeat(Math.ceil(MAX_META_CSP_CHARS / 16))}`.slice(0, MAX_META_CSP_CHARS - 64);
  const meta = Array.from(
    { length: MAX_META_CSP },
    (_, i) => `<meta http-equiv="content-security-policy" content="${policy(i)}">`,
  ).join('');
  const body = `<!doctype html><html><head>${meta}</head><body>${fill(MAX_BODY_BYTES)}</body></html>`.slice(
    0,
    o.bodyChars ?? MAX_BODY_BYTES,
  );
  const chain = (scheme: 'http' | 'https') => ({
    start: `${scheme}://h.example.com/0`,
    outcome: 'response' as const,
    hops: Array.from({ length: hops }, (_, i) => {
      const last = i === hops - 1;
      const next = last ? null : `${scheme}://h.example.com/${i + 1}`;
      return {
        url: `${scheme}://h.example.com/${i}`,
        status: last ? 200 : 302,
        location: next,
        next,
        schemeChange: null,
        hostChange: false,
        hsts,
        tlsVerified: scheme === 'https' ? true : null,
        headers: {
          'strict-transport-security': hsts,
          ...(last
            ? {
                'content-type': 'text/html',
                'content-security-policy': `default-src 'self' ${fill(HEAD - 2048)}`,
                'referrer-policy': fill(2048),
              }
            : {}),
        },
      };
    }),
    verified: scheme === 'https' ? true : null,
    body,
    failure: null,
  });
  return {
    url: 'https://h.example.com/0',
    host: 'h.example.com',
    http: chain('http'),
    https: chain('https'),
    primary: 'https',
    preflight: null,
  };
}
