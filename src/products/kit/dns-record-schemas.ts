// Zod schemas of DNS record data that several products project (the DNS, domain and mail lookups):
// written once so the OpenAPI document describes an SOA the same way wherever it appears.
import { z } from 'zod';

export const soaRecordSchema = z.object({
  mname: z.string(),
  rname: z.string(),
  serial: z.number().int(),
  refresh: z.number().int(),
  retry: z.number().int(),
  expire: z.number().int(),
  minimum: z.number().int(),
});
