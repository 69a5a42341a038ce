// `npm run bench:scale` = `node test/bench/scale.ts [--redis cluster|single] [--jobs N]`: what
// adding processes of a role buys, as ratios measured in one run (DESIGN.md "LoadResult, not
// assumed"), on a 3-master Redis Cluster started on loopback (default) or the single Redis.
//
// Each configuration runs twice, in A-B-B-A order, and the ratios compare the means.
//
//   (1) lane task throughput, 1 vs 3 `node workers/lane.ts domain` processes: N domain-lookup jobs
//       (3 tasks each, against the lab: DNS and RDAP on loopback) are accepted and planned by an
//       orchestrator, which then stops; their lane entries are taken off the stream. The lane
//       processes start and heartbeat and run a few warm-up jobs unmeasured; then every task is
//       put back at once (enqueueTasks) and the clock runs until MySQL says every task finished. Included: the lane runner's whole work
//       per task (load, tenant permit, claim, the check, persist outcome/objects/findings, the
//       results notice + ack MULTI). Excluded: planning and applying results (the orchestrator).
//   (2) admission throughput, 1 vs 2 `node src/server.ts` processes (WEB_CONCURRENCY=1 each):
//       POST /v2/lookups/mac with a unique Idempotency-Key per request (the full admission chain:
//       auth, limits + lease in one script, the lookup, the committed reply), 2 s warm-up + 8 s,
//       50 connections split over the processes, 8 applications (rate-limit tags on different
//       shards), from autocannon in a separate process.
//
//   --budget (issue 48 item 2): instead of (1) and (2), two of every Procfile role (web with its
//       WEB_CONCURRENCY workers, orchestrator, lane-dns, -mail, -web, -domain, -active) on a private
//       MariaDB started with --max-connections=151, the roles told the deployment's shape
//       (DATABASE_MAX_CONNECTIONS=151, WEB_PROCESSES=2, ORCHESTRATOR_PROCESSES=2, LANE_PROCESSES=2);
//       a burst of --jobs (default 200) async jobs (domain, mail and web lookups, quick scans)
//       submitted over both web processes, 16 at once. Reports the server's refusals
//       (Connection_errors_max_connections, Aborted_connects), its peak (Max_used_connections), the
//       roles' own local failures (lss_db_local_failures_total), and the jobs and tasks by outcome.
//
// On this machine every process of (1) and (2), MySQL, the Redis nodes, the lab and the load
// generator share the same cores: the ratios say how much of the extra processes' work the
// cores can still absorb, not how far a deployment with a core per process scales. The single-
// writer points a larger deployment meets first are printed with the figures.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import { clientRunner, fmt, runBench, summarize, type LoadResult } from './bench-kit.ts';

const root = path.resolve(import.meta.dirname, '../..');
const arg = (flag: string): string | undefined => {
  const i = process.argv.indexOf(flag);
  return i < 0 ? undefined : process.argv[i + 1];
};
const BUDGET = process.argv.includes('--budget');
// The budget run asks nothing of Redis's scale-out: one Redis unless told otherwise.
const REDIS_MODE = (arg('--redis') ?? (BUDGET ? 'single' : 'cluster')) as 'cluster' | 'single';
const JOBS = Number(arg('--jobs') ?? (BUDGET ? 200 : 400));
/**
 * Rounds in A-B-B-A order, each configuration's figure the mean of its two rounds: a drift in the
 * machine's background load during the run (other users of the cores) cancels out.
 */
const LANE_PROCS = [1, 3, 3, 1];
const WEB_PROCS = [1, 2, 2, 1];
const WORKSPACES = 16;
const LANE_CONCURRENCY = 16;
const APPS = 8;
const CONNECTIONS = 50;
const WARMUP_S = 2;
const DURATION_S = 8;
const MAC_PATH = '/v2/lookups/mac';
const BODY = JSON.stringify({ value: 'F4:F5:E8:12:34:56' });
const LANE_TIMEOUT_MS = 300_000;
/** Jobs run first in each lane round, unmeasured: every process JIT-warm before the clock starts. */
const WARM_JOBS = 30;

/** Busy share of all cores between two os.cpus() snapshots. */
function cpuBusy(a: os.CpuInfo[], b: os.CpuInfo[]): number {
  let busy = 0;
  let total = 0;
  b.forEach((c, i) => {
    const p = a[i]!.times;
    const d = {
      user: c.times.user - p.user,
      nice: c.times.nice - p.nice,
      sys: c.times.sys - p.sys,
      idle: c.times.idle - p.idle,
      irq: c.times.irq - p.irq,
    };
    busy += d.user + d.nice + d.sys + d.irq;
    total += d.user + d.nice + d.sys + d.irq + d.idle;
  });
  return total > 0 ? busy / total : 0;
}

const log = (msg: string): void => {
  process.stderr.write(`[bench] ${msg}\n`);
};

interface LaneRow {
  procs: number;
  tasks: number;
  seconds: number;
  rate: number;
  /** Busy share of all cores while measured. */
  busy: number;
  notCompleted: number;
}

interface ClientJob {
  urls: string[];
  keys: string[];
  warmupS: number;
  durationS: number;
}

// ---------------------------------------------------------------------------
// Load generator (child process): one autocannon per web process, connections split evenly.

async function runClient(job: ClientJob): Promise<LoadResult> {
  const run = (durationS: number) =>
    Promise.all(
      job.urls.map((url, u) => {
        let n = 0;
        const tag = randomBytes(4).toString('hex');
        return autocannon({
          url,
          connections: Math.round(CONNECTIONS / job.urls.length),
          duration: durationS,
          requests: [
            {
              method: 'POST',
              path: MAC_PATH,
              headers: { 'content-type': 'application/json' },
              body: BODY,
              setupRequest: (req) => {
                const i = n++;
                req.headers = {
                  ...req.headers,
                  authorization: `Bearer ${job.keys[i % job.keys.length]}`,
                  'idempotency-key': `scale-${tag}-${u}-${i}`,
                };
                return req;
              },
            },
          ],
        });
      }),
    );
  if (job.warmupS > 0) await run(job.warmupS);
  // Per-process percentiles, the worse one: a single figure that never flatters.
  return summarize(await run(job.durationS));
}

if (process.argv[2] === '--client') {
  process.stdout.write(`${JSON.stringify(await runClient(JSON.parse(process.argv[3]!) as ClientJob))}\n`);
  process.exit(0);
}

// ---------------------------------------------------------------------------
// Bench

const runner = clientRunner(path.join(root, 'test/bench/scale.ts'), root, log);

async function main(): Promise<void> {
  const { createDatabase, deletePrefixedKeys, dropDatabase, ensureServices, runTimestamp } = await import(
    '../../ops/services.ts'
  );
  const { startRedisCluster } = await import('../../ops/redis-cluster.ts');
  const { ProcessGroup, freePort, until } = await import('../helpers/processes.ts');
  const { startLab } = await import('../lab/serve.ts');
  const { rdapNames } = await import('../lab/rdap-fixtures.ts');
  const { migrate } = await import('../../src/db/migrations.ts');
  const { parseConfig } = await import('../../src/config/config.ts');
  const { createDb } = await import('../../src/db/database.ts');
  const { createKey, createWorkspace, setLimits } = await import('../../src/auth/tenancy-repo.ts');
  const { Authenticator } = await import('../../src/auth/authenticator.ts');
  const { grantCredits } = await import('../../src/credits/ledger.ts');
  const { acceptJob, markOutboxPublished } = await import('../../src/jobs/jobs-repo.ts');
  const { publishJob, queueKeys, streams } = await import('../../src/queue/streams.ts');
  const { enqueueTasks } = await import('../../src/queue/task-enqueue.ts');
  const { closeRedis, createRedis, redisReady, redisTarget } = await import('../../src/redis/client.ts');
  type Client = ReturnType<typeof createRedis>;
  // The domain lane's job streams (one per job), and their entries in all.
  const laneJobKeys = async (r: Client) =>
    ((await r.zrange(queueKeys.laneJobs('domain'), '0', '-1')) as string[]).map((j) =>
      streams.laneJob('domain', Number(j)),
    );
  const laneLength = async (r: Client) => {
    let n = 0;
    for (const k of await laneJobKeys(r)) n += await r.xlen(k);
    return n;
  };

  const loadAtStart = os.loadavg();
  const { databaseUrl: serverUrl, redisUrl } = await ensureServices({ root });
  const suffix = `${runTimestamp(new Date())}_${randomBytes(3).toString('hex')}`;
  const dbName = `lss_benchscale_${suffix}`;
  const basePrefix = `lssbench:${suffix}:`;
  const procs = new ProcessGroup();
  let cluster: Awaited<ReturnType<typeof startRedisCluster>> | undefined;
  let lab: Awaited<ReturnType<typeof startLab>> | undefined;
  let dbh: ReturnType<typeof createDb> | undefined;
  try {
    if (REDIS_MODE === 'cluster') cluster = await startRedisCluster({ root, log });
    lab = await startLab();
    if (BUDGET) {
      await budgetBurst({
        lab,
        procs,
        redisEnv: cluster
          ? { REDIS_CLUSTER_NODES: cluster.seeds, REDIS_URL: undefined }
          : { REDIS_URL: redisUrl, REDIS_CLUSTER_NODES: undefined },
        prefix: `${basePrefix}budget:`,
      });
      return;
    }
    const databaseUrl = await createDatabase(serverUrl, dbName);
    await migrate(databaseUrl);
    log(`database ${dbName}; Redis ${cluster ? `Cluster ${cluster.seeds}` : redisUrl}`);
    const env: Record<string, string | undefined> = {
      ...lab.env,
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl,
      ...(cluster
        ? { REDIS_CLUSTER_NODES: cluster.seeds, REDIS_URL: undefined }
        : { REDIS_URL: redisUrl, REDIS_CLUSTER_NODES: undefined }),
      KEY_PEPPER: randomBytes(32).toString('base64url'),
      CURSOR_SECRET: randomBytes(32).toString('base64url'),
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64url'),
      LOG_LEVEL: 'warn',
      METRICS_PORT: '0',
      LANE_POOL_THREADS: '0',
      LANE_CONCURRENCY: String(LANE_CONCURRENCY),
      WEB_CONCURRENCY: '1',
      SHUTDOWN_TIMEOUT_MS: '3000',
    };
    const config = parseConfig({ ...process.env, ...env, REDIS_KEY_PREFIX: basePrefix });
    dbh = createDb(databaseUrl);
    const db = dbh.db;
    const target = redisTarget(config);

    // Tenants: one application per workspace, generous limits, enough credits.
    const tenants = [];
    for (let i = 0; i < WORKSPACES; i++) {
      const ws = await createWorkspace(db, { name: `scale-${i}` });
      const key = await createKey(db, config.KEY_PEPPER, { workspace: ws.workspaceId });
      await setLimits(db, ws.workspaceId, undefined, {
        app: { perMinute: 10_000_000, burst: 1_000_000 },
        products: {
          'lookup.mac.v1': { perMinute: 10_000_000, perHour: 600_000_000 },
          'lookup.domain.v1': { perMinute: 10_000_000, perHour: 600_000_000 },
        },
      });
      const principal = (await new Authenticator(db, config.KEY_PEPPER, 0).verify(key.key))!;
      await grantCredits(db, principal.workspaceId, 1_000_000, `grant:${ws.workspaceId}`);
      tenants.push({ key: key.key, principal });
    }

    // (1) lane task throughput
    const names = [rdapNames.registered, rdapNames.signed, rdapNames.expiringSoon];
    const laneRows: LaneRow[] = [];
    for (const [round, k] of LANE_PROCS.entries()) {
      const prefix = `${basePrefix}lanes${round}:`;
      const roundEnv = { ...env, REDIS_KEY_PREFIX: prefix };
      const redis = createRedis(target, prefix);
      redis.on('error', () => {});
      await redisReady(redis);
      try {
        log(`(1) round ${round + 1}, ${k} lane process(es): planning ${WARM_JOBS} + ${JOBS} jobs`);
        const orchestrator = procs.node(`orchestrator(${round})`, ['workers/orchestrator.ts'], roundEnv);
        const jobIds: number[] = [];
        for (let i = 0; i < WARM_JOBS + JOBS; i++) {
          const t = tenants[i % WORKSPACES]!;
          const name = names[i % names.length]!;
          const a = await acceptJob(db, {
            principal: t.principal,
            product: 'lookup.domain.v1',
            target: { type: 'domain_name', value: name },
            profile: null,
            input: { value: name },
            price: 2,
            deadlineMs: 3_600_000,
            requestId: `req_scale_${round}_${i}`,
            claim: undefined,
          });
          await publishJob(redis, a.jobId, 'plan');
          await markOutboxPublished(db, a.jobId, 'plan');
          jobIds.push(a.jobId);
        }
        const planned = await until(
          'every job planned',
          async () => {
            const rows = await db
              .selectFrom('tasks')
              .select(['id', 'job_id', 'lane'])
              .where('job_id', 'in', jobIds)
              .execute();
            return rows.length === jobIds.length * 3 && (await laneLength(redis)) === rows.length ? rows : null;
          },
          120_000,
          200,
        );
        await orchestrator.stop('SIGTERM');
        // Off the stream until every lane process reads it: the clock then measures work only.
        // (The job streams stay listed in the lane's set: the readers find them when they start.)
        for (const k of await laneJobKeys(redis)) await redis.del(k);
        const lanes = Array.from({ length: k }, (_, i) =>
          procs.node(`lane-domain#${i}(${round})`, ['workers/lane.ts', 'domain'], roundEnv),
        );
        await until(
          `${k} lane process(es) heartbeating`,
          async () =>
            (await redis.zrangebyscore(queueKeys.laneAlive('domain'), Date.now() - 10_000, '+inf')).length === k,
          60_000,
          100,
        );
        const run = async (ids: number[]): Promise<number> => {
          const refs = planned
            .filter((t) => ids.includes(Number(t.job_id)))
            .map((t) => ({ id: Number(t.id), jobId: Number(t.job_id), lane: t.lane }));
          await enqueueTasks(redis, refs);
          await until(
            'every task finished',
            async () => {
              const open = await sql<{
                n: number;
              }>`SELECT COUNT(*) AS n FROM tasks WHERE job_id IN (${sql.join(ids)}) AND status IN ('pending', 'running')`.execute(
                db,
              );
              return Number(open.rows[0]!.n) === 0;
            },
            LANE_TIMEOUT_MS,
            50,
          );
          return refs.length;
        };
        await run(jobIds.slice(0, WARM_JOBS));
        const measured = jobIds.slice(WARM_JOBS);
        const cpuBefore = os.cpus();
        const started = performance.now();
        const n = await run(measured);
        const seconds = (performance.now() - started) / 1000;
        const busy = cpuBusy(cpuBefore, os.cpus());
        const notCompleted = await sql<{
          n: number;
        }>`SELECT COUNT(*) AS n FROM tasks WHERE job_id IN (${sql.join(measured)}) AND status <> 'completed'`.execute(
          db,
        );
        laneRows.push({
          procs: k,
          tasks: n,
          seconds,
          rate: n / seconds,
          busy,
          notCompleted: Number(notCompleted.rows[0]!.n),
        });
        log(`(1) ${k} lane process(es): ${n} tasks in ${fmt(seconds)} s`);
        await Promise.all(lanes.map((p) => p.stop('SIGTERM')));
      } finally {
        await closeRedis(redis);
      }
    }

    // (2) admission throughput
    const webRows: Array<{ procs: number; m: LoadResult; busy: number }> = [];
    const keys = tenants.slice(0, APPS).map((t) => t.key);
    for (const [round, k] of WEB_PROCS.entries()) {
      const roundEnv = { ...env, REDIS_KEY_PREFIX: `${basePrefix}web${round}:` };
      const urls: string[] = [];
      const webs = [];
      for (let i = 0; i < k; i++) {
        const port = await freePort();
        webs.push(procs.node(`web#${i}(${round})`, ['src/server.ts'], { ...roundEnv, PORT: String(port) }));
        urls.push(`http://127.0.0.1:${port}`);
      }
      for (const url of urls) {
        await until(
          `${url} ready`,
          async () => (await fetch(`${url}/readyz`).catch(() => null))?.ok === true,
          60_000,
          200,
        );
        const sanity = await fetch(`${url}${MAC_PATH}`, {
          method: 'POST',
          body: BODY,
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${keys[0]}`,
            'idempotency-key': `sanity-${randomBytes(4).toString('hex')}`,
          },
        });
        if (sanity.status !== 200) throw new Error(`${url} answered ${sanity.status}: ${await sanity.text()}`);
      }
      log(`(2) round ${round + 1}, ${k} web process(es): ${WARMUP_S} s warm-up + ${DURATION_S} s`);
      // The busy share covers the warm-up too: the same for both rounds.
      const cpuBefore = os.cpus();
      const m = await runner.run<LoadResult>({
        urls,
        keys,
        warmupS: WARMUP_S,
        durationS: DURATION_S,
      } satisfies ClientJob);
      webRows.push({ procs: k, m, busy: cpuBusy(cpuBefore, os.cpus()) });
      await Promise.all(webs.map((p) => p.stop('SIGTERM')));
    }

    report(
      laneRows,
      webRows,
      loadAtStart,
      cluster ? `a 3-master Redis Cluster on loopback (${cluster.seeds})` : `one Redis (${redisUrl})`,
    );
  } finally {
    await procs.killAll();
    await dbh?.close().catch(() => {});
    await lab?.close().catch(() => {});
    await dropDatabase(serverUrl, dbName).then(
      () => log(`dropped database ${dbName}`),
      (e: Error) => log(`warning: could not drop ${dbName}: ${e.message}`),
    );
    if (cluster) await cluster.stop().then(() => log('stopped the Redis Cluster'));
    else
      await deletePrefixedKeys(redisUrl, basePrefix).catch((e: Error) =>
        log(`warning: could not delete Redis keys ${basePrefix}*: ${e.message}`),
      );
  }
}

// ---------------------------------------------------------------------------
// --budget: two of every role within one connection budget

const BUDGET_MAX_CONNECTIONS = 151;
const BUDGET_SUBMITTERS = 16;
const BUDGET_TERMINAL_MS = 600_000;
const TERMINAL_STATES = ['completed', 'partial', 'failed', 'cancelled', 'unavailable'];
const LANE_ROLES = ['dns', 'mail', 'web', 'domain', 'active'] as const;

async function budgetBurst(opts: {
  lab: { env: Record<string, string> };
  procs: InstanceType<typeof import('../helpers/processes.ts')['ProcessGroup']>;
  redisEnv: Record<string, string | undefined>;
  prefix: string;
}): Promise<void> {
  const { createDatabase, startBenchMariadb } = await import('../../ops/services.ts');
  const { freePort, until } = await import('../helpers/processes.ts');
  const { rdapNames } = await import('../lab/rdap-fixtures.ts');
  const { mailLab } = await import('../lab/mail-zones.ts');
  const { webUrl } = await import('../lab/web-hosts.ts');
  const { CHANGES_ZONE } = await import('../lab/changes-lab.ts');
  const { migrate } = await import('../../src/db/migrations.ts');
  const { parseConfig } = await import('../../src/config/config.ts');
  const { connectionPlan, describePlan } = await import('../../src/config/connection-budget.ts');
  const { createDb } = await import('../../src/db/database.ts');
  const { createKey, createWorkspace, setLimits, workspaceInternalId } = await import('../../src/auth/tenancy-repo.ts');
  const { grantCredits } = await import('../../src/credits/ledger.ts');
  const { createRedis, closeRedis, redisReady, redisTarget } = await import('../../src/redis/client.ts');
  const { queueKeys } = await import('../../src/queue/streams.ts');
  const { procs } = opts;

  const dir = path.join(os.tmpdir(), `lss-bench-budget-${randomBytes(4).toString('hex')}`);
  const mariadb = await startBenchMariadb({
    dir,
    port: await freePort(),
    maxConnections: BUDGET_MAX_CONNECTIONS,
    log,
  });
  const probe = { h: undefined as ReturnType<typeof createDb> | undefined };
  try {
    const databaseUrl = await createDatabase(mariadb.url, 'lss_scale_budget');
    await migrate(databaseUrl);
    probe.h = createDb(databaseUrl, { connectionLimit: 1 });
    const db = probe.h.db;
    const status = async (name: string) =>
      Number((await sql<{ Value: string }>`SHOW GLOBAL STATUS LIKE ${name}`.execute(db)).rows[0]?.Value ?? 0);
    const maxConn = Number(
      (await sql<{ Value: string }>`SHOW VARIABLES LIKE 'max_connections'`.execute(db)).rows[0]?.Value,
    );
    const env: Record<string, string | undefined> = {
      ...opts.lab.env,
      ...opts.redisEnv,
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl,
      REDIS_KEY_PREFIX: opts.prefix,
      KEY_PEPPER: randomBytes(32).toString('base64url'),
      CURSOR_SECRET: randomBytes(32).toString('base64url'),
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64url'),
      LOG_LEVEL: 'warn',
      SHUTDOWN_TIMEOUT_MS: '3000',
      // The deployment: two of every role, and the budget they share.
      DATABASE_MAX_CONNECTIONS: String(BUDGET_MAX_CONNECTIONS),
      WEB_PROCESSES: '2',
      ORCHESTRATOR_PROCESSES: '2',
      LANE_PROCESSES: '2',
      DATABASE_BUDGET_STRICT: 'true',
    };
    const config = parseConfig({ ...process.env, ...env });
    const plan = connectionPlan(config);
    log(`budget: ${describePlan(plan)}; server max_connections ${maxConn}`);

    // Tenants: generous limits for the four products, credits for every job.
    const WORKSPACES = 4;
    const keys: string[] = [];
    for (let i = 0; i < WORKSPACES; i++) {
      const ws = await createWorkspace(db, {
        name: `budget-${i}`,
        acceptResponsibleUse: config.RESPONSIBLE_USE_VERSION,
      });
      await setLimits(db, ws.workspaceId, undefined, {
        app: { perMinute: 10_000_000, burst: 1_000_000 },
        products: Object.fromEntries(
          ['lookup.domain.v1', 'lookup.mail.v1', 'lookup.web.v1', 'scan.recursive.v1'].map((p) => [
            p,
            { perMinute: 10_000_000, perHour: 600_000_000 },
          ]),
        ),
      });
      await grantCredits(db, await workspaceInternalId(db, ws.workspaceId), 1_000_000, `grant:${ws.workspaceId}`);
      keys.push((await createKey(db, config.KEY_PEPPER, { workspace: ws.workspaceId })).key);
    }

    // The server's counters from here: the roles' start-up is part of what is measured.
    await sql`FLUSH STATUS`.execute(db);
    const before = {
      refused: await status('Connection_errors_max_connections'),
      aborted: await status('Aborted_connects'),
    };
    const metricsPorts: Array<{ role: string; port: number }> = [];
    const role = async (name: string, args: string[], extra: Record<string, string> = {}) => {
      const port = await freePort();
      metricsPorts.push({ role: name, port });
      return procs.node(name, args, { ...env, METRICS_PORT: String(port), ...extra });
    };
    const webPorts: number[] = [];
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      webPorts.push(port);
      await role(`web#${i}`, ['src/server.ts'], { PORT: String(port) });
      await role(`orchestrator#${i}`, ['workers/orchestrator.ts']);
      for (const lane of LANE_ROLES) await role(`lane-${lane}#${i}`, ['workers/lane.ts', lane]);
    }
    const redis = createRedis(redisTarget(config), opts.prefix);
    redis.on('error', () => {});
    await redisReady(redis);
    const fail = (err: Error) => {
      throw new Error(`${err.message}\n${procs.report(2000)}`);
    };
    try {
      await until(
        'every role heartbeating and both web processes ready',
        async () => {
          for (const r of [...LANE_ROLES, 'orchestrator'] as const) {
            const alive = await redis.zrangebyscore(queueKeys.laneAlive(r), Date.now() - 10_000, '+inf');
            if (alive.length < 2) return false;
          }
          for (const port of webPorts) {
            const r = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null);
            if (!r?.ok) return false;
          }
          return true;
        },
        120_000,
        250,
      ).catch(fail);
    } finally {
      await closeRedis(redis);
    }
    log(`14 roles up; firing ${JOBS} jobs over 2 web processes, ${BUDGET_SUBMITTERS} at once`);

    // The burst: domain, mail and web lookups and a quick scan in turn. A 503 is retried with the
    // same Idempotency-Key (what the SDK does) and counted.
    const bodies = (i: number): [string, unknown] => {
      switch (i % 10) {
        case 0:
          return [
            '/v2/scans',
            {
              profile: 'quick',
              target: { type: 'domain_name', value: CHANGES_ZONE },
              options: { active: false, maxCredits: 100 },
            },
          ];
        case 1:
        case 2:
        case 3:
          return ['/v2/lookups/mail', { value: mailLab.good }];
        case 4:
        case 5:
          return ['/v2/lookups/web', { url: webUrl('strict') }];
        default:
          return [
            '/v2/lookups/domain',
            { value: [rdapNames.registered, rdapNames.signed, rdapNames.expiringSoon][i % 3] },
          ];
      }
    };
    const refs: string[] = [];
    const submitStatus = new Map<string, number>();
    let next = 0;
    const started = performance.now();
    const submitter = async () => {
      while (next < JOBS) {
        const i = next++;
        const [p, body] = bodies(i);
        const idem = `budget-${i}-${randomBytes(4).toString('hex')}`;
        for (let attempt = 0; ; attempt++) {
          const res = await fetch(`http://127.0.0.1:${webPorts[i % 2]}${p}`, {
            method: 'POST',
            headers: {
              Authorization: `Bearer ${keys[i % keys.length]}`,
              'Idempotency-Key': idem,
              'Content-Type': 'application/json',
            },
            body: JSON.stringify(body),
            signal: AbortSignal.timeout(60_000),
          }).catch((e: Error) => ({ status: 0, json: async () => ({ error: { code: e.name } }) }));
          const reply = (await res.json().catch(() => ({}))) as { jobRef?: string; error?: { code?: string } };
          const k = `${res.status}${reply.error?.code ? ` ${reply.error.code}` : ''}`;
          submitStatus.set(k, (submitStatus.get(k) ?? 0) + 1);
          if (res.status === 202) {
            refs.push(reply.jobRef!);
            break;
          }
          if ((res.status !== 503 && res.status !== 0) || attempt >= 10)
            throw new Error(`submission ${i} (${p}) answered ${res.status} ${JSON.stringify(reply)}`);
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    };
    await Promise.all(Array.from({ length: BUDGET_SUBMITTERS }, submitter)).catch(fail);
    const acceptedS = (performance.now() - started) / 1000;
    log(`${refs.length} accepted in ${fmt(acceptedS)} s; waiting for every job to be terminal`);

    let threadsPeak = 0;
    const jobs = await until(
      `${JOBS} jobs terminal`,
      async () => {
        threadsPeak = Math.max(threadsPeak, await status('Threads_connected'));
        const rows = await db.selectFrom('jobs').select(['id', 'public_id', 'product', 'status']).execute();
        const ours = rows.filter((r) => refs.includes(r.public_id));
        return ours.length === refs.length && ours.every((r) => TERMINAL_STATES.includes(r.status)) ? ours : null;
      },
      BUDGET_TERMINAL_MS,
      1000,
    ).catch(async (err: Error) => {
      const rows = await db.selectFrom('jobs').select(['status']).execute();
      log(
        `not all terminal: ${JSON.stringify(Object.fromEntries([...Map.groupBy(rows, (r) => r.status)].map(([k, v]) => [k, v.length])))}`,
      );
      return fail(err);
    });
    const terminalS = (performance.now() - started) / 1000;
    const tasks = await db
      .selectFrom('tasks')
      .select(['status', 'reason', 'lane'])
      .where(
        'job_id',
        'in',
        jobs.map((j) => j.id),
      )
      .execute();
    const after = {
      refused: await status('Connection_errors_max_connections'),
      aborted: await status('Aborted_connects'),
      maxUsed: await status('Max_used_connections'),
    };
    // Each role's own view: connections refused by the server or waits that ran out (ours).
    const localFailures: Record<string, number> = {};
    const limits: Record<string, number> = {};
    for (const { role: name, port } of metricsPorts) {
      const text = await fetch(`http://127.0.0.1:${port}/metrics`)
        .then((r) => r.text())
        .catch(() => '');
      for (const m of text.matchAll(/^lss_db_local_failures_total\{[^}]*code="([^"]+)"[^}]*\} (\d+)/gm))
        localFailures[`${name} ${m[1]}`] = Number(m[2]);
      const lim = /^lss_db_connection_limit\{[^}]*\} (\d+)/m.exec(text);
      if (lim) limits[name] = Number(lim[1]);
    }
    const count = <T>(xs: T[], key: (x: T) => string) =>
      Object.fromEntries([...Map.groupBy(xs, key)].map(([k, v]) => [k, v.length]));
    const jobsFailed = jobs.filter((j) => j.status === 'failed' || j.status === 'unavailable');
    const out: string[] = [''];
    out.push(`Connection budget: two of every role on one MariaDB (max_connections ${maxConn})`);
    out.push(`  plan: ${describePlan(plan)}`);
    out.push(`  pool limits seen on /metrics: ${JSON.stringify(limits)}`);
    out.push(
      `  burst: ${JOBS} jobs (${JSON.stringify(count(jobs, (j) => j.product))}), accepted in ${fmt(acceptedS)} s; submissions by reply ${JSON.stringify(Object.fromEntries(submitStatus))}`,
    );
    out.push(`  every job terminal after ${fmt(terminalS)} s: ${JSON.stringify(count(jobs, (j) => j.status))}`);
    out.push(`  tasks: ${JSON.stringify(count(tasks, (t) => `${t.status}${t.reason ? ` ${t.reason}` : ''}`))}`);
    out.push(
      `  server: Connection_errors_max_connections ${after.refused - before.refused}, Aborted_connects ${after.aborted - before.aborted}, Max_used_connections ${after.maxUsed} (Threads_connected peak sampled ${threadsPeak})`,
    );
    out.push(
      `  roles' local DB failures (lss_db_local_failures_total): ${Object.keys(localFailures).length ? JSON.stringify(localFailures) : 'none'}`,
    );
    const met = after.refused - before.refused === 0 && jobsFailed.length === 0;
    out.push(
      `  target (0 refused, every job terminal, none failed for want of a connection): ${met ? 'MET' : 'NOT MET'}${jobsFailed.length ? ` (${jobsFailed.length} failed/unavailable)` : ''}`,
    );
    process.stdout.write(`${out.join('\n')}\n`);
    process.exitCode = met ? 0 : 1;
  } finally {
    await procs.killAll();
    await probe.h?.close().catch(() => {});
    await mariadb.remove().catch((e: Error) => log(`warning: could not remove the bench MariaDB: ${e.message}`));
  }
}

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

function report(
  lanes: LaneRow[],
  webs: Array<{ procs: number; m: LoadResult; busy: number }>,
  loadAtStart: number[],
  redis: string,
): void {
  const out: string[] = [''];
  out.push(`Scale-out benchmark on ${redis}`);
  out.push(
    `Node ${process.version}, ${os.availableParallelism()} CPUs (${os.cpus()[0]?.model ?? 'unknown'}), load average at start ${loadAtStart.map((l) => fmt(l)).join(' ')}`,
  );
  out.push(
    'Every process below, MySQL, the Redis nodes, the lab and the load generator share these cores (and other users',
  );
  out.push(
    'of the machine, see the load average): with the cores saturated at one process, more processes cannot add work.',
  );
  out.push('');
  out.push(
    `(1) lane task throughput: ${lanes[0]?.tasks ?? 0} domain tasks (lab DNS + RDAP), LANE_CONCURRENCY=${LANE_CONCURRENCY} per process, ${WORKSPACES} workspaces`,
  );
  for (const r of lanes) {
    out.push(
      `    ${r.procs} lane process(es): ${fmt(r.rate, 0)} tasks/s (${fmt(r.seconds)} s, cores ${fmt(r.busy * 100, 0)}% busy${r.notCompleted ? `, ${r.notCompleted} not completed` : ''})`,
    );
  }
  const laneMean = (k: number) => mean(lanes.filter((r) => r.procs === k).map((r) => r.rate));
  const [l1, l3] = [LANE_PROCS[0]!, LANE_PROCS[1]!];
  out.push(`    ratio ${l3}/${l1} processes (means of the two rounds each) = ${fmt(laneMean(l3) / laneMean(l1))}`);
  out.push('');
  out.push(
    `(2) admission throughput: POST ${MAC_PATH}, unique Idempotency-Key, ${CONNECTIONS} connections, ${APPS} applications, WEB_CONCURRENCY=1 per process`,
  );
  for (const r of webs) {
    out.push(
      `    ${r.procs} web process(es): ${fmt(r.m.rps, 0)} req/s, p50 ${fmt(r.m.p50)} ms, p99 ${fmt(r.m.p99)} ms, cores ${fmt(r.busy * 100, 0)}% busy (${r.m.requests} requests, ${r.m.non2xx} non-2xx, ${r.m.errors} errors)`,
    );
  }
  const webMean = (k: number) => mean(webs.filter((r) => r.procs === k).map((r) => r.m.rps));
  const [w1, w2] = [WEB_PROCS[0]!, WEB_PROCS[1]!];
  out.push(`    ratio ${w2}/${w1} processes (means of the two rounds each) = ${fmt(webMean(w2) / webMean(w1))}`);
  out.push('');
  out.push('Single-writer points (what a deployment with a core per process meets first):');
  out.push(
    '  - MySQL: one primary takes every write (admission transaction, task claim and outcome, captures, the terminal CAS).',
  );
  out.push(
    "  - The orchestrator role: each job's planning, captures and finalization run under that job's row lock; several",
  );
  out.push(
    "    orchestrators share the work, but every job's steps are serialized and all of them write to the one MySQL.",
  );
  out.push(
    '  - The {lss} hash tag: the jobs stream (every accepted job and cancel), heartbeats and tick locks live on one shard.',
  );
  out.push(
    "  - One lane = one tag ({lss:lane:<lane>}): a lane's task stream, results stream and markers are on one shard;",
  );
  out.push(
    "    lanes spread over shards, one lane does not. Likewise one application's limits and leases ({lss:rl:<app>}).",
  );
  out.push('');
  process.stdout.write(`${out.join('\n')}\n`);
}

await runBench(main, runner, log);
