// RDAP_BOOTSTRAP_URL: IANA's file by default (never fetched at start, and never by a test: the
// harness turns it off), and the remote file's life in a process: fetched once at first use,
// kept as long as its caching headers say (clamped to 1 h … 24 h), revalidated with
// If-None-Match / If-Modified-Since, the last good copy kept when a refresh fails. Served here by a
// real HTTP server on loopback whose answers each test sets; the clock is Date only (sockets and
// timers stay real).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { IANA_RDAP_BOOTSTRAP_URL, parseConfig, type Config } from '../../src/config/config.ts';
import { createResolver } from '../../src/dns/stub-resolver.ts';
import { createOutboundGuard } from '../../src/net/outbound-guard.ts';
import { products } from '../../src/products/registry.ts';
import { createProductRuntime } from '../../src/products/kit/runtime.ts';
import { activeBootstrap, freshnessMs, remoteBootstrapStatus, resetBootstrapCache } from '../../src/rdap/bootstrap.ts';

const BASE_ENV = {
  DATABASE_URL: 'mysql://x',
  REDIS_URL: 'redis://x',
  KEY_PEPPER: 'x'.repeat(32),
  CURSOR_SECRET: 'y'.repeat(32),
  WEBHOOK_SECRET_KEY: 'w'.repeat(32),
};
const HOUR = 3_600_000;

describe('RDAP_BOOTSTRAP_URL configuration', () => {
  beforeEach(() => resetBootstrapCache());

  it("defaults to IANA's file; off turns it off; anything else must be a URL", () => {
    expect(IANA_RDAP_BOOTSTRAP_URL).toBe('https://data.iana.org/rdap/dns.json');
    expect(parseConfig(BASE_ENV).RDAP_BOOTSTRAP_URL).toBe(IANA_RDAP_BOOTSTRAP_URL);
    expect(parseConfig({ ...BASE_ENV, RDAP_BOOTSTRAP_URL: 'off' }).RDAP_BOOTSTRAP_URL).toBeUndefined();
    expect(() => parseConfig({ ...BASE_ENV, RDAP_BOOTSTRAP_URL: 'iana' })).toThrow(/RDAP_BOOTSTRAP_URL/);
  });

  it('the default is not fetched at start: building the runtime and every readiness fetches nothing', () => {
    const config = parseConfig(BASE_ENV);
    const runtime = createProductRuntime(config, pino({ level: 'silent' }));
    for (const p of products) p.readiness(runtime);
    expect(remoteBootstrapStatus()).toBeNull();
  });

  it('the test harness turns it off, so no test reaches the real file', () => {
    // ops/test.ts sets it for every test process (and the processes they start).
    expect(process.env.RDAP_BOOTSTRAP_URL).toBe('off');
  });
});

describe('freshness from the caching headers', () => {
  it('max-age less Age, else Expires − Date, clamped to 1 h … 24 h; no-cache: 1 h; nothing: 24 h', () => {
    expect(freshnessMs({ 'cache-control': 'public, max-age=7200' })).toBe(2 * HOUR);
    expect(freshnessMs({ 'cache-control': 'max-age=7200', age: '1800' })).toBe(1.5 * HOUR);
    expect(freshnessMs({ 'cache-control': 'max-age=60' })).toBe(HOUR);
    expect(freshnessMs({ 'cache-control': 'max-age=864000' })).toBe(24 * HOUR);
    expect(freshnessMs({ 'cache-control': 'no-cache' })).toBe(HOUR);
    expect(freshnessMs({ expires: 'Thu, 01 Jan 2026 06:00:00 GMT', date: 'Thu, 01 Jan 2026 00:00:00 GMT' })).toBe(
      6 * HOUR,
    );
    expect(freshnessMs({})).toBe(24 * HOUR);
    expect(freshnessMs({ 'cache-control': 'max-age=banana' })).toBe(24 * HOUR);
  });
});

interface Served {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

describe('the remote bootstrap file over time', () => {
  let server: http.Server;
  let url: string;
  let next: Served;
  const seen: http.IncomingHttpHeaders[] = [];
  const file = (publication: string) => ({
    version: '1.0',
    publication,
    services: [[['test'], ['http://127.0.0.1:1/']]],
  });

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      seen.push(req.headers);
      const body = next.body === undefined ? '' : JSON.stringify(next.body);
      res.writeHead(next.status, { 'content-type': 'application/json', ...next.headers });
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/rdap/dns.json`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(() => {
    resetBootstrapCache();
    seen.length = 0;
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2026-03-01T00:00:00Z'));
  });
  afterEach(() => vi.useRealTimers());

  const config = (): Config =>
    parseConfig({ ...BASE_ENV, RDAP_BOOTSTRAP_URL: url, ALLOW_PRIVATE_TARGETS: '127.0.0.0/8' });
  const guard = (c: Config) =>
    createOutboundGuard({ allow: c.ALLOW_PRIVATE_TARGETS, resolver: createResolver(c), portMap: c.OUTBOUND_PORT_MAP });
  /** One caller, as the RDAP client is. */
  async function use(c: Config) {
    const r = await activeBootstrap(c, { guard: guard(c) });
    return { origin: r?.origin, publication: r?.bootstrap.publication };
  }
  // A refresh after the first runs in the background: it has finished when `due` moved.
  let lastDue = 0;
  const settle = () =>
    vi.waitFor(() => expect(remoteBootstrapStatus()!.due).not.toBe(lastDue), { timeout: 5000, interval: 5 });

  it('first use fetches once (concurrent callers share it); within max-age nothing is fetched', async () => {
    next = {
      status: 200,
      body: file('2026-02-01T00:00:00Z'),
      headers: { 'cache-control': 'max-age=7200', etag: '"v1"' },
    };
    const c = config();
    const [a, b] = await Promise.all([use(c), use(c)]);
    expect(a).toEqual({ origin: 'remote', publication: '2026-02-01T00:00:00Z' });
    expect(b).toEqual(a);
    expect(seen).toHaveLength(1);
    expect(seen[0]!['if-none-match']).toBeUndefined();
    vi.setSystemTime(Date.now() + 2 * HOUR - 1000);
    expect(await use(c)).toEqual(a);
    expect(seen).toHaveLength(1);
    expect(remoteBootstrapStatus()).toMatchObject({ fetched: true, failures: 0, publication: '2026-02-01T00:00:00Z' });
  });

  it('after expiry one conditional GET; a 304 keeps the copy and sets the next freshness', async () => {
    next = {
      status: 200,
      body: file('2026-02-01T00:00:00Z'),
      headers: { 'cache-control': 'max-age=3600', etag: '"v1"', 'last-modified': 'Sun, 01 Feb 2026 00:00:00 GMT' },
    };
    const c = config();
    await use(c);
    vi.setSystemTime(Date.now() + HOUR + 1000);
    next = { status: 304, headers: { 'cache-control': 'max-age=14400' } };
    lastDue = remoteBootstrapStatus()!.due;
    expect(await use(c)).toEqual({ origin: 'remote', publication: '2026-02-01T00:00:00Z' }); // served while revalidating
    await settle();
    expect(seen).toHaveLength(2);
    expect(seen[1]).toMatchObject({ 'if-none-match': '"v1"', 'if-modified-since': 'Sun, 01 Feb 2026 00:00:00 GMT' });
    const s = remoteBootstrapStatus()!;
    expect(Math.abs(s.due - Date.now() - 4 * HOUR)).toBeLessThan(1000);
    expect(s).toMatchObject({ fetched: true, failures: 0, publication: '2026-02-01T00:00:00Z' });
  });

  it('a new file (200) replaces the copy; no caching headers: revalidated daily', async () => {
    next = { status: 200, body: file('2026-02-01T00:00:00Z'), headers: {} };
    const c = config();
    await use(c);
    expect(Math.abs(remoteBootstrapStatus()!.due - Date.now() - 24 * HOUR)).toBeLessThan(1000);
    vi.setSystemTime(Date.now() + 24 * HOUR);
    next = { status: 200, body: file('2026-02-20T00:00:00Z'), headers: { 'cache-control': 'max-age=7200' } };
    lastDue = remoteBootstrapStatus()!.due;
    await use(c);
    await settle();
    expect(await use(c)).toEqual({ origin: 'remote', publication: '2026-02-20T00:00:00Z' });
    expect(seen).toHaveLength(2);
  });

  it('a failed refresh (500, a file routing nothing, a refusal) keeps the last good copy and retries in about 5 minutes', async () => {
    next = { status: 200, body: file('2026-02-01T00:00:00Z'), headers: { 'cache-control': 'max-age=3600' } };
    const c = config();
    await use(c);
    for (const failure of [
      { status: 500, body: { error: 'down' } },
      { status: 200, body: { version: '1.0', publication: 'x', services: [] } },
    ] satisfies Served[]) {
      vi.setSystemTime(Date.now() + 2 * HOUR);
      next = failure;
      lastDue = remoteBootstrapStatus()!.due;
      const before = seen.length;
      expect(await use(c)).toEqual({ origin: 'remote', publication: '2026-02-01T00:00:00Z' });
      await settle();
      expect(seen.length).toBe(before + 1);
      const s = remoteBootstrapStatus()!;
      expect(s.failures).toBeGreaterThan(0);
      expect(s.due - Date.now()).toBeGreaterThanOrEqual(4 * 60_000);
      expect(s.due - Date.now()).toBeLessThanOrEqual(6 * 60_000);
      // not again before the retry is due
      vi.setSystemTime(Date.now() + 3 * 60_000);
      await use(c);
      expect(seen.length).toBe(before + 1);
    }
    // The guard refuses the server (loopback not allowed): the copy stays, nothing is sent.
    vi.setSystemTime(Date.now() + HOUR);
    const refused = parseConfig({ ...BASE_ENV, RDAP_BOOTSTRAP_URL: url });
    lastDue = remoteBootstrapStatus()!.due;
    const before = seen.length;
    expect(await activeBootstrap(refused, { guard: guard(refused) })).toMatchObject({ origin: 'remote' });
    await vi.waitFor(() => expect(remoteBootstrapStatus()!.lastError).toMatch(/not allowed|private|refus/i));
    expect(seen.length).toBe(before);
  });

  it('a first fetch that fails falls back to the snapshot; off never fetches', async () => {
    next = { status: 503, body: {} };
    const c = config();
    expect((await use(c)).origin).toBe('snapshot');
    expect(seen).toHaveLength(1);
    resetBootstrapCache();
    const off = parseConfig({ ...BASE_ENV, RDAP_BOOTSTRAP_URL: 'off', ALLOW_PRIVATE_TARGETS: '127.0.0.0/8' });
    expect((await activeBootstrap(off, { guard: guard(off) }))?.origin).toBe('snapshot');
    expect(seen).toHaveLength(1);
    expect(remoteBootstrapStatus()).toBeNull();
  });
});
