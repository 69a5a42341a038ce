// Placeholder until lookup.dns.v1 lands: registered, honestly unavailable.
import { z } from 'zod';
import { domainName } from '../../contract/domain-name.ts';
import type { ProductDefinition } from '../types.ts';

const lanes = [{ lane: 'resolver', required: true, description: 'The project stub resolver over DNS_SERVERS' }];
export const dnsProduct: ProductDefinition = {
  id: 'lookup.dns.v1', title: 'DNS lookup', mode: 'sync', method: 'POST', path: '/v2/lookups/dns',
  scope: 'scan:create', rateClass: 'sync_lookup',
  input: z.strictObject({ value: domainName }),
  lanes, price: () => 0, readiness: () => ({ resolver: 'not_built' }),
};
