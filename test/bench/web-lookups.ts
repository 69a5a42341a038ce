// `npm run bench:web` = `node test/bench/web-lookups.ts`: lookup.web.v1 end to end against the web
// lab, and what 50 concurrent web lookups do to the web lane worker's event loop.
//
//   1. 200 jobs for https://strict.weblab.test/ (both chains, preflight, TLS handshake, pool
//      parsing), 10 in flight: latency from POST to the first poll that sees the job terminal
//      (polls every 10 ms), p50 / p99.
//   2. 50 jobs submitted at once (--burst=N; --workspaces=N spreads all jobs over N workspaces,
//      default 1): the lane worker's event-loop lag p99 (prom-client's
//      nodejs_eventloop_lag_p99_seconds from the worker's own /metrics, reset by a scrape just
//      before the burst), target ≤ 20 ms; and the burst's latencies.
//   Both phases also print the CPU time the lane's main thread spent per lookup
//   (lss_main_thread_cpu_seconds_total, process.threadCpuUsage in the lane): the lag depends on the
//   machine's load (other processes take the cores), this figure much less, so before/after
//   comparisons on a shared machine rest on it; the load average is printed with the run.
//
// The API, the lab (DNS + web hosts) and the client run in this process; the orchestrator and
// the web lane worker are real role processes (workers/orchestrator.ts, workers/lane.ts web).
// Like the other benchmarks it uses a throwaway database lss_bench_<time>_<hex> and Redis prefix
// lssbench:<same>:, and removes both at the end. All traffic stays on 127.0.0.0/8.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import os from 'node:os';
import { mkdtempSync } from 'node:fs';
import { fmt, listen } from './bench-kit.ts';

const JOBS = 200;
const IN_FLIGHT = 10;
const option = (name: string, def: number) => {
  const v = process.argv.find((a) => a.startsWith(`--${name}=`));
  return v ? Number(v.slice(name.length + 3)) : def;
};
// `-- --workspaces=4 --burst=100`: the burst spread over several workspaces, so the lane runs up to
// LANE_CONCURRENCY checks at once instead of one workspace's LANE_TENANT_CONCURRENCY.
const WORKSPACES = option('workspaces', 1);
const BURST = option('burst', 50);
const POLL_MS = 10;
const LANE_METRICS_PORT = 19_391;
const root = path.resolve(import.meta.dirname, '..', '..');
const log = (msg: string) => process.stderr.write(`[bench:web] ${msg}\n`);

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

interface LaneGauges {
  /** Event-loop lag p99 since the previous scrape (the scrape resets prom-client's histogram), ms. */
  lagP99: number;
  lagP50: number;
  /** CPU time of the lane's main thread so far (user + system), ms. */
  mainCpu: number;
}

async function laneGauges(): Promise<LaneGauges> {
  const text = await (await fetch(`http://127.0.0.1:${LANE_METRICS_PORT}/metrics`)).text();
  const read = (name: string) => {
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    if (!m) throw new Error(`the lane worker reports no ${name}`);
    return Number(m[1]) * 1000;
  };
  return {
    lagP99: read('nodejs_eventloop_lag_p99_seconds'),
    lagP50: read('nodejs_eventloop_lag_p50_seconds'),
    mainCpu: read('lss_main_thread_cpu_seconds_total'),
  };
}

async function main(): Promise<void> {
  const { createDatabase, deletePrefixedKeys, dropDatabase, ensureServices, runTimestamp } = await import(
    '../../ops/services.ts'
  );
  const { migrate } = await import('../../src/db/migrations.ts');
  const { parseConfig } = await import('../../src/config/config.ts');
  const { createDeps } = await import('../../src/bootstrap.ts');
  const { createApp } = await import('../../src/app.ts');
  const { createKey, createWorkspace, setLimits, workspaceInternalId } = await import('../../src/auth/tenancy-repo.ts');
  const { grantCredits } = await import('../../src/credits/ledger.ts');
  const { productReadiness } = await import('../../src/products/kit/readiness.ts');
  const { webProduct } = await import('../../src/products/web/index.ts');
  const { startLab } = await import('../lab/serve.ts');
  const { webLabPart } = await import('../lab/web-lab.ts');
  const { labEnv } = await import('../helpers/lab-runtime.ts');
  const { pino } = await import('pino');

  const { databaseUrl: serverUrl, redisUrl } = await ensureServices({ root });
  const suffix = `${runTimestamp(new Date())}_${randomBytes(3).toString('hex')}`;
  const dbName = `lss_bench_${suffix}`;
  const keyPrefix = `lssbench:${suffix}:`;
  const children: ChildProcess[] = [];
  const closers: Array<() => Promise<unknown>> = [];
  let dbCreated = false;
  try {
    const lab = await startLab({ parts: [webLabPart()] });
    closers.push(() => lab.close());
    const databaseUrl = await createDatabase(serverUrl, dbName);
    dbCreated = true;
    await migrate(databaseUrl);
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      ...labEnv(lab.env),
      NODE_ENV: 'production',
      LOG_LEVEL: 'silent',
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: keyPrefix,
      KEY_PEPPER: randomBytes(32).toString('base64url'),
      CURSOR_SECRET: randomBytes(32).toString('base64url'),
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64url'),
    };
    log(`database ${dbName}; Redis prefix ${keyPrefix}; lab ${lab.env.OUTBOUND_PORT_MAP}`);
    const role = (script: string, args: string[], extra: Record<string, string> = {}, nodeArgs: string[] = []) => {
      // NODE_EXTRA_CA_CERTS (the lab CA) is in env: read by Node at the child's start.
      const c = spawn(process.execPath, [...nodeArgs, script, ...args], {
        cwd: root,
        env: { ...env, ...extra },
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      children.push(c);
    };
    role('workers/orchestrator.ts', []);
    // `npm run bench:web -- --profile`: the lane worker writes a V8 CPU profile of its main thread
    // when it exits (the whole run), to find what holds its event loop.
    const profileDir = process.argv.includes('--profile')
      ? mkdtempSync(path.join(os.tmpdir(), 'lss-web-lane-prof-'))
      : null;
    role(
      'workers/lane.ts',
      ['web'],
      { METRICS_PORT: String(LANE_METRICS_PORT) },
      profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    );
    if (profileDir) closers.unshift(async () => log(`lane CPU profile (written at its exit): ${profileDir}`));

    const config = parseConfig(env);
    const deps = await createDeps(config, pino({ level: 'silent' }));
    closers.push(() => deps.close());
    const app = await listen(createApp(deps));
    closers.push(
      () =>
        new Promise<void>((r) => {
          app.server.close(() => r());
          app.server.closeAllConnections();
        }),
    );
    const health = deps.runtime.services.laneHealth as import('../../src/queue/lane-health.ts').LaneHealth;
    for (let i = 0; ; i++) {
      await health.refresh();
      if (productReadiness(webProduct, deps.runtime) === 'available') break;
      if (i > 150) throw new Error('the web lane worker or the orchestrator did not come up');
      await new Promise((r) => setTimeout(r, 200));
    }
    // One key per workspace; jobs take the keys in turn.
    const keys: string[] = [];
    for (let w = 0; w < WORKSPACES; w++) {
      const ws = await createWorkspace(deps.db, { name: `bench-web-${w}` });
      await grantCredits(deps.db, await workspaceInternalId(deps.db, ws.workspaceId), 100_000, `grant:bench:${w}`);
      const { key } = await createKey(deps.db, config.KEY_PEPPER, { workspace: ws.workspaceId });
      await setLimits(deps.db, ws.workspaceId, undefined, {
        app: { perMinute: 10_000_000, burst: 1_000_000 },
        products: { 'lookup.web.v1': { perMinute: 10_000_000, perHour: 600_000_000 } },
      });
      keys.push(key);
    }
    let turn = 0;
    const statuses = new Map<string, number>();
    const oneJob = async (): Promise<number> => {
      const headers = { authorization: `Bearer ${keys[turn++ % keys.length]}`, 'content-type': 'application/json' };
      const t0 = performance.now();
      const res = await fetch(`${app.url}/v2/lookups/web`, {
        method: 'POST',
        headers: { ...headers, 'idempotency-key': randomBytes(8).toString('hex') },
        body: JSON.stringify({ url: 'https://strict.weblab.test/' }),
      });
      const body = (await res.json()) as { jobRef?: string };
      if (res.status !== 202 || !body.jobRef) throw new Error(`POST answered ${res.status}: ${JSON.stringify(body)}`);
      for (;;) {
        const job = (await (await fetch(`${app.url}/v2/jobs/${body.jobRef}`, { headers })).json()) as {
          terminal: boolean;
          status: string;
        };
        if (job.terminal) {
          statuses.set(job.status, (statuses.get(job.status) ?? 0) + 1);
          return performance.now() - t0;
        }
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
    };

    log('warm-up: 10 jobs');
    await Promise.all(Array.from({ length: 10 }, oneJob));
    statuses.clear();
    log(`${JOBS} jobs, ${IN_FLIGHT} in flight`);
    const latencies: number[] = [];
    let next = 0;
    const steadyCpu0 = (await laneGauges()).mainCpu;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < JOBS) {
          next++;
          latencies.push(await oneJob());
        }
      }),
    );
    const wall = (performance.now() - t0) / 1000;
    const steadyCpu = ((await laneGauges()).mainCpu - steadyCpu0) / JOBS;
    latencies.sort((a, b) => a - b);
    const steady = new Map(statuses);

    statuses.clear();
    log(`${BURST} jobs at once; lane event-loop lag from its /metrics`);
    const before = await laneGauges(); // the scrape resets prom-client's event-loop histogram
    const burst = (await Promise.all(Array.from({ length: BURST }, oneJob))).sort((a, b) => a - b);
    const after = await laneGauges();
    const lag = after.lagP99;
    const burstCpu = (after.mainCpu - before.mainCpu) / BURST;
    const metricsText = await (await fetch(`http://127.0.0.1:${LANE_METRICS_PORT}/metrics`)).text();
    const taskTimes = [
      ...metricsText.matchAll(/^lss_task_duration_seconds_(sum|count)\{lane="web",outcome="(\w+)"\} (\S+)$/gm),
    ].map((m) => `${m[2]} ${m[1]}=${Number(m[3]).toFixed(2)}`);
    log(`lane task durations (all runs): ${taskTimes.join(', ')}`);
    // The lag controller's limit once the burst is over (lane-runner/lag-limit.ts; absent before it).
    const limit = /^lss_lane_concurrency_limit\{lane="web"\} (\S+)$/m.exec(metricsText)?.[1];
    if (limit) log(`lane concurrency limit after the burst: ${limit}`);

    const out = [
      `lookup.web.v1 end to end (https://strict.weblab.test/: two chains, preflight, TLS handshake, pool parsing)`,
      `  ${JOBS} jobs, ${IN_FLIGHT} in flight: p50 ${fmt(pct(latencies, 50), 1)} ms, p99 ${fmt(pct(latencies, 99), 1)} ms, ${fmt(JOBS / wall, 1)} jobs/s; statuses ${JSON.stringify(Object.fromEntries(steady))}; lane main thread ${fmt(steadyCpu, 2)} ms CPU per lookup`,
      `  ${BURST} at once (${WORKSPACES} workspace${WORKSPACES === 1 ? '' : 's'}): p50 ${fmt(pct(burst, 50), 1)} ms, p99 ${fmt(pct(burst, 99), 1)} ms; statuses ${JSON.stringify(Object.fromEntries(statuses))}`,
      `  web lane worker event-loop lag p99 during the burst: ${fmt(lag, 2)} ms (target ≤ 20 ms: ${lag <= 20 ? 'met' : 'NOT met'}), p50 ${fmt(after.lagP50, 2)} ms; lane main thread ${fmt(burstCpu, 2)} ms CPU per lookup`,
      `  load average at the end (1 min, ${os.cpus().length} cores): ${fmt(os.loadavg()[0]!, 2)}`,
      `  (latency includes the ${POLL_MS} ms poll interval, the orchestrator's plan and finalize, and the API, lab and client sharing this process)`,
    ];
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))));
    for (const close of closers.reverse()) await close().catch(() => {});
    if (dbCreated) await dropDatabase(serverUrl, dbName).catch((e: Error) => log(`warning: ${e.message}`));
    await deletePrefixedKeys(redisUrl, keyPrefix).catch(() => {});
  }
}

await main();
process.exit(0);
