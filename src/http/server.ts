// The HTTP server of a web worker (and of tests that need real sockets). Express sees only what
// Node's HTTP parser accepted; everything it refuses — control characters in header values,
// oversized headers, unknown methods, conflicting Content-Length/Transfer-Encoding, a request not
// received in time — arrives at 'clientError' with a bare socket. CONTRACT §1 promises the error
// envelope and an X-Request-Id on every error, so they are written here by hand, then the
// connection is closed (the parser state is unusable). Where the socket can no longer be written
// (the peer reset it, or a response was already under way) nothing is sent: docs/api.md lists
// those cases. CONNECT (never a route here) gets 405; an Expect other than 100-continue is
// ignored (RFC 9110 §10.1.1 lets a server do so) rather than answered with a bare 417. An HTTP/1.1
// request without Host is let through to the app, which refuses it with the envelope (src/app.ts).
import http from 'node:http';
import type { Duplex } from 'node:stream';
import type { Express } from 'express';
import type { Logger } from 'pino';
import { ApiError, errorEnvelope } from '../contract/errors.ts';
import { publicId } from '../contract/ids.ts';

export interface HttpServerOptions {
  requestTimeoutMs?: number;
  headersTimeoutMs?: number;
  keepAliveTimeoutMs?: number;
}

const PARSER_REASONS: Record<string, string> = {
  HPE_INVALID_HEADER_TOKEN: 'invalid header field',
  HPE_INVALID_METHOD: 'unknown method',
  HPE_INVALID_URL: 'invalid request target',
  HPE_INVALID_VERSION: 'invalid HTTP version',
  HPE_INVALID_CONSTANT: 'malformed request line',
  HPE_UNEXPECTED_CONTENT_LENGTH: 'Content-Length together with Transfer-Encoding',
  HPE_INVALID_CONTENT_LENGTH: 'invalid or repeated Content-Length',
  HPE_INVALID_TRANSFER_ENCODING: 'invalid Transfer-Encoding',
  HPE_INVALID_CHUNK_SIZE: 'invalid chunk size',
  HPE_LF_EXPECTED: 'malformed line ending',
  HPE_CR_EXPECTED: 'malformed line ending',
};

function refusalFor(err: NodeJS.ErrnoException): ApiError {
  if (err.code === 'HPE_HEADER_OVERFLOW') return new ApiError('request_header_fields_too_large');
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT' || err.code === 'HPE_HEADERS_TIMEOUT')
    return new ApiError('request_timeout');
  return new ApiError('invalid_request', {
    message: 'The HTTP request is malformed.',
    details: { reason: PARSER_REASONS[err.code ?? ''] ?? 'malformed HTTP request' },
  });
}

const REASON_PHRASE = (status: number) => http.STATUS_CODES[status] ?? 'Error';

/** Writes one complete error response on a bare socket and closes it. */
export function writeRawError(socket: Duplex, err: ApiError, extraHeaders: Record<string, string> = {}): string {
  const requestId = publicId('req');
  const body = JSON.stringify(errorEnvelope(err, requestId));
  const headers = {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    'X-Request-Id': requestId,
    Connection: 'close',
    ...extraHeaders,
  };
  const head = `HTTP/1.1 ${err.status} ${REASON_PHRASE(err.status)}\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\r\n')}\r\n\r\n`;
  socket.end(head + body);
  return requestId;
}

export function createHttpServer(app: Express, log: Logger, opts: HttpServerOptions = {}): http.Server {
  const requestTimeout = opts.requestTimeoutMs ?? 30_000;
  const headersTimeout = Math.min(opts.headersTimeoutMs ?? 20_000, requestTimeout);
  const server = http.createServer(
    {
      keepAliveTimeout: opts.keepAliveTimeoutMs ?? 65_000,
      requestTimeout,
      headersTimeout,
      // How often Node checks those timeouts (default 30 s would let a slow request live on).
      connectionsCheckingInterval: Math.max(250, Math.min(headersTimeout, 2000) / 2),
      // Node answers an HTTP/1.1 request without Host with a bare 400 of its own; the app refuses
      // it instead, with the envelope and an X-Request-Id (src/app.ts, requireHost).
      requireHostHeader: false,
    },
    app,
  );

  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // A reset peer, or a socket already carrying a response: nothing can be written.
    const busy = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
    if (err.code === 'ECONNRESET' || !socket.writable || busy) {
      socket.destroy();
      return;
    }
    const refusal = refusalFor(err);
    const requestId = writeRawError(socket, refusal);
    log.info(
      { requestId, status: refusal.status, code: refusal.code, parserError: err.code ?? 'unknown' },
      'request refused by the HTTP parser',
    );
  });

  server.on('connect', (_req: http.IncomingMessage, socket: Duplex) => {
    const requestId = writeRawError(socket, new ApiError('method_not_allowed', { details: { method: 'CONNECT' } }));
    log.info({ requestId, status: 405, code: 'method_not_allowed', method: 'CONNECT' }, 'request refused');
  });

  // Without this listener Node answers a bare 417 to any Expect other than 100-continue.
  server.on('checkExpectation', (req: http.IncomingMessage, res: http.ServerResponse) => app(req, res));
  return server;
}
