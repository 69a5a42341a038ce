// Placeholder until lookup.ip.v1 lands: registered, honestly unavailable.
import { z } from 'zod';
import type { ProductDefinition } from '../types.ts';

const lanes = [
  { lane: 'address_registry', required: true, description: 'IANA special-purpose address registries' },
  { lane: 'context', required: false, description: 'ASN / country dataset (IP_CONTEXT_DB)' },
  { lane: 'reverse_dns', required: false, description: 'PTR through the project resolver' },
];
export const ipProduct: ProductDefinition = {
  id: 'lookup.ip.v1', title: 'IP context lookup', mode: 'sync', method: 'POST', path: '/v2/lookups/ip',
  scope: 'scan:create', rateClass: 'sync_lookup',
  input: z.strictObject({ value: z.string().min(1).max(64), includeContext: z.boolean().default(false), reverseDns: z.boolean().default(false) }),
  lanes, price: () => 0, readiness: () => ({ address_registry: 'not_built', context: 'not_built', reverse_dns: 'not_built' }),
};
