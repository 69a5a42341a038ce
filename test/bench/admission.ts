// `npm run bench` = `node test/bench/admission.ts`: what the full admission chain costs, measured
// against a bare Express 5 route in the same run (DESIGN.md "Measured, not assumed").
//
// Scenarios, each 2 s warm-up then 8 s measured, 50 connections, POST /v2/lookups/mac:
//   (a) bare Express 5: express.json() and one POST route answering a small JSON;
//   (b) the full chain (createApp over createDeps: request id, metrics, auth, scopes, GCRA rate
//       limits and the idempotency lease in one Redis script, the MAC product, the reply
//       committed in the lease's Redis marker: two Redis round trips) with a unique
//       Idempotency-Key per request; the tenant's limits are raised so nothing is refused;
//   (c) the same with 100 Idempotency-Keys used once beforehand: every request is a replay;
//   (d) bare Express and (e) the full chain (unique keys) at a fixed offered rate of 1,000 req/s
//       (below saturation), evenly spaced and open loop (bench-kit pacedLoad, latency counted from
//       each request's due time): the latency a customer sees when the service is not overloaded;
//   (f) the full chain with autocannon's overallRate 1,000: not a paced load but each second's
//       1,000 requests sent at full speed at the top of the second. Figures before 2026-11-24 were
//       taken this way; (f) is kept so they can be compared, and shows the tail under bursts.
// The full chain logs like the web role does (LOG_LEVEL info, one access line per request, the
// service's own destination) into /dev/null, so the cost of logging is part of what is measured.
// `npm run bench -- --profile` also writes a CPU profile of this process during (b) and prints
// the functions with the most self time.
// Both servers run in this one Node process (no cluster) on loopback, so the ratio compares code
// paths, not process counts. That process runs with the Node options of the Procfile's web role
// (docs/operations.md: the young generation's size and V8's helper threads shape both the CPU
// per request and the latency tail); BENCH_PROCFILE_NODE_OPTIONS=0 runs without them. The load
// generators (autocannon, and bench-kit's pacedLoad) run in a separate process (this file with
// --client) so they do not share the servers' event loop; every scenario sends the same headers
// and body and sets a per-request Idempotency-Key the same way.
//
// Like ops/test.ts it makes MySQL and Redis available, uses a throwaway database
// lss_bench_<time>_<hex> and Redis prefix lssbench:<same>:, and removes both at the end.
// Targets are reported PASS/MISS; a MISS does not fail the process.
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import { clientRunner, fmt, listen, pacedLoad, percentile, procfileRoleArgs, type LoadResult } from './bench-kit.ts';
import os from 'node:os';
import { writeFileSync } from 'node:fs';
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import path from 'node:path';
import autocannon from 'autocannon';

const CONNECTIONS = 50;
const WARMUP_S = 2;
const DURATION_S = 8;
const REPLAY_KEYS = 100;
const FIXED_RATE = 1000;
const PROFILE = process.argv.includes('--profile');
const MAC_PATH = '/v2/lookups/mac';
const BODY = JSON.stringify({ value: 'F4:F5:E8:12:34:56' });
// Issue 20 item 5: unique-key lookups at two thirds of bare Express, p99 10 ms paced at 1,000 req/s.
const TARGET_RATIO = 0.65;
const TARGET_REPLAY_RATIO = 0.65;
const TARGET_P99_MS = 10;

interface ClientJob {
  url: string;
  key: string;
  /** Offered requests per second over all connections; unset = as fast as possible. */
  rate?: number;
  /**
   * How `rate` is offered: 'paced' (default) spaces requests evenly, open loop (bench-kit
   * pacedLoad); 'bursts' is autocannon's overallRate, each second's quota sent at full speed at
   * the top of the second (kept to compare with figures taken that way before).
   */
  pacing?: 'paced' | 'bursts';
  /** unique: a fresh Idempotency-Key per request; replay: cycle through `replayKeys`. */
  idempotency: 'unique' | 'replay';
  replayKeys: string[];
  warmupS: number;
  durationS: number;
}

interface Measured extends LoadResult {
  timeouts: number;
  /** Paced runs: how late the generator itself sent, p99 ms. */
  sendLagP99?: number;
}

// ---------------------------------------------------------------------------
// Load generator (child process)

const idempotencyKey = (job: ClientJob, tag: string, i: number): string =>
  job.idempotency === 'unique' ? `bench-${tag}-${i}` : job.replayKeys[i % job.replayKeys.length]!;

async function runClient(job: ClientJob): Promise<Measured> {
  if (job.rate && job.pacing !== 'bursts') {
    const rate = job.rate;
    const run = (durationS: number) => {
      const tag = randomBytes(4).toString('hex');
      return pacedLoad({
        url: job.url,
        method: 'POST',
        path: MAC_PATH,
        body: BODY,
        rate,
        durationS,
        connections: CONNECTIONS,
        headers: (i) => ({
          'content-type': 'application/json',
          authorization: `Bearer ${job.key}`,
          'idempotency-key': idempotencyKey(job, tag, i),
        }),
      });
    };
    if (job.warmupS > 0) await run(job.warmupS);
    const r = await run(job.durationS);
    return {
      rps: r.rps,
      p50: r.p50,
      p99: r.p99,
      requests: r.requests,
      non2xx: r.non2xx,
      errors: r.errors,
      timeouts: 0,
      sendLagP99: r.sendLagP99,
    };
  }
  const run = async (durationS: number) => {
    let n = 0;
    const tag = randomBytes(4).toString('hex');
    const result = await autocannon({
      url: job.url,
      connections: CONNECTIONS,
      duration: durationS,
      ...(job.rate ? { overallRate: job.rate } : {}),
      requests: [
        {
          method: 'POST',
          path: MAC_PATH,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${job.key}` },
          body: BODY,
          setupRequest: (req) => {
            req.headers = { ...req.headers, 'idempotency-key': idempotencyKey(job, tag, n++) };
            return req;
          },
        },
      ],
    });
    return result;
  };
  if (job.warmupS > 0) await run(job.warmupS);
  const r = await run(job.durationS);
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
  };
}

/**
 * Re-runs this benchmark under the web role's Node options when it is not already under them;
 * resolves with the exit code, or null when this process is the one to measure.
 */
async function underWebRoleOptions(): Promise<number | null> {
  if (process.env.LSS_BENCH_UNDER_PROCFILE === '1') return null;
  const options = procfileRoleArgs('web').filter((a) => a.startsWith('--'));
  if (options.length === 0) return null;
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, [...options, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, LSS_BENCH_UNDER_PROCFILE: '1' },
  });
  // Ctrl-C reaches the child through the terminal's process group; a SIGTERM is passed on.
  process.on('SIGINT', () => {});
  process.on('SIGTERM', () => child.kill('SIGTERM'));
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 + 15 : 1))));
}

if (process.argv[2] !== '--client') {
  const code = await underWebRoleOptions();
  if (code !== null) process.exit(code);
}

if (process.argv[2] === '--client') {
  const job = JSON.parse(process.argv[3]!) as ClientJob;
  const measured = await runClient(job);
  process.stdout.write(`${JSON.stringify(measured)}\n`);
  process.exit(0);
}

// ---------------------------------------------------------------------------
// Bench (servers in this process)

const root = path.resolve(import.meta.dirname, '../..');
const log = (msg: string): void => {
  process.stderr.write(`[bench] ${msg}\n`);
};

const runner = clientRunner(path.join(root, 'test/bench/admission.ts'), root, log);
const measure = (job: ClientJob) => runner.run<Measured>(job);

async function post(url: string, key: string, idempotencyKey: string): Promise<Response> {
  return fetch(`${url}${MAC_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'idempotency-key': idempotencyKey },
    body: BODY,
  });
}

async function main(): Promise<void> {
  const { createDatabase, deletePrefixedKeys, dropDatabase, ensureServices, runTimestamp } = await import(
    '../../ops/services.ts'
  );
  const { migrate } = await import('../../src/db/migrations.ts');
  const { parseConfig } = await import('../../src/config/config.ts');
  const { createDeps } = await import('../../src/bootstrap.ts');
  const { createApp } = await import('../../src/app.ts');
  const { createKey, createWorkspace, setLimits } = await import('../../src/auth/tenancy-repo.ts');
  const { default: express } = await import('express');
  const { databaseUrl: serverUrl, redisUrl } = await ensureServices({ root });
  const suffix = `${runTimestamp(new Date())}_${randomBytes(3).toString('hex')}`;
  const dbName = `lss_bench_${suffix}`;
  const keyPrefix = `lssbench:${suffix}:`;
  const servers: http.Server[] = [];
  let closeDeps: (() => Promise<void>) | null = null;
  try {
    const databaseUrl = await createDatabase(serverUrl, dbName);
    log(`database ${dbName}; Redis ${redisUrl} prefix ${keyPrefix}`);
    await migrate(databaseUrl);

    const config = parseConfig({
      ...process.env,
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: keyPrefix,
      KEY_PEPPER: randomBytes(32).toString('base64url'),
      CURSOR_SECRET: randomBytes(32).toString('base64url'),
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64url'),
      LOG_LEVEL: 'silent',
    });
    // The web role's own logger and destination, pointed at /dev/null (see the header).
    const { createLogger } = await import('../../src/log.ts');
    const deps = await createDeps(config, createLogger('info', { role: 'web' }, { destination: '/dev/null' }));
    closeDeps = () => deps.close();

    // (a) bare Express 5
    const bareApp = express();
    bareApp.use(express.json({ limit: '64kb' }));
    bareApp.post(MAC_PATH, (req, res) => {
      res.json({ ok: true, value: (req.body as { value?: unknown }).value ?? null });
    });
    const bare = await listen(bareApp);
    servers.push(bare.server);

    // (b), (c) the full chain
    const full = await listen(createApp(deps));
    servers.push(full.server);

    const ws = await createWorkspace(deps.db, { name: 'bench' });
    const { key } = await createKey(deps.db, config.KEY_PEPPER, { workspace: ws.workspaceId });
    await setLimits(deps.db, ws.workspaceId, undefined, {
      app: { perMinute: 10_000_000, burst: 1_000_000 },
      products: { 'lookup.mac.v1': { perMinute: 10_000_000, perHour: 600_000_000 } },
    });

    // Sanity: every scenario answers 200 before it is measured.
    const b0 = await post(bare.url, key, 'sanity');
    if (b0.status !== 200) throw new Error(`bare Express answered ${b0.status}`);
    const f0 = await post(full.url, key, `sanity-${randomBytes(4).toString('hex')}`);
    if (f0.status !== 200) throw new Error(`full chain answered ${f0.status}: ${await f0.text()}`);
    const replayKeys = Array.from({ length: REPLAY_KEYS }, (_, i) => `replay-${suffix}-${i}`);
    for (const k of replayKeys) {
      const r = await post(full.url, key, k);
      if (r.status !== 200) throw new Error(`priming ${k} answered ${r.status}: ${await r.text()}`);
    }
    const replayed = await post(full.url, key, replayKeys[0]!);
    if (replayed.status !== 200 || replayed.headers.get('idempotent-replayed') !== 'true') {
      throw new Error(
        `a used key did not replay (status ${replayed.status}, Idempotent-Replayed ${replayed.headers.get('idempotent-replayed')})`,
      );
    }

    const job = (url: string, idempotency: ClientJob['idempotency']): ClientJob => ({
      url,
      key,
      idempotency,
      replayKeys,
      warmupS: WARMUP_S,
      durationS: DURATION_S,
    });
    // BENCH_ONLY=a, b, e or f (profiling aid): measure only that scenario, e.g. under --cpu-prof.
    // Where the two cores go: this server process and Redis, in cores busy over each scenario.
    const redisCpuS = async () => {
      const info = (await deps.redis.info('cpu')) as string;
      const f = (k: string) => Number(new RegExp(`${k}:([0-9.]+)`).exec(info)?.[1] ?? 0);
      return f('used_cpu_user') + f('used_cpu_sys');
    };
    const withCpu = async (j: ClientJob): Promise<Measured & { cpu: CpuShare }> => {
      const t0 = process.hrtime.bigint();
      const p0 = process.cpuUsage();
      const r0 = await redisCpuS();
      const m = await measure(j);
      const wall = Number(process.hrtime.bigint() - t0) / 1e9;
      const p = process.cpuUsage(p0);
      // Per request over the measured part only would need the warm-up's count; the load generator
      // reports the measured requests, so scale by the whole run's share of time instead.
      const serverS = (p.user + p.system) / 1e6;
      const requestsAll = m.requests * ((j.warmupS + j.durationS) / j.durationS);
      return {
        ...m,
        cpu: {
          server: serverS / wall,
          redis: ((await redisCpuS()) - r0) / wall,
          perRequestUs: (serverS * 1e6) / requestsAll,
        },
      };
    };
    const only = process.env.BENCH_ONLY;
    if (only === 'a' || only === 'b' || only === 'e' || only === 'f') {
      const unique = job(only === 'a' ? bare.url : full.url, 'unique');
      const j =
        only === 'a' || only === 'b'
          ? unique
          : { ...unique, rate: FIXED_RATE, pacing: only === 'f' ? ('bursts' as const) : ('paced' as const) };
      const watch = watchServerLoop(only === 'a' ? bare.server : full.server);
      const m = PROFILE ? await profileOf(`(${only})`, () => withCpu(j)) : await withCpu(j);
      process.stdout.write(`inside the server process during (${only}):\n      ${watch.stop()}\n`);
      process.stdout.write(
        `(${only}) only: ${fmt(m.rps, 0)} req/s, p50 ${fmt(m.p50)} ms, p99 ${fmt(m.p99)} ms, server ${fmt(m.cpu.perRequestUs, 0)} µs CPU per request, peak RSS ${fmt(process.resourceUsage().maxRSS / 1024, 0)} MB${m.sendLagP99 === undefined ? '' : `, generator send lag p99 ${fmt(m.sendLagP99)} ms`}\n`,
      );
      return;
    }
    log(`(a) bare Express: ${WARMUP_S} s warm-up + ${DURATION_S} s`);
    const a = await withCpu(job(bare.url, 'unique'));
    log(`(b) full chain, unique Idempotency-Key: ${WARMUP_S} s warm-up + ${DURATION_S} s`);
    const b = await withCpu(job(full.url, 'unique'));
    log(`(c) full chain, replays of ${REPLAY_KEYS} keys: ${WARMUP_S} s warm-up + ${DURATION_S} s`);
    const c = await withCpu(job(full.url, 'replay'));
    const watched = async (server: http.Server, j: ClientJob): Promise<Measured & { inside: string }> => {
      const watch = watchServerLoop(server);
      const m = await measure(j);
      return { ...m, inside: watch.stop() };
    };
    log(`(d) bare Express at ${FIXED_RATE} req/s offered`);
    const d = await watched(bare.server, { ...job(bare.url, 'unique'), rate: FIXED_RATE });
    log(`(e) full chain at ${FIXED_RATE} req/s offered`);
    const e = await watched(full.server, { ...job(full.url, 'unique'), rate: FIXED_RATE });
    log(`(f) full chain, autocannon overallRate ${FIXED_RATE} (once-a-second bursts)`);
    const f = await measure({ ...job(full.url, 'unique'), rate: FIXED_RATE, pacing: 'bursts' });

    report(
      [
        ['(a) bare Express 5', a],
        ['(b) full chain, unique key', b],
        ['(c) full chain, replay', c],
      ],
      [
        ['(d) bare Express 5', d],
        ['(e) full chain, unique key', e],
      ],
      ['(f) full chain, bursts', f],
      config.AUTH_CACHE_TTL_MS,
    );

    if (PROFILE) await profileOf('(b)', () => measure(job(full.url, 'unique')));
  } finally {
    await Promise.all(
      servers.map(
        (s) =>
          new Promise<void>((r) => {
            s.close(() => r());
            s.closeAllConnections();
          }),
      ),
    );
    await closeDeps?.().catch(() => {});
    await dropDatabase(serverUrl, dbName).then(
      () => log(`dropped database ${dbName}`),
      (e: Error) => log(`warning: could not drop ${dbName}: ${e.message}`),
    );
    await deletePrefixedKeys(redisUrl, keyPrefix).then(
      (n) => log(`deleted ${n} Redis key(s) with prefix ${keyPrefix}`),
      (e: Error) => log(`warning: could not delete Redis keys ${keyPrefix}*: ${e.message}`),
    );
  }
}

/**
 * This (server) process's event-loop delay and GC pauses while a scenario runs: what a latency
 * tail at low load is made of when the server itself stalls.
 */
function watchServerLoop(server?: http.Server): { stop(): string } {
  // Time inside the server, from the request's first byte parsed to the response handed to the
  // kernel: what is left of a client-side tail beyond it is the box (scheduling, loopback, the
  // load generator), not the code.
  const inside: number[] = [];
  const onRequest = (_req: http.IncomingMessage, res: http.ServerResponse) => {
    const t0 = performance.now();
    res.once('finish', () => inside.push(performance.now() - t0));
  };
  server?.on('request', onRequest);
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  const pauses: Array<{ kind: string; ms: number }> = [];
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind;
      pauses.push({
        kind:
          kind === constants.NODE_PERFORMANCE_GC_MAJOR
            ? 'major'
            : kind === constants.NODE_PERFORMANCE_GC_MINOR
              ? 'minor'
              : 'other',
        ms: e.duration,
      });
    }
  });
  obs.observe({ entryTypes: ['gc'] });
  return {
    stop() {
      h.disable();
      obs.disconnect();
      server?.off('request', onRequest);
      inside.sort((x, y) => x - y);
      const q = (p: number) => percentile(inside, p);
      const served = server
        ? `time inside the server p50 ${fmt(q(50))} ms, p99 ${fmt(q(99))} ms, max ${fmt(q(100))} ms\n      `
        : '';
      const by = (k: string) => pauses.filter((p) => p.kind === k);
      const sum = (xs: Array<{ ms: number }>) => xs.reduce((t, p) => t + p.ms, 0);
      const max = (xs: Array<{ ms: number }>) => Math.max(0, ...xs.map((p) => p.ms));
      return (
        `${served}event-loop delay p50 ${fmt(h.percentile(50) / 1e6)} ms, p99 ${fmt(h.percentile(99) / 1e6)} ms, max ${fmt(h.max / 1e6)} ms\n      ` +
        `GC pauses: ${by('minor').length} minor (max ${fmt(max(by('minor')))} ms, total ${fmt(sum(by('minor')), 0)} ms), ${by('major').length} major (max ${fmt(max(by('major')))} ms, total ${fmt(sum(by('major')), 0)} ms)`
      );
    },
  };
}

/** Runs a scenario again under the CPU profiler, writes the profile and prints its top functions. */
async function profileOf<T>(scenario: string, fn: () => Promise<T>): Promise<T> {
  log(`${scenario} under the CPU profiler`);
  let result: T | undefined;
  const profile = await profiled(async () => {
    result = await fn();
  });
  const file = path.join(os.tmpdir(), `lss-admission-${Date.now()}.cpuprofile`);
  writeFileSync(file, JSON.stringify(profile));
  process.stdout.write(`CPU profile of this process during ${scenario}: ${file}\n${topSelfTime(profile, 25)}\n`);
  return result as T;
}

/** Runs fn under the V8 CPU profiler of this process (node:inspector) and returns the profile. */
async function profiled(fn: () => Promise<unknown>): Promise<CpuProfile> {
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  let stopped: { profile: CpuProfile };
  try {
    await fn();
  } finally {
    stopped = (await session.post('Profiler.stop')) as { profile: CpuProfile };
    session.disconnect();
  }
  return stopped.profile;
}

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }>;
  samples?: number[];
  timeDeltas?: number[];
}

/** Self time per function (summed over its nodes), as a table of the top `n`. */
function topSelfTime(p: CpuProfile, n: number): string {
  const byNode = new Map<number, number>();
  const samples = p.samples ?? [];
  const deltas = p.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) byNode.set(samples[i]!, (byNode.get(samples[i]!) ?? 0) + (deltas[i] ?? 0));
  const byFn = new Map<string, number>();
  let total = 0;
  for (const node of p.nodes) {
    const us = byNode.get(node.id) ?? 0;
    total += us;
    const f = node.callFrame;
    const where = f.url ? `${f.url.replace(/^.*\/(node_modules\/|src\/|test\/)/, '$1')}:${f.lineNumber + 1}` : '';
    const name = `${f.functionName || '(anonymous)'} ${where}`.trim();
    byFn.set(name, (byFn.get(name) ?? 0) + us);
  }
  const rows = [...byFn].sort((a, b) => b[1] - a[1]).slice(0, n);
  return [
    'self ms   share  function',
    ...rows.map(
      ([name, us]) => `${fmt(us / 1000, 0).padStart(7)}  ${fmt((100 * us) / total, 1).padStart(5)}%  ${name}`,
    ),
  ].join('\n');
}

interface CpuShare {
  /** Cores busy in this (server) process over the scenario, warm-up included. */
  server: number;
  /** Cores busy in Redis over the same time (INFO cpu; the Redis shared with the rest of the box). */
  redis: number;
  /**
   * Server CPU time per request, µs (warm-up included, requests scaled to the whole run). Less
   * noisy than req/s: it does not depend on how much of the box the load generator took.
   */
  perRequestUs: number;
}

function report(
  rows: Array<[string, Measured & { cpu: CpuShare }]>,
  paced: Array<[string, Measured & { inside: string }]>,
  bursts: [string, Measured],
  authCacheTtlMs: number,
): void {
  const a = rows[0]![1];
  const head = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'requests', 'non-2xx', 'errors'];
  const body = rows.map(([name, m]) => [
    name,
    fmt(m.rps, 0),
    fmt(m.p50),
    fmt(m.p99),
    String(m.requests),
    String(m.non2xx),
    String(m.errors + m.timeouts),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const out: string[] = [];
  out.push('');
  out.push(
    `Admission benchmark: POST ${MAC_PATH}, ${CONNECTIONS} connections, ${WARMUP_S} s warm-up + ${DURATION_S} s per scenario`,
  );
  out.push(
    `Node ${process.version}, ${os.availableParallelism()} CPUs (${os.cpus()[0]?.model ?? 'unknown'}), ${os.platform()}`,
  );
  out.push(
    `Server process Node options: ${process.execArgv.filter((a) => a.startsWith('--')).join(' ') || '(none)'}${process.env.LSS_BENCH_UNDER_PROCFILE === '1' ? " (the Procfile's web role)" : ''}`,
  );
  out.push('Servers: in this one Node process, no cluster, loopback (a fair code-path comparison);');
  out.push('load generator in a separate process: autocannon for (a)-(c) and (f), an open-loop paced');
  out.push(`generator for (d) and (e). Auth cache TTL ${authCacheTtlMs} ms (the default).`);
  out.push('');
  out.push(line(head));
  out.push(line(widths.map((w) => '-'.repeat(w))));
  for (const r of body) out.push(line(r));
  out.push('');
  out.push('CPU over each scenario (cores busy; the box has 2, shared with the load generator and MariaDB):');
  for (const [name, m] of rows) {
    out.push(
      `  ${name.padEnd(widths[0]!)}  server ${fmt(m.cpu.server)}  Redis ${fmt(m.cpu.redis)}  server CPU per request ${fmt(m.cpu.perRequestUs, 0)} µs`,
    );
  }
  for (const [name, m] of rows.slice(1))
    out.push(`CPU per request ${name.slice(0, 3)}/(a) = ${fmt(m.cpu.perRequestUs / a.cpu.perRequestUs)}`);
  out.push('');
  const check = (label: string, ok: boolean, detail: string) =>
    out.push(`${ok ? 'PASS' : 'MISS'}  ${label}: ${detail}`);
  for (const [name, m] of rows.slice(1)) {
    const ratio = m.rps / a.rps;
    out.push(`ratio ${name.slice(0, 3)}/(a) = ${fmt(ratio)}`);
  }
  out.push('');
  const targets: Record<string, number> = { '(b)': TARGET_RATIO, '(c)': TARGET_REPLAY_RATIO };
  for (const [name, m] of rows.slice(1)) {
    const ratio = m.rps / a.rps;
    const target = targets[name.slice(0, 3)] ?? TARGET_RATIO;
    check(`${name}: full path >= ${target * 100}% of bare Express`, ratio >= target, `${fmt(ratio * 100, 1)}%`);
    if (m.non2xx > 0 || m.errors + m.timeouts > 0)
      out.push(`      (${name}: ${m.non2xx} non-2xx, ${m.errors} errors, ${m.timeouts} timeouts)`);
  }
  out.push('');
  out.push(
    `At a fixed offered rate of ${FIXED_RATE} req/s, evenly spaced, open loop (${CONNECTIONS} connections, ${DURATION_S} s;`,
  );
  out.push("latency from each request's due time):");
  const row = ([name, m]: [string, Measured]) =>
    line([
      name,
      fmt(m.rps, 0),
      fmt(m.p50),
      fmt(m.p99),
      String(m.requests),
      String(m.non2xx),
      String(m.errors + m.timeouts),
    ]);
  out.push(line(head));
  for (const r of paced) out.push(row(r));
  out.push(
    `generator send lag p99: ${paced.map(([name, m]) => `${name.slice(0, 3)} ${fmt(m.sendLagP99 ?? 0)} ms`).join(', ')}`,
  );
  out.push('inside the server process (warm-up included):');
  for (const [name, m] of paced) out.push(`  ${name.slice(0, 3)} ${m.inside}`);
  for (const [name, m] of paced)
    check(`${name}: p99 <= ${TARGET_P99_MS} ms at ${FIXED_RATE} req/s`, m.p99 <= TARGET_P99_MS, `${fmt(m.p99)} ms`);
  out.push('');
  out.push(
    `For comparison, no target: autocannon overallRate ${FIXED_RATE}, which sends each second's ${FIXED_RATE} requests`,
  );
  out.push('back to back at the top of the second (a burst at full speed, then idle):');
  out.push(row(bursts));
  out.push('');
  process.stdout.write(`${out.join('\n')}\n`);
}

try {
  await main();
  process.exit(runner.interrupted ? 130 : 0);
} catch (e) {
  log(e instanceof Error ? e.message : String(e));
  process.exit(runner.interrupted ? 130 : 1);
}
