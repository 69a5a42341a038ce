// The fault guarantees of DESIGN.md, with real processes: a lane worker killed with SIGKILL
// mid-task, a crash between a job's commit and its XADD, Redis restarted empty mid-run, and MySQL
// unreachable. The orchestrator and the lane workers are the real entry points
// (`node workers/orchestrator.ts`, `node workers/lane.ts domain`) as child processes; the API is
// the real app in this process (the harness), as are the DNS and RDAP labs.
//
// The RDAP lab sits behind a gate that can hold a name's next request until the test releases it
// (or its client dies): "the task is running now" is then a fact, not a timing guess.
//
// An orchestrator process owns every async product and sweeps its whole database, so each group
// of processes gets a scratch database of its own, never the run's shared one.
import http from 'node:http';
import type { Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createTenant, startHarness, type Harness } from '../helpers/harness.ts';
import {
  createScratchDatabase,
  freePort,
  ProcessGroup,
  startPrivateRedis,
  until,
  type PrivateRedis,
  type Proc,
  type ScratchDatabase,
} from '../helpers/processes.ts';
import { hasRedis } from '../helpers/redis.ts';
import { expectBalancedWorkspace, expectSettledJob } from '../helpers/ledger.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { startLabRdap, type LabRdap } from '../lab/rdap-server.ts';
import { labZones } from '../lab/zones.ts';
import { domainZones } from '../lab/domain-zones.ts';
import { rdapNames } from '../lab/rdap-fixtures.ts';
import { balance, grantCredits } from '../../src/credits/ledger.ts';
import { workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { generateApiKey } from '../../src/auth/api-key.ts';
import type { LaneHealth } from '../../src/queue/lane-health.ts';
import { LAB_SPECIAL_USE } from '../lab/addresses.ts';

const DOMAIN = '/v2/lookups/domain';
const GENEROUS = {
  app: { perMinute: 100_000, burst: 10_000 },
  products: { 'lookup.domain.v1': { perMinute: 100_000, perHour: 1_000_000 } },
};
const OPEN = ['pending', 'running'];

const procs = new ProcessGroup();
let dns: LabDns;
let labRdap: LabRdap;
let rdap: GatedRdap;

beforeAll(async () => {
  if (!process.env.DATABASE_URL || !hasRedis())
    throw new Error('needs DATABASE_URL and REDIS_URL (or REDIS_CLUSTER_NODES): run with `npm test`');
  dns = await startLabDns({ zones: [...labZones, ...domainZones] });
  labRdap = await startLabRdap();
  rdap = await startGatedRdap(labRdap.baseUrl);
});

afterAll(async () => {
  await procs.killAll();
  await Promise.all([dns?.close(), rdap?.close(), labRdap?.close()]);
});

// ---------------------------------------------------------------------------------------------
// Fixtures

interface GatedRdap {
  baseUrl: string;
  /** The next `count` requests for `name` wait until release(name) or until their client goes away. */
  hold(name: string, count?: number): void;
  /** Requests for `name` waiting at the gate now. */
  waiting(name: string): number;
  release(name: string): void;
  /** Requests for `name` received so far. */
  requests(name: string): number;
  close(): Promise<void>;
}

/** An RDAP server in front of the lab's: every request is passed on, unless held. */
async function startGatedRdap(upstream: string): Promise<GatedRdap> {
  const holds = new Map<string, number>();
  const held = new Map<string, Set<() => void>>();
  const counts = new Map<string, number>();
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', 'http://gate').pathname;
      const m = /^\/domain\/([^/]+)$/.exec(path);
      const name = m ? decodeURIComponent(m[1]!).toLowerCase() : '';
      if (name) counts.set(name, (counts.get(name) ?? 0) + 1);
      if (name && (holds.get(name) ?? 0) > 0) {
        holds.set(name, holds.get(name)! - 1);
        await new Promise<void>((resolve) => {
          const waiters = held.get(name) ?? new Set<() => void>();
          held.set(name, waiters);
          const go = () => {
            waiters.delete(go);
            resolve();
          };
          waiters.add(go);
          res.once('close', go); // the client went away (its process was killed)
        });
        if (res.destroyed || req.socket.destroyed) return;
      }
      const up = await fetch(new URL(path.slice(1), upstream), {
        redirect: 'manual',
        signal: AbortSignal.timeout(5000),
      });
      const body = Buffer.from(await up.arrayBuffer());
      const location = up.headers.get('location');
      res.writeHead(up.status, {
        'content-type': up.headers.get('content-type') ?? 'application/json',
        'content-length': body.length,
        ...(location ? { location } : {}),
      });
      res.end(body);
    })().catch(() => res.destroy());
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  let closed: Promise<void> | undefined;
  return {
    baseUrl: `http://127.0.0.1:${port}/`,
    hold: (name, count = 1) => void holds.set(name, (holds.get(name) ?? 0) + count),
    waiting: (name) => held.get(name)?.size ?? 0,
    release: (name) => {
      holds.delete(name);
      for (const go of [...(held.get(name) ?? [])]) go();
    },
    requests: (name) => counts.get(name) ?? 0,
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      return closed;
    },
  };
}

/** What every process of a group gets: its database, its Redis, the labs, short visibility. */
function groupEnv(
  databaseUrl: string,
  redis: { env?: Record<string, string | undefined>; prefix: string },
): Record<string, string | undefined> {
  return {
    DATABASE_URL: databaseUrl,
    ...redis.env,
    REDIS_KEY_PREFIX: redis.prefix,
    DNS_SERVERS: dns.address,
    DNS_TIMEOUT_MS: '2000',
    RDAP_BASE_URL: rdap.baseUrl,
    ALLOW_PRIVATE_TARGETS: '127.0.0.0/8',
    ALLOW_SPECIAL_USE_DOMAINS: LAB_SPECIAL_USE,
    LANE_VISIBILITY_MS: '1500',
    LANE_POOL_THREADS: '0',
    SHUTDOWN_TIMEOUT_MS: '3000',
    LOG_LEVEL: 'warn',
  };
}

function redisPrefix(tag: string): string {
  return `${process.env.REDIS_KEY_PREFIX ?? ''}${tag}:${randomBytes(3).toString('hex')}:`;
}

async function laneAlive(h: Harness, timeoutMs = 20_000): Promise<void> {
  const health = h.deps.runtime.services.laneHealth as LaneHealth;
  // The domain product is available once its lane worker and the orchestrator both heartbeat.
  await until(
    'the domain lane and orchestrator heartbeats',
    async () => {
      await health.refresh();
      return health.alive('domain') && health.alive('orchestrator');
    },
    timeoutMs,
  );
}

async function fundedTenant(h: Harness, credits: number) {
  const t = await createTenant(h, { limits: GENEROUS });
  const wsId = await workspaceInternalId(h.deps.db, t.workspaceId);
  await grantCredits(h.deps.db, wsId, credits, `grant:faults:${t.workspaceId}`);
  return { ...t, wsId };
}

async function jobRow(h: Harness, jobRef: string) {
  return h.deps.db.selectFrom('jobs').selectAll().where('public_id', '=', jobRef).executeTakeFirstOrThrow();
}

async function tasksOf(h: Harness, jobId: number) {
  const rows = await h.deps.db
    .selectFrom('tasks')
    .select(['id', 'check_name', 'object_key', 'status', 'reason', 'attempts', 'applied_at'])
    .where('job_id', '=', jobId)
    .orderBy('id')
    .execute();
  return Object.fromEntries(rows.map((r) => [r.check_name.replace(/^domain\./, ''), r]));
}

async function pollTerminal(h: Harness, key: string, jobRef: string, timeoutMs: number) {
  return until(
    `job ${jobRef} terminal`,
    async () => {
      const res = await client(h.app, key).get(`/v2/jobs/${jobRef}`);
      return res.status === 200 && res.body.terminal === true ? res : null;
    },
    timeoutMs,
    200,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${procs.report()}`);
  });
}

/** The ledger of one settled job and of its workspace (test/helpers/ledger.ts). */
async function expectSettledLedger(h: Harness, wsId: number, jobId: number) {
  const settled = await expectSettledJob(h.deps.db, jobId);
  await expectBalancedWorkspace(h.deps.db, wsId);
  return settled;
}

// ---------------------------------------------------------------------------------------------

describe('a lane worker killed mid-task; a crash between commit and XADD', () => {
  let db: ScratchDatabase;
  let h: Harness;
  let env: Record<string, string | undefined>;
  let worker: Proc;
  let orchestrator: Proc;

  beforeAll(async () => {
    db = await createScratchDatabase('faults');
    env = groupEnv(db.url, { prefix: redisPrefix('faults') });
    h = await startHarness(env);
    orchestrator = procs.node('orchestrator', ['workers/orchestrator.ts'], env);
    worker = procs.node('lane-domain#1', ['workers/lane.ts', 'domain'], env);
    await laneAlive(h);
  });

  afterAll(async () => {
    await Promise.allSettled([worker?.stop('SIGKILL'), orchestrator?.stop('SIGKILL')]);
    await h?.close();
    await db?.drop();
  });

  it('kill -9 of the lane worker while a task runs: a fresh worker re-runs that task only; the job ends, each task once, ledger settled once', async () => {
    const name = rdapNames.signed;
    const t = await fundedTenant(h, 10);
    rdap.hold(name); // the first registration query of this name hangs until its worker dies
    const accepted = await client(h.app, t.key).post(DOMAIN, { value: name });
    expect(accepted.status).toBe(202);
    const jobRef: string = accepted.body.jobRef;
    const job = await until('the job row', () => jobRow(h, jobRef));
    // The registration task is running (claimed, its RDAP query in flight); the others are done.
    const before = await until(
      'registration running, delegation and records finished',
      async () => {
        const tasks = await tasksOf(h, job.id);
        const ok =
          rdap.waiting(name) === 1 &&
          tasks.registration?.status === 'running' &&
          !OPEN.includes(tasks.delegation?.status ?? 'pending') &&
          !OPEN.includes(tasks.records?.status ?? 'pending');
        return ok ? tasks : null;
      },
      15_000,
      50,
    );
    expect(before.registration!.attempts).toBe(1);
    expect(await worker.stop('SIGKILL')).toBe(137);
    await until('the held RDAP query dropped with its worker', async () => rdap.waiting(name) === 0, 5000, 20);
    worker = procs.node('lane-domain#2', ['workers/lane.ts', 'domain'], env);

    const done = await pollTerminal(h, t.key, jobRef, 60_000);
    expect(done.body.status).toBe('completed');
    expect(done.body.result.result.registration).toMatchObject({ registered: true });
    const after = await tasksOf(h, job.id);
    expect(Object.keys(after).sort()).toEqual(['delegation', 'records', 'registration']);
    // Only the interrupted task ran again; the finished ones were not repeated.
    expect(after.registration).toMatchObject({ status: 'completed', attempts: 2 });
    expect(after.delegation).toMatchObject({ status: before.delegation!.status, attempts: 1 });
    expect(after.records).toMatchObject({ status: before.records!.status, attempts: 1 });
    expect(rdap.requests(name)).toBe(2);
    const ledger = await expectSettledLedger(h, t.wsId, job.id);
    expect(ledger).toEqual({ captured: 2, released: 0 });
    expect(done.body.ledger).toMatchObject({ reserved: 2, captured: 2, released: 0 });
    expect(orchestrator.running()).toBe(true);
  }, 75_000);

  it('crash between commit and XADD: the outbox relay publishes the committed job, which completes', async () => {
    const t = await fundedTenant(h, 10);
    const previous = process.env.LSS_FAULT_SKIP_PUBLISH;
    process.env.LSS_FAULT_SKIP_PUBLISH = '1';
    let accepted;
    try {
      accepted = await client(h.app, t.key).post(DOMAIN, { value: rdapNames.registered });
    } finally {
      if (previous === undefined) delete process.env.LSS_FAULT_SKIP_PUBLISH;
      else process.env.LSS_FAULT_SKIP_PUBLISH = previous;
    }
    expect(accepted.status).toBe(202);
    const jobRef: string = accepted.body.jobRef;
    const job = await jobRow(h, jobRef);
    const outbox = () =>
      h.deps.db.selectFrom('outbox').select(['topic', 'published_at']).where('job_id', '=', job.id).execute();
    // Committed (job, reservation, outbox row), never published.
    expect(job.status).toBe('queued');
    expect(await outbox()).toEqual([{ topic: 'plan', published_at: null }]);
    expect(await balance(h.deps.db, t.wsId)).toMatchObject({ reserved: 2 });

    const done = await pollTerminal(h, t.key, jobRef, 20_000);
    expect(done.body.status).toBe('completed');
    const rows = await outbox();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.published_at).toBeInstanceOf(Date);
    expect(await expectSettledLedger(h, t.wsId, job.id)).toEqual({ captured: 2, released: 0 });
  }, 30_000);
});

describe('Redis restarted empty mid-run (a private redis-server, or a private cluster in the cluster pass)', () => {
  let db: ScratchDatabase;
  let redis: PrivateRedis;
  let h: Harness;
  let orchestrator: Proc;
  let worker: Proc;

  beforeAll(async () => {
    [redis, db] = await Promise.all([startPrivateRedis(procs), createScratchDatabase('faultsr')]);
    // One task at a time per worker: while one task runs, the job's next task waits in the stream.
    const env = { ...groupEnv(db.url, { env: redis.env, prefix: 'faults:' }), LANE_CONCURRENCY: '1' };
    h = await startHarness(env);
    orchestrator = procs.node('orchestrator(redis)', ['workers/orchestrator.ts'], env);
    worker = procs.node('lane-domain(redis)', ['workers/lane.ts', 'domain'], env);
    await laneAlive(h);
  });

  afterAll(async () => {
    await Promise.allSettled([worker?.stop('SIGKILL'), orchestrator?.stop('SIGKILL'), redis?.stop()]);
    await h?.close();
    await db?.drop();
  });

  it('503 service_unavailable while Redis is down (never 500); the job still completes from MySQL; then normal answers', async () => {
    const name = rdapNames.expiringSoon;
    const t = await fundedTenant(h, 10);
    rdap.hold(name);
    const accepted = await client(h.app, t.key).post(DOMAIN, { value: name });
    expect(accepted.status).toBe(202);
    const jobRef: string = accepted.body.jobRef;
    const job = await until('the job row', () => jobRow(h, jobRef));
    // Delegation done, registration running (held at the RDAP gate), records queued behind it.
    await until(
      'registration running, records queued',
      async () => {
        const tasks = await tasksOf(h, job.id);
        return (
          rdap.waiting(name) === 1 &&
          tasks.registration?.status === 'running' &&
          tasks.records?.status === 'pending' &&
          !OPEN.includes(tasks.delegation?.status ?? 'pending')
        );
      },
      15_000,
      50,
    );

    await redis.kill();
    expect(await redis.down()).toBe(true);
    const downSince = Date.now();

    let refused = 0;
    const expect503 = async () => {
      const replies = [
        await client(h.app, t.key).post(DOMAIN, { value: rdapNames.registered }),
        await client(h.app, t.key).get(`/v2/jobs/${jobRef}`),
      ];
      for (const res of replies) {
        expect(res.status, JSON.stringify(res.body)).toBe(503);
        expect(res.body.error).toMatchObject({ code: 'service_unavailable', retryable: true });
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        refused++;
      }
      const ready = await supertest(h.app).get('/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.checks).toMatchObject({ mysql: 'ok', redis: 'down' });
    };
    await expect503();

    // The running task finishes while Redis is down: its outcome is in MySQL, its notice is lost.
    rdap.release(name);
    await until(
      'registration finished in MySQL',
      async () => {
        const tasks = await tasksOf(h, job.id);
        return !OPEN.includes(tasks.registration!.status) && tasks.registration!.applied_at === null;
      },
      10_000,
      50,
    );
    // A real outage for every process (reads, heartbeats, tick locks fail), answered 503 throughout.
    while (Date.now() - downSince < 3000) {
      await expect503();
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(refused).toBeGreaterThan(10);

    await redis.revive();
    // Nothing in Redis knows the job any more: the reconciler re-enqueues the queued task and
    // re-publishes the finished one's notice, from MySQL.
    const done = await pollTerminal(h, t.key, jobRef, 40_000);
    expect(done.body.status).toBe('completed');
    expect(done.body.result.result.registration).toMatchObject({ registered: true });
    const tasks = await tasksOf(h, job.id);
    for (const k of ['delegation', 'registration', 'records'])
      expect(tasks[k]).toMatchObject({ status: 'completed', attempts: 1 });
    expect(await expectSettledLedger(h, t.wsId, job.id)).toEqual({ captured: 2, released: 0 });

    // Normal answers again, from every process: they survived the outage.
    expect(orchestrator.running() && worker.running()).toBe(true);
    const again = await until(
      'a lookup accepted again',
      async () => {
        const res = await client(h.app, t.key).post(DOMAIN, { value: rdapNames.registered });
        expect([202, 503]).toContain(res.status); // 503 capability_unavailable until the lane's next heartbeat
        return res.status === 202 ? res : null;
      },
      15_000,
      250,
    );
    expect(again.body.status).toBe('queued');
    const ready = await supertest(h.app).get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.checks).toEqual({ mysql: 'ok', redis: 'ok', migrations: 'current' });
  }, 75_000);
});

describe('one Redis node lost under a running service (the only one, or one master of a private cluster)', () => {
  let redis: PrivateRedis;
  let h: Harness;
  const MAC = { path: '/v2/lookups/mac', body: { value: 'F4:F5:E8:12:34:56' } };
  const limits = {
    app: { perMinute: 100_000, burst: 10_000 },
    products: { 'lookup.mac.v1': { perMinute: 100_000, perHour: 1_000_000 } },
  };

  beforeAll(async () => {
    redis = await startPrivateRedis(procs);
    h = await startHarness({ ...redis.env, REDIS_KEY_PREFIX: 'node-lost:' });
  });

  afterAll(async () => {
    await h?.close();
    await redis?.stop();
  });

  it('every request answers at once, 200 or 503 service_unavailable, never a 500 or a hang; all answer again once it is back', async () => {
    // Several applications: on a cluster their limits and leases sit on different shards.
    const tenants = await Promise.all(Array.from({ length: 6 }, () => createTenant(h, { limits })));
    for (const t of tenants) expect((await client(h.app, t.key).post(MAC.path, MAC.body)).status).toBe(200);
    await redis.killOne();
    const statuses = new Map<number, number>();
    const end = Date.now() + 5000; // past the cluster's node timeout (2 s): the whole cluster reports down
    while (Date.now() < end) {
      for (const t of tenants) {
        const started = Date.now();
        const res = await client(h.app, t.key).post(MAC.path, MAC.body);
        expect(Date.now() - started, 'answered within the command timeout').toBeLessThan(3000);
        expect([200, 503], JSON.stringify(res.body)).toContain(res.status);
        if (res.status === 503) expect(res.body.error).toMatchObject({ code: 'service_unavailable', retryable: true });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
    }
    expect(statuses.get(503)).toBeGreaterThan(0);
    await redis.revive();
    await until(
      'every application answered again',
      async () => {
        const replies = await Promise.all(tenants.map((t) => client(h.app, t.key).post(MAC.path, MAC.body)));
        return replies.every((r) => r.status === 200);
      },
      20_000,
      250,
    );
  }, 45_000);
});

describe('MySQL unreachable', () => {
  let h: Harness;

  beforeAll(async () => {
    const port = await freePort(); // nothing listens there
    h = await startHarness({
      DATABASE_URL: `mysql://root@127.0.0.1:${port}/lss_unreachable`,
      REDIS_KEY_PREFIX: redisPrefix('faults-nodb'),
    });
  });

  afterAll(async () => {
    await h?.close();
  });

  it('answers 503 service_unavailable (never 500) to an authenticated lookup and a job read; /readyz says mysql down', async () => {
    const { key } = generateApiKey(); // well-formed: only the database can say whether it exists
    const lookups = [
      await client(h.app, key).post('/v2/lookups/mac', { value: 'F4:F5:E8:12:34:56' }),
      await client(h.app, key).post(DOMAIN, { value: rdapNames.registered }),
      await client(h.app, key).get('/v2/jobs/job_00000000000000000000000000'),
    ];
    for (const res of lookups) {
      expect(res.status, JSON.stringify(res.body)).toBe(503);
      expect(res.body.error).toMatchObject({ code: 'service_unavailable', status: 503, retryable: true });
      expect(JSON.stringify(res.body)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|mysql/i);
    }
    const ready = await supertest(h.app).get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body.status).toBe('not_ready');
    expect(ready.body.checks).toMatchObject({ mysql: 'down', redis: 'ok' });
  });
});
