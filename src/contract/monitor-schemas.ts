// Monitors and webhooks (CONTRACT §14): the zod schemas of their bodies, queries and replies, the
// event that a webhook receives, and their part of the OpenAPI document (merged by openapi.ts).
// A monitor's `request` is the product's own request body: it is validated by that product's
// schema (the route's, src/products/), not here.
import { z } from 'zod';
import type { ErrorCode } from './errors.ts';
import { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, resultPageQuery } from './page-schemas.ts';
import { jsonSchema, type Json } from './json-schema.ts';
import { changeCountsSchema } from './change-schemas.ts';

/** The products a monitor may run: the retained jobs whose changes CONTRACT §13 compares. */
export const MONITOR_PRODUCTS = ['scan.recursive.v1', 'lookup.domain.v1', 'lookup.mail.v1', 'lookup.web.v1'] as const;
export const MONITOR_MAX_INTERVAL_SECONDS = 2_592_000;

const monitorIdSchema = z.string().regex(/^mon_[0-9A-HJKMNP-TV-Z]{26}$/);
const eventIdSchema = z.string().regex(/^msg_[0-9A-HJKMNP-TV-Z]{26}$/);
const jobRefSchema = z.string().regex(/^job_[0-9A-HJKMNP-TV-Z]{26}$/);

// ---- Requests -------------------------------------------------------------------------------

const scheduleSchema = z.strictObject({
  intervalSeconds: z
    .number()
    .int()
    .describe(`Seconds between runs, MONITOR_MIN_INTERVAL_SECONDS (default 3600) to ${MONITOR_MAX_INTERVAL_SECONDS}`),
});

export const createMonitorBody = z.strictObject({
  product: z.enum(MONITOR_PRODUCTS),
  request: z
    .record(z.string(), z.unknown())
    .describe("The product's own request body, validated exactly as on its route (errors under request.…)"),
  schedule: scheduleSchema,
  webhook: z
    .strictObject({ url: z.string().max(2048).describe('https://… (http only inside ALLOW_PRIVATE_TARGETS)') })
    .nullable()
    .default(null),
  paused: z.boolean().default(false),
});

export const patchMonitorBody = z.strictObject({
  schedule: scheduleSchema.optional(),
  paused: z.boolean().optional(),
  webhook: z
    .strictObject({
      url: z.string().max(2048).optional().describe('A new URL (re-enables a webhook disabled by a 410)'),
      rotateSecret: z
        .literal(true)
        .optional()
        .describe('A new secret, returned once; the old one keeps signing beside it for 24 h'),
    })
    .nullable()
    .optional()
    .describe('null removes the webhook'),
});

export const monitorListQuery = resultPageQuery;
export const deliveriesQuery = resultPageQuery;

export type CreateMonitorBody = z.infer<typeof createMonitorBody>;
export type PatchMonitorBody = z.infer<typeof patchMonitorBody>;

// ---- Replies --------------------------------------------------------------------------------

export const webhookViewSchema = z.object({
  url: z.string(),
  status: z
    .enum(['active', 'failing', 'disabled'])
    .describe('failing: no attempt has been delivered for 24 h; disabled: see `disabled`'),
  disabled: z.enum(['gone']).nullable().describe('gone: the receiver answered 410; a PATCH of the URL re-enables it'),
  failingSince: z.string().nullable().describe('The first failed attempt since the last delivered one'),
  secret: z
    .string()
    .regex(/^whsec_/)
    .optional()
    .describe('Only in the reply that created it (create, a PATCH adding a webhook, rotateSecret)'),
});

export const monitorRunSchema = z.object({
  runAt: z.string().describe('When the run was decided (its due time when it never was)'),
  dueAt: z.string(),
  jobRef: jobRefSchema.nullable(),
  outcome: z.enum(['started', 'skipped']),
  code: z.string().nullable().describe('Why the run was skipped: an error code, or previous_run_active'),
});

export const monitorSchema = z.object({
  monitorId: monitorIdSchema,
  product: z.enum(MONITOR_PRODUCTS),
  request: z.record(z.string(), z.unknown()),
  schedule: z.object({ intervalSeconds: z.number().int() }),
  paused: z.boolean(),
  pausedReason: z
    .enum(['key_revoked'])
    .nullable()
    .describe(
      'Why the service paused it (key_revoked: the key it runs as was revoked; resuming it binds it to the resuming key); null when its owner paused it, or while it runs',
    ),
  nextRunAt: z.string().nullable().describe('null while paused'),
  createdAt: z.string(),
  webhook: webhookViewSchema.nullable(),
  lastRuns: z.array(monitorRunSchema).optional().describe('The last 10 runs, newest first (GET of one monitor)'),
});

const pageInfo = z.object({
  limit: z.number().int(),
  nextCursor: z.string().nullable().describe('Opaque; null when nothing follows'),
});

export const monitorListSchema = z.object({ items: z.array(monitorSchema), page: pageInfo });

export const deliverySchema = z.object({
  eventId: eventIdSchema.describe('The webhook-id header of every attempt of this event'),
  type: z.enum(['monitor.job_finished', 'monitor.run_skipped']),
  jobRef: jobRefSchema.nullable(),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.number().int(),
  lastAttemptAt: z.string().nullable(),
  lastStatusCode: z.number().int().nullable(),
  lastError: z.string().nullable(),
  nextAttemptAt: z.string().nullable(),
});

export const deliveriesPageSchema = z.object({
  monitorId: monitorIdSchema,
  items: z.array(deliverySchema),
  page: pageInfo,
});

/** What a webhook receives (the body; headers webhook-id, webhook-timestamp, webhook-signature). */
export const monitorEventSchema = z.object({
  type: z.enum(['monitor.job_finished', 'monitor.run_skipped']),
  timestamp: z.string(),
  data: z.object({
    monitorId: monitorIdSchema,
    jobRef: jobRefSchema.nullable(),
    status: z.string().describe("The job's terminal status, or skipped"),
    baseline: z.object({ jobRef: jobRefSchema }).nullable(),
    changes: changeCountsSchema
      .nullable()
      .describe('CONTRACT §13 counts; the details are on GET /v2/jobs/{job_ref}/changes'),
    code: z.string().optional().describe('monitor.run_skipped: why'),
  }),
});

export type MonitorView = z.infer<typeof monitorSchema>;
export type MonitorList = z.infer<typeof monitorListSchema>;
export type DeliveryView = z.infer<typeof deliverySchema>;
export type DeliveriesPage = z.infer<typeof deliveriesPageSchema>;
export type MonitorEventBody = z.infer<typeof monitorEventSchema>;

// ---- OpenAPI --------------------------------------------------------------------------------

export function monitorSchemas(): Json {
  return {
    CreateMonitorRequest: jsonSchema(createMonitorBody, 'input'),
    PatchMonitorRequest: jsonSchema(patchMonitorBody, 'input'),
    Monitor: jsonSchema(monitorSchema, 'output'),
    MonitorList: jsonSchema(monitorListSchema, 'output'),
    Delivery: jsonSchema(deliverySchema, 'output'),
    DeliveriesPage: jsonSchema(deliveriesPageSchema, 'output'),
    MonitorEvent: jsonSchema(monitorEventSchema, 'output'),
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

const monitorIdParam = {
  name: 'monitor_id',
  in: 'path',
  required: true,
  description: 'Monitor id (mon_…)',
  schema: { type: 'string' },
};
const pageParams = [
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
    description: 'page.nextCursor of the previous page, verbatim.',
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
/** A PATCH honours a key and needs one to rotate the webhook secret (the replay returns the same secret). */
const patchIdempotencyHeader = {
  ...idempotencyHeader,
  required: false,
  description: `${idempotencyHeader.description} Required with webhook.rotateSecret: a retry with the same key returns the same new secret.`,
};
const json = (description: string, name: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: `#/components/schemas/${name}` } } },
});

/** Path items of the monitor routes; `errorResponses` is openapi.ts's builder (one format). */
export function monitorPaths(errorResponses: (codes: ErrorCode[]) => Json): Json {
  const write = { 'x-scopes': ['scan:create'], security: [{ bearer: [] }] };
  const read = { 'x-scopes': ['scan:read'], security: [{ bearer: [] }] };
  return {
    '/v2/monitors': {
      post: {
        operationId: 'createMonitor',
        summary: 'Create a monitor: the product request run again every interval, its result pushed signed',
        ...write,
        parameters: [idempotencyHeader],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/CreateMonitorRequest' } } },
        },
        responses: {
          '201': json('The monitor; webhook.secret is shown only here', 'Monitor'),
          ...errorResponses([...AUTH, ...BODY, ...IDEMPOTENT, 'scan_credit_budget_invalid']),
        },
      },
      get: {
        operationId: 'listMonitors',
        summary: "The workspace's monitors",
        ...read,
        parameters: pageParams,
        responses: {
          '200': json('A page of monitors', 'MonitorList'),
          ...errorResponses([...AUTH, 'invalid_request', 'invalid_cursor']),
        },
      },
    },
    '/v2/monitors/{monitor_id}': {
      get: {
        operationId: 'getMonitor',
        summary: 'One monitor with its last runs',
        ...read,
        parameters: [monitorIdParam],
        responses: { '200': json('The monitor', 'Monitor'), ...errorResponses([...AUTH, 'monitor_not_found']) },
      },
      patch: {
        operationId: 'updateMonitor',
        summary: 'Change the schedule, pause or resume, change the webhook URL or rotate its secret',
        ...write,
        parameters: [monitorIdParam, patchIdempotencyHeader],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/PatchMonitorRequest' } } },
        },
        responses: {
          '200': json('The monitor', 'Monitor'),
          ...errorResponses([...AUTH, ...BODY, ...IDEMPOTENT, 'monitor_not_found']),
        },
      },
      delete: {
        operationId: 'deleteMonitor',
        summary: 'Delete a monitor: no run starts after it, no event is delivered for it',
        ...write,
        parameters: [monitorIdParam],
        responses: { '204': { description: 'Deleted' }, ...errorResponses([...AUTH, 'monitor_not_found']) },
      },
    },
    '/v2/monitors/{monitor_id}/deliveries': {
      get: {
        operationId: 'listMonitorDeliveries',
        summary: "The monitor's events and their delivery, newest first",
        ...read,
        parameters: [monitorIdParam, ...pageParams],
        responses: {
          '200': json('A page of deliveries', 'DeliveriesPage'),
          ...errorResponses([...AUTH, 'invalid_request', 'invalid_cursor', 'monitor_not_found']),
        },
      },
    },
    '/v2/monitors/{monitor_id}/deliveries/{event_id}/redeliver': {
      post: {
        operationId: 'redeliverMonitorEvent',
        summary: 'Send an event again (a fresh delivery, same webhook-id)',
        ...write,
        parameters: [
          monitorIdParam,
          { name: 'event_id', in: 'path', required: true, description: 'Event id (msg_…)', schema: { type: 'string' } },
          idempotencyHeader,
        ],
        responses: {
          '202': json('The delivery, pending again', 'Delivery'),
          ...errorResponses([...AUTH, ...BODY, ...IDEMPOTENT, 'monitor_not_found']),
        },
      },
    },
  };
}
