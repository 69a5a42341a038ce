// Result pages, finding pages and object detail (CONTRACT §10): the zod schemas of their queries
// and bodies, and their part of the OpenAPI document (merged by openapi.ts).
import { z } from 'zod';
import type { ErrorCode } from './errors.ts';
import { limitationSchema } from './envelope.ts';
import { laneCountsSchema } from './job-schemas.ts';
import { SEVERITIES, type Severity } from './tasks.ts';
import { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, limitParam } from './page-limit.ts';
import { itemMarkShape } from './change-schemas.ts';
import { jsonSchema, type Json } from './json-schema.ts';
import { SUPPRESSED_FILTERS, suppressedMarkSchema } from './suppression-schemas.ts';

export { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX };

/** Unknown query parameters are ignored (z.object strips them). */
export const resultPageQuery = z.object({
  limit: limitParam,
  cursor: z.string().optional(),
});

export const findingPageQuery = resultPageQuery.extend({
  severity: z.enum(SEVERITIES as [Severity, ...Severity[]]).optional(),
  /** CONTRACT §15: include (default: nothing disappears unasked), exclude or only the suppressed. */
  suppressed: z.enum(SUPPRESSED_FILTERS).optional(),
});

// ---- Bodies ---------------------------------------------------------------------------------

export const objectTypes = [
  'domain',
  'host',
  'ip_address',
  'mx_host',
  'ns_host',
  'certificate',
  'url',
  'mail_posture',
  'web_posture',
  'registration',
  'service',
] as const;

export const relationKinds = [
  'resolves_to',
  'mx_of',
  'ns_of',
  'cname_to',
  'san_of',
  'links_to',
  'discovered_from',
] as const;

const jobStatuses = [
  'queued',
  'running',
  'cancelling',
  'completed',
  'partial',
  'cancelled',
  'failed',
  'unavailable',
] as const;

export const evidenceRefSchema = z.object({
  ref: z
    .string()
    .regex(/^ev_[0-9A-HJKMNP-TV-Z]{26}$/)
    .describe('Public evidence reference (stable; not a database id)'),
  summary: z.string(),
});

export const objectLaneSchema = z.object({
  lane: z.string(),
  status: z.string(),
  reason: z.string().optional(),
});

export const resultItemSchema = z.object({
  objectId: z.string().regex(/^obj_[0-9A-HJKMNP-TV-Z]{26}$/),
  type: z.enum(objectTypes),
  key: z.string(),
  distance: z.number().int(),
  firstSeenAt: z.string(),
  lanes: z.array(objectLaneSchema),
  projection: z.record(z.string(), z.unknown()),
  evidence: z.array(evidenceRefSchema),
  ...itemMarkShape,
});

export const findingItemSchema = z.object({
  findingId: z.string().regex(/^fnd_[0-9A-HJKMNP-TV-Z]{26}$/),
  code: z.string(),
  severity: z.enum(SEVERITIES as [Severity, ...Severity[]]),
  confidence: z.enum(['confirmed', 'firm', 'tentative']),
  title: z.string(),
  summary: z.string(),
  objectId: z.string(),
  evidence: z.array(evidenceRefSchema),
  sources: z.array(z.object({ lane: z.string(), source: z.string() })),
  detectedAt: z.string(),
  ...itemMarkShape,
  suppressed: suppressedMarkSchema,
});

function pageSchema<T extends z.ZodType>(item: T) {
  return z.object({
    jobRef: z.string(),
    jobStatus: z.enum(jobStatuses),
    terminal: z.boolean(),
    items: z.array(item),
    coverage: z.object({ complete: z.boolean() }),
    limitations: z.array(limitationSchema),
    lanes: laneCountsSchema.describe(
      'Per product lane: tasks and how they ended, as on the job status (what did not run is counted here).',
    ),
    page: z.object({
      limit: z.number().int(),
      nextCursor: z
        .string()
        .nullable()
        .describe(
          'Opaque; follow it to continue. Present whenever more items exist or the job is not terminal ' +
            '(a page that is empty now may fill later); null only when the job is terminal and nothing follows.',
        ),
    }),
  });
}

export const resultPageSchema = pageSchema(resultItemSchema);
export const findingPageSchema = pageSchema(findingItemSchema);

export const objectDetailSchema = resultItemSchema.extend({
  relations: z.array(
    z.object({
      relation: z.enum(relationKinds),
      direction: z
        .enum(['outgoing', 'incoming'])
        .describe('outgoing: this object → objectId; incoming: objectId → this object'),
      objectId: z.string(),
    }),
  ),
  findings: z.array(z.string()),
  suppressedFindings: z
    .array(z.object({ findingId: z.string() }).extend({ ...suppressedMarkSchema.unwrap().shape }))
    .describe('Of `findings`, those a suppression covered when the job ended (CONTRACT §15); the others are open.'),
});

export type ResultItem = z.infer<typeof resultItemSchema>;
export type FindingItem = z.infer<typeof findingItemSchema>;
export type ResultPage = z.infer<typeof resultPageSchema>;
export type FindingPage = z.infer<typeof findingPageSchema>;
export type ObjectDetail = z.infer<typeof objectDetailSchema>;

// ---- OpenAPI --------------------------------------------------------------------------------

/** Component schemas, to spread into components.schemas. */
export function jobPageSchemas(): Json {
  return {
    ResultPage: jsonSchema(resultPageSchema),
    FindingPage: jsonSchema(findingPageSchema),
    ObjectDetail: jsonSchema(objectDetailSchema),
  };
}

const READ_ERRORS: ErrorCode[] = [
  'authentication_required',
  'insufficient_scope',
  'rate_limit_exceeded',
  'service_unavailable',
  'internal_error',
  'job_not_found',
];
const PAGE_ERRORS: ErrorCode[] = [...READ_ERRORS, 'invalid_request', 'invalid_cursor'];

const jobRefParam = {
  name: 'job_ref',
  in: 'path',
  required: true,
  description: 'Opaque job reference (job_…) returned with 202.',
  schema: { type: 'string' },
};
const pageParams = [
  jobRefParam,
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
    description:
      'page.nextCursor of the previous page, verbatim. Bound to workspace, job, route and filter; valid 24 h.',
    schema: { type: 'string' },
  },
];

const ok = (description: string, name: string) => ({
  '200': { description, content: { 'application/json': { schema: { $ref: `#/components/schemas/${name}` } } } },
});

/**
 * Path items of the three routes. `errorResponses` is openapi.ts's own builder (the
 * x-error-codes / ErrorEnvelope format), passed in so both stay one format without an import cycle.
 */
export function jobPagePaths(errorResponses: (codes: ErrorCode[]) => Json): Json {
  return {
    '/v2/jobs/{job_ref}/results': {
      get: {
        operationId: 'listJobResults',
        summary: 'Result page: retained objects of the job, in discovery order',
        'x-scopes': ['scan:read'],
        security: [{ bearer: [] }],
        parameters: pageParams,
        responses: { ...ok('A page of result items', 'ResultPage'), ...errorResponses(PAGE_ERRORS) },
      },
    },
    '/v2/jobs/{job_ref}/findings': {
      get: {
        operationId: 'listJobFindings',
        summary: 'Finding page, optionally from a minimum severity up',
        'x-scopes': ['scan:read', 'finding:read'],
        security: [{ bearer: [] }],
        parameters: [
          ...pageParams,
          {
            name: 'severity',
            in: 'query',
            required: false,
            description: 'Minimum severity.',
            schema: { type: 'string', enum: [...SEVERITIES] },
          },
          {
            name: 'suppressed',
            in: 'query',
            required: false,
            description:
              'include (default: every finding, each with its `suppressed` mark), exclude (the open ones) or only ' +
              '(the suppressed ones). Marks are made when the job ends.',
            schema: { type: 'string', enum: [...SUPPRESSED_FILTERS] },
          },
        ],
        responses: { ...ok('A page of findings', 'FindingPage'), ...errorResponses(PAGE_ERRORS) },
      },
    },
    '/v2/jobs/{job_ref}/objects/{object_id}': {
      get: {
        operationId: 'getJobObject',
        summary: 'One retained object with its relations and finding ids',
        'x-scopes': ['scan:read'],
        security: [{ bearer: [] }],
        parameters: [
          jobRefParam,
          {
            name: 'object_id',
            in: 'path',
            required: true,
            description: 'Object id (obj_…) from a result page.',
            schema: { type: 'string' },
          },
        ],
        responses: { ...ok('The object', 'ObjectDetail'), ...errorResponses([...READ_ERRORS, 'object_not_found']) },
      },
    },
  };
}
