// Issue 18 item 5: an HTTP/1.1 request without a Host header is refused like every other
// malformed request — 400 invalid_request in the error envelope with an X-Request-Id — not with
// Node's bare 400 and empty body. HTTP/1.0 has no Host requirement and is answered as usual.
// Raw bytes over a real socket to the web worker's HTTP server.
import type net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.ts';
import { createHttpServer } from '../../src/http/server.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { rawRequest } from '../helpers/raw-http.ts';

let h: Harness;
let server: ReturnType<typeof createHttpServer>;
let port: number;

beforeAll(async () => {
  h = await startHarness();
  server = createHttpServer(createApp(h.deps), h.deps.log, { requestTimeoutMs: 2000, headersTimeoutMs: 2000 });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as net.AddressInfo).port;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((r) => server?.close(() => r()));
  await h?.close();
});

describe('a request without Host', () => {
  it('HTTP/1.1 without Host: 400 invalid_request with the envelope and X-Request-Id', async () => {
    for (const request of [
      'GET /livez HTTP/1.1\r\nConnection: close\r\n\r\n',
      'POST /v2/lookups/mac HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}',
    ]) {
      const r = await rawRequest(port, request);
      expect(r.status).toBe(400);
      expect(r.headers['x-request-id']).toMatch(/^req_[0-9A-Z]{26}$/);
      const body = JSON.parse(r.body);
      expect(body.error).toMatchObject({
        code: 'invalid_request',
        status: 400,
        retryable: false,
        requestId: r.headers['x-request-id'],
        details: { reason: 'missing Host header' },
      });
    }
  });

  it('HTTP/1.0 without Host is answered as usual; HTTP/1.1 with Host too', async () => {
    expect((await rawRequest(port, 'GET /livez HTTP/1.0\r\n\r\n')).status).toBe(200);
    expect((await rawRequest(port, 'GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).status).toBe(200);
  });
});
