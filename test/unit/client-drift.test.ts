// The SDK (src/client) against the contract it is typed from: its route table against the
// OpenAPI document the service serves (paths, products, 200 vs 202, body fields and which are
// required), its sample bodies against the products' own zod schemas, every job operation of the
// document implemented, and its retry decision against the error registry's `retryable` flags.
import { describe, expect, it } from 'vitest';
import { buildOpenApi } from '../../src/routes/openapi/openapi.ts';
import { errorRegistry, errorCodes } from '../../src/contract/errors.ts';
import { products } from '../../src/products/registry.ts';
import {
  apiPaths,
  jobOperationIds,
  monitorOperationIds,
  estateOperationIds,
  productRoutes,
} from '../../src/client/routes.ts';
import { decideRetry, defaultRetrySettings, parseRetryAfter, backoffDelay } from '../../src/client/retry-policy.ts';
import type { ProductKind, Requests } from '../../src/client/types.ts';

type Json = Record<string, any>;
const doc = buildOpenApi(products) as Json;
const schemaOf = (ref: string): Json => doc.components.schemas[ref.replace('#/components/schemas/', '')];

/** One valid body per product, typed by the SDK's request types. */
const samples: { [K in ProductKind]: Requests[K] } = {
  mac: { value: 'F4:F5:E8:12:34:56' },
  phone: { value: '+41 44 668 18 00' },
  ip: { value: '8.8.8.8', includeContext: true, reverseDns: false },
  dns: { value: 'example.com' },
  domain: { value: 'example.com' },
  mail: { value: 'example.com' },
  web: { url: 'https://example.com/', authorized: false },
  scan: {
    profile: 'balanced',
    target: { type: 'domain_name', value: 'example.com' },
    options: { active: false, maxCredits: 100 },
  },
};

describe('client SDK drift', () => {
  it('has a route for every product of the registry, and no other', () => {
    expect(
      Object.values(productRoutes)
        .map((r) => r.product)
        .sort(),
    ).toEqual(products.map((p) => p.id).sort());
  });

  for (const [kind, route] of Object.entries(productRoutes) as Array<
    [ProductKind, (typeof productRoutes)[ProductKind]]
  >) {
    it(`${kind}: path, reply status and body fields match the OpenAPI document`, () => {
      const op = doc.paths[route.path]?.post;
      expect(op?.operationId).toBe(route.product);
      expect(Object.keys(op.responses)).toContain(route.mode === 'sync' ? '200' : '202');
      const body = schemaOf(op.requestBody.content['application/json'].schema.$ref);
      expect(Object.keys(body.properties).sort()).toEqual(Object.keys(route.fields).sort());
      const required = Object.entries(route.fields)
        .filter(([, v]) => v === 'required')
        .map(([k]) => k);
      expect([...(body.required ?? [])].sort()).toEqual(required.sort());
      const def = products.find((p) => p.id === route.product)!;
      expect(def.input.safeParse(samples[kind]).success).toBe(true);
    });
  }

  it('implements every job and discovery operation of the document', () => {
    const ops = Object.values(doc.paths as Json).flatMap((item) =>
      Object.values(item as Json).map((op) => (op as Json).operationId as string),
    );
    const productOps = new Set(products.map((p) => p.id));
    expect(ops.filter((o) => !productOps.has(o) && o !== 'openapi').sort()).toEqual(
      [...jobOperationIds, ...monitorOperationIds, ...estateOperationIds].sort(),
    );
    const templates = [
      apiPaths.status('{job_ref}'),
      apiPaths.cancel('{job_ref}'),
      apiPaths.results('{job_ref}'),
      apiPaths.findings('{job_ref}'),
      apiPaths.object('{job_ref}', '{object_id}'),
      apiPaths.export('{job_ref}'),
      apiPaths.report('{job_ref}'),
      apiPaths.products(),
      apiPaths.monitors(),
      apiPaths.monitor('{monitor_id}'),
      apiPaths.deliveries('{monitor_id}'),
      apiPaths.redeliver('{monitor_id}', '{event_id}'),
    ].map(decodeURIComponent);
    for (const t of templates) expect(doc.paths[t], t).toBeDefined();
  });

  it('retries exactly the codes the registry marks retryable', () => {
    for (const code of errorCodes) {
      const spec = errorRegistry[code];
      const d = decideRetry({ kind: 'reply', status: spec.status, code, retryable: spec.retryable }, 0, {
        ...defaultRetrySettings,
        random: () => 0.5,
      });
      expect(d.retry, code).toBe(spec.retryable);
    }
  });

  it('waits out a Retry-After exactly, refuses one above the cap, and backs off with jitter otherwise', () => {
    const s = { ...defaultRetrySettings, maxRetryAfterMs: 10_000, random: () => 1 };
    expect(
      decideRetry(
        { kind: 'reply', status: 429, code: 'rate_limit_exceeded', retryable: true, retryAfterMs: 3000 },
        0,
        s,
      ),
    ).toEqual({ retry: true, delayMs: 3000 });
    expect(
      decideRetry(
        { kind: 'reply', status: 429, code: 'rate_limit_exceeded', retryable: true, retryAfterMs: 30_000 },
        0,
        s,
      ).retry,
    ).toBe(false);
    expect(decideRetry({ kind: 'connection' }, s.maxRetries, s).retry).toBe(false);
    expect(backoffDelay(3, { ...s, random: () => 0 })).toBe(1000); // 250 × 2³ × 50 %
    expect(backoffDelay(3, s)).toBe(2000);
    expect(backoffDelay(20, s)).toBe(s.backoffMaxMs);
    expect(parseRetryAfter('7')).toBe(7000);
    expect(parseRetryAfter(new Date(Date.now() + 5000).toUTCString())).toBeGreaterThan(3000);
    expect(parseRetryAfter('soon')).toBeUndefined();
  });
});
