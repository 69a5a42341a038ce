// Express wiring: request ids and metrics first, then health, discovery, products and jobs, then
// 405/404 and the single error handler.
import express, { type Express, type RequestHandler, type Response } from 'express';
import type { Logger } from 'pino';
import { accessLogger } from './log.ts';
import type { AppDeps } from './http/deps.ts';
import { requestId } from './http/request-id.ts';
import { errorHandler, routeNotFound } from './http/errors.ts';
import { ApiError } from './contract/errors.ts';
import { httpRequestDuration } from './metrics.ts';
import { mountHealthRoutes } from './routes/health.ts';
import { mountMetaRoutes } from './routes/meta.ts';
import { mountProductRoutes } from './routes/product-routes.ts';
import { mountJobRoutes } from './routes/jobs.ts';
import { mountJobPageRoutes } from './routes/job-pages.ts';
import { mountJobChangeRoutes } from './routes/job-changes.ts';
import { mountJobExportRoutes } from './routes/job-exports.ts';
import { mountFindingsDocsRoute } from './routes/findings-docs.ts';
import { mountDocsRoutes } from './routes/docs.ts';
import { mountMonitorRoutes } from './routes/monitors.ts';
import { mountSuppressionRoutes } from './routes/suppressions.ts';
import { mountInventoryRoutes } from './routes/inventory.ts';
import { state } from './http/context.ts';
import { sequence } from './http/sequence.ts';
import { replaceUndecodableSegments } from './http/undecodable-path.ts';

function observe(log: Logger): RequestHandler {
  // The access line's fields are fixed and carry no secret, so it skips the redaction every other
  // line gets (the logger's wildcard path ran the redactor over each of its values, about 5 % of a
  // request's allocations in the admission profile) and pino's generic serializer (src/log.ts).
  const access = accessLogger(log);
  // One listener for every response (not a closure per request): the state holds the start.
  function onFinish(this: Response): void {
    const req = this.req;
    const s = state(this);
    const route = req.route ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
    const ms = performance.now() - s.startedAt;
    httpRequestDuration.observe({ method: req.method, route, status_code: String(this.statusCode) }, ms / 1e3);
    // One access line per request: operators correlate by requestId; 5xx are warnings.
    // Through the parent logger with the id as a field: the same line as the request's child
    // would write, without making a child for requests that log nothing else.
    access({
      requestId: s.requestId,
      method: req.method,
      route,
      status: this.statusCode,
      ms: Math.round(ms * 1e3) / 1e3,
    });
  }
  return (_req, res, next) => {
    res.on('finish', onFinish);
    next();
  };
}

/**
 * An HTTP/1.1 request must carry Host (RFC 9112 §3.2). Node's parser would answer its absence
 * with a bare 400 and no body; the server lets it through (src/http/server.ts) so that it is
 * refused here like every other malformed request: the envelope and an X-Request-Id.
 */
const requireHost: RequestHandler = (req, _res, next) => {
  if (req.httpVersionMajor === 1 && req.httpVersionMinor >= 1 && req.headers.host === undefined) {
    throw new ApiError('invalid_request', {
      message: 'The HTTP request is malformed.',
      details: { reason: 'missing Host header' },
    });
  }
  next();
};

function methodNotAllowed(allow: string): RequestHandler {
  return () => {
    throw new ApiError('method_not_allowed', { details: { allow } });
  };
}

export function createApp(deps: AppDeps, opts: { isDraining?: () => boolean } = {}): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', deps.config.TRUST_PROXY);
  // The front of every request as one router layer: a layer each cost a match and a dispatch.
  app.use(sequence([requestId(deps.log), observe(deps.log), requireHost, replaceUndecodableSegments]));

  mountHealthRoutes(app, deps, opts.isDraining ?? (() => false));
  mountMetaRoutes(app, deps);
  mountProductRoutes(app, deps);
  mountJobRoutes(app, deps);
  mountJobPageRoutes(app, deps);
  mountJobChangeRoutes(app, deps);
  mountJobExportRoutes(app, deps);
  mountMonitorRoutes(app, deps);
  mountSuppressionRoutes(app, deps);
  mountInventoryRoutes(app, deps);
  mountDocsRoutes(app);
  mountFindingsDocsRoute(app);

  const allowed = new Map<string, string>([
    ['/v2/openapi.json', 'GET'],
    ['/v2/products', 'GET'],
    ['/livez', 'GET'],
    ['/readyz', 'GET'],
  ]);
  for (const p of deps.products) allowed.set(p.path, 'POST');
  allowed.set('/v2/jobs/:job_ref', 'GET');
  allowed.set('/v2/jobs/:job_ref/cancel', 'POST');
  for (const p of ['results', 'findings', 'objects/:object_id', 'export', 'report'])
    allowed.set(`/v2/jobs/:job_ref/${p}`, 'GET');
  allowed.set('/v2/monitors', 'GET, POST');
  allowed.set('/v2/monitors/:monitor_id', 'GET, PATCH, DELETE');
  allowed.set('/v2/monitors/:monitor_id/deliveries', 'GET');
  allowed.set('/v2/monitors/:monitor_id/deliveries/:event_id/redeliver', 'POST');
  for (const [path, allow] of allowed) app.all(path, methodNotAllowed(allow));

  app.use(routeNotFound);
  app.use(errorHandler(deps.idempotency));
  return app;
}
