// The job status body (CONTRACT §9) as a zod schema, for the OpenAPI document and the tests.
import { z } from 'zod';
import { limitationSchema } from './envelope.ts';
import { jobChangesShape } from './change-schemas.ts';
import { findingsSummarySchema } from './suppression-schemas.ts';

/** Per product lane: its task count and how they ended (the job status and every page carry it). */
export const laneCountsSchema = z.array(
  z.object({
    lane: z.string(),
    status: z.string(),
    tasks: z.number().int(),
    completed: z.number().int(),
    partial: z.number().int(),
    unavailable: z.number().int(),
    timeout: z.number().int(),
    skipped: z.number().int(),
    failed: z.number().int(),
    cancelled: z.number().int(),
    budgetExhausted: z.number().int(),
  }),
);

export const jobStatusSchema = z.object({
  jobRef: z.string(),
  product: z.string(),
  status: z.enum(['queued', 'running', 'cancelling', 'completed', 'partial', 'cancelled', 'failed', 'unavailable']),
  terminal: z.boolean(),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  completedAt: z.string().nullable(),
  target: z.object({ type: z.string(), value: z.string() }),
  profile: z.string().nullable(),
  progress: z.object({
    tasksQueued: z.number().int(),
    tasksDone: z.number().int(),
    objects: z.number().int(),
    findings: z.number().int(),
    /**
     * Present while the job's queued work waits for a worker that is not alive: the worker lanes
     * (`domain`, `web`, … or `orchestrator`) being restarted or gone; `pollAfterMs` is then 3000.
     */
    waitingFor: z.array(z.string()).optional(),
  }),
  lanes: laneCountsSchema,
  coverage: z.object({
    complete: z.boolean(),
    limitations: z.array(limitationSchema),
    activeScope: z
      .object({
        domain: z.string(),
        proof: z.enum(['verified', 'operator_override']),
      })
      .optional()
      .describe(
        'Active work only: the approved scope it ran under, and how that scope was approved (verified: a TXT record proved control of the domain; operator_override: an operator approved it without proof)',
      ),
  }),
  ledger: z
    .object({
      reserved: z.number().int(),
      captured: z.number().int(),
      released: z.number().int(),
      settledAt: z.string(),
    })
    .nullable(),
  result: z.record(z.string(), z.unknown()).nullable(),
  ...jobChangesShape,
  findingsSummary: findingsSummarySchema,
  pollAfterMs: z.number().int(),
  links: z.object({ self: z.string(), results: z.string(), findings: z.string(), changes: z.string() }),
});

export const cancelRequestSchema = z.strictObject({ reason: z.string().max(200).optional() });
