// The inventory (CONTRACT §16): the zod schemas of its queries and pages, and their part of the
// OpenAPI document (merged by openapi.ts).
import { z } from 'zod';
import type { ErrorCode } from './errors.ts';
import { limitParam } from './page-limit.ts';
import { jsonSchema, type Json } from './json-schema.ts';
import { SEVERITIES, type Severity } from './tasks.ts';
import { objectTypes } from './page-schemas.ts';
import { pageParams, SUPPRESSED_FILTERS, suppressedMarkSchema } from './suppression-schemas.ts';

export const INVENTORY_STATES = ['present', 'gone', 'unconfirmed'] as const;
export type InventoryState = (typeof INVENTORY_STATES)[number];
const severity = z.enum(SEVERITIES as [Severity, ...Severity[]]);

const q = z
  .string()
  .min(1)
  .max(253)
  .describe('A name: it and every key below it (URLs and services by their host); or an address');

export const inventoryQuery = z.object({
  limit: limitParam,
  cursor: z.string().optional(),
  type: z.enum(objectTypes).optional(),
  state: z.enum(INVENTORY_STATES).optional(),
  q: q.optional(),
  minSeverity: severity.optional(),
  changedSince: z.iso.datetime({ offset: true }).optional(),
});

export const inventoryFindingsQuery = z.object({
  limit: limitParam,
  cursor: z.string().optional(),
  severity: severity.optional(),
  code: z.string().max(64).optional(),
  q: q.optional(),
  suppressed: z.enum(SUPPRESSED_FILTERS).optional(),
});

export type InventoryQuery = z.infer<typeof inventoryQuery>;
export type InventoryFindingsQuery = z.infer<typeof inventoryFindingsQuery>;

const openFindings = z.object({
  critical: z.number().int(),
  high: z.number().int(),
  medium: z.number().int(),
  low: z.number().int(),
  info: z.number().int(),
});

export const inventoryItemSchema = z.object({
  type: z.string(),
  key: z.string(),
  state: z
    .enum(INVENTORY_STATES)
    .describe('gone only when a job observed the absence; unconfirmed when the last job could not check it'),
  firstSeenAt: z.string(),
  lastSeenAt: z.string().describe('End of the last job that held it'),
  lastCheckedAt: z
    .string()
    .nullable()
    .describe('End of the last job that examined it, whatever it found (not advanced when unconfirmed)'),
  changedAt: z.string().nullable().describe('Last time a comparison marked it new, changed or gone'),
  lastJobRef: z.string(),
  lastObjectId: z.string().nullable().describe('null once that job is purged'),
  products: z.array(z.string()),
  openFindings: openFindings.describe('Unsuppressed, by severity, from the last job that held it'),
});

export const inventoryFindingSchema = z.object({
  code: z.string(),
  severity,
  objectType: z.string(),
  objectKey: z.string(),
  firstSeenAt: z.string(),
  lastSeenAt: z.string(),
  jobRef: z.string(),
  findingId: z.string(),
  suppressed: suppressedMarkSchema,
});

const page = z.object({
  limit: z.number().int(),
  nextCursor: z.string().nullable().describe('Opaque; null when nothing follows now'),
});
export const inventoryPageSchema = z.object({ items: z.array(inventoryItemSchema), page });
export const inventoryFindingsPageSchema = z.object({ items: z.array(inventoryFindingSchema), page });

export type InventoryItem = z.infer<typeof inventoryItemSchema>;
export type InventoryFinding = z.infer<typeof inventoryFindingSchema>;
export type InventoryPage = z.infer<typeof inventoryPageSchema>;
export type InventoryFindingsPage = z.infer<typeof inventoryFindingsPageSchema>;

// ---- OpenAPI --------------------------------------------------------------------------------

export function inventorySchemas(): Json {
  return {
    InventoryPage: jsonSchema(inventoryPageSchema),
    InventoryFindingsPage: jsonSchema(inventoryFindingsPageSchema),
  };
}

const ERRORS: ErrorCode[] = [
  'authentication_required',
  'insufficient_scope',
  'rate_limit_exceeded',
  'service_unavailable',
  'internal_error',
  'invalid_request',
  'invalid_cursor',
];
const param = (name: string, description: string, schema: Json) => ({
  name,
  in: 'query',
  required: false,
  description,
  schema,
});
const json = (description: string, name: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: `#/components/schemas/${name}` } } },
});

export function inventoryPaths(errorResponses: (codes: ErrorCode[]) => Json): Json {
  return {
    '/v2/inventory': {
      get: {
        operationId: 'listInventory',
        summary: "The estate: one row per object identity the workspace's jobs have seen",
        description:
          'Keyset pages ordered by type then key (with `q`: by name hierarchy, then type and key). Updated when ' +
          'each job ends, from its comparison: gone only when a job observed the absence.',
        'x-scopes': ['scan:read'],
        security: [{ bearer: [] }],
        parameters: [
          ...pageParams,
          param('type', 'Object type', { type: 'string', enum: [...objectTypes] }),
          param('state', 'present, gone or unconfirmed', { type: 'string', enum: [...INVENTORY_STATES] }),
          param('q', 'A name: it and every key below it (URLs by host); or an address', { type: 'string' }),
          param('minSeverity', 'Objects with an open finding at or above it', {
            type: 'string',
            enum: [...SEVERITIES],
          }),
          param('changedSince', 'RFC 3339: rows a comparison marked since then', {
            type: 'string',
            format: 'date-time',
          }),
        ],
        responses: { '200': json('A page of the inventory', 'InventoryPage'), ...errorResponses(ERRORS) },
      },
    },
    '/v2/inventory/findings': {
      get: {
        operationId: 'listInventoryFindings',
        summary: 'Open findings across the estate, one per finding identity',
        'x-scopes': ['finding:read'],
        security: [{ bearer: [] }],
        parameters: [
          ...pageParams,
          param('severity', 'Minimum severity', { type: 'string', enum: [...SEVERITIES] }),
          param('code', 'A finding code', { type: 'string' }),
          param('q', 'A name: findings on it and every key below it', { type: 'string' }),
          param('suppressed', 'include (default), exclude or only', {
            type: 'string',
            enum: [...SUPPRESSED_FILTERS],
          }),
        ],
        responses: {
          '200': json('A page of open findings', 'InventoryFindingsPage'),
          ...errorResponses(ERRORS),
        },
      },
    },
  };
}
