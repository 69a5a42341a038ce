// Response schemas shared by several routes (the product envelope lives in envelope.ts).
import { z } from 'zod';
import { errorCodes } from './errors.ts';

export const errorEnvelopeSchema = z.object({
  error: z.object({
    code: z.enum(errorCodes as [string, ...string[]]),
    message: z.string(),
    status: z.number().int(),
    retryable: z.boolean(),
    requestId: z.string(),
    details: z.record(z.string(), z.unknown()).optional(),
  }),
});

export const productListSchema = z.object({
  products: z.array(
    z.object({
      product: z.string(),
      title: z.string(),
      method: z.literal('POST'),
      path: z.string(),
      mode: z.enum(['sync', 'async']),
      readiness: z.enum(['available', 'partially_configured', 'unavailable']),
      credits: z.object({ basis: z.enum(['fixed', 'maxCredits']), amount: z.number().int().nullable() }),
      lanes: z.array(
        z.object({
          lane: z.string(),
          required: z.boolean(),
          readiness: z.enum(['ready', 'unconfigured', 'down', 'not_built']),
          description: z.string(),
        }),
      ),
    }),
  ),
});
