// `npm run bench:monitors` = `node test/bench/monitors.ts`: the monitor scheduler and the webhook
// delivery worker (CONTRACT §14; issue 29's targets), measured with the real roles as the Procfile
// starts them (`node src/server.ts` with one worker, `node workers/orchestrator.ts`) over a
// throwaway database and Redis prefix, figures as ratios taken in one run.
//
//   (A) BENCH_MONITORS (1,000) monitors of lookup.domain.v1 made due in the same instant: how long
//       after its due time each run starts (its job committed), on one orchestrator; and the p99
//       of ordinary requests (POST /v2/lookups/mac, a unique Idempotency-Key each, paced at
//       BENCH_RATE req/s, open loop, from a separate process) while they start, against the same
//       load before and after (A-B-A: the mean of the two baselines). Target: every run within 60 s
//       of its due time, p99 within ±10 %. No lane worker runs the jobs: a heartbeat stands in for
//       lane-domain, so the jobs are admitted and planned (what "start" means) but never executed,
//       and nothing leaves loopback.
//   (B) BENCH_EVENTS (10,000) pending events of BENCH_EVENT_MONITORS (100) monitors, all posting to
//       one receiver on loopback https (a lab CA certificate) that answers 204 after 200 ms: the
//       drain rate in events/s. Target ≥ 200 events/s. Every attempt is a new TLS connection
//       through the outbound guard (nothing is pooled across attempts), as in production.
//   (C) a live monitor's BENCH_LIVE (1,000) events to that receiver, drained alone, then again
//       behind a dead endpoint's backlog of BENCH_DEAD (10,000) events (a listener that accepts
//       TCP and never answers: every attempt waits its 10 s); the live drain rate with the
//       backlog over the rate alone. Target ≥ 0.9.
//   (D) the delivery worker's "which monitors have events due" (every 500 ms per orchestrator,
//       src/jobs/monitors/deliveries-repo.ts) with BENCH_IDLE_MONITORS (100,000) idle monitors and
//       BENCH_IDLE_EVENTS (1,000,000) delivered events (made by INSERT … SELECT in SQL), nothing
//       due: its EXPLAIN and its time, median and p99 of BENCH_IDLE_QUERIES (200), beside the
//       same question asked as before issue 44 (the monitor-led index: a loose scan of every
//       monitor that has events). Target: ≤ 5 ms.
// (B) measures the worker, not one endpoint's limit: its monitors all post to one receiver, so the
// bench sets WEBHOOK_ENDPOINT_CONCURRENCY to BENCH_ENDPOINT_CONCURRENCY (256; the service's default
// 32 bounds one endpoint to 32 ÷ its latency, 160 events/s at 200 ms).
// Develop with small sizes (BENCH_MONITORS=100 BENCH_EVENTS=1000 BENCH_DEAD=1000 BENCH_LIVE=200);
// the figures in docs/operations.md are taken at the defaults on a quiet machine.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { clientRunner, fmt, pacedLoad, percentile, procfileRoleArgs, type PacedResult } from './bench-kit.ts';

const num = (name: string, dflt: number) => Number(process.env[name] ?? dflt);
const MONITORS = num('BENCH_MONITORS', 1000);
const EVENTS = num('BENCH_EVENTS', 10_000);
const EVENT_MONITORS = num('BENCH_EVENT_MONITORS', 100);
const DEAD = num('BENCH_DEAD', 10_000);
const LIVE = num('BENCH_LIVE', 1000);
const RATE = num('BENCH_RATE', 300);
const IDLE_MONITORS = num('BENCH_IDLE_MONITORS', 100_000);
const IDLE_EVENTS = num('BENCH_IDLE_EVENTS', 1_000_000);
const IDLE_QUERIES = num('BENCH_IDLE_QUERIES', 200);
const ENDPOINT_CONCURRENCY = num('BENCH_ENDPOINT_CONCURRENCY', 256);
/** The orchestrator's MONITOR_STARTS_PER_SECOND (the service's default). */
const STARTS_PER_SECOND = num('BENCH_STARTS_PER_SECOND', 50);
const LOAD_S = num('BENCH_LOAD_S', 10);
const RECEIVER_MS = 200;
const MAC_PATH = '/v2/lookups/mac';
const BODY = JSON.stringify({ value: 'F4:F5:E8:12:34:56' });

interface ClientJob {
  url: string;
  key: string;
  rate: number;
  durationS: number;
  tag: string;
}

// ---------------------------------------------------------------------------
// Load generator (child process)

if (process.argv[2] === '--client') {
  const job = JSON.parse(process.argv[3]!) as ClientJob;
  const result = await pacedLoad({
    url: job.url,
    method: 'POST',
    path: MAC_PATH,
    connections: 50,
    rate: job.rate,
    durationS: job.durationS,
    body: BODY,
    headers: (i) => ({
      'content-type': 'application/json',
      authorization: `Bearer ${job.key}`,
      'idempotency-key': `mon-${job.tag}-${i}`,
    }),
  });
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}

// ---------------------------------------------------------------------------
// Bench

const root = path.resolve(import.meta.dirname, '../..');
const log = (msg: string): void => {
  process.stderr.write(`[bench] ${msg}\n`);
};
const runner = clientRunner(path.join(root, 'test/bench/monitors.ts'), root, log);
const verdict = (ok: boolean, what: string) => `${ok ? 'PASS' : 'MISS'}  ${what}`;

/** CPU seconds a process has used so far (Linux /proc; 0 elsewhere). */
function cpuSecondsOf(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in clock ticks (USER_HZ 100)
  } catch {
    return 0;
  }
}

/** A receiver that answers 204 after `delayMs`, counting requests by webhook-id. */
async function startReceiver(certPem: string, keyPem: string, delayMs: number) {
  const seen = new Map<string, number>();
  let requests = 0;
  const server = https.createServer({ cert: certPem, key: keyPem }, (req, res) => {
    req.resume();
    req.on('end', () => {
      requests++;
      const id = String(req.headers['webhook-id'] ?? '');
      seen.set(id, (seen.get(id) ?? 0) + 1);
      setTimeout(() => res.writeHead(204).end(), delayMs);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    requests: () => requests,
    distinct: () => seen.size,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** A dead endpoint: accepts TCP, never answers (every attempt runs into its 10 s). */
async function startDeadEndpoint() {
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const server = net.createServer((s) => {
    connections++;
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

async function main(): Promise<void> {
  const { createDatabase, deletePrefixedKeys, dropDatabase, ensureServices, runTimestamp } = await import(
    '../../ops/services.ts'
  );
  const { ProcessGroup, freePort, until } = await import('../helpers/processes.ts');
  const { loadLabCa } = await import('../lab/ca.ts');
  const { migrate } = await import('../../src/db/migrations.ts');
  const { parseConfig } = await import('../../src/config/config.ts');
  const { createDb } = await import('../../src/db/database.ts');
  const { createKey, createWorkspace, setLimits, workspaceInternalId } = await import('../../src/auth/tenancy-repo.ts');
  const { grantCredits } = await import('../../src/credits/ledger.ts');
  const { publicId } = await import('../../src/contract/ids.ts');
  const { closeRedis, createRedis, redisReady, redisTarget } = await import('../../src/redis/client.ts');
  const { startHeartbeat } = await import('../../src/queue/heartbeat.ts');
  const { queueKeys } = await import('../../src/queue/streams.ts');
  const { generateSecret, SecretBox } = await import('../../src/jobs/monitors/webhook-secrets.ts');
  const { dueMonitorsQuery } = await import('../../src/jobs/monitors/deliveries-repo.ts');

  const loadAtStart = os.loadavg();
  const { databaseUrl: serverUrl, redisUrl } = await ensureServices({ root });
  const suffix = `${runTimestamp(new Date())}_${randomBytes(3).toString('hex')}`;
  const dbName = `lss_benchmon_${suffix}`;
  const prefix = `lssbench:${suffix}:`;
  const procs = new ProcessGroup();
  const closers: Array<() => Promise<unknown>> = [];
  try {
    const databaseUrl = await createDatabase(serverUrl, dbName);
    await migrate(databaseUrl);
    const ca = await loadLabCa();
    const leaf = await ca.issue({ names: ['hooks.bench.test'], ips: ['127.0.0.1'] });
    const port = await freePort();
    // Webhooks go to the web's own ports only: 443 reaches the receiver, 8443 the dead endpoint.
    const receiver = await startReceiver(leaf.chainPem, leaf.keyPem, RECEIVER_MS);
    closers.push(() => receiver.close());
    const dead = await startDeadEndpoint();
    closers.push(() => dead.close());
    const env: Record<string, string | undefined> = {
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      REDIS_CLUSTER_NODES: undefined,
      REDIS_KEY_PREFIX: prefix,
      KEY_PEPPER: randomBytes(32).toString('base64url'),
      CURSOR_SECRET: randomBytes(32).toString('base64url'),
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64url'),
      LOG_LEVEL: 'warn',
      METRICS_PORT: undefined,
      WEB_CONCURRENCY: '1',
      PORT: String(port),
      // Nothing here may leave loopback: receivers are loopback, no job runs a check, and the
      // resolver (never asked) points at a closed loopback port.
      ALLOW_PRIVATE_TARGETS: '127.0.0.0/8',
      ALLOW_SPECIAL_USE_DOMAINS: 'test',
      DNS_SERVERS: '[127.0.0.1]:9',
      RDAP_BOOTSTRAP_URL: 'off',
      NODE_EXTRA_CA_CERTS: ca.caFile,
      OUTBOUND_PORT_MAP: `443=${receiver.port},8443=${dead.port}`,
      SHUTDOWN_TIMEOUT_MS: '3000',
      MONITOR_STARTS_PER_SECOND: String(STARTS_PER_SECOND),
      WEBHOOK_ENDPOINT_CONCURRENCY: String(ENDPOINT_CONCURRENCY),
    };
    const config = parseConfig({ ...process.env, ...env });
    const dbh = createDb(databaseUrl, { connectionLimit: 4 });
    closers.push(() => dbh.close());
    const db = dbh.db;
    const redis = createRedis(redisTarget(config), prefix);
    redis.on('error', () => {});
    await redisReady(redis);
    closers.push(() => closeRedis(redis));

    const ws = await createWorkspace(db, { name: 'bench-monitors' });
    const wsId = await workspaceInternalId(db, ws.workspaceId);
    const { key, keyId } = await createKey(db, config.KEY_PEPPER, { workspace: ws.workspaceId });
    await setLimits(db, ws.workspaceId, undefined, {
      app: { perMinute: 10_000_000, burst: 1_000_000 },
      products: {
        'lookup.mac.v1': { perMinute: 10_000_000, perHour: 600_000_000 },
        'lookup.domain.v1': { perMinute: 10_000_000, perHour: 600_000_000 },
      },
    });
    await grantCredits(db, wsId, 10_000_000, 'grant:bench');
    const apiKeyId = Number(
      (await db.selectFrom('api_keys').select('id').where('public_id', '=', keyId).executeTakeFirstOrThrow()).id,
    );

    // lane-domain's stand-in: its heartbeat makes the product ready; no task ever runs.
    const fakeLane = startHeartbeat(redis, queueKeys.laneAlive('domain'), 'bench-stand-in');
    closers.push(() => fakeLane.stop());
    procs.node('web', [...procfileRoleArgs('web')], env);
    const orchestrator = procs.node('orchestrator', [...procfileRoleArgs('orchestrator')], env);
    const base = `http://127.0.0.1:${port}`;
    await until('web /livez', async () => (await fetch(`${base}/livez`)).ok, 60_000, 200);
    const macOk = async () =>
      (
        await fetch(`${base}${MAC_PATH}`, {
          method: 'POST',
          body: BODY,
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            'idempotency-key': `warm-${randomBytes(4).toString('hex')}`,
          },
        })
      ).status === 200;
    await until('a MAC lookup answered', macOk, 30_000, 200);
    await until(
      'the orchestrator heartbeat',
      async () => (await redis.zcount(queueKeys.laneAlive('orchestrator'), Date.now() - 10_000, '+inf')) > 0,
      30_000,
      200,
    );

    // (A) -----------------------------------------------------------------------------------
    log(`(A) ${MONITORS} monitors (MONITOR_STARTS_PER_SECOND ${STARTS_PER_SECOND}); ordinary load ${RATE} req/s paced`);
    const box = new SecretBox(config.WEBHOOK_SECRET_KEY);
    const monitorRow = (product: string, request: unknown, url: string | null, ref = publicId('mon')) => ({
      public_id: ref,
      workspace_id: wsId,
      api_key_id: apiKeyId,
      product,
      request: JSON.stringify(request),
      interval_seconds: 86_400,
      paused: 0,
      paused_reason: null,
      next_run_at: null,
      last_job_id: null,
      webhook_url: url,
      webhook_secret: url ? box.seal(generateSecret(), ref) : null,
      webhook_prev_secret: null,
      webhook_prev_secret_until: null,
      webhook_disabled: null,
      webhook_failing_since: null,
      deleted_at: null,
    });
    for (let i = 0; i < MONITORS; i += 500) {
      const rows = Array.from({ length: Math.min(500, MONITORS - i) }, () =>
        monitorRow('lookup.domain.v1', { value: 'lab.test' }, null),
      );
      await db.insertInto('monitors').values(rows).execute();
    }
    const load = (tag: string, durationS = LOAD_S) =>
      runner.run<PacedResult>({ url: base, key, rate: RATE, durationS, tag: `${suffix}-${tag}` } satisfies ClientJob);
    await load('warm', 3);
    const base1 = await load('base1');
    log(`(A) baseline 1: p99 ${fmt(base1.p99)} ms`);
    await sql`UPDATE monitors SET next_run_at = NOW(3) + INTERVAL 2 SECOND WHERE workspace_id = ${wsId}`.execute(db);
    // The load runs as long as the starts do (MONITORS at STARTS_PER_SECOND), and a little more.
    const orchCpu0 = cpuSecondsOf(orchestrator.child.pid);
    const during = await load('during', Math.max(LOAD_S, Math.ceil(MONITORS / STARTS_PER_SECOND) + 4));
    await until(
      'every run decided',
      async () => {
        const r = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM monitor_runs WHERE outcome <> 'claimed'`.execute(
          db,
        );
        return Number(r.rows[0]!.n) >= MONITORS ? true : null;
      },
      300_000,
      500,
    );
    // The jobs are planned by the same orchestrator: let it finish before the second baseline.
    await until(
      'every started job planned',
      async () => {
        const r = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM jobs j WHERE j.workspace_id = ${wsId}
          AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.job_id = j.id)`.execute(db);
        return Number(r.rows[0]!.n) === 0;
      },
      300_000,
      500,
    ).catch(() => log('(A) warning: some jobs still unplanned at the second baseline'));
    // Every start (admission, its transaction, publishing) and every plan of the started jobs.
    const startCpuS = cpuSecondsOf(orchestrator.child.pid) - orchCpu0;
    const base2 = await load('base2');
    const runs = await sql<{ outcome: string; code: string | null; delay_ms: number }>`
      SELECT outcome, code, TIMESTAMPDIFF(MICROSECOND, due_at, run_at) / 1000 AS delay_ms FROM monitor_runs`.execute(
      db,
    );
    const started = runs.rows.filter((r) => r.outcome === 'started');
    const skipped = new Map<string, number>();
    for (const r of runs.rows) if (r.outcome === 'skipped') skipped.set(r.code!, (skipped.get(r.code!) ?? 0) + 1);
    const delays = Float64Array.from(started.map((r) => Number(r.delay_ms))).sort();
    const baseP99 = (base1.p99 + base2.p99) / 2;

    // (B) -----------------------------------------------------------------------------------
    const insertMonitors = async (n: number, url: string) => {
      const rows = Array.from({ length: n }, () => monitorRow('lookup.domain.v1', { value: 'lab.test' }, url));
      await db.insertInto('monitors').values(rows).execute();
      return (
        await db
          .selectFrom('monitors')
          .select('id')
          .where(
            'public_id',
            'in',
            rows.map((r) => r.public_id),
          )
          .execute()
      ).map((r) => Number(r.id));
    };
    /** Events written not due yet (next_attempt_at NULL); released together by `release`. */
    const insertEvents = async (monitorIds: number[], n: number, tag: string) => {
      const body = (i: number) =>
        JSON.stringify({
          type: 'monitor.job_finished',
          timestamp: new Date().toISOString(),
          data: { monitorId: 'mon_bench', jobRef: null, status: 'completed', baseline: null, changes: null, i },
        });
      for (let i = 0; i < n; i += 1000) {
        const rows = Array.from({ length: Math.min(1000, n - i) }, (_, k) => ({
          public_id: publicId('msg'),
          monitor_id: monitorIds[(i + k) % monitorIds.length]!,
          workspace_id: wsId,
          type: 'monitor.job_finished',
          job_id: null,
          job_ref: null,
          body: body(i + k),
          next_attempt_at: null,
          claim_token: tag,
          last_attempt_at: null,
          last_status_code: null,
          last_error: null,
          delivered_at: null,
        }));
        await db.insertInto('monitor_events').values(rows).execute();
      }
    };
    const release = (tag: string) =>
      sql`UPDATE monitor_events SET next_attempt_at = NOW(3), window_started_at = NOW(3), claim_token = NULL
        WHERE claim_token = ${tag} AND status = 'pending'`.execute(db);
    const drain = async (monitorIds: number[], n: number, what: string) => {
      const t0 = performance.now();
      await until(
        what,
        async () => {
          const r = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM monitor_events
            WHERE status = 'delivered' AND monitor_id IN (${sql.join(monitorIds)})`.execute(db);
          return Number(r.rows[0]!.n) >= n ? true : null;
        },
        900_000,
        100,
      );
      return (performance.now() - t0) / 1000;
    };

    log(`(B) ${EVENTS} events of ${EVENT_MONITORS} monitors to one receiver (${RECEIVER_MS} ms per answer)`);
    const liveMonitors = await insertMonitors(EVENT_MONITORS, 'https://127.0.0.1/live');
    await insertEvents(liveMonitors, EVENTS, 'b');
    const before = receiver.requests();
    const cpu0 = cpuSecondsOf(orchestrator.child.pid);
    await release('b');
    const drainS = await drain(liveMonitors, EVENTS, `${EVENTS} events delivered`);
    const orchestratorCpuS = cpuSecondsOf(orchestrator.child.pid) - cpu0;
    const bRate = EVENTS / drainS;
    const bRequests = receiver.requests() - before;

    // (C) -----------------------------------------------------------------------------------
    log(`(C) one live monitor's ${LIVE} events alone, then behind a dead endpoint's ${DEAD}`);
    const [live] = await insertMonitors(1, 'https://127.0.0.1/one');
    await insertEvents([live!], LIVE, 'c1');
    await release('c1');
    const aloneS = await drain([live!], LIVE, 'the live monitor alone');
    const [deadMonitor] = await insertMonitors(1, 'https://127.0.0.1:8443/dead');
    await insertEvents([deadMonitor!], DEAD, 'c2');
    await insertEvents([live!], LIVE, 'c3');
    await release('c2');
    await new Promise((r) => setTimeout(r, 1000)); // the dead backlog is due first, and being attempted
    await release('c3');
    const withS = await drain([live!], 2 * LIVE, 'the live monitor behind the dead backlog');
    const deadAttempts = await sql<{ n: number }>`SELECT COALESCE(SUM(attempts), 0) AS n FROM monitor_events
      WHERE monitor_id = ${deadMonitor!}`.execute(db);

    // (D) -----------------------------------------------------------------------------------
    log(`(D) ${IDLE_MONITORS} idle monitors, ${IDLE_EVENTS} delivered events (INSERT … SELECT)`);
    // (C)'s dead backlog is retried for 24 h: failed now, so that nothing is due but what (D) asks.
    await sql`UPDATE monitor_events SET status = 'failed', next_attempt_at = NULL WHERE status = 'pending'`.execute(db);
    const firstIdle = Number(
      (await sql<{ n: number }>`SELECT COALESCE(MAX(id), 0) + 1 AS n FROM monitors`.execute(db)).rows[0]!.n,
    );
    await sql`INSERT INTO monitors (public_id, workspace_id, api_key_id, product, request, interval_seconds, paused)
      SELECT CONCAT('mon_IDLE', LPAD(seq, 22, '0')), ${wsId}, ${apiKeyId}, 'lookup.domain.v1', '{"value":"lab.test"}',
        86400, 1
      FROM seq_1_to_${sql.raw(String(IDLE_MONITORS))}`.execute(db);
    // Events spread over the idle monitors: seq's i-th goes to monitor firstIdle + i mod N.
    for (let done = 0; done < IDLE_EVENTS; done += 200_000) {
      const n = Math.min(200_000, IDLE_EVENTS - done);
      await sql`INSERT INTO monitor_events (public_id, monitor_id, workspace_id, type, body, status, attempts,
          last_attempt_at, last_status_code, delivered_at, created_at)
        SELECT CONCAT('msg_IDLE', LPAD(seq + ${done}, 22, '0')), ${firstIdle} + ((seq + ${done}) % ${IDLE_MONITORS}),
          ${wsId}, 'monitor.job_finished', '{}', 'delivered', 1, NOW(3), 204, NOW(3), NOW(3)
        FROM seq_1_to_${sql.raw(String(n))}`.execute(db);
    }
    await sql`ANALYZE TABLE monitor_events, monitors`.execute(db);
    const oldQuery = sql`SELECT monitor_id, MIN(next_attempt_at) AS due FROM monitor_events FORCE INDEX (ix_monitor_events_due)
      WHERE monitor_id > 0 AND status = 'pending' AND next_attempt_at <= NOW(3)
      GROUP BY monitor_id ORDER BY monitor_id LIMIT 500`;
    const explain = async (q: ReturnType<typeof dueMonitorsQuery> | typeof oldQuery) =>
      (await sql<Record<string, unknown>>`EXPLAIN ${q}`.execute(db)).rows
        .map((r) => `${r.table} type=${r.type} key=${r.key} rows=${r.rows} ${r.Extra ?? ''}`)
        .join('; ');
    const timeQuery = async (q: ReturnType<typeof dueMonitorsQuery> | typeof oldQuery, times: number) => {
      const ms: number[] = [];
      for (let i = 0; i < times; i++) {
        const t0 = performance.now();
        await q.execute(db);
        ms.push(performance.now() - t0);
      }
      return Float64Array.from(ms).sort();
    };
    const newPlan = await explain(dueMonitorsQuery(0, 500));
    const oldPlan = await explain(oldQuery);
    const newMs = await timeQuery(dueMonitorsQuery(0, 500), IDLE_QUERIES);
    const oldMs = await timeQuery(oldQuery, Math.min(IDLE_QUERIES, 20));

    // ---------------------------------------------------------------------------------------
    const out = process.stdout;
    out.write(
      `\nmachine: ${os.cpus().length} cores, load average at start ${loadAtStart.map((l) => fmt(l)).join(' ')}\n`,
    );
    out.write(
      `\n(A) ${MONITORS} monitors due in the same instant, one orchestrator (MONITOR_STARTS_PER_SECOND ${STARTS_PER_SECOND}):\n`,
    );
    out.write(`  started ${started.length}, skipped ${[...skipped].map(([c, n]) => `${n} ${c}`).join(', ') || 0}\n`);
    out.write(
      `  start delay after due: p50 ${fmt(percentile(delays, 50) / 1000)} s, p99 ${fmt(percentile(delays, 99) / 1000)} s, max ${fmt((delays[delays.length - 1] ?? 0) / 1000)} s\n`,
    );
    out.write(
      `  ordinary requests (${RATE} req/s paced): p99 ${fmt(base1.p99)} ms before, ${fmt(during.p99)} ms while starting, ${fmt(base2.p99)} ms after; during / baseline = ${fmt(during.p99 / baseP99)}\n`,
    );
    out.write(
      `  orchestrator CPU for the starts and their jobs' planning: ${fmt(startCpuS, 1)} s = ${fmt((startCpuS * 1000) / MONITORS, 1)} ms per run\n`,
    );
    out.write(
      `  (non-2xx: ${base1.non2xx + during.non2xx + base2.non2xx}, errors: ${base1.errors + during.errors + base2.errors})\n`,
    );
    out.write(`\n(B) ${EVENTS} pending events, ${EVENT_MONITORS} monitors, receiver answering in ${RECEIVER_MS} ms:\n`);
    out.write(
      `  drained in ${fmt(drainS, 1)} s = ${fmt(bRate, 0)} events/s; receiver saw ${bRequests} requests for ${EVENTS} events\n`,
    );
    out.write(
      `  orchestrator CPU ${fmt(orchestratorCpuS, 1)} s = ${fmt((orchestratorCpuS * 1000) / EVENTS, 2)} ms per delivered event (${fmt(orchestratorCpuS / drainS)} cores)\n`,
    );
    out.write(`\n(C) a live monitor's ${LIVE} events:\n`);
    out.write(
      `  alone ${fmt(aloneS, 1)} s (${fmt(LIVE / aloneS, 0)}/s); behind a dead endpoint's ${DEAD}-event backlog ${fmt(withS, 1)} s (${fmt(LIVE / withS, 0)}/s); ratio ${fmt(aloneS / withS)}\n`,
    );
    out.write(
      `  the dead endpoint meanwhile: ${dead.connections()} connections, ${deadAttempts.rows[0]!.n} attempts recorded\n\n`,
    );
    out.write(`\n(D) ${IDLE_MONITORS} idle monitors, ${IDLE_EVENTS} delivered events, none due:\n`);
    out.write(`  EXPLAIN now:    ${newPlan}\n`);
    out.write(`  EXPLAIN before: ${oldPlan}\n`);
    out.write(
      `  due-event query: p50 ${fmt(percentile(newMs, 50))} ms, p99 ${fmt(percentile(newMs, 99))} ms (${IDLE_QUERIES} runs); before issue 44: p50 ${fmt(percentile(oldMs, 50))} ms (${oldMs.length} runs); before / now = ${fmt(percentile(oldMs, 50) / percentile(newMs, 50), 0)}\n\n`,
    );
    const maxDelayS = (delays[delays.length - 1] ?? Number.POSITIVE_INFINITY) / 1000;
    out.write(
      `${verdict(started.length === MONITORS && maxDelayS <= 60, `(A) every run started within 60 s of due: max ${fmt(maxDelayS)} s`)}\n`,
    );
    out.write(
      `${verdict(Math.abs(during.p99 / baseP99 - 1) <= 0.1, `(A) ordinary p99 within ±10 % while they start: ${fmt((during.p99 / baseP99 - 1) * 100, 1)} %`)}\n`,
    );
    out.write(`${verdict(bRate >= 200, `(B) drain ≥ 200 events/s: ${fmt(bRate, 0)}`)}\n`);
    out.write(
      `${verdict(aloneS / withS >= 0.9, `(C) the live endpoint's rate with a dead backlog ≥ 0.9 × alone: ${fmt(aloneS / withS)}`)}\n`,
    );
    out.write(
      `${verdict(percentile(newMs, 50) <= 5, `(D) idle due-event query ≤ 5 ms: p50 ${fmt(percentile(newMs, 50))} ms`)}\n`,
    );
    await orchestrator.stop('SIGTERM');
  } finally {
    await procs.killAll();
    for (const c of closers.reverse()) await c().catch(() => {});
    await dropDatabase(serverUrl, dbName).then(
      () => log(`dropped database ${dbName}`),
      (e: Error) => log(`warning: could not drop ${dbName}: ${e.message}`),
    );
    const n = await deletePrefixedKeys(redisUrl, prefix).catch(() => 0);
    log(`deleted ${n} Redis key(s) with prefix ${prefix}`);
  }
}

await main();
