// One connection budget on a database with a LOW max_connections (issue 48 item 2; DESIGN.md,
// "Congestion is ours, silence is the target's"): a MariaDB of this file's own started with
// --max-connections=30, the roles as real processes (`node src/server.ts`, `node
// workers/orchestrator.ts`, two `node workers/lane.ts domain`) and this test's own app (a second
// web process's pool) told the deployment's shape and DATABASE_MAX_CONNECTIONS=30. A burst of
// domain lookups: every job terminal and completed, no task failed, and the server refused no
// connection at all (its own counter, Connection_errors_max_connections). Before the budget the
// same processes asked for 150 connections (20 + 20 + 10 + 2 × 50) and MariaDB answered 1040.
// And the start-up check: a budget above what the server allows is a warning line, or exit 78
// with DATABASE_BUDGET_STRICT=true; with every connection of the server taken, a statement waits
// and retries the refusal (1040) until one frees, past DATABASE_CONNECTION_WAIT_MS it fails as
// ours (POOL_WAIT_TIMEOUT), and a lane's task waits it out: completed at its first attempt.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { createConnection, type Connection } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, startBenchMariadb, type BenchMariadb } from '../../ops/services.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { createDb, type DbHandle } from '../../src/db/database.ts';
import { migrate } from '../../src/db/migrations.ts';
import { queueKeys } from '../../src/queue/streams.ts';
import { client, createTenant, startHarness, type Harness } from '../helpers/harness.ts';
import { pino } from 'pino';
import { parseConfig } from '../../src/config/config.ts';
import { startOrchestrator } from '../../src/jobs/orchestration/orchestrator.ts';
import { startLaneWorker } from '../../workers/start-lane-worker.ts';
import { testEnv } from '../helpers/harness.ts';
import type { LaneHealth } from '../../src/queue/lane-health.ts';
import { freePort, ProcessGroup, until, type Proc } from '../helpers/processes.ts';
import { testPrefix } from '../helpers/redis.ts';
import { rdapNames } from '../lab/rdap-fixtures.ts';
import { startLab, type RunningLab } from '../lab/serve.ts';

const MAX_CONNECTIONS = 30;
const JOBS = 60;
const WORKSPACES = 3;
const NAMES = [rdapNames.registered, rdapNames.signed, rdapNames.expiringSoon];
const GENEROUS = {
  app: { perMinute: 100_000, burst: 10_000 },
  products: { 'lookup.domain.v1': { perMinute: 100_000, perHour: 1_000_000 } },
};
const TERMINAL = ['completed', 'partial', 'failed', 'cancelled', 'unavailable'];

const procs = new ProcessGroup();
let mariadb: BenchMariadb;
let lab: RunningLab;
let dbUrl: string;
/** The test's own window on the server (root, one connection, counted in the reserve). */
let probe: DbHandle;
let h: Harness | undefined;

async function status(name: string): Promise<number> {
  const { rows } = await sql<{ Value: string }>`SHOW GLOBAL STATUS LIKE ${name}`.execute(probe.db);
  return Number(rows[0]?.Value);
}

/** The deployment these processes make, and its budget: within the server's 30. */
const budgetEnv = {
  DATABASE_MAX_CONNECTIONS: String(MAX_CONNECTIONS),
  // This test's probe, each role's start-up check, MariaDB's extra connection for SUPER.
  DATABASE_RESERVED_CONNECTIONS: '4',
  // The web child and this test's own app.
  WEB_PROCESSES: '2',
  WEB_CONCURRENCY: '1',
  ORCHESTRATOR_PROCESSES: '1',
  LANE_PROCESSES: '0,domain=2',
};

beforeAll(async () => {
  const dir = path.join(os.tmpdir(), `lss-db-budget-${randomBytes(4).toString('hex')}`);
  [mariadb, lab] = await Promise.all([
    freePort().then((port) => startBenchMariadb({ dir, port, maxConnections: MAX_CONNECTIONS, log: () => {} })),
    startLab(),
  ]);
  dbUrl = await createDatabase(mariadb.url, 'lss_budget');
  await migrate(dbUrl);
  probe = createDb(dbUrl, { connectionLimit: 1 });
}, 120_000);

afterAll(async () => {
  await procs.killAll();
  await h?.close();
  await probe?.close();
  await lab?.close();
  await mariadb?.remove();
});

function roleEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...lab.env,
    DATABASE_URL: dbUrl,
    LOG_LEVEL: 'warn',
    SHUTDOWN_TIMEOUT_MS: '2000',
    ...extra,
  };
}

describe(`a MariaDB with max_connections=${MAX_CONNECTIONS}`, () => {
  it('a pooled connection keeps no prepared-statement cache (kysely never prepares): a 1-slot LRU, not 16,000', async () => {
    await sql`SELECT 1`.execute(probe.db);
    const conn = await new Promise<{ _statements: { max: number }; release(): void }>((resolve, reject) =>
      probe.pool.getConnection((err, c) => (err ? reject(err) : resolve(c as never))),
    );
    try {
      expect(conn._statements.max).toBe(1);
    } finally {
      conn.release();
    }
  });

  it('a budget above it: exit 78 with DATABASE_BUDGET_STRICT=true (lane, orchestrator, web), a warning line without', async () => {
    const strict = roleEnv({ REDIS_KEY_PREFIX: testPrefix('budget-strict'), DATABASE_BUDGET_STRICT: 'true' });
    const started: Proc[] = [
      procs.node('orchestrator (strict)', ['workers/orchestrator.ts'], strict),
      procs.node('lane-domain (strict)', ['workers/lane.ts', 'domain'], strict),
      procs.node('web (strict)', ['src/server.ts'], {
        ...strict,
        WEB_CONCURRENCY: '1',
        PORT: String(await freePort()),
        METRICS_PORT: '0',
      }),
    ];
    const codes = await Promise.all(started.map((p) => p.exited));
    expect(codes, procs.report(800)).toEqual([78, 78, 78]);
    for (const p of started) {
      expect(p.output()).toMatch(
        /role cannot start: DATABASE_MAX_CONNECTIONS=151 is more than the server allows \(max_connections is 30\).*Set DATABASE_MAX_CONNECTIONS to at most 30.*\(DATABASE_BUDGET_STRICT=true\)/,
      );
    }

    // Without strict: the same sentence as a warning, and the role starts.
    const lane = procs.node(
      'lane-domain (warned)',
      ['workers/lane.ts', 'domain'],
      roleEnv({ REDIS_KEY_PREFIX: testPrefix('budget-warn'), LOG_LEVEL: 'info' }),
    );
    await until('the lane runner started', async () => /lane runner started/.test(lane.output()), 30_000).catch(
      (err: Error) => {
        throw new Error(`${err.message}\n${procs.report(1500)}`);
      },
    );
    const line = JSON.parse(
      lane
        .output()
        .split('\n')
        .find((l) => l.includes('is more than the server allows'))!,
    );
    expect(line).toMatchObject({ level: 40, role: 'lane-domain', strict: false });
    expect(line.msg).toMatch(/max_connections is 30/);
    expect(lane.running()).toBe(true);
    expect(await lane.stop('SIGTERM')).toBe(0);
  }, 90_000);

  it('a connection the server refuses (1040) is retried until one comes free; past the wait it fails as ours', async () => {
    // Every connection the server has left, taken (root may take one more than max_connections).
    const hogs: Connection[] = [];
    let refusal: { code?: string } | undefined;
    const handles: DbHandle[] = [];
    try {
      while (hogs.length <= MAX_CONNECTIONS + 1) {
        try {
          hogs.push(await createConnection({ uri: dbUrl }));
        } catch (err) {
          refusal = err as { code?: string };
          break;
        }
      }
      expect(refusal?.code).toBe('ER_CON_COUNT_ERROR');
      const waiting = createDb(dbUrl, { connectionLimit: 2, waitMs: 20_000 });
      handles.push(waiting);
      const statement = sql<{ one: number }>`SELECT 1 AS one`.execute(waiting.db);
      await until(
        'the statement retried the refusal',
        async () => (waiting.stats.refused.get('ER_CON_COUNT_ERROR') ?? 0) >= 2,
        10_000,
        20,
      );
      // Counted as waiting between its attempts (lss_db_connections_waiting).
      await until('the statement counted as waiting', async () => waiting.stats.waiting() === 1, 5000, 5);
      await hogs.pop()!.end();
      expect((await statement).rows).toEqual([{ one: 1 }]);

      // None comes free: the wait ends as our shortage, the server's refusal its cause.
      const starved = createDb(dbUrl, { connectionLimit: 1, waitMs: 600 });
      handles.push(starved);
      const err = await sql`SELECT 1`.execute(starved.db).then(
        () => null,
        (e: unknown) => e as Error & { code?: string },
      );
      expect(err?.code).toBe('POOL_WAIT_TIMEOUT');
      expect((err?.cause as { code?: string } | undefined)?.code).toBe('ER_CON_COUNT_ERROR');
      expect(starved.stats.waitTimeouts).toBe(1);
    } finally {
      await Promise.all(hogs.map((c) => c.end().catch(() => {})));
      await Promise.all(handles.map((hd) => hd.close()));
    }
  }, 60_000);

  it('a lane whose statements find no connection waits: the task completes at its first attempt once the server has room', async () => {
    const env = {
      ...lab.env,
      DATABASE_URL: dbUrl,
      REDIS_KEY_PREFIX: testPrefix('budget-lane'),
      DNS_TIMEOUT_MS: '5000',
    };
    const log = pino({ level: 'silent' });
    const hogs: Connection[] = [];
    const own = await startHarness(env);
    const orchestrator = await startOrchestrator({
      config: own.config,
      log,
      timing: { relayEveryMs: 200, relayAfterMs: 300, reconcileEveryMs: 500, sweepEveryMs: 300 },
    });
    // The lane gives up on a connection after 300 ms: what it then meets is its runner's retry.
    const laneConfig = parseConfig(testEnv({ ...env, DATABASE_CONNECTION_WAIT_MS: '300' }));
    const lane = await startLaneWorker('domain', { config: laneConfig, log, blockMs: 200 });
    try {
      const t = await createTenant(own, { limits: GENEROUS });
      await grantCredits(
        own.deps.db,
        await workspaceInternalId(own.deps.db, t.workspaceId),
        100,
        `grant:lane:${t.workspaceId}`,
      );
      await (own.deps.runtime.services.laneHealth as LaneHealth).refresh();
      // The app and the orchestrator keep a few connections open; the lane has none yet.
      const warm = (db: typeof own.deps.db) =>
        Promise.all(Array.from({ length: 4 }, () => sql`SELECT SLEEP(0.05)`.execute(db)));
      await Promise.all([warm(own.deps.db), warm(orchestrator.context.db)]);
      while (hogs.length <= MAX_CONNECTIONS + 1) {
        const c = await createConnection({ uri: dbUrl }).catch(() => null);
        if (!c) break;
        hogs.push(c);
      }
      const accepted = await client(own.app, t.key).post('/v2/lookups/domain', { value: rdapNames.registered });
      expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
      await until(
        'the lane retried statements that found no connection',
        async () => lane.runner.dbShortages >= 2,
        30_000,
        50,
      );
      await Promise.all(hogs.splice(0).map((c) => c.end()));
      const job = await until(
        'the job terminal',
        async () => {
          const row = await probe.db
            .selectFrom('jobs')
            .select(['id', 'status'])
            .where('public_id', '=', accepted.body.jobRef)
            .executeTakeFirst();
          return row && TERMINAL.includes(row.status) ? row : null;
        },
        60_000,
        200,
      );
      expect(job.status).toBe('completed');
      const tasks = await probe.db
        .selectFrom('tasks')
        .select(['status', 'attempts'])
        .where('job_id', '=', job.id)
        .execute();
      expect(tasks.map((x) => [x.status, x.attempts])).toEqual(tasks.map(() => ['completed', 1]));
    } finally {
      await Promise.all(hogs.map((c) => c.end().catch(() => {})));
      await lane.close();
      await orchestrator.close();
      await own.close();
    }
  }, 120_000);

  it(`the roles within DATABASE_MAX_CONNECTIONS=${MAX_CONNECTIONS}: a burst of ${JOBS} lookups all completed, no connection refused`, async () => {
    const env = roleEnv({
      ...budgetEnv,
      REDIS_KEY_PREFIX: testPrefix('budget'),
      LANE_POOL_THREADS: '0',
      // The lab's DNS server runs in this test process: 2 × 256 checks at once on two cores make
      // it answer late (dns_timeout), which says nothing of connections. 32 each still asked for
      // 34 connections per lane before the budget (20 + 20 + 10 + 2 × 34 = 118 against 30).
      LANE_CONCURRENCY: '32',
      DNS_TIMEOUT_MS: '5000',
    });
    // The peak from here on (the refusal test above took every connection).
    await sql`FLUSH STATUS`.execute(probe.db);
    const refusedBefore = await status('Connection_errors_max_connections');
    h = await startHarness(env);
    const redis = h.deps.redis;
    const tenants = await Promise.all(
      Array.from({ length: WORKSPACES }, async () => {
        const t = await createTenant(h!, { limits: GENEROUS });
        const wsId = await workspaceInternalId(h!.deps.db, t.workspaceId);
        await grantCredits(h!.deps.db, wsId, 1000, `grant:budget:${t.workspaceId}`);
        return t;
      }),
    );
    const metricsPorts = await Promise.all([freePort(), freePort()]);
    const lanes = metricsPorts.map((port, i) =>
      procs.node(`lane-domain#${i}`, ['workers/lane.ts', 'domain'], { ...env, METRICS_PORT: String(port) }),
    );
    procs.node('orchestrator', ['workers/orchestrator.ts'], env);
    const port = await freePort();
    procs.node('web', ['src/server.ts'], { ...env, PORT: String(port), METRICS_PORT: '0' });
    const fail = (err: Error) => {
      throw new Error(`${err.message}\n${procs.report(1500)}`);
    };
    await until(
      'every role heartbeats and the web process offers lookup.domain.v1',
      async () => {
        const [l, o] = await Promise.all([
          redis.zrangebyscore(queueKeys.laneAlive('domain'), Date.now() - 10_000, '+inf'),
          redis.zrangebyscore(queueKeys.laneAlive('orchestrator'), Date.now() - 10_000, '+inf'),
        ]);
        if (l.length < 2 || o.length < 1) return false;
        const r = await fetch(`http://127.0.0.1:${port}/v2/products`, {
          headers: { Authorization: `Bearer ${tenants[0]!.key}` },
        });
        if (!r.ok) return false;
        const body = (await r.json()) as { products: Array<{ product: string; readiness: string }> };
        return body.products.some((p) => p.product === 'lookup.domain.v1' && p.readiness === 'available');
      },
      60_000,
      200,
    ).catch(fail);

    // The burst, 16 at once: every request accepted at the first try (no 503 for want of a connection).
    const refs: string[] = [];
    let next = 0;
    const submitter = async () => {
      while (next < JOBS) {
        const i = next++;
        const res = await fetch(`http://127.0.0.1:${port}/v2/lookups/domain`, {
          method: 'POST',
          headers: {
            Authorization: `Bearer ${tenants[i % WORKSPACES]!.key}`,
            'Idempotency-Key': `budget-${i}-${randomBytes(4).toString('hex')}`,
            'Content-Type': 'application/json',
          },
          body: JSON.stringify({ value: NAMES[i % NAMES.length] }),
          signal: AbortSignal.timeout(30_000),
        });
        const body = (await res.json()) as { jobRef?: string };
        if (res.status !== 202) throw new Error(`submission ${i} answered ${res.status} ${JSON.stringify(body)}`);
        refs.push(body.jobRef!);
      }
    };
    await Promise.all(Array.from({ length: 16 }, submitter)).catch(fail);
    expect(refs).toHaveLength(JOBS);

    const jobs = await until(
      `${JOBS} jobs terminal`,
      async () => {
        // This burst's jobs only (the test above left one of its own in the database).
        const rows = await probe.db
          .selectFrom('jobs')
          .select(['id', 'public_id', 'status'])
          .where('public_id', 'in', refs)
          .execute();
        return rows.length === JOBS && rows.every((r) => TERMINAL.includes(r.status)) ? rows : null;
      },
      120_000,
      500,
    ).catch(fail);
    const tasks = await probe.db
      .selectFrom('tasks')
      .select(['check_name', 'object_key', 'status', 'reason', 'attempts'])
      .where(
        'job_id',
        'in',
        jobs.map((j) => j.id),
      )
      .execute();
    // The server refused nobody, and never held more than its limit.
    const refused = (await status('Connection_errors_max_connections')) - refusedBefore;
    const maxUsed = await status('Max_used_connections');
    // Each lane's pool is its share (6 of 30), reported on its metrics with what it met.
    const laneMetrics = await fetch(`http://127.0.0.1:${metricsPorts[0]}/metrics`).then((r) => r.text());
    const failures = [...laneMetrics.matchAll(/^lss_db_local_failures_total\{[^}]*\} (\d+)/gm)].reduce(
      (n, m) => n + Number(m[1]),
      0,
    );
    const byStatus = (xs: Array<{ status: string }>) =>
      JSON.stringify(Object.fromEntries([...Map.groupBy(xs, (x) => x.status)].map(([k, v]) => [k, v.length])));
    console.info(
      `db budget: max_connections ${MAX_CONNECTIONS}, DATABASE_MAX_CONNECTIONS ${MAX_CONNECTIONS} (reserve 4): ` +
        `server peak ${maxUsed} connections, ${refused} refused; lane-domain#0 local DB failures ${failures}; ` +
        `jobs ${byStatus(jobs)}, tasks ${byStatus(tasks)}`,
    );
    expect(tasks).toHaveLength(JOBS * 3);
    // No task failed (for want of a connection or anything else); a target's late answer may
    // still time a check out on a loaded machine, which is its own outcome, not a connection's.
    expect(
      tasks.filter((t) => t.status !== 'completed' && t.status !== 'timeout'),
      procs.report(1500),
    ).toEqual([]);
    expect(jobs.filter((j) => !['completed', 'partial'].includes(j.status))).toEqual([]);
    expect(refused).toBe(0);
    expect(maxUsed).toBeLessThanOrEqual(MAX_CONNECTIONS);
    expect(laneMetrics).toMatch(/^lss_db_connection_limit\{role="lane-domain"\} 6$/m);
    expect(laneMetrics).toMatch(/^lss_db_connections\{role="lane-domain",state="in_use"\} \d+$/m);
    expect(lanes.every((p) => p.running())).toBe(true);
  }, 240_000);
});
