// Discovery routes: the OpenAPI document (no key) and the product list with live readiness.
import type { Express } from 'express';
import type { AppDeps } from '../http/deps.ts';
import { authenticateAny } from '../http/authenticate.ts';
import { rateLimit } from '../http/rate-limit.ts';
import { buildOpenApi } from '../contract/openapi.ts';
import { productReadiness } from '../products/types.ts';

export function productList(deps: AppDeps) {
  return {
    products: deps.products.map((def) => {
      const lanes = def.readiness(deps.runtime);
      return {
        product: def.id,
        title: def.title,
        method: def.method,
        path: def.path,
        mode: def.mode,
        readiness: def.execute ? productReadiness(def, deps.runtime) : 'unavailable' as const,
        credits: def.id.startsWith('scan.')
          ? { basis: 'maxCredits' as const, amount: null }
          : { basis: 'fixed' as const, amount: def.price({ authorized: false } as never) },
        lanes: def.lanes.map((l) => ({
          lane: l.lane, required: l.required, description: l.description,
          readiness: def.execute ? lanes[l.lane] ?? 'not_built' : 'not_built' as const,
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
