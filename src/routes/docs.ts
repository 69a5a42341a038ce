// GET /docs: the API reference, rendered in the browser by Redoc from /v2/openapi.json. The
// renderer is the redoc package's standalone bundle, served from here (machines may have no
// internet, and a CDN would see every reader). Redoc has no "try it" console and no key field, as
// SERVICE.md wants keys kept out of browsers; the Content-Security-Policy lets the page reach
// nothing but this service.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Express, RequestHandler } from 'express';
import { ApiError } from '../contract/errors.ts';

const BUNDLE_PATH = '/docs/redoc.standalone.js';

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>LSS API v2 reference</title>
<style>body { margin: 0; }</style>
</head>
<body>
<redoc spec-url="/v2/openapi.json" hide-hostname="true" expand-responses="200,202" required-props-first="true" native-scrollbars="true"></redoc>
<script src="${BUNDLE_PATH}"></script>
</body>
</html>
`;

/** Redoc injects its styles and runs search in a blob: worker; nothing else is allowed anywhere. */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const methodNotAllowed: RequestHandler = () => {
  throw new ApiError('method_not_allowed', { details: { allow: 'GET' } });
};

export function mountDocsRoutes(app: Express): void {
  // Found at start, so a missing renderer fails the process at boot, not a reader later; read at
  // the first request, so a worker that never serves the page does not hold its ~2.5 MB.
  const bundlePath = createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js');
  let bundle: string | undefined;
  const readBundle = () =>
    readFileSync(bundlePath)
      .toString('utf8')
      // The sidebar's "API docs by Redocly" logo would be fetched from the vendor's CDN: an empty
      // data: image fails to load and Redoc then drops the <img>, keeping the text link.
      .replaceAll('https://cdn.redoc.ly/redoc/logo-mini.svg', 'data:,')
      .replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n'); // the map is not served
  const common = {
    'Content-Security-Policy': CSP,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
  };
  app.get('/docs', (_req, res) => {
    res.set(common).type('html').send(PAGE);
  });
  app.get(BUNDLE_PATH, (_req, res) => {
    bundle ??= readBundle();
    res
      .set({ ...common, 'Cache-Control': 'public, max-age=86400' })
      .type('application/javascript')
      .send(bundle);
  });
  app.all(['/docs', BUNDLE_PATH], methodNotAllowed);
}
