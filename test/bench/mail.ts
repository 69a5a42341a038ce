// `npm run bench:mail` = `node test/bench/mail.ts [jobs]`: mail lookups end to end against the
// mail lab, and what they cost the mail lane worker's event loop.
//
//   1. latency: 200 jobs (or [jobs]), 10 in flight, spread over five postures of the lab
//      (good-mail, nothing-mail, spf-over, sts-testing, dmarc-none), each timed from its POST
//      to the poll that sees it terminal (polls every 25 ms): p50, p90, p99, max.
//   2. load: 50 mail lookups at once; the lane worker's event-loop delay (monitorEventLoopDelay,
//      1 ms resolution) is reset just before and read just after: p50, p99, max. Target p99 ≤ 20 ms:
//      SPF trees, DMARC and MTA-STS policies, DKIM keys and certificate chains are parsed in the
//      piscina pool, not on the worker's loop. BENCH_CPU_PROF=<dir> writes the worker's CPU profiles.
//
// The web app, orchestrator and the lab (DNS, SMTP and MTA-STS servers) run in this process; the
// mail lane worker runs in a child process (this file with --worker) with the default worker
// settings (LANE_CONCURRENCY 32, LANE_TENANT_CONCURRENCY 8, LANE_POOL_THREADS 2), so its loop
// carries only its own work. Jobs come from 10 workspaces (the per-tenant permit is 8 tasks).
// Like the other benchmarks it makes MySQL and Redis available, uses a throwaway database
// lss_bench_<time>_<hex> and Redis prefix lssbench:<same>:, and removes both at the end.
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pino } from 'pino';
import { fmt } from './bench-kit.ts';

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);
const root = path.resolve(import.meta.dirname, '../..');

interface LagReport {
  p50: number;
  p99: number;
  max: number;
  mean: number;
  samples: number;
}

if (process.argv.includes('--worker')) {
  // The mail lane worker: reports its event-loop delay on request.
  const { parseConfig } = await import('../../src/config/config.ts');
  const { startLaneWorker } = await import('../../workers/start-lane-worker.ts');
  const config = parseConfig(process.env);
  const worker = await startLaneWorker('mail', { config, log: pino({ level: 'warn' }) });
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  process.on('message', (m: { cmd: string }) => {
    if (m.cmd === 'reset') {
      h.reset();
      process.send!({ reset: true });
    } else if (m.cmd === 'report') {
      const ms = (ns: number) => ns / 1e6;
      process.send!({
        p50: ms(h.percentile(50)),
        p99: ms(h.percentile(99)),
        max: ms(h.max),
        mean: ms(h.mean),
        samples: h.count,
      } satisfies LagReport);
    } else if (m.cmd === 'stop') {
      void worker.close().then(() => process.exit(0));
    }
  });
  process.send!({ ready: true });
} else {
  await main();
}

async function main(): Promise<void> {
  const JOBS = Number(process.argv[2] ?? 200);
  const IN_FLIGHT = 10;
  const BURST = 50;
  const TENANTS = 10;
  const DOMAINS = ['good-mail.test', 'nothing-mail.test', 'spf-over.test', 'sts-testing.test', 'dmarc-none.test'];

  const { createDatabase, deletePrefixedKeys, dropDatabase, ensureServices } = await import('../../ops/services.ts');
  const { migrate } = await import('../../src/db/migrations.ts');
  const { parseConfig } = await import('../../src/config/config.ts');
  const { createDeps } = await import('../../src/bootstrap.ts');
  const { createApp } = await import('../../src/app.ts');
  const { createKey, createWorkspace, setLimits, workspaceInternalId } = await import('../../src/auth/tenancy-repo.ts');
  const { grantCredits } = await import('../../src/credits/ledger.ts');
  const { startOrchestrator } = await import('../../src/jobs/orchestration/orchestrator.ts');
  const { startLab } = await import('../lab/serve.ts');
  const { mailLabPart } = await import('../lab/mail-lab.ts');

  const { databaseUrl: serverUrl, redisUrl } = await ensureServices({ root });
  const suffix = `${new Date().toISOString().replace(/\D/g, '').slice(0, 14)}_${randomBytes(3).toString('hex')}`;
  const dbName = `lss_bench_${suffix}`;
  const keyPrefix = `lssbench:${suffix}:`;
  const closers: Array<() => Promise<unknown>> = [];
  let child: ChildProcess | undefined;
  let cleaned = false;
  const cleanup = async () => {
    if (cleaned) return;
    cleaned = true;
    child?.send({ cmd: 'stop' });
    await new Promise((r) => (child && child.exitCode === null ? child.once('exit', r) : r(null)));
    for (const c of closers.reverse()) await c().catch(() => {});
    await dropDatabase(serverUrl, dbName).then(
      () => log(`dropped ${dbName}`),
      (e) => log(`could not drop ${dbName}: ${String(e)}`),
    );
    await deletePrefixedKeys(redisUrl, keyPrefix).catch(() => {});
  };
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.once(sig, () => void cleanup().finally(() => process.exit(130)));

  try {
    const databaseUrl = await createDatabase(serverUrl, dbName);
    await migrate(databaseUrl);
    const lab = await startLab({ parts: [mailLabPart] });
    closers.push(() => lab.close());
    const env = {
      ...process.env,
      ...lab.env,
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: keyPrefix,
      LOG_LEVEL: 'silent',
      KEY_PEPPER: process.env.KEY_PEPPER || 'lss-bench-key-pepper-0123456789abcdefghijklmnopq',
      CURSOR_SECRET: process.env.CURSOR_SECRET || 'lss-bench-cursor-secret-0123456789abcdefghijklmn',
      WEBHOOK_SECRET_KEY: process.env.WEBHOOK_SECRET_KEY || 'lss-bench-webhook-secret-key-0123456789abcdefgh',
    };
    const config = parseConfig(env);
    const deps = await createDeps(config, pino({ level: 'silent' }));
    closers.push(() => deps.close());
    const orchestrator = await startOrchestrator({
      config,
      log: pino({ level: 'silent' }),
      timing: { relayEveryMs: 200, relayAfterMs: 300 },
    });
    closers.push(() => orchestrator.close());

    // The lane worker in its own process, trusting the lab CA like the service under test.
    child = fork(import.meta.filename, ['--worker'], {
      execArgv: process.env.BENCH_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_CPU_PROF] : [],
      env: { ...env, NODE_EXTRA_CA_CERTS: lab.env.NODE_EXTRA_CA_CERTS },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const ask = <T>(cmd: string) =>
      new Promise<T>((resolve) => {
        child!.once('message', (m) => resolve(m as T));
        child!.send({ cmd });
      });
    await new Promise((resolve, reject) => {
      child!.once('message', resolve);
      child!.once('exit', (code) => reject(new Error(`worker exited ${code}`)));
    });

    const app = createApp(deps);
    const server = app.listen(0, '127.0.0.1');
    await new Promise<void>((r) => server.once('listening', () => r()));
    closers.push(
      () =>
        new Promise((r) => {
          server.closeAllConnections();
          server.close(r);
        }),
    );
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    const keys: string[] = [];
    for (let i = 0; i < TENANTS; i++) {
      const ws = await createWorkspace(deps.db, { name: `bench-${i}` });
      await setLimits(deps.db, ws.workspaceId, undefined, {
        app: { perMinute: 10_000_000, burst: 1_000_000 },
        products: { 'lookup.mail.v1': { perMinute: 1_000_000, perHour: 10_000_000 } },
      });
      await grantCredits(deps.db, await workspaceInternalId(deps.db, ws.workspaceId), 100_000, `bench:${i}`);
      keys.push(
        (
          await createKey(deps.db, config.KEY_PEPPER, {
            workspace: ws.workspaceId,
            scopes: ['scan:create', 'scan:read'],
          })
        ).key,
      );
    }

    // Readiness: the web process sees the worker's heartbeat within a couple of seconds.
    for (let i = 0; ; i++) {
      const res = await fetch(`${base}/v2/products`, { headers: { authorization: `Bearer ${keys[0]}` } });
      const body = (await res.json()) as { products: Array<{ product: string; readiness: string }> };
      if (body.products.find((p) => p.product === 'lookup.mail.v1')?.readiness === 'available') break;
      if (i > 100) throw new Error('the mail product never became available');
      await new Promise((r) => setTimeout(r, 100));
    }

    let n = 0;
    const lookup = async (domain: string): Promise<{ ms: number; status: string }> => {
      const key = keys[n++ % TENANTS]!;
      const t0 = performance.now();
      const res = await fetch(`${base}/v2/lookups/mail`, {
        method: 'POST',
        body: JSON.stringify({ value: domain }),
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'idempotency-key': randomBytes(12).toString('hex'),
        },
      });
      const accepted = (await res.json()) as { jobRef: string };
      if (res.status !== 202) throw new Error(`POST → ${res.status} ${JSON.stringify(accepted)}`);
      for (;;) {
        const s = await fetch(`${base}/v2/jobs/${accepted.jobRef}`, { headers: { authorization: `Bearer ${key}` } });
        const body = (await s.json()) as { terminal: boolean; status: string };
        if (body.terminal) return { ms: performance.now() - t0, status: body.status };
        await new Promise((r) => setTimeout(r, 25));
      }
    };

    log(`warm-up: ${DOMAINS.length} lookups`);
    for (const d of DOMAINS) log(`  ${d}: ${fmt((await lookup(d)).ms, 0)} ms`);

    log(`latency: ${JOBS} jobs, ${IN_FLIGHT} in flight`);
    const samples: number[] = [];
    const statuses = new Map<string, number>();
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < JOBS) {
          const r = await lookup(DOMAINS[next++ % DOMAINS.length]!);
          samples.push(r.ms);
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        }
      }),
    );
    const wall = (performance.now() - t0) / 1000;

    log(`load: ${BURST} lookups at once`);
    await ask('reset');
    const b0 = performance.now();
    const burst = await Promise.all(Array.from({ length: BURST }, (_, i) => lookup(DOMAINS[i % DOMAINS.length]!)));
    const burstWall = (performance.now() - b0) / 1000;
    const lag = await ask<LagReport>('report');

    const s = [...samples].sort((a, b) => a - b);
    const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
    const bs = burst.map((b) => b.ms).sort((a, b) => a - b);
    const out = [
      '',
      `mail lookups end to end (POST → terminal seen by a 25 ms poll), ${samples.length} jobs, ${IN_FLIGHT} in flight, ${fmt(wall, 1)} s (${fmt(samples.length / wall, 1)} jobs/s)`,
      `  p50 ${fmt(q(0.5), 0)} ms   p90 ${fmt(q(0.9), 0)} ms   p99 ${fmt(q(0.99), 0)} ms   max ${fmt(s[s.length - 1]!, 0)} ms   statuses ${[...statuses].map(([k, v]) => `${k}=${v}`).join(' ')}`,
      `${BURST} lookups at once: all terminal in ${fmt(burstWall, 1)} s (p50 ${fmt(bs[Math.floor(bs.length / 2)]!, 0)} ms, max ${fmt(bs[bs.length - 1]!, 0)} ms)`,
      `  mail lane worker event-loop delay: p50 ${fmt(lag.p50)} ms   p99 ${fmt(lag.p99)} ms   max ${fmt(lag.max)} ms   (target p99 ≤ 20 ms: ${lag.p99 <= 20 ? 'met' : 'NOT met'})`,
      `machine: ${os.cpus().length} cores, load average ${os
        .loadavg()
        .map((l) => fmt(l, 1))
        .join(' / ')} at the end (MariaDB, Redis, this process and the worker share them)`,
    ];
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    await cleanup();
  }
  process.exit(0);
}
