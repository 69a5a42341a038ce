// Placeholder until lookup.phone.v1 lands: registered, honestly unavailable.
import { z } from 'zod';
import type { ProductDefinition } from '../types.ts';

const lanes = [{ lane: 'numbering_plan', required: true, description: 'libphonenumber numbering plan metadata' }];
export const phoneProduct: ProductDefinition = {
  id: 'lookup.phone.v1', title: 'Phone format and region lookup', mode: 'sync', method: 'POST', path: '/v2/lookups/phone',
  scope: 'scan:create', rateClass: 'sync_lookup',
  input: z.strictObject({ value: z.string().min(1).max(64), defaultRegion: z.string().length(2).optional() }),
  lanes, price: () => 0, readiness: () => ({ numbering_plan: 'not_built' }),
};
