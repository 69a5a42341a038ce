// Step 5a: the JSON body. It is read after authentication (an unknown caller never makes the
// service read 64 KiB) and before the limits, because the admission script also claims the
// Idempotency-Key's lease, whose fingerprint covers the body. Its errors are held and reported
// at step 5, after the limit and key checks, as CONTRACT §2 orders.
import express, { type RequestHandler } from 'express';
import type { z } from 'zod';
import { ApiError } from '../contract/errors.ts';
import { state } from './context.ts';
import { toApiError } from './errors.ts';

export const BODY_LIMIT_BYTES = 64 * 1024;

const parseJson = express.json({ limit: BODY_LIMIT_BYTES, strict: false, type: () => true });

export const readBody: RequestHandler = (req, res, next) => {
  const s = state(res);
  const hasBody = req.get('transfer-encoding') !== undefined || Number(req.get('content-length') ?? 0) > 0;
  s.rawBody = undefined;
  if (!hasBody) return next();
  if (!req.is('application/json')) {
    s.bodyError = new ApiError('unsupported_media_type');
    return next();
  }
  if (Number(req.get('content-length') ?? 0) > BODY_LIMIT_BYTES) {
    s.bodyError = new ApiError('payload_too_large');
    return next();
  }
  parseJson(req, res, (err?: unknown) => {
    if (err) s.bodyError = toApiError(err);
    else s.rawBody = req.body;
    next();
  });
};

export const reportBodyError: RequestHandler = (_req, res, next) => {
  const err = state(res).bodyError;
  if (err) throw err;
  next();
};

export function zodIssues(error: z.ZodError): Array<{ path: string; message: string }> {
  return error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
}

/** Step 5b: the zod schema is the contract; unknown fields are rejected by .strict() schemas. */
export function validateBody(schema: z.ZodType, opts: { optional?: boolean } = {}): RequestHandler {
  return (_req, res, next) => {
    const s = state(res);
    const raw = s.rawBody === undefined && opts.optional ? {} : s.rawBody;
    if (raw === undefined) {
      throw new ApiError('invalid_request', { message: 'A JSON body is required.', details: { issues: [{ path: '', message: 'body required' }] } });
    }
    const parsed = schema.safeParse(raw);
    if (!parsed.success) throw new ApiError('invalid_request', { details: { issues: zodIssues(parsed.error) } });
    s.input = parsed.data;
    next();
  };
}
