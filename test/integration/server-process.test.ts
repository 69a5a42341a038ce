// The real `web` role as a process: src/server.ts in cluster mode (2 workers) over the run's MySQL
// database and Redis prefix. Health, private aggregated metrics, JSON logs without secrets, and a
// graceful drain on SIGTERM to the primary.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/processes.ts';
import { createTenant, idemKey, startHarness, testEnv, type Harness, type Tenant } from '../helpers/harness.ts';

const root = path.resolve(import.meta.dirname, '../..');
const SHUTDOWN_TIMEOUT_MS = 3000;
/** The primary forces its exit 2 s after SHUTDOWN_TIMEOUT_MS; allow some more for a slow machine. */
const EXIT_MARGIN_MS = 4000;

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * One request on its own connection (no keep-alive pool, so no reuse race with a closing server).
 * With `holdBack`, the headers and the start of the body go out at once and the rest only when
 * `release()` is called: the request is in flight on the server meanwhile.
 */
function request(
  port: number,
  method: string,
  urlPath: string,
  opts: { body?: string; headers?: Record<string, string>; holdBack?: boolean } = {},
) {
  let release = () => {};
  let connected: () => void = () => {};
  const connectedP = new Promise<void>((r) => (connected = r));
  const reply = new Promise<Reply>((resolve, reject) => {
    const body = opts.body ?? '';
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: urlPath,
        agent: false,
        headers: {
          ...(body ? { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)) } : {}),
          ...opts.headers,
        },
      },
      (res) => {
        let data = '';
        res.setEncoding('utf8').on('data', (d: string) => (data += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: data }));
        res.on('error', reject);
      },
    );
    req.on('error', (err) => {
      connected(); // nobody waits for a connection that failed
      reject(err);
    });
    req.setTimeout(30_000, () => req.destroy(new Error('request timed out')));
    req.on('socket', (s) => s.once('connect', () => connected()));
    if (opts.holdBack && body.length > 1) {
      req.write(body.slice(0, 1));
      release = () => req.end(body.slice(1));
    } else {
      req.end(body);
      release = () => {};
    }
  });
  return { reply, connected: connectedP, release: () => release() };
}

async function waitFor(what: string, fn: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await fn().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

describe('src/server.ts as a process (cluster, 2 workers)', () => {
  let h: Harness;
  let t: Tenant;
  let child: ChildProcess | undefined;
  let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  let port: number;
  let metricsPort: number;
  let stdout = '';
  let stderr = '';
  let loggedRequestId = '';

  beforeAll(async () => {
    h = await startHarness();
    t = await createTenant(h);
    port = await freePort();
    do metricsPort = await freePort();
    while (metricsPort === port);
    const env = testEnv({
      WEB_CONCURRENCY: '2',
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      LOG_LEVEL: 'info',
      SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
      AUTH_CACHE_TTL_MS: '5000',
    });
    // Own process group, so afterAll can kill the primary and its workers whatever state they are in.
    child = spawn(process.execPath, ['src/server.ts'], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    exited = new Promise((resolve) => child!.on('exit', (code, signal) => resolve({ code, signal })));
    const early = exited.then(({ code, signal }) => {
      throw new Error(`server exited during start (code ${code}, signal ${signal})\n${stderr}\n${stdout}`);
    });
    early.catch(() => {}); // the planned exit at the end of the suite is not a failure
    await Promise.race([
      waitFor('/livez', async () => (await request(port, 'GET', '/livez').reply).status === 200, 30_000),
      early,
    ]);
    // Both workers listening (the primary logs nothing per worker, the workers do).
    await waitFor(
      'two listening workers',
      async () => (stdout.match(/web worker listening/g) ?? []).length >= 2,
      15_000,
    );
  });

  afterAll(async () => {
    if (child?.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await h?.close();
  });

  it('answers /livez and /readyz with MySQL, Redis and migrations checked', async () => {
    const live = await request(port, 'GET', '/livez').reply;
    expect(live.status).toBe(200);
    const ready = await request(port, 'GET', '/readyz').reply;
    expect(ready.status, ready.body).toBe(200);
    const body = JSON.parse(ready.body);
    expect(body.status).toBe('ready');
    expect(body.checks).toEqual({ mysql: 'ok', redis: 'ok', migrations: 'current' });
  });

  it('serves the MAC lookup to a real key', async () => {
    for (let i = 0; i < 6; i++) {
      const res = await request(port, 'POST', '/v2/lookups/mac', {
        body: JSON.stringify({ value: 'F4:F5:E8:12:34:56' }),
        headers: { Authorization: `Bearer ${t.key}`, 'Idempotency-Key': idemKey() },
      }).reply;
      expect(res.status, res.body).toBe(200);
      expect(JSON.parse(res.body).result.organization).toMatch(/Google/);
      expect(res.headers['x-request-id']).toMatch(/^req_[0-9A-Z]{26}$/);
    }
    const unauthenticated = await request(port, 'POST', '/v2/lookups/mac', {
      body: '{"value":"F4:F5:E8:12:34:56"}',
      headers: { 'Idempotency-Key': idemKey() },
    }).reply;
    expect(unauthenticated.status).toBe(401);
    // Every request gets an access line at info; this one carries the caller's own request id.
    loggedRequestId = `req_test_${idemKey()}`;
    const logged = await request(port, 'POST', '/v2/lookups/mac', {
      body: JSON.stringify({ value: 'F4:F5:E8:12:34:57' }),
      headers: { Authorization: `Bearer ${t.key}`, 'Idempotency-Key': idemKey(), 'X-Request-Id': loggedRequestId },
    }).reply;
    expect(logged.headers['x-request-id']).toBe(loggedRequestId);
    expect(logged.status).toBe(200);
  });

  it("serves the workers' aggregated Prometheus metrics on METRICS_PORT only", async () => {
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { signal: AbortSignal.timeout(15_000) });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(text).toContain('http_request_duration_seconds');
    expect(text).toMatch(
      /^http_request_duration_seconds_count\{[^}]*route="\/v2\/lookups\/mac"[^}]*status_code="200"[^}]*\} 7$/m,
    );
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).toContain('lss_admission_outcomes_total');
    expect(text).toMatch(/^lss_admission_outcomes_total\{code="ok"\} 7$/m);
    // Not on the public port.
    const pub = await request(port, 'GET', '/metrics').reply;
    expect(pub.status).toBe(404);
  });

  it('logs JSON lines on stdout; request lines carry the requestId', async () => {
    await waitFor('the request log line', async () => stdout.includes(loggedRequestId), 5000);
    const lines = stdout.split('\n').filter((l) => l.trim() !== '');
    expect(lines.length).toBeGreaterThan(0);
    const records = lines.map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        throw new Error(`stdout line is not JSON: ${l}`);
      }
    });
    for (const r of records)
      expect(r).toMatchObject({ level: expect.any(Number), time: expect.any(String), msg: expect.any(String) });
    const requestLines = records.filter((r) => r.msg === 'request' || r.msg === 'request failed');
    expect(requestLines.length).toBeGreaterThan(0);
    for (const r of requestLines) expect(r.requestId).toEqual(expect.any(String));
    expect(requestLines).toContainEqual(
      expect.objectContaining({ requestId: loggedRequestId, status: 200, route: '/v2/lookups/mac' }),
    );
  });

  it('drains on SIGTERM: an in-flight request is answered and the process exits 0 in time', async () => {
    const body = JSON.stringify({ value: '00:1B:C5:00:00:01' });
    const headers = { Authorization: `Bearer ${t.key}` };
    // In flight: headers and one byte of the body are on the server when SIGTERM arrives.
    const slow = request(port, 'POST', '/v2/lookups/mac', {
      body,
      headers: { ...headers, 'Idempotency-Key': idemKey() },
      holdBack: true,
    });
    // Sent just before SIGTERM, complete.
    const quick = request(port, 'POST', '/v2/lookups/mac', {
      body,
      headers: { ...headers, 'Idempotency-Key': idemKey() },
    });
    await Promise.all([slow.connected, quick.connected]);
    await new Promise((r) => setTimeout(r, 250));
    const t0 = Date.now();
    child!.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    slow.release();
    const [slowR, quickR] = await Promise.allSettled([slow.reply, quick.reply]);
    expect(slowR).toMatchObject({ status: 'fulfilled' });
    expect(quickR).toMatchObject({ status: 'fulfilled' });
    const slowRes = (slowR as PromiseFulfilledResult<Reply>).value;
    const quickRes = (quickR as PromiseFulfilledResult<Reply>).value;
    expect(slowRes.status, slowRes.body).toBe(200);
    expect(JSON.parse(slowRes.body).result.assignment.block).toBe('MA-S');
    expect(quickRes.status, quickRes.body).toBe(200);

    const timeout = new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error('server did not exit in time')), SHUTDOWN_TIMEOUT_MS + EXIT_MARGIN_MS),
    );
    const { code, signal } = await Promise.race([exited, timeout]);
    const elapsed = Date.now() - t0;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(elapsed).toBeLessThan(SHUTDOWN_TIMEOUT_MS + EXIT_MARGIN_MS);
    expect(stdout).toMatch(/"msg":"draining web workers"/);
  });

  it('never wrote the API key to stdout or stderr', () => {
    expect(stdout).not.toContain(t.key);
    expect(stderr).not.toContain(t.key);
    // Nor its random part (a truncated or differently-prefixed copy).
    expect(stdout + stderr).not.toContain(t.key.slice(4, 36));
  });
});

describe('src/server.ts when it cannot start: one line and exit 1, never a crash loop', () => {
  /** Holds a port the way the web role would listen on it (every interface). */
  async function takePort(): Promise<{ port: number; release: () => Promise<void> }> {
    const holder = net.createServer();
    await new Promise<void>((resolve, reject) => {
      holder.once('error', reject);
      holder.listen(0, () => resolve());
    });
    const { port } = holder.address() as net.AddressInfo;
    return { port, release: () => new Promise<void>((r) => holder.close(() => r())) };
  }

  async function startOn(env: Record<string, string>) {
    const child = spawn(process.execPath, ['src/server.ts'], {
      cwd: root,
      env: testEnv({ WEB_CONCURRENCY: '2', LOG_LEVEL: 'info', ...env }),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const t0 = Date.now();
    const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL'); // a respawn loop never exits on its own
        } catch {
          // gone already
        }
      }, 20_000);
      child.on('exit', (code, signal) => {
        clearTimeout(timer);
        resolve({ code, signal });
      });
    });
    return { ...exit, ms: Date.now() - t0, stdout, stderr };
  }

  it('the API port is taken: one line naming the port and PORT, exit 1, no worker replaced', async () => {
    const taken = await takePort();
    try {
      const r = await startOn({ PORT: String(taken.port), METRICS_PORT: String(await freePort()) });
      expect({ code: r.code, signal: r.signal }, `${r.stdout}\n${r.stderr}`.slice(-3000)).toEqual({
        code: 1,
        signal: null,
      });
      const lines = r.stderr.trim().split('\n');
      expect(lines, r.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`port ${taken.port} .*already in use \\(EADDRINUSE\\).*set PORT`));
      expect(r.stdout).not.toContain('replacing it');
      expect(r.stdout + r.stderr).not.toMatch(/\n\s+at /); // no stack trace
      expect(r.ms).toBeLessThan(15_000);
    } finally {
      await taken.release();
    }
  });

  it('the metrics port is taken: the same, naming METRICS_PORT', async () => {
    const taken = await takePort();
    try {
      const r = await startOn({ PORT: String(await freePort()), METRICS_PORT: String(taken.port) });
      expect({ code: r.code, signal: r.signal }, `${r.stdout}\n${r.stderr}`.slice(-3000)).toEqual({
        code: 1,
        signal: null,
      });
      const lines = r.stderr.trim().split('\n');
      expect(lines, r.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(/already in use \(EADDRINUSE\).*set METRICS_PORT/);
      expect(r.stdout + r.stderr).not.toMatch(/\n\s+at /);
    } finally {
      await taken.release();
    }
  });
});
