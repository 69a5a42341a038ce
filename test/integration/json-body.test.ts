// The plain JSON body (application/json, utf-8, no Content-Encoding) is read by the service's own
// reader (src/http/json-reader.ts); every other spelling still goes through body-parser. Over real
// sockets, the same bytes must end the same way on both paths: 'application/json' takes the
// reader, 'Application/JSON' (the same media type, which type-is accepts) takes body-parser.
import type net from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.ts';
import { createHttpServer } from '../../src/http/server.ts';
import { isPlainJson } from '../../src/http/json-reader.ts';
import { createTenant, idemKey, startHarness, type Harness, type Tenant } from '../helpers/harness.ts';
import { rawRequest, type RawReply } from '../helpers/raw-http.ts';

let h: Harness;
let t: Tenant;
let port: number;
let server: ReturnType<typeof createHttpServer>;

beforeAll(async () => {
  h = await startHarness();
  t = await createTenant(h, {
    limits: {
      app: { perMinute: 100_000, burst: 10_000 },
      products: { 'lookup.mac.v1': { perMinute: 100_000, perHour: 1_000_000 } },
    },
  });
  const log = pino({ level: 'silent' });
  server = createHttpServer(createApp({ ...h.deps, log }), log, { requestTimeoutMs: 2000, headersTimeoutMs: 2000 });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as net.AddressInfo).port;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((r) => server?.close(() => r()));
  await h?.close();
});

type Framing = 'length' | 'chunked';

function post(contentType: string, body: Buffer, framing: Framing): Buffer {
  const head =
    `POST /v2/lookups/mac HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.key}\r\n` +
    `Idempotency-Key: ${idemKey()}\r\nContent-Type: ${contentType}\r\n` +
    (framing === 'length' ? `Content-Length: ${body.length}\r\n` : 'Transfer-Encoding: chunked\r\n') +
    'Connection: close\r\n\r\n';
  if (framing === 'length') return Buffer.concat([Buffer.from(head), body]);
  // Two chunks (or none), so that the reader sees the body arrive in parts.
  const half = Math.floor(body.length / 2);
  const parts = [body.subarray(0, half), body.subarray(half)].filter((p) => p.length > 0);
  const chunks = parts.map((p) => Buffer.concat([Buffer.from(`${p.length.toString(16)}\r\n`), p, Buffer.from('\r\n')]));
  return Buffer.concat([Buffer.from(head), ...chunks, Buffer.from('0\r\n\r\n')]);
}

/** Status and error code (or the looked-up MAC) of one exchange. */
async function outcome(contentType: string, body: Buffer, framing: Framing): Promise<string> {
  const r: RawReply = await rawRequest(port, post(contentType, body, framing));
  const parsed = JSON.parse(r.body) as { error?: { code: string; details?: unknown }; result?: unknown };
  return `${r.status} ${parsed.error ? `${parsed.error.code} ${JSON.stringify(parsed.error.details ?? null)}` : 'ok'}`;
}

const mac = '{"value":"F4:F5:E8:12:34:56"}';
const cases: Array<[string, Buffer]> = [
  ['a valid body', Buffer.from(mac)],
  ['a leading byte order mark', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(mac)])],
  ['malformed JSON', Buffer.from('{"value": "F4:F5:E8:12:34:56"')],
  ['a JSON scalar', Buffer.from('"F4:F5:E8:12:34:56"')],
  [
    'invalid UTF-8 inside a string',
    Buffer.concat([Buffer.from('{"value":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
  ],
  ['nesting deeper than 32', Buffer.from(`{"value":${'['.repeat(40)}${']'.repeat(40)}}`)],
  ['just over 64 KiB', Buffer.from(`{"value":"${'x'.repeat(64 * 1024)}"}`)],
];

describe('the plain JSON reader answers as body-parser does', () => {
  it('takes only the plain spellings', () => {
    const req = (headers: Record<string, string>) => ({ headers }) as unknown as Parameters<typeof isPlainJson>[0];
    expect(isPlainJson(req({ 'content-type': 'application/json' }))).toBe(true);
    expect(isPlainJson(req({ 'content-type': 'application/json; charset=utf-8' }))).toBe(true);
    expect(isPlainJson(req({ 'content-type': 'application/json; charset="UTF-8"' }))).toBe(true);
    expect(isPlainJson(req({ 'content-type': 'application/json; charset=latin1' }))).toBe(false);
    expect(isPlainJson(req({ 'content-type': 'application/json;;;' }))).toBe(false);
    expect(isPlainJson(req({ 'content-type': 'application/json', 'content-encoding': 'identity' }))).toBe(false);
    expect(isPlainJson(req({}))).toBe(false);
  });

  for (const framing of ['length', 'chunked'] as const) {
    for (const [name, body] of cases) {
      it(`${name} (${framing})`, async () => {
        const mine = await outcome('application/json', body, framing);
        const theirs = await outcome('Application/JSON', body, framing);
        expect(mine).toBe(theirs);
      });
    }
  }

  it('a chunked empty body is {} on both paths (then invalid for the schema)', async () => {
    const mine = await outcome('application/json', Buffer.alloc(0), 'chunked');
    expect(mine).toMatch(/^400 invalid_request /);
    expect(mine).toBe(await outcome('Application/JSON', Buffer.alloc(0), 'chunked'));
  });

  it('a valid body is looked up; a body over the limit is 413', async () => {
    expect(await outcome('application/json', Buffer.from(mac), 'chunked')).toBe('200 ok');
    expect(await outcome('application/json', cases[6]![1], 'chunked')).toMatch(/^413 payload_too_large/);
  });
});
