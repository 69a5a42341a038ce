// Suppressions (CONTRACT §15): the zod schemas of their bodies, queries and replies, the
// `suppressed` mark every finding read carries, and their part of the OpenAPI document (merged by
// openapi.ts). What a key may be is checked in src/jobs/suppressions/suppression-key.ts, and a code
// against the findings catalog, by the route: both answer invalid_request with an issue here.
import { z } from 'zod';
import type { ErrorCode } from './errors.ts';
import { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, limitParam } from './page-limit.ts';
import { jsonSchema, type Json } from './json-schema.ts';

export const SUPPRESSION_REASONS = ['accepted_risk', 'false_positive', 'compensating_control'] as const;
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number];
/** The furthest expiry a suppression may name (CONTRACT §15). */
export const SUPPRESSION_MAX_DAYS = 365;
export const SUPPRESSION_ID_RE = /^sup_[0-9A-HJKMNP-TV-Z]{26}$/;
/** `suppressed=` on findings pages: include (default: nothing disappears unasked), exclude, only. */
export const SUPPRESSED_FILTERS = ['include', 'exclude', 'only'] as const;
export type SuppressedFilter = (typeof SUPPRESSED_FILTERS)[number];

const expiresAt = z.iso
  .datetime({ offset: true })
  .nullable()
  .describe(
    `RFC 3339, at most ${SUPPRESSION_MAX_DAYS} days ahead and in the future; null (never expires) only for false_positive`,
  );

// ---- Requests -------------------------------------------------------------------------------

export const createSuppressionBody = z.strictObject({
  code: z.string().min(1).max(64).describe('A finding code of the catalog (docs/findings.md)'),
  key: z
    .string()
    .min(1)
    .max(512)
    .describe(
      'An object key (www.example.com, https://www.example.com/, 192.0.2.7) or *.example.com (every name ' +
        'below it, not the name itself). Objects keyed by a URL or a service are matched by their host too.',
    ),
  product: z.string().max(64).nullable().default(null).describe('A product id, or null: any product'),
  reason: z.enum(SUPPRESSION_REASONS),
  note: z.string().max(500).default(''),
  expiresAt,
});

export const patchSuppressionBody = z.strictObject({
  note: z.string().max(500).optional(),
  expiresAt: expiresAt.optional(),
});

export const suppressionListQuery = z.object({
  limit: limitParam,
  cursor: z.string().optional(),
  active: z.enum(['true', 'false']).optional(),
});

export type CreateSuppressionBody = z.infer<typeof createSuppressionBody>;
export type PatchSuppressionBody = z.infer<typeof patchSuppressionBody>;

// ---- Replies --------------------------------------------------------------------------------

export const suppressionHistorySchema = z.object({
  at: z.string(),
  action: z.enum(['created', 'updated', 'revoked']),
  by: z.string().describe("The acting key's public prefix"),
  changes: z.record(z.string(), z.unknown()).optional().describe('updated: the fields set'),
});

export const suppressionSchema = z.object({
  suppressionId: z.string().regex(SUPPRESSION_ID_RE),
  code: z.string(),
  key: z.string().describe('As normalized at creation'),
  product: z.string().nullable(),
  reason: z.enum(SUPPRESSION_REASONS),
  note: z.string(),
  expiresAt: z.string().nullable(),
  createdAt: z.string(),
  createdBy: z.string().describe("The creating key's public prefix"),
  revokedAt: z.string().nullable().describe('Set by DELETE: the suppression stays listed, applied to no later job'),
  active: z.boolean().describe('Not revoked and not expired: applied to the jobs that end from now on'),
  history: z.array(suppressionHistorySchema),
});

export const suppressionListSchema = z.object({
  items: z.array(suppressionSchema),
  page: z.object({ limit: z.number().int(), nextCursor: z.string().nullable() }),
});

export type SuppressionView = z.infer<typeof suppressionSchema>;
export type SuppressionList = z.infer<typeof suppressionListSchema>;

/** On every finding read (findings pages, object detail, changes items, the inventory's findings). */
export const suppressedMarkSchema = z
  .object({
    suppressionId: z.string(),
    reason: z.enum(SUPPRESSION_REASONS),
    expiresAt: z.string().nullable(),
  })
  .nullable()
  .describe(
    'The suppression that covered this finding when its job ended (kept with the job: a later change of the suppression does not rewrite it); null: open. Always null until the job is terminal.',
  );
export type SuppressedMark = z.infer<typeof suppressedMarkSchema>;

export const findingsSummarySchema = z
  .object({
    open: z.object({
      critical: z.number().int(),
      high: z.number().int(),
      medium: z.number().int(),
      low: z.number().int(),
      info: z.number().int(),
    }),
    suppressed: z.number().int(),
  })
  .nullable()
  .describe("The job's findings once it is terminal: the open ones by severity, and how many were suppressed.");
export type FindingsSummary = z.infer<typeof findingsSummarySchema>;

// ---- OpenAPI --------------------------------------------------------------------------------

export function suppressionSchemas(): Json {
  return {
    CreateSuppressionRequest: jsonSchema(createSuppressionBody),
    PatchSuppressionRequest: jsonSchema(patchSuppressionBody),
    Suppression: jsonSchema(suppressionSchema),
    SuppressionList: jsonSchema(suppressionListSchema),
  };
}

const AUTH: ErrorCode[] = [
  'authentication_required',
  'insufficient_scope',
  'rate_limit_exceeded',
  'service_unavailable',
  'internal_error',
];
const BODY: ErrorCode[] = ['invalid_request', 'payload_too_large', 'unsupported_media_type'];
const IDEMPOTENT: ErrorCode[] = [
  'idempotency_key_required',
  'idempotency_key_conflict',
  'idempotency_request_in_progress',
];
const idParam = {
  name: 'suppression_id',
  in: 'path',
  required: true,
  description: 'Suppression id (sup_…)',
  schema: { type: 'string' },
};
export const pageParams = [
  {
    name: 'limit',
    in: 'query',
    required: false,
    description: `Items per page, 1-${PAGE_LIMIT_MAX}.`,
    schema: { type: 'integer', minimum: 1, maximum: PAGE_LIMIT_MAX, default: PAGE_LIMIT_DEFAULT },
  },
  {
    name: 'cursor',
    in: 'query',
    required: false,
    description: 'page.nextCursor of the previous page, verbatim. Bound to workspace, route and filters; valid 24 h.',
    schema: { type: 'string' },
  },
];
const idempotencyHeader = {
  name: 'Idempotency-Key',
  in: 'header',
  required: true,
  description: '1-255 visible ASCII characters (0x21-0x7E), scoped to the API key, kept 24 h.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
};
const json = (description: string, name: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: `#/components/schemas/${name}` } } },
});

export function suppressionPaths(errorResponses: (codes: ErrorCode[]) => Json): Json {
  const create = { 'x-scopes': ['scan:create', 'finding:read'], security: [{ bearer: [] }] };
  const write = { 'x-scopes': ['scan:create'], security: [{ bearer: [] }] };
  const read = { 'x-scopes': ['scan:read', 'finding:read'], security: [{ bearer: [] }] };
  return {
    '/v2/suppressions': {
      post: {
        operationId: 'createSuppression',
        summary: 'Accept a finding on purpose: marked on every job that ends from now on, never hidden',
        ...create,
        parameters: [idempotencyHeader],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/CreateSuppressionRequest' } } },
        },
        responses: {
          '201': json('The suppression', 'Suppression'),
          ...errorResponses([...AUTH, ...BODY, ...IDEMPOTENT]),
        },
      },
      get: {
        operationId: 'listSuppressions',
        summary: "The workspace's suppressions, revoked ones included (revokedAt)",
        ...read,
        parameters: [
          ...pageParams,
          {
            name: 'active',
            in: 'query',
            required: false,
            description: 'true: only active ones; false: only revoked or expired ones; default all.',
            schema: { type: 'string', enum: ['true', 'false'] },
          },
        ],
        responses: {
          '200': json('A page of suppressions', 'SuppressionList'),
          ...errorResponses([...AUTH, 'invalid_request', 'invalid_cursor']),
        },
      },
    },
    '/v2/suppressions/{suppression_id}': {
      get: {
        operationId: 'getSuppression',
        summary: 'One suppression with its history',
        ...read,
        parameters: [idParam],
        responses: {
          '200': json('The suppression', 'Suppression'),
          ...errorResponses([...AUTH, 'suppression_not_found']),
        },
      },
      patch: {
        operationId: 'updateSuppression',
        summary: 'Change the note or the expiry',
        ...write,
        parameters: [idParam],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/PatchSuppressionRequest' } } },
        },
        responses: {
          '200': json('The suppression', 'Suppression'),
          ...errorResponses([...AUTH, ...BODY, 'suppression_not_found']),
        },
      },
      delete: {
        operationId: 'deleteSuppression',
        summary: 'Revoke: applied to no job that ends after it; kept and listed with revokedAt',
        ...write,
        parameters: [idParam],
        responses: {
          '204': { description: 'Revoked' },
          ...errorResponses([...AUTH, 'suppression_not_found']),
        },
      },
    },
  };
}
