// Discovery routes: the OpenAPI document (no key) and the product list with live readiness.
import type { Express } from 'express';
import type { AppDeps } from '../http/deps.ts';
import { authenticateAny } from '../http/authenticate.ts';
import { rateLimit } from '../http/rate-limit.ts';
import { buildOpenApi } from './openapi/openapi.ts';
import { laneReadiness, productReadiness } from '../products/kit/readiness.ts';

export function productList(deps: AppDeps) {
  return {
    products: deps.products.map((def) => {
      const lanes = laneReadiness(def, deps.runtime);
      return {
        product: def.id,
        title: def.title,
        method: def.method,
        path: def.path,
        mode: def.mode,
        readiness: productReadiness(def, deps.runtime),
        credits: def.id.startsWith('scan.')
          ? { basis: 'maxCredits' as const, amount: null }
          : { basis: 'fixed' as const, amount: def.price({ authorized: false } as never) },
        lanes: def.lanes.map((l) => ({
          lane: l.lane,
          required: l.required,
          description: l.description,
          readiness: lanes[l.lane] ?? 'not_built',
        })),
      };
    }),
  };
}

export function mountMetaRoutes(app: Express, deps: AppDeps): void {
  const doc = JSON.stringify(buildOpenApi(deps.products));
  app.get('/v2/openapi.json', (_req, res) => {
    res.type('application/json').send(doc);
  });
  app.get('/v2/products', authenticateAny(deps.auth), rateLimit(deps.limiter), (_req, res) => {
    res.json(productList(deps));
  });
}
