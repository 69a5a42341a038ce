// The JSON body of the common request — `Content-Type: application/json` (optionally with
// `charset=utf-8`), no Content-Encoding — read without body-parser. body-parser's general path
// (type-is and content-type parsing, an iconv decoder, raw-body, on-finished, http-errors) was
// about a tenth of an admitted request's CPU in the admission profile; this reads the same bytes
// into the same value. Everything else (other charsets, compressed bodies, odd media-type
// spellings) still goes through body-parser (src/http/body.ts), so its rules stay the reference.
//
// The same outcomes as body-parser with the options body.ts gives it (strict: false): an empty
// body is {}, a leading BOM is dropped (iconv does so), invalid UTF-8 becomes U+FFFD, more than
// `limit` bytes is payload_too_large once the rest of the body has been drained (so a keep-alive
// connection stays usable), and a request that breaks off is "The request was aborted." (answered
// if the socket can still take it).
import type { IncomingMessage } from 'node:http';
import { ApiError } from '../contract/errors.ts';
import { malformedJsonError, tooLargeError } from './errors.ts';

/** Media types this reader takes as they are written; anything else is body-parser's to judge. */
const PLAIN_JSON = /^application\/json(?:; *charset="?utf-8"?)?$/i;

/** True when the request's body can be read here rather than by body-parser. */
export function isPlainJson(req: IncomingMessage): boolean {
  const type = req.headers['content-type'];
  return type !== undefined && PLAIN_JSON.test(type) && req.headers['content-encoding'] === undefined;
}

export type JsonBodyResult = { ok: true; value: unknown } | { ok: false; error: ApiError };

/**
 * Reads and parses the body; `done` is called once, or never when the peer goes away mid-body
 * (there is no one to answer). The listeners stay until the request is gone: removing them would
 * cost more than they do, and the 'error' one keeps a late socket error from going unhandled.
 */
export function readPlainJson(req: IncomingMessage, limit: number, done: (r: JsonBodyResult) => void): void {
  const chunks: Buffer[] = [];
  let received = 0;
  let finished = false;
  req.on('data', (chunk: Buffer) => {
    received += chunk.length;
    // Over the limit: keep reading to the end, keep nothing.
    if (received <= limit) chunks.push(chunk);
  });
  req.on('end', () => {
    if (finished) return;
    finished = true;
    if (received > limit) return done({ ok: false, error: tooLargeError() });
    done(parse(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received)));
  });
  req.on('error', () => {
    if (finished) return;
    finished = true;
    done({ ok: false, error: new ApiError('invalid_request', { message: 'The request was aborted.' }) });
  });
}

function parse(bytes: Buffer): JsonBodyResult {
  if (bytes.length === 0) return { ok: true, value: {} };
  let text = bytes.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, error: malformedJsonError() };
  }
}
