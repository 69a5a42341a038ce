// `npm run bench:dead-zone` = `node test/bench/dead-zone.ts`: does one tenant hammering a dead
// zone cost another tenant anything? (issue 31, item 1)
//
// Tenant A sends BENCH_DEADZONE_RATE_A (50) DNS lookups a second of names under `stalled.test`, a
// lab zone whose servers never answer (each lookup asks 8 questions, each waits DNS_TIMEOUT_MS,
// 2000 ms, the production default); tenant B sends BENCH_DEADZONE_RATE_B (50) paced DNS lookups a
// second of `lab.test`, which answers. Open-loop generators (bench-kit pacedLoad: latency from each
// request's due time), each phase BENCH_DEADZONE_SECONDS (20) long, after a 3 s warm-up of B:
//   1. B alone;  2. B with A;  3. B alone again.
// B's "alone" figure is the mean of phases 1 and 3 (the machine's drift shows as their spread).
// Printed: B's p50/p99 per phase and its 503 count; B's p99 with A over B's p99 alone (target:
// at most 1.10, zero 503); A's statuses and p99; how often the resolver breaker opened. The round
// runs twice in the same run: with the per-zone backoff (DNS_ZONE_BACKOFF_MS default, 10 s) and
// without it (DNS_ZONE_BACKOFF_MS=0: every dead question really goes out and waits), so the reader
// sees what the backoff buys on top of the breaker fix. BENCH_DEADZONE_ROUNDS=backoff skips the
// second round.
//
// The server is one web worker in this process (createApp over createDeps: the whole admission
// chain, MySQL, Redis), so A and B share one event loop and one resolver: the worst case for
// sharing. The DNS lab runs in a child process (test/lab/dns-server.ts), the load generators in
// another (this file with --client). Like the other benches it makes MySQL and Redis available,
// uses a throwaway database lss_bench_<time>_<hex> and Redis prefix lssbench:<same>:, and removes
// both at the end.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import path from 'node:path';
import { clientRunner, fmt, listen, pacedLoad, runBench, type PacedResult } from './bench-kit.ts';
import { LAB_SPECIAL_USE } from '../lab/addresses.ts';

const SECONDS = Number(process.env.BENCH_DEADZONE_SECONDS ?? 20);
const RATE_A = Number(process.env.BENCH_DEADZONE_RATE_A ?? 50);
const RATE_B = Number(process.env.BENCH_DEADZONE_RATE_B ?? 50);
const ROUNDS = (process.env.BENCH_DEADZONE_ROUNDS ?? 'backoff,no-backoff').split(',').map((s) => s.trim());
const WARMUP_S = 3;
const DNS_TIMEOUT_MS = 2000;
const HEALTHY = 'lab.test';
const DEAD = 'stalled.test';

interface ClientJob {
  url: string;
  keyA: string;
  keyB: string;
  durationS: number;
  withA: boolean;
  tag: string;
}

interface PhaseResult {
  b: PacedResult;
  a: PacedResult | null;
}

// ---------------------------------------------------------------------------
// Load generator (child process)

async function runClientJob(job: ClientJob): Promise<PhaseResult> {
  const headers = (key: string, who: string) => (i: number) => ({
    'content-type': 'application/json',
    authorization: `Bearer ${key}`,
    'idempotency-key': `${who}-${job.tag}-${i}`,
  });
  const b = pacedLoad({
    url: job.url,
    method: 'POST',
    path: '/v2/lookups/dns',
    body: JSON.stringify({ value: HEALTHY }),
    headers: headers(job.keyB, 'b'),
    rate: RATE_B,
    durationS: job.durationS,
    connections: 64,
  });
  // A: a different name under the dead zone each time (a resolver's cache never helps).
  const a = job.withA
    ? pacedLoad({
        url: job.url,
        method: 'POST',
        path: '/v2/lookups/dns',
        bodyFor: (i) => JSON.stringify({ value: `r${job.tag}-${i}.${DEAD}` }),
        headers: headers(job.keyA, 'a'),
        rate: RATE_A,
        durationS: job.durationS,
        connections: Math.max(64, Math.ceil(RATE_A * (DNS_TIMEOUT_MS / 1000 + 1))),
      })
    : Promise.resolve(null);
  const [rb, ra] = await Promise.all([b, a]);
  return { b: rb, a: ra };
}

if (process.argv[2] === '--client') {
  const job = JSON.parse(process.argv[3]!) as ClientJob;
  process.stdout.write(`${JSON.stringify(await runClientJob(job))}\n`);
  process.exit(0);
}

// ---------------------------------------------------------------------------
// Bench (server in this process, the DNS lab and the generators in children)

const root = path.resolve(import.meta.dirname, '../..');
const log = (msg: string): void => {
  process.stderr.write(`[bench] ${msg}\n`);
};
const runner = clientRunner(path.join(root, 'test/bench/dead-zone.ts'), root, log);

/** The lab's DNS server in a child process (its own event loop): every lab zone, `stalled.test` included. */
async function startLabChild(): Promise<{ address: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [path.join(root, 'test/lab/dns-server.ts'), '--port', '0'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(out.slice(0, nl));
    });
    child.once('exit', (code) => reject(new Error(`the DNS lab exited (${code}) before it listened`)));
  });
  const { host, port } = JSON.parse(line) as { host: string; port: number };
  return { address: `[${host}]:${port}`, child };
}

async function lookup(url: string, key: string, value: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}/v2/lookups/dns`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${key}`,
      'idempotency-key': `sanity-${randomBytes(6).toString('hex')}`,
    },
    body: JSON.stringify({ value }),
  });
  return { status: res.status, body: await res.json() };
}

interface RoundReport {
  round: string;
  zoneBackoffMs: number;
  alone1: PacedResult;
  withA: PacedResult;
  alone2: PacedResult;
  a: PacedResult;
  resolverOpened: number;
  p50Ratio: number;
  p99Ratio: number;
  b503: number;
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
  const { onBreakerTransition } = await import('../../src/resilience/breaker.ts');
  const { pino } = await import('pino');

  const { databaseUrl: serverUrl, redisUrl } = await ensureServices({ root });
  const suffix = `${runTimestamp(new Date())}_${randomBytes(3).toString('hex')}`;
  const dbName = `lss_bench_${suffix}`;
  const keyPrefix = `lssbench:${suffix}:`;
  let labChild: ChildProcess | null = null;
  let dbCreated = false;
  const reports: RoundReport[] = [];
  try {
    const lab = await startLabChild();
    labChild = lab.child;
    const databaseUrl = await createDatabase(serverUrl, dbName);
    dbCreated = true;
    log(`database ${dbName}; Redis ${redisUrl} prefix ${keyPrefix}; DNS lab ${lab.address} (child process)`);
    await migrate(databaseUrl);
    const secrets = {
      KEY_PEPPER: randomBytes(32).toString('base64url'),
      CURSOR_SECRET: randomBytes(32).toString('base64url'),
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64url'),
    };

    for (const round of ROUNDS) {
      const zoneBackoffMs = round === 'no-backoff' ? 0 : 10_000;
      const config = parseConfig({
        ...process.env,
        NODE_ENV: 'production',
        DATABASE_URL: databaseUrl,
        REDIS_URL: redisUrl,
        REDIS_KEY_PREFIX: `${keyPrefix}${round}:`,
        ...secrets,
        LOG_LEVEL: 'silent',
        DNS_SERVERS: lab.address,
        DNS_TIMEOUT_MS: String(DNS_TIMEOUT_MS),
        DNS_ZONE_BACKOFF_MS: String(zoneBackoffMs),
        ALLOW_SPECIAL_USE_DOMAINS: LAB_SPECIAL_USE,
      });
      const deps = await createDeps(config, pino({ level: 'silent' }));
      let server: http.Server | null = null;
      let opened = 0;
      const unsubscribe = onBreakerTransition((t) => {
        if (t.name === 'resolver' && t.from === 'closed') opened++;
      });
      try {
        const full = await listen(createApp(deps));
        server = full.server;
        const keys: string[] = [];
        for (const who of ['a', 'b']) {
          const ws = await createWorkspace(deps.db, { name: `bench-dead-zone-${round}-${who}` });
          keys.push((await createKey(deps.db, config.KEY_PEPPER, { workspace: ws.workspaceId })).key);
          await setLimits(deps.db, ws.workspaceId, undefined, {
            app: { perMinute: 10_000_000, burst: 1_000_000 },
            products: { 'lookup.dns.v1': { perMinute: 10_000_000, perHour: 600_000_000 } },
          });
        }
        const [keyA, keyB] = keys as [string, string];

        // Sanity: B's zone answers, A's zone is silent (a 200 partial, every type timed out).
        const ok = await lookup(full.url, keyB, HEALTHY);
        if (ok.status !== 200 || ok.body.status !== 'completed' || ok.body.result.records.A.outcome !== 'answer')
          throw new Error(`sanity: ${HEALTHY} answered ${ok.status}: ${JSON.stringify(ok.body)}`);
        const dead = await lookup(full.url, keyA, `sanity.${DEAD}`);
        const outcomes = Object.values(dead.body.result?.records ?? {}).map((r: any) => r.outcome);
        if (dead.status !== 200 || outcomes.length !== 8 || outcomes.some((o) => o !== 'timeout'))
          throw new Error(`sanity: ${DEAD} answered ${dead.status}: ${JSON.stringify(dead.body)}`);

        const phase = async (name: string, withA: boolean, durationS: number) => {
          log(
            `${round}: ${name}: B ${RATE_B}/s of ${HEALTHY}${withA ? ` + A ${RATE_A}/s under ${DEAD}` : ''}, ${durationS} s`,
          );
          return runner.run<PhaseResult>({
            url: full.url,
            keyA,
            keyB,
            durationS,
            withA,
            tag: randomBytes(4).toString('hex'),
          } satisfies ClientJob);
        };
        await phase('warm-up', false, WARMUP_S);
        const alone1 = (await phase('B alone', false, SECONDS)).b;
        const both = await phase('B with A', true, SECONDS);
        const alone2 = (await phase('B alone again', false, SECONDS)).b;
        const aloneP50 = (alone1.p50 + alone2.p50) / 2;
        const aloneP99 = (alone1.p99 + alone2.p99) / 2;
        reports.push({
          round,
          zoneBackoffMs,
          alone1,
          withA: both.b,
          alone2,
          a: both.a!,
          resolverOpened: opened,
          p50Ratio: both.b.p50 / aloneP50,
          p99Ratio: both.b.p99 / aloneP99,
          b503: both.b.statuses['503'] ?? 0,
        });
      } finally {
        unsubscribe();
        if (server) await new Promise<void>((r) => server!.close(() => r()));
        await deps.close();
      }
    }
  } finally {
    labChild?.kill('SIGTERM');
    if (dbCreated) await dropDatabase(serverUrl, dbName).catch((e) => log(`drop database: ${e}`));
    await deletePrefixedKeys(redisUrl, keyPrefix).catch((e) => log(`delete keys: ${e}`));
  }

  const row = (label: string, r: PacedResult) =>
    `| ${label} | ${fmt(r.rps, 1)} | ${fmt(r.p50, 1)} | ${fmt(r.p99, 1)} | ${r.statuses['503'] ?? 0} | ${r.non2xx} | ${r.errors} |`;
  const lines: string[] = [
    `Dead zone: B ${RATE_B}/s of ${HEALTHY}; A ${RATE_A}/s under ${DEAD} (DNS_TIMEOUT_MS ${DNS_TIMEOUT_MS}); ${SECONDS} s per phase`,
  ];
  for (const r of reports) {
    lines.push(
      '',
      `round ${r.round} (DNS_ZONE_BACKOFF_MS=${r.zoneBackoffMs})`,
      '| B phase | rps | p50 ms | p99 ms | 503 | non-2xx | errors |',
      '|---|---|---|---|---|---|---|',
      row('alone', r.alone1),
      row('with A', r.withA),
      row('alone again', r.alone2),
      `B with A / B alone: p50 ×${fmt(r.p50Ratio)}, p99 ×${fmt(r.p99Ratio)} (target p99 ≤ ×1.10); B 503s: ${r.b503} (target 0)`,
      `A: ${r.a.requests} sent, statuses ${JSON.stringify(r.a.statuses)}, p50 ${fmt(r.a.p50, 1)} ms, p99 ${fmt(r.a.p99, 1)} ms, errors ${r.a.errors}; resolver breaker opened ${r.resolverOpened}×`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  process.stdout.write(`${JSON.stringify({ reports })}\n`);
}

await runBench(main, runner, log);
