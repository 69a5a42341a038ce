// Hostile input over real sockets (issue 7 §1): every bad request ends in a documented 4xx with
// the CONTRACT §3 envelope and an X-Request-Id, never a 500, an empty body or a silent close —
// including what Node's own HTTP parser refuses before Express sees it. The server is built by the
// same factory as the `web` role (src/http/server.ts).
import type net from 'node:net';
import zlib from 'node:zlib';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.ts';
import { createHttpServer } from '../../src/http/server.ts';
import { errorCodes } from '../../src/contract/errors.ts';
import { createTenant, idemKey, startHarness, type Harness, type Tenant } from '../helpers/harness.ts';
import { rawRequest, type RawReply } from '../helpers/raw-http.ts';

const raw = rawRequest;

function expectEnvelope(r: RawReply, status: number, code: string): void {
  expect(r.silent, `expected ${status} ${code}, the server closed silently`).toBe(false);
  expect(r.status).toBe(status);
  expect(r.headers['x-request-id']).toMatch(/^req_[0-9A-Z]{26}$/);
  const body = JSON.parse(r.body) as { error: { code: string; status: number; requestId: string } };
  expect(body.error.code).toBe(code);
  expect(errorCodes).toContain(body.error.code);
  expect(body.error.status).toBe(status);
  expect(body.error.requestId).toBe(r.headers['x-request-id']);
  expect(r.body).not.toMatch(/\bat \S+ \(|node_modules|\/src\/|SELECT |INSERT /);
}

let h: Harness;
let t: Tenant;
let port: number;
let server: ReturnType<typeof createHttpServer>;
const logLines: string[] = [];

beforeAll(async () => {
  h = await startHarness();
  t = await createTenant(h, {
    limits: {
      app: { perMinute: 100_000, burst: 10_000 },
      products: { 'lookup.mac.v1': { perMinute: 100_000, perHour: 1_000_000 } },
    },
  });
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logLines.push(String(chunk));
      cb();
    },
  });
  const log = pino({ level: 'info' }, sink);
  server = createHttpServer(createApp({ ...h.deps, log }), log, { requestTimeoutMs: 2000, headersTimeoutMs: 2000 });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as net.AddressInfo).port;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((r) => server?.close(() => r()));
  await h?.close();
});

const auth = () => `Authorization: Bearer ${t.key}\r\n`;
const post = (path: string, body: string | Buffer, extra = '') =>
  Buffer.concat([
    Buffer.from(
      `POST ${path} HTTP/1.1\r\nHost: x\r\n${auth()}Idempotency-Key: ${idemKey()}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n`,
    ),
    Buffer.isBuffer(body) ? body : Buffer.from(body),
  ]);

describe('bodies the JSON parser accepts but the service must bound', () => {
  it('deeply nested JSON is invalid_request (400), not a 500', async () => {
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    expectEnvelope(await raw(port, post('/v2/lookups/mac', deep)), 400, 'invalid_request');
    const deepObject = `{"value":${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}}`;
    expectEnvelope(await raw(port, post('/v2/lookups/mac', deepObject)), 400, 'invalid_request');
  });

  it('a 60 KB field name is not echoed back whole', async () => {
    const name = 'k'.repeat(60_000);
    const r = await raw(port, post('/v2/lookups/mac', JSON.stringify({ value: '00:00:00:00:00:00', [name]: 1 })));
    expectEnvelope(r, 400, 'invalid_request');
    expect(r.body.length).toBeLessThan(4096);
  });
});

describe('Content-Encoding', () => {
  it('gzip that is not gzip is invalid_request; an unknown or odd coding is unsupported_media_type', async () => {
    expectEnvelope(
      await raw(port, post('/v2/lookups/mac', '{"value":"00:00:00:00:00:00"}', 'Content-Encoding: gzip\r\n')),
      400,
      'invalid_request',
    );
    expectEnvelope(
      await raw(port, post('/v2/lookups/mac', '{"value":"00:00:00:00:00:00"}', 'Content-Encoding: x-unknown\r\n')),
      415,
      'unsupported_media_type',
    );
    expectEnvelope(
      await raw(port, post('/v2/lookups/mac', '{"value":"00:00:00:00:00:00"}', 'Content-Encoding: gzip, br, zstd\r\n')),
      415,
      'unsupported_media_type',
    );
  });

  it('real gzip (any case) is accepted; a gzip bomb is payload_too_large', async () => {
    const body = zlib.gzipSync('{"value":"00:00:00:00:00:00"}');
    const ok = await raw(port, post('/v2/lookups/mac', body, 'Content-Encoding: GZIP\r\n'));
    expect(ok.status).toBe(200);
    const bomb = zlib.gzipSync(Buffer.from(`{"value":"${'0'.repeat(2_000_000)}"}`));
    expectEnvelope(
      await raw(port, post('/v2/lookups/mac', bomb, 'Content-Encoding: gzip\r\n')),
      413,
      'payload_too_large',
    );
  });
});

describe('malformed percent-encoding in path parameters follows the admission order', () => {
  const forms = ['%ZZ', '%E2%82', '%C0%AE', '%u002e', '%', 'job_%FF'];
  const routes = (ref: string) =>
    [
      ['GET', `/v2/jobs/${ref}`, 'job_not_found'],
      ['GET', `/v2/jobs/${ref}/results`, 'job_not_found'],
      ['GET', `/v2/jobs/${ref}/findings`, 'job_not_found'],
      ['GET', `/v2/jobs/job_00000000000000000000000000/objects/${ref}`, 'job_not_found'],
      ['POST', `/v2/jobs/${ref}/cancel`, 'job_not_found'],
    ] as const;

  it('without a key: 401 authentication_required', async () => {
    for (const form of forms) {
      for (const [method, path] of routes(form)) {
        expectEnvelope(
          await raw(port, `${method} ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`),
          401,
          'authentication_required',
        );
      }
    }
  });

  it('with a key: not found, and no stack trace logged', async () => {
    const before = logLines.length;
    for (const form of forms) {
      for (const [method, path, code] of routes(form)) {
        const idem = method === 'POST' ? `Idempotency-Key: ${idemKey()}\r\n` : '';
        expectEnvelope(
          await raw(
            port,
            `${method} ${path} HTTP/1.1\r\nHost: x\r\n${auth()}${idem}Content-Length: 0\r\nConnection: close\r\n\r\n`,
          ),
          404,
          code,
        );
      }
    }
    const newLines = logLines.slice(before).join('');
    expect(newLines).not.toMatch(/URIError|"stack"/);
  });
});

describe("what Node's HTTP parser refuses still gets the envelope and a request id", () => {
  it('a control character in a header value: 400 invalid_request', async () => {
    expectEnvelope(await raw(port, 'GET /livez HTTP/1.1\r\nHost: x\r\nX-Bad: a\x01b\r\n\r\n'), 400, 'invalid_request');
  });

  it('headers over the size limit: 431 request_header_fields_too_large', async () => {
    expectEnvelope(
      await raw(port, `GET /livez HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40_000)}\r\n\r\n`),
      431,
      'request_header_fields_too_large',
    );
  });

  it('an unknown method: 400 invalid_request; CONNECT: 405 method_not_allowed', async () => {
    expectEnvelope(await raw(port, 'FROB /livez HTTP/1.1\r\nHost: x\r\n\r\n'), 400, 'invalid_request');
    expectEnvelope(
      await raw(port, 'CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n'),
      405,
      'method_not_allowed',
    );
  });

  it('conflicting Content-Length and Transfer-Encoding, or two lengths: 400 invalid_request', async () => {
    expectEnvelope(
      await raw(
        port,
        'POST /v2/lookups/mac HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      ),
      400,
      'invalid_request',
    );
    expectEnvelope(
      await raw(
        port,
        'POST /v2/lookups/mac HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello',
      ),
      400,
      'invalid_request',
    );
  });

  it('an Expect other than 100-continue is ignored: the request is answered as usual', async () => {
    const r = await raw(port, 'GET /livez HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nConnection: close\r\n\r\n');
    expect(r.status).toBe(200);
    expect(r.headers['x-request-id']).toMatch(/^req_/);
    const denied = await raw(
      port,
      'GET /v2/jobs/job_00000000000000000000000000 HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nConnection: close\r\n\r\n',
    );
    expectEnvelope(denied, 401, 'authentication_required');
  });

  it('a request that never finishes its headers: 408 request_timeout', async () => {
    expectEnvelope(await raw(port, 'GET /livez HTTP/1.1\r\nHost: x\r\n', 8000), 408, 'request_timeout');
  });
});
