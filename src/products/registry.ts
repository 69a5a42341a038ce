// The one product registry: routing, rate classes, credits, readiness, OpenAPI and docs derive
// from this list. Adding a product is adding its module here (an async one in async-registry.ts,
// which the orchestrator imports alone).
import type { ProductDefinition } from './kit/product-contract.ts';
import { macProduct } from './mac/index.ts';
import { phoneProduct } from './phone/index.ts';
import { ipProduct } from './ip/index.ts';
import { dnsProduct } from './dns-lookup/index.ts';
import { asyncProducts } from './async-registry.ts';

export const products: readonly ProductDefinition[] = [
  macProduct,
  phoneProduct,
  ipProduct,
  dnsProduct,
  ...asyncProducts,
];

export function productById(id: string): ProductDefinition | undefined {
  return products.find((p) => p.id === id);
}
