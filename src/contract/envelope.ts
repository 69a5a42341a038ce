// The CONTRACT §7 product envelope: its zod schema (for OpenAPI) and the function that assembles
// it from a product's outcome. A required lane that did not complete fails the route instead of
// producing an envelope that could read as an answer.
import { z } from 'zod';
import { ApiError } from './errors.ts';
import { laneStatuses, type SyncOutcome } from './lanes.ts';

export const laneOutcomeSchema = z.object({
  lane: z.string(),
  required: z.boolean(),
  status: z.enum(laneStatuses),
  durationMs: z.number().optional(),
  reason: z.string().optional(),
});

export const limitationSchema = z.object({ code: z.string(), message: z.string() });
export const sourceSchema = z.object({
  source: z.string(),
  version: z.string().optional(),
  attribution: z.string().optional().describe("The credit the source's licence asks for wherever its data is shown"),
});

/**
 * A lookup's envelope. An inline reply is completed or partial (a required lane that did not
 * complete is a 503); a job's `result` (`job: true`) carries the job's terminal status instead,
 * which may also be unavailable (no lane produced a fact) or failed (CONTRACT §7, §9).
 */
export function envelopeSchema(product: string, result: z.ZodType, opts: { job?: boolean } = {}) {
  return z.object({
    product: z.literal(product),
    status: opts.job
      ? z
          .enum(['completed', 'partial', 'unavailable', 'failed'])
          .describe("The job's terminal status: unavailable or failed only when no lane produced a fact")
      : z.enum(['completed', 'partial']),
    input: z.record(z.string(), z.unknown()),
    result,
    lanes: z.array(laneOutcomeSchema),
    sources: z.array(sourceSchema),
    limitations: z.array(limitationSchema),
    coverage: z.object({ complete: z.boolean() }),
    credits: z.object({ charged: z.number().int() }),
    requestId: z.string(),
    completedAt: z.string(),
  });
}

export interface Envelope {
  product: string;
  status: 'completed' | 'partial';
  input: Record<string, unknown>;
  result: unknown;
  lanes: SyncOutcome['lanes'];
  sources: SyncOutcome['sources'];
  limitations: SyncOutcome['limitations'];
  coverage: { complete: boolean };
  credits: { charged: number };
  requestId: string;
  completedAt: string;
}

/**
 * The most an inline reply (a lookup answered in the request) may be, as JSON: the products cut
 * their answers to it (src/products/kit/inline-output.ts), and idempotency never keeps a larger
 * reply for replay (src/idempotency/finish-lease.lua). A zero-credit reply is kept in Redis for
 * IDEMPOTENCY_TTL_HOURS, so its size is what a tenant may make the service hold for free.
 */
export const INLINE_REPLY_MAX_BYTES = 128 * 1024;

const NOT_APPLICABLE = new Set(['skipped']);

/** What the envelope needs of a product: its id and how it echoes its input (a ProductDefinition is one). */
export interface EnvelopeProduct {
  id: string;
  // biome-ignore lint/suspicious/noExplicitAny: any product's echo, whatever its input type
  echo?: (input: any) => Record<string, unknown>;
}

export function buildEnvelope(
  def: EnvelopeProduct,
  input: unknown,
  outcome: SyncOutcome,
  requestId: string,
  charged = 0,
): Envelope {
  const failedRequired = outcome.lanes.find((l) => l.required && l.status !== 'completed');
  if (failedRequired) {
    throw new ApiError('capability_unavailable', {
      details: { lane: failedRequired.lane, laneStatus: failedRequired.status },
      retryAfterSeconds: 5,
      cause: `required lane ${failedRequired.lane} ended ${failedRequired.status}${failedRequired.reason ? ` (${failedRequired.reason})` : ''}`,
    });
  }
  // A skipped lane is one that does not apply to this input; every lane that applies must complete.
  const complete = outcome.lanes.every(
    (l) => l.status === 'completed' || (NOT_APPLICABLE.has(l.status) && l.reason === 'not_applicable'),
  );
  return {
    product: def.id,
    status: complete ? 'completed' : 'partial',
    input: def.echo ? def.echo(input) : (input as Record<string, unknown>),
    result: outcome.result,
    lanes: outcome.lanes,
    sources: outcome.sources,
    limitations: outcome.limitations,
    coverage: { complete },
    credits: { charged },
    requestId,
    completedAt: new Date().toISOString(),
  };
}
