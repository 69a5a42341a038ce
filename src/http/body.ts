// Step 5a: read the JSON body only after the caller is known and the cheap checks passed, so an
// unauthenticated client cannot make the service read 64 KiB. Bodies are JSON or absent.
import express, { type RequestHandler } from 'express';
import type { z } from 'zod';
import { ApiError } from '../contract/errors.ts';
import { state } from './context.ts';

export const BODY_LIMIT_BYTES = 64 * 1024;

const parseJson = express.json({ limit: BODY_LIMIT_BYTES, strict: false, type: () => true });

export const jsonBody: RequestHandler = (req, res, next) => {
  const hasBody = req.get('transfer-encoding') !== undefined || Number(req.get('content-length') ?? 0) > 0;
  if (!hasBody) {
    state(res).rawBody = undefined;
    return next();
  }
  if (!req.is('application/json')) throw new ApiError('unsupported_media_type');
  const declared = Number(req.get('content-length') ?? 0);
  if (declared > BODY_LIMIT_BYTES) throw new ApiError('payload_too_large');
  parseJson(req, res, (err?: unknown) => {
    if (err) return next(err);
    state(res).rawBody = req.body;
    next();
  });
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
