// The products an orchestrator owns. Default: every async product of the registry (imported
// without the sync ones, whose data an orchestrator never needs). Tests (and a
// deployment that splits product families across orchestrators) pass their own list; every
// database sweep is scoped to these product ids.
import type { ProductDefinition } from '../../products/kit/product-contract.ts';
import { asyncProducts as registryProducts } from '../../products/async-registry.ts';

export interface ProductCatalog {
  get(id: string): ProductDefinition | undefined;
  /** Ids of the async products owned; never empty (a catalog without jobs is a wiring error). */
  readonly ids: readonly string[];
}

export function productCatalog(defs: readonly ProductDefinition[] = registryProducts): ProductCatalog {
  const owned = defs.filter((d) => d.mode === 'async');
  if (owned.length === 0) throw new Error('the orchestrator needs at least one async product');
  const byId = new Map(owned.map((d) => [d.id, d]));
  return { get: (id) => byId.get(id), ids: [...byId.keys()] };
}
