// The one product registry: routing, rate classes, credits, readiness, OpenAPI and docs derive
// from this list. Adding a product is adding its module here.
import type { ProductDefinition } from './kit/product-contract.ts';
import { macProduct } from './mac/index.ts';
import { scanProduct } from './scan/index.ts';
import { webProduct } from './web/index.ts';
import { mailProduct } from './mail/index.ts';
import { domainProduct } from './domain/index.ts';
import { phoneProduct } from './phone/index.ts';
import { ipProduct } from './ip/index.ts';
import { dnsProduct } from './dns-lookup/index.ts';

export const products: readonly ProductDefinition[] = [
  macProduct,
  phoneProduct,
  ipProduct,
  dnsProduct,
  domainProduct,
  mailProduct,
  webProduct,
  scanProduct,
];

export function productById(id: string): ProductDefinition | undefined {
  return products.find((p) => p.id === id);
}
