// Admission's port on an Express response (src/jobs/admission/admission-port.ts): headers go on
// the response, replies are written as JSON text.
import type { Response } from 'express';
import type { AdmissionPort } from '../jobs/admission/admission-port.ts';

/**
 * A JSON text as the reply, with the headers Express's res.send would set (Content-Type with its
 * charset, Content-Length) but without its checks for ETag, freshness and HEAD, which no POST of
 * this API needs.
 */
export function sendJsonText(res: Response, status: number, text: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

export const expressPort: AdmissionPort<Response> = {
  header(res, name, value) {
    res.setHeader(name, value);
  },
  send(res, status, text, replayed) {
    if (replayed) res.setHeader('Idempotent-Replayed', 'true');
    sendJsonText(res, status, text);
  },
};
