// Change detection (CONTRACT §13): the zod schemas of the changes route's query and page, of the marks on result items and findings, and of
// the job status's `baseline` and `changes`, with their part of the OpenAPI document.
import { z } from 'zod';
import type { ErrorCode } from './errors.ts';
import { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, limitParam } from './page-limit.ts';
import { SEVERITIES, type Severity } from './tasks.ts';
import { CHANGE_KINDS, CHANGE_MARKS, UNCONFIRMED_REASONS, type ChangeMark } from './changes.ts';
import { jsonSchema, type Json } from './json-schema.ts';
import { suppressedMarkSchema } from './suppression-schemas.ts';

export * from './changes.ts';

// ---- Marks on result items, objects and findings ---------------------------------------------

/** null: no baseline, or the job is not terminal yet (the comparison is made when it ends). */
export const changeMarkSchema = z
  .enum(CHANGE_MARKS)
  .nullable()
  .describe(
    'What this item is next to the baseline (CONTRACT §13): new, changed or unchanged; resurfaced (a finding ' +
      'suppressed in the baseline and open now, CONTRACT §15); unconfirmed (with a ' +
      'reason) when what observed it in the baseline did not complete this time; gone for an object that records ' +
      'an observed absence (a name that now answers NXDOMAIN). null without a baseline, and until the job is terminal.',
  );

export const itemMarkShape = {
  change: changeMarkSchema,
  changedFields: z
    .array(z.string())
    .optional()
    .describe('With change = changed: the top-level projection fields that differ (volatile facts are not compared).'),
  changeReason: z.enum(UNCONFIRMED_REASONS).optional().describe('With change = unconfirmed: why.'),
};

// ---- GET /v2/jobs/{job_ref} ------------------------------------------------------------------

export const changeCountsSchema = z.object({
  objects: z.object({
    new: z.number().int(),
    changed: z.number().int(),
    gone: z.number().int(),
    unconfirmed: z.number().int(),
    unchanged: z.number().int(),
  }),
  findings: z
    .object({
      new: z.number().int().describe('New and open (a suppressed new finding counts as suppressed)'),
      resolved: z.number().int(),
      unconfirmed: z.number().int(),
      unchanged: z.number().int().describe('Unchanged and open'),
      resurfaced: z.number().int().describe('Suppressed in the baseline, open now (CONTRACT §15)'),
      suppressed: z.number().int().describe("The job's findings a suppression covered when it ended"),
    })
    .describe(
      "Each of the job's findings counts once (new, unchanged, resurfaced or suppressed); resolved and unconfirmed count the baseline's findings the job does not hold.",
    ),
});

export const baselineSchema = z
  .object({ jobRef: z.string(), completedAt: z.string() })
  .nullable()
  .describe(
    'The job this one is compared with: the newest earlier job of the workspace with the same product and ' +
      'target (scans: and profile) that had ended completed or partial, never asked to cancel, when this one ' +
      'started. null: none.',
  );

export const jobChangesShape = {
  baseline: baselineSchema,
  changes: changeCountsSchema
    .nullable()
    .describe('The comparison with the baseline, counted; null without a baseline and until the job is terminal.'),
};

// ---- GET /v2/jobs/{job_ref}/changes --------------------------------------------------------------

/** A comma list of marks, each at most once; unknown ones are a 400 (a typo must not widen the view). */
const changeList = z
  .string()
  .max(200)
  .transform((s, ctx) => {
    const parts = s.split(',').map((p) => p.trim());
    const out = new Set<ChangeMark>();
    for (const p of parts) {
      if (!(CHANGE_MARKS as readonly string[]).includes(p)) {
        ctx.addIssue({ code: 'custom', message: `must be a comma list of ${CHANGE_MARKS.join(', ')}` });
        return z.NEVER;
      }
      out.add(p as ChangeMark);
    }
    return [...out];
  });

export const changePageQuery = z.object({
  limit: limitParam,
  cursor: z.string().optional(),
  change: changeList.optional(),
  kind: z.enum(CHANGE_KINDS).optional(),
});

export const changeItemSchema = z.object({
  kind: z.enum(CHANGE_KINDS),
  change: z.enum(CHANGE_MARKS),
  type: z.string().describe('The object type, or the finding code.'),
  key: z.string().describe("The object's normalized key; for a finding, the key of the object it is about."),
  objectType: z.string().optional().describe('Findings: the type of the object they are about.'),
  objectId: z
    .string()
    .nullable()
    .describe("This job's object (for a finding: the object it is about), when it has one."),
  baselineObjectId: z.string().nullable().describe("The baseline's object, when it had one."),
  findingId: z.string().nullable().optional().describe("Findings: this job's finding, when it has one."),
  baselineFindingId: z.string().nullable().optional().describe("Findings: the baseline's finding, when it had one."),
  severity: z.enum(SEVERITIES as [Severity, ...Severity[]]).optional(),
  changedFields: z.array(z.string()).optional(),
  reason: z.enum(UNCONFIRMED_REASONS).optional(),
  suppressed: suppressedMarkSchema
    .optional()
    .describe("Findings: this job's finding's suppression when it ended (CONTRACT §15); null when open or not held."),
});

export const changePageSchema = z.object({
  jobRef: z.string(),
  jobStatus: z.enum(['queued', 'running', 'cancelling', 'completed', 'partial', 'cancelled', 'failed', 'unavailable']),
  terminal: z.boolean(),
  baseline: baselineSchema,
  findingsOmitted: z
    .boolean()
    .describe('true when the key lacks finding:read: finding items are left out, whatever the filters say.'),
  items: z.array(changeItemSchema),
  page: z.object({
    limit: z.number().int(),
    nextCursor: z
      .string()
      .nullable()
      .describe(
        'Opaque; follow it to continue. The list is empty until the job is terminal (nextCursor then lets a ' +
          'client wait on it); null once the job is terminal and nothing follows.',
      ),
  }),
});

export type ChangeItem = z.infer<typeof changeItemSchema>;
export type ChangePage = z.infer<typeof changePageSchema>;

// ---- OpenAPI --------------------------------------------------------------------------------

export function changeSchemas(): Json {
  return { ChangePage: jsonSchema(changePageSchema) };
}

const CHANGE_ERRORS: ErrorCode[] = [
  'authentication_required',
  'insufficient_scope',
  'rate_limit_exceeded',
  'service_unavailable',
  'internal_error',
  'job_not_found',
  'invalid_request',
  'invalid_cursor',
];

export function changePaths(errorResponses: (codes: ErrorCode[]) => Json): Json {
  return {
    '/v2/jobs/{job_ref}/changes': {
      get: {
        operationId: 'listJobChanges',
        summary: 'What changed since the baseline: new, changed, gone, resolved and unconfirmed items',
        description:
          'The comparison of the job with its baseline (CONTRACT §13), made when the job ends: empty until then. ' +
          'Finding items need finding:read besides scan:read; without it they are left out and the page says ' +
          '`findingsOmitted: true`. Reads cost no credits.',
        'x-scopes': ['scan:read'],
        security: [{ bearer: [] }],
        parameters: [
          {
            name: 'job_ref',
            in: 'path',
            required: true,
            description: 'Opaque job reference (job_…) returned with 202.',
            schema: { type: 'string' },
          },
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
              'page.nextCursor of the previous page, verbatim. Bound to workspace, job, route and filters; valid 24 h.',
            schema: { type: 'string' },
          },
          {
            name: 'change',
            in: 'query',
            required: false,
            description: `Comma list of ${CHANGE_MARKS.join(', ')}; default every mark but unchanged.`,
            schema: { type: 'string' },
          },
          {
            name: 'kind',
            in: 'query',
            required: false,
            description: 'object or finding; default both.',
            schema: { type: 'string', enum: [...CHANGE_KINDS] },
          },
        ],
        responses: {
          '200': {
            description: 'A page of changes',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/ChangePage' } } },
          },
          ...errorResponses(CHANGE_ERRORS),
        },
      },
    },
  };
}
