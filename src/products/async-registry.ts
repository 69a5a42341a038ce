// The async products of the registry (./registry.ts), on their own: the orchestrator owns only
// these, and importing the whole registry would load the sync products' data (libphonenumber's
// metadata, for one) into a process that never answers a sync lookup.
import type { ProductDefinition } from './kit/product-contract.ts';
import { domainProduct } from './domain/index.ts';
import { mailProduct } from './mail/index.ts';
import { webProduct } from './web/index.ts';
import { scanProduct } from './scan/index.ts';

export const asyncProducts: readonly ProductDefinition[] = [domainProduct, mailProduct, webProduct, scanProduct];
