// Step 5a: the JSON body. It is read after authentication (an unknown caller never makes the
// service read 64 KiB) and before the limits, because the admission script also claims the
// Idempotency-Key's lease, whose fingerprint covers the body. Its errors are held and reported
// at step 5, after the limit and key checks, as CONTRACT §2 orders.
import express, { type RequestHandler } from 'express';
import type { z } from 'zod';
import { ApiError } from '../contract/errors.ts';
import { nestsDeeperThan } from '../idempotency/fingerprint.ts';
import { state, type RequestState } from './context.ts';
import { toApiError } from './errors.ts';
import { isPlainJson, readPlainJson } from './json-reader.ts';
import { clip, validateInput } from '../jobs/admission/input-validation.ts';

export { zodIssues } from '../jobs/admission/input-validation.ts';

export const BODY_LIMIT_BYTES = 64 * 1024;
/** No request body of the contract nests deeper than 3; 32 leaves room and bounds every walk. */
export const BODY_MAX_DEPTH = 32;
/** Content codings a body may arrive in (RFC 9110 §8.4.1: case-insensitive). */
export const CONTENT_CODINGS = ['identity', 'gzip', 'deflate', 'br'] as const;

// The 64 KiB limit applies to the decoded body too, so a compressed bomb ends in payload_too_large.
const parseJson = express.json({ limit: BODY_LIMIT_BYTES, strict: false, type: () => true });

function contentCodingError(req: Parameters<RequestHandler>[0]): ApiError | null {
  const header = req.get('content-encoding');
  if (header === undefined) return null;
  const coding = header.trim().toLowerCase();
  if ((CONTENT_CODINGS as readonly string[]).includes(coding)) return null;
  return new ApiError('unsupported_media_type', {
    message: 'The Content-Encoding is not supported.',
    details: { supportedEncodings: [...CONTENT_CODINGS], contentEncoding: clip(header, 64) },
  });
}

export const readBody: RequestHandler = (req, res, next) => {
  const s = state(res);
  const length = req.headers['content-length'];
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(length ?? 0) > 0;
  s.rawBody = undefined;
  if (!hasBody) return next();
  // The common case, read without body-parser (json-reader.ts); the rest below, as before.
  if (isPlainJson(req)) {
    if (Number(length ?? 0) > BODY_LIMIT_BYTES) {
      s.bodyError = new ApiError('payload_too_large');
      return next();
    }
    readPlainJson(req, BODY_LIMIT_BYTES, (r) => {
      if (!r.ok) s.bodyError = r.error;
      else acceptBody(s, r.value);
      next();
    });
    return;
  }
  if (!req.is('application/json')) {
    s.bodyError = new ApiError('unsupported_media_type');
    return next();
  }
  if (Number(req.get('content-length') ?? 0) > BODY_LIMIT_BYTES) {
    s.bodyError = new ApiError('payload_too_large');
    return next();
  }
  const codingError = contentCodingError(req);
  if (codingError) {
    s.bodyError = codingError;
    return next();
  }
  // body-parser lower-cases the coding itself; normalise the spacing it does not.
  if (req.headers['content-encoding']) req.headers['content-encoding'] = req.headers['content-encoding'].trim();
  parseJson(req, res, (err?: unknown) => {
    if (err) s.bodyError = bodyReadError(err);
    else acceptBody(s, req.body);
    next();
  });
};

/** A parsed body is kept for the fingerprint and validation unless it nests too deep. */
function acceptBody(s: RequestState, value: unknown): void {
  if (nestsDeeperThan(value, BODY_MAX_DEPTH)) {
    s.bodyError = new ApiError('invalid_request', {
      message: `The body nests deeper than ${BODY_MAX_DEPTH} levels.`,
      details: { issues: [{ path: '', message: `nesting deeper than ${BODY_MAX_DEPTH}` }] },
    });
  } else s.rawBody = value;
}

/** A body that could not be read: body-parser's typed errors, else a decoding failure (400). */
function bodyReadError(err: unknown): ApiError {
  const mapped = toApiError(err);
  if (mapped.code !== 'internal_error') return mapped;
  // Corrupt gzip/deflate/br data reaches us as a 400 without a type (the zlib error inside).
  const e = err as { status?: number };
  if (e?.status === 400) {
    return new ApiError('invalid_request', {
      message: 'The body could not be decoded with its Content-Encoding.',
      details: { issues: [{ path: '', message: 'undecodable body' }] },
    });
  }
  return mapped;
}

export const reportBodyError: RequestHandler = (_req, res, next) => {
  const err = state(res).bodyError;
  if (err) throw err;
  next();
};

/** Step 5b for a route outside the product chain (cancel): the same validation as admission's. */
export function validateBody(schema: z.ZodType, opts: { optional?: boolean } = {}): RequestHandler {
  return (_req, res, next) => {
    validateInput(state(res), schema, opts);
    next();
  };
}
