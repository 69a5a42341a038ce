// `npm run bench:lookups` = `node test/bench/inline-lookups.ts`: what the inline lookups (phone, ip,
// dns) cost through the full admission chain, as a ratio to the MAC lookup measured in the same
// run, and how long a DNS lookup takes against the lab.
//
// Scenarios, each 2 s warm-up then 8 s measured, 50 connections, one server (createApp over
// createDeps: request id, metrics, auth, scopes, GCRA rate limits in Redis, idempotency in MySQL,
// then the product) with a unique Idempotency-Key per request; the tenant's limits are raised so
// nothing is refused:
//   mac          POST /v2/lookups/mac   {"value":"F4:F5:E8:12:34:56"}            (the reference)
//   phone        POST /v2/lookups/phone {"value":"+44 20 7946 0018"}
//   ip           POST /v2/lookups/ip    {"value":"8.8.8.8"}                       (no context, no PTR)
//   ip+reverse   POST /v2/lookups/ip    {"value":"127.0.0.1","reverseDns":true}   (one PTR query to the lab)
//   ip+context   POST /v2/lookups/ip    {"value":"8.8.8.8","includeContext":true} (the shipped ASN table)
//   dns          POST /v2/lookups/dns   {"value":"lab.test"}                      (eight queries to the lab)
// Then, sequentially (one request in flight): 500 POST /v2/lookups/dns timed by the client, and
// the resolver alone (createResolver(config).query('lab.test', 'A')) 2,000 times, so the reader
// sees what the HTTP path adds. And, in a fresh process, what the shipped IP context table costs:
// its load from the cache file (ms, RSS and heap before/after, after GC) and 100,000 lookups
// alone per address family, each timed.
//
// The server and the DNS lab (test/lab/dns-server.ts, default zones) run in this one Node process
// on loopback, so the lab's work shares the server's event loop. The load generator (autocannon,
// and the sequential client) runs in a separate process (this file with --client).
//
// Like admission.ts it makes MySQL and Redis available, uses a throwaway database
// lss_bench_<time>_<hex> and Redis prefix lssbench:<same>:, and removes both at the end.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { clientRunner, fmt, listen } from './bench-kit.ts';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { LAB_SPECIAL_USE } from '../lab/addresses.ts';

const CONNECTIONS = 50;
const WARMUP_S = 2;
const DURATION_S = 8;
const DNS_HTTP_SAMPLES = 500;
const RESOLVER_SAMPLES = 2_000;
/** Unmeasured sequential calls before each latency run (JIT, pools, sockets). */
const SEQ_WARMUP = 20;
const DNS_TIMEOUT_MS = 2000;
const IP_TABLE_SAMPLES = 100_000;

interface Scenario {
  name: string;
  product: string;
  path: string;
  body: string;
}

const SCENARIOS: Scenario[] = [
  {
    name: 'mac',
    product: 'lookup.mac.v1',
    path: '/v2/lookups/mac',
    body: JSON.stringify({ value: 'F4:F5:E8:12:34:56' }),
  },
  {
    name: 'phone',
    product: 'lookup.phone.v1',
    path: '/v2/lookups/phone',
    body: JSON.stringify({ value: '+44 20 7946 0018' }),
  },
  { name: 'ip', product: 'lookup.ip.v1', path: '/v2/lookups/ip', body: JSON.stringify({ value: '8.8.8.8' }) },
  {
    name: 'ip+reverse',
    product: 'lookup.ip.v1',
    path: '/v2/lookups/ip',
    body: JSON.stringify({ value: '127.0.0.1', reverseDns: true }),
  },
  {
    name: 'ip+context',
    product: 'lookup.ip.v1',
    path: '/v2/lookups/ip',
    body: JSON.stringify({ value: '8.8.8.8', includeContext: true }),
  },
  { name: 'dns', product: 'lookup.dns.v1', path: '/v2/lookups/dns', body: JSON.stringify({ value: 'lab.test' }) },
];
const DNS_SCENARIO = SCENARIOS.find((s) => s.name === 'dns')!;

type ClientJob =
  | { kind: 'load'; url: string; key: string; path: string; body: string; warmupS: number; durationS: number }
  | { kind: 'sequential'; url: string; key: string; path: string; body: string; warmup: number; samples: number }
  | { kind: 'ip-table'; samples: number };

interface IpTableCost {
  loadMs: number;
  origin: string;
  rssMB: number;
  heapMB: number;
  externalMB: number;
  tableMB: number;
  v4: Omit<Sequential, 'non200'>;
  v6: Omit<Sequential, 'non200'>;
}

interface Measured {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  /** 2xx answers whose envelope status was not "completed" (a lane timed out, for example). */
  notCompleted: number;
  errors: number;
  timeouts: number;
}

interface Sequential {
  p50: number;
  p99: number;
  mean: number;
  samples: number;
  non200: number;
}

// ---------------------------------------------------------------------------
// Load generator (child process)

function envelopeCompleted(body: string): boolean {
  try {
    return (JSON.parse(body) as { status?: unknown }).status === 'completed';
  } catch {
    return false;
  }
}

async function runLoad(job: Extract<ClientJob, { kind: 'load' }>): Promise<Measured> {
  let notCompleted = 0;
  const run = async (durationS: number) => {
    let n = 0;
    notCompleted = 0;
    const tag = randomBytes(4).toString('hex');
    return autocannon({
      url: job.url,
      connections: CONNECTIONS,
      duration: durationS,
      requests: [
        {
          method: 'POST',
          path: job.path,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${job.key}` },
          body: job.body,
          setupRequest: (req) => {
            req.headers = { ...req.headers, 'idempotency-key': `bench-${tag}-${n++}` };
            return req;
          },
          onResponse: (status, body) => {
            if (status >= 200 && status < 300 && !envelopeCompleted(body)) notCompleted++;
          },
        },
      ],
    });
  };
  if (job.warmupS > 0) await run(job.warmupS);
  const r = await run(job.durationS);
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: r.requests.total,
    non2xx: r.non2xx,
    notCompleted,
    errors: r.errors,
    timeouts: r.timeouts,
  };
}

async function runSequential(job: Extract<ClientJob, { kind: 'sequential' }>): Promise<Sequential> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const tag = randomBytes(4).toString('hex');
  const target = new URL(job.path, job.url);
  const body = Buffer.from(job.body);
  let n = 0;
  const once = () =>
    new Promise<{ ms: number; status: number }>((resolve, reject) => {
      const t0 = performance.now();
      const req = http.request(
        target,
        {
          method: 'POST',
          agent,
          headers: {
            'content-type': 'application/json',
            'content-length': body.length,
            authorization: `Bearer ${job.key}`,
            'idempotency-key': `seq-${tag}-${n++}`,
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ ms: performance.now() - t0, status: res.statusCode ?? 0 }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  try {
    for (let i = 0; i < job.warmup; i++) await once();
    const samples: number[] = [];
    let non200 = 0;
    for (let i = 0; i < job.samples; i++) {
      const r = await once();
      samples.push(r.ms);
      if (r.status !== 200) non200++;
    }
    return { ...summarize(samples), non200 };
  } finally {
    agent.destroy();
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function summarize(samples: number[]): Omit<Sequential, 'non200'> {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    mean: sorted.reduce((s, x) => s + x, 0) / sorted.length,
    samples: sorted.length,
  };
}

/** In this fresh process: the shipped IP context table's load cost and lookups alone (µs). */
async function runIpTable(job: Extract<ClientJob, { kind: 'ip-table' }>): Promise<IpTableCost> {
  const v8 = await import('node:v8');
  const vm = await import('node:vm');
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const settle = () => {
    gc();
    gc();
    const m = process.memoryUsage();
    return { rss: m.rss, heap: m.heapUsed, external: m.external };
  };
  const { contextPackage } = await import('../../src/products/ip/context-package.ts');
  const { loadOrBuildContextTable } = await import('../../src/products/ip/packaged-context.ts');
  const { lookupAsn, tableBytes } = await import('../../src/products/ip/asn-table.ts');
  const pkg = contextPackage();
  if (!pkg) throw new Error('the IP context packages are not installed');
  const before = settle();
  const t0 = performance.now();
  const { table, origin } = await loadOrBuildContextTable(pkg);
  const loadMs = performance.now() - t0;
  const after = settle();
  const MB = 1024 * 1024;
  const time = (draw: () => bigint, version: 4 | 6) => {
    const samples: number[] = [];
    for (let i = 0; i < 1000; i++) lookupAsn(table, version, draw());
    for (let i = 0; i < job.samples; i++) {
      const value = draw();
      const t = performance.now();
      lookupAsn(table, version, value);
      samples.push((performance.now() - t) * 1000);
    }
    return summarize(samples);
  };
  const rand32 = () => BigInt(Math.floor(Math.random() * 2 ** 32));
  // IPv6: uniform addresses inside the table's ranges (uniform over 2000::/3 would nearly always miss).
  const t6 = table.asn6;
  const in6 = () => {
    const o = Math.floor(Math.random() * t6.rows) * 4;
    let v = 0n;
    for (let w = 0; w < 4; w++) v = (v << 32n) | BigInt(t6.starts[o + w]!);
    return v + BigInt(Math.floor(Math.random() * 256));
  };
  return {
    loadMs,
    origin,
    rssMB: (after.rss - before.rss) / MB,
    heapMB: (after.heap - before.heap) / MB,
    externalMB: (after.external - before.external) / MB,
    tableMB: tableBytes(table) / MB,
    v4: time(rand32, 4),
    v6: time(in6, 6),
  };
}

if (process.argv[2] === '--client') {
  const job = JSON.parse(process.argv[3]!) as ClientJob;
  const measured =
    job.kind === 'load'
      ? await runLoad(job)
      : job.kind === 'ip-table'
        ? await runIpTable(job)
        : await runSequential(job);
  process.stdout.write(`${JSON.stringify(measured)}\n`);
  process.exit(0);
}

// ---------------------------------------------------------------------------
// Bench (server and DNS lab in this process)

const root = path.resolve(import.meta.dirname, '../..');
const log = (msg: string): void => {
  process.stderr.write(`[bench] ${msg}\n`);
};

const runner = clientRunner(path.join(root, 'test/bench/inline-lookups.ts'), root, log);
const runClient = <T>(job: ClientJob) => runner.run<T>(job);

/** One request of a scenario must answer 200 with a completed envelope before it is measured. */
async function sanity(url: string, key: string, s: Scenario): Promise<void> {
  const res = await fetch(`${url}${s.path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${key}`,
      'idempotency-key': `sanity-${randomBytes(6).toString('hex')}`,
    },
    body: s.body,
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`sanity: ${s.name} answered ${res.status}: ${text}`);
  const env = JSON.parse(text) as { status?: string; result?: Record<string, unknown> };
  if (env.status !== 'completed')
    throw new Error(`sanity: ${s.name} answered 200 with envelope status ${env.status}: ${text}`);
  // The DNS scenarios must really have gone through the lab.
  if (s.name === 'ip+reverse' && JSON.stringify(env.result?.ptr) !== '["localhost.lab.test"]') {
    throw new Error(`sanity: ip+reverse got ptr ${JSON.stringify(env.result?.ptr)}, expected ["localhost.lab.test"]`);
  }
  if (s.name === 'ip+context') {
    const context = env.result?.context as { asn?: unknown } | null | undefined;
    if (context?.asn !== 15169) throw new Error(`sanity: ip+context got ${JSON.stringify(context)}, expected AS15169`);
  }
  if (s.name === 'dns') {
    const records = env.result?.records as Record<string, { outcome: string }> | undefined;
    const a = records?.A;
    if (a?.outcome !== 'answer')
      throw new Error(`sanity: dns lab.test A outcome ${a?.outcome}, expected answer: ${text}`);
  }
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
  const { createResolver } = await import('../../src/dns/stub-resolver.ts');
  const { dnsTypes } = await import('../../src/products/dns-lookup/index.ts');
  const { startLabDns } = await import('../lab/dns-server.ts');
  const { pino } = await import('pino');

  const { databaseUrl: serverUrl, redisUrl } = await ensureServices({ root });
  const suffix = `${runTimestamp(new Date())}_${randomBytes(3).toString('hex')}`;
  const dbName = `lss_bench_${suffix}`;
  const keyPrefix = `lssbench:${suffix}:`;
  let server: http.Server | null = null;
  let closeDeps: (() => Promise<void>) | null = null;
  let closeLab: (() => Promise<void>) | null = null;
  let dbCreated = false;
  try {
    const lab = await startLabDns();
    closeLab = () => lab.close();
    const databaseUrl = await createDatabase(serverUrl, dbName);
    dbCreated = true;
    log(`database ${dbName}; Redis ${redisUrl} prefix ${keyPrefix}; DNS lab ${lab.address}`);
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
      DNS_SERVERS: lab.address,
      DNS_TIMEOUT_MS: String(DNS_TIMEOUT_MS),
      ALLOW_SPECIAL_USE_DOMAINS: LAB_SPECIAL_USE,
    });
    const deps = await createDeps(config, pino({ level: 'silent' }));
    closeDeps = () => deps.close();

    const full = await listen(createApp(deps));
    server = full.server;

    const ws = await createWorkspace(deps.db, { name: 'bench-lookups' });
    const { key } = await createKey(deps.db, config.KEY_PEPPER, { workspace: ws.workspaceId });
    const raised = { perMinute: 10_000_000, perHour: 600_000_000 };
    await setLimits(deps.db, ws.workspaceId, undefined, {
      app: { perMinute: 10_000_000, burst: 1_000_000 },
      products: Object.fromEntries([...new Set(SCENARIOS.map((s) => s.product))].map((p) => [p, raised])),
    });

    // Sanity: every scenario answers 200 (and a completed envelope) before anything is measured.
    for (const s of SCENARIOS) await sanity(full.url, key, s);

    const results: Array<[Scenario, Measured]> = [];
    for (const s of SCENARIOS) {
      log(`${s.name}: POST ${s.path} ${s.body}: ${WARMUP_S} s warm-up + ${DURATION_S} s`);
      const m = await runClient<Measured>({
        kind: 'load',
        url: full.url,
        key,
        path: s.path,
        body: s.body,
        warmupS: WARMUP_S,
        durationS: DURATION_S,
      });
      results.push([s, m]);
    }

    log(`DNS latency over HTTP: ${SEQ_WARMUP} warm-up + ${DNS_HTTP_SAMPLES} sequential requests`);
    const httpDns = await runClient<Sequential>({
      kind: 'sequential',
      url: full.url,
      key,
      path: DNS_SCENARIO.path,
      body: DNS_SCENARIO.body,
      warmup: SEQ_WARMUP,
      samples: DNS_HTTP_SAMPLES,
    });

    log(
      `resolver alone: ${SEQ_WARMUP} warm-up + ${RESOLVER_SAMPLES} sequential queries (lab.test A), then the eight types concurrently`,
    );
    const resolver = createResolver(config);
    const timeQueries = async (n: number, one: () => Promise<boolean>) => {
      for (let i = 0; i < SEQ_WARMUP; i++) await one();
      const samples: number[] = [];
      let bad = 0;
      for (let i = 0; i < n; i++) {
        if (runner.interrupted) throw new Error('interrupted');
        const t0 = performance.now();
        const ok = await one();
        samples.push(performance.now() - t0);
        if (!ok) bad++;
      }
      return { ...summarize(samples), bad };
    };
    const resolverA = await timeQueries(
      RESOLVER_SAMPLES,
      async () => (await resolver.query('lab.test', 'A')).outcome === 'answer',
    );
    const resolver8 = await timeQueries(DNS_HTTP_SAMPLES, async () => {
      const rs = await Promise.all(dnsTypes.map((t) => resolver.query('lab.test', t)));
      return rs.every((r) => r.outcome !== 'timeout' && r.outcome !== 'error');
    });

    log(`IP context table: load and ${IP_TABLE_SAMPLES} lookups per family, in a fresh process`);
    const ipTable = await runClient<IpTableCost>({ kind: 'ip-table', samples: IP_TABLE_SAMPLES });

    report(results, httpDns, resolverA, resolver8, ipTable);
  } finally {
    if (server) {
      const s = server;
      await new Promise<void>((r) => {
        s.close(() => r());
        s.closeAllConnections();
      });
    }
    await closeDeps?.().catch((e: Error) => log(`warning: closing deps: ${e.message}`));
    await closeLab?.().catch((e: Error) => log(`warning: closing the DNS lab: ${e.message}`));
    if (dbCreated) {
      await dropDatabase(serverUrl, dbName).then(
        () => log(`dropped database ${dbName}`),
        (e: Error) => log(`warning: could not drop ${dbName}: ${e.message}`),
      );
    }
    await deletePrefixedKeys(redisUrl, keyPrefix).then(
      (n) => log(`deleted ${n} Redis key(s) with prefix ${keyPrefix}`),
      (e: Error) => log(`warning: could not delete Redis keys ${keyPrefix}*: ${e.message}`),
    );
  }
}

function table(head: string[], body: string[][]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)];
}

function report(
  rows: Array<[Scenario, Measured]>,
  httpDns: Sequential,
  resolverA: Omit<Sequential, 'non200'> & { bad: number },
  resolver8: Omit<Sequential, 'non200'> & { bad: number },
  ipTable: IpTableCost,
): void {
  const mac = rows.find(([s]) => s.name === 'mac')![1];
  const out: string[] = [];
  out.push('');
  out.push(
    `Inline lookups benchmark: ${CONNECTIONS} connections, ${WARMUP_S} s warm-up + ${DURATION_S} s per scenario, unique Idempotency-Key per request`,
  );
  out.push(
    `Node ${process.version}, ${os.availableParallelism()} CPUs (${os.cpus()[0]?.model ?? 'unknown'}), ${os.platform()}`,
  );
  out.push(
    "Server and DNS lab: in this one Node process, no cluster, loopback (the lab shares the server's event loop);",
  );
  out.push(`load generator: autocannon in a separate process. DNS_TIMEOUT_MS=${DNS_TIMEOUT_MS}.`);
  out.push('');
  out.push(
    ...table(
      ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'requests', 'non-2xx', 'not completed', 'errors', 'ratio to mac'],
      rows.map(([s, m]) => [
        s.name,
        fmt(m.rps, 0),
        fmt(m.p50),
        fmt(m.p99),
        String(m.requests),
        String(m.non2xx),
        String(m.notCompleted),
        String(m.errors + m.timeouts),
        fmt(m.rps / mac.rps),
      ]),
    ),
  );
  out.push('("not completed": 2xx answers whose envelope status was not "completed", e.g. a DNS query that timed out)');
  out.push('');
  out.push('DNS latency, sequential (one request or query in flight), against the lab:');
  out.push(
    ...table(
      ['measurement', 'samples', 'p50 ms', 'p99 ms', 'mean ms', 'failed'],
      [
        [
          `POST ${DNS_SCENARIO.path} lab.test (client-side, HTTP)`,
          String(httpDns.samples),
          fmt(httpDns.p50, 3),
          fmt(httpDns.p99, 3),
          fmt(httpDns.mean, 3),
          String(httpDns.non200),
        ],
        [
          'resolver alone: query(lab.test, A)',
          String(resolverA.samples),
          fmt(resolverA.p50, 3),
          fmt(resolverA.p99, 3),
          fmt(resolverA.mean, 3),
          String(resolverA.bad),
        ],
        [
          'resolver alone: the 8 types concurrently',
          String(resolver8.samples),
          fmt(resolver8.p50, 3),
          fmt(resolver8.p99, 3),
          fmt(resolver8.mean, 3),
          String(resolver8.bad),
        ],
      ],
    ),
  );
  out.push(
    `HTTP path adds (p50): ${fmt(httpDns.p50 - resolver8.p50, 3)} ms over the eight concurrent queries, ${fmt(httpDns.p50 - resolverA.p50, 3)} ms over one query.`,
  );
  out.push('');
  out.push(
    `IP context table (shipped dataset), in a fresh process: loaded from ${ipTable.origin} in ${fmt(ipTable.loadMs, 1)} ms; typed arrays ${fmt(ipTable.tableMB, 1)} MB; after GC: RSS +${fmt(ipTable.rssMB, 1)} MB, heap +${fmt(ipTable.heapMB, 1)} MB, external +${fmt(ipTable.externalMB, 1)} MB`,
  );
  out.push(
    ...table(
      ['lookupAsn alone', 'samples', 'p50 µs', 'p99 µs', 'mean µs'],
      [
        ['IPv4, uniform over 2^32', ipTable.v4, 'v4'],
        ['IPv6, inside the table ranges', ipTable.v6, 'v6'],
      ].map(([label, m]) => {
        const r = m as Omit<Sequential, 'non200'>;
        return [label as string, String(r.samples), fmt(r.p50, 2), fmt(r.p99, 2), fmt(r.mean, 2)];
      }),
    ),
  );
  out.push('(each lookup timed alone with performance.now(); the timer itself costs a fraction of a µs)');
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
