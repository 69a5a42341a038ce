// Issue 23 item 2: a lane process being restarted is not an outage. Async products are accepted
// and queued while a lane of their kind was alive within LANE_RESTART_GRACE_MS (the stream keeps
// the work), the job says it waits (progress.waitingFor, pollAfterMs 3000), the restarted lane
// runs it to the end; only after the grace does admission answer 503 capability_unavailable.
// Real processes (`node workers/orchestrator.ts`, `node workers/lane.ts domain`), the real app in
// this process, the lab DNS and RDAP servers, a scratch database of their own.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createTenant, startHarness, type Harness } from '../helpers/harness.ts';
import { createScratchDatabase, ProcessGroup, until, type Proc, type ScratchDatabase } from '../helpers/processes.ts';
import { hasRedis } from '../helpers/redis.ts';
import { expectBalancedWorkspace, expectSettledJob } from '../helpers/ledger.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { startLabRdap, type LabRdap } from '../lab/rdap-server.ts';
import { labZones } from '../lab/zones.ts';
import { domainZones } from '../lab/domain-zones.ts';
import { rdapNames } from '../lab/rdap-fixtures.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import type { LaneHealth } from '../../src/queue/lane-health.ts';

const DOMAIN = '/v2/lookups/domain';
const GENEROUS = {
  app: { perMinute: 100_000, burst: 10_000 },
  products: { 'lookup.domain.v1': { perMinute: 100_000, perHour: 1_000_000 } },
};

const procs = new ProcessGroup();
let dns: LabDns;
let rdap: LabRdap;
let db: ScratchDatabase;
let env: Record<string, string | undefined>;
let h: Harness;
/** The same app with a 2 s grace, to see the grace end in a test's time. */
let short: Harness;
let worker: Proc;
let generation = 0;

beforeAll(async () => {
  if (!process.env.DATABASE_URL || !hasRedis())
    throw new Error('needs DATABASE_URL and REDIS_URL (or REDIS_CLUSTER_NODES): run with `npm test`');
  [dns, rdap, db] = await Promise.all([
    startLabDns({ zones: [...labZones, ...domainZones] }),
    startLabRdap(),
    createScratchDatabase('lanerestart'),
  ]);
  env = {
    DATABASE_URL: db.url,
    REDIS_KEY_PREFIX: `${process.env.REDIS_KEY_PREFIX ?? ''}lanerestart:${randomBytes(3).toString('hex')}:`,
    DNS_SERVERS: dns.address,
    DNS_TIMEOUT_MS: '2000',
    RDAP_BASE_URL: rdap.baseUrl,
    ALLOW_PRIVATE_TARGETS: '127.0.0.0/8',
    // The lab's names are under the special-use `test` (issue 18 refuses those unless listed).
    ALLOW_SPECIAL_USE_DOMAINS: 'test',
    LANE_VISIBILITY_MS: '1500',
    LANE_POOL_THREADS: '0',
    SHUTDOWN_TIMEOUT_MS: '3000',
    LOG_LEVEL: 'warn',
  };
  // The production default, which the harness turns off for other files.
  h = await startHarness({ ...env, LANE_RESTART_GRACE_MS: '30000' });
  short = await startHarness({ ...env, LANE_RESTART_GRACE_MS: '2000' });
  procs.node('orchestrator', ['workers/orchestrator.ts'], env);
  worker = startWorker();
  await laneAlive(h);
}, 60_000);

afterAll(async () => {
  await procs.killAll();
  await h?.close();
  await short?.close();
  await db?.drop();
  await Promise.all([dns?.close(), rdap?.close()]);
});

function startWorker(): Proc {
  return procs.node(`lane-domain#${++generation}`, ['workers/lane.ts', 'domain'], env);
}

const health = (x: Harness) => x.deps.runtime.services.laneHealth as LaneHealth;

async function laneAlive(x: Harness): Promise<void> {
  await until(
    'the domain lane and orchestrator heartbeats',
    async () => {
      await health(x).refresh();
      return health(x).alive('domain') && health(x).alive('orchestrator');
    },
    30_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${procs.report()}`);
  });
}

async function fundedTenant(x: Harness, credits: number) {
  const t = await createTenant(x, { limits: GENEROUS });
  const wsId = await workspaceInternalId(x.deps.db, t.workspaceId);
  await grantCredits(x.deps.db, wsId, credits, `grant:lanerestart:${t.workspaceId}`);
  return { ...t, wsId };
}

async function jobId(x: Harness, jobRef: string): Promise<number> {
  const row = await x.deps.db.selectFrom('jobs').select('id').where('public_id', '=', jobRef).executeTakeFirstOrThrow();
  return Number(row.id);
}

async function pollTerminal(x: Harness, key: string, jobRef: string, timeoutMs = 45_000) {
  return until(
    `job ${jobRef} terminal`,
    async () => {
      const res = await client(x.app, key).get(`/v2/jobs/${jobRef}`);
      return res.status === 200 && res.body.terminal === true ? res : null;
    },
    timeoutMs,
    200,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${procs.report()}`);
  });
}

describe('a lane restart is not an outage (LANE_RESTART_GRACE_MS)', () => {
  it('SIGTERM (its heartbeat removed at once): the lookup is accepted and queued, says it waits, and completes once the lane is back', async () => {
    const t = await fundedTenant(h, 10);
    expect(await worker.stop('SIGTERM')).toBe(0);
    await health(h).refresh();
    expect(health(h).alive('domain')).toBe(false);
    expect(health(h).state('domain')).toBe('restarting');

    // Before: 503 capability_unavailable, although the stream would have kept the work.
    const accepted = await client(h.app, t.key).post(DOMAIN, { value: rdapNames.registered });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    const jobRef: string = accepted.body.jobRef;
    const products = await client(h.app, t.key).get('/v2/products');
    expect(products.body.products.find((p: { product: string }) => p.product === 'lookup.domain.v1').readiness).toBe(
      'available',
    );

    // Planned by the orchestrator, its tasks wait in the domain stream: the status says so.
    const waiting = await until(
      'the job waiting for the domain lane',
      async () => {
        const res = await client(h.app, t.key).get(`/v2/jobs/${jobRef}`);
        return res.body.progress?.waitingFor?.includes('domain') ? res : null;
      },
      15_000,
      100,
    );
    expect(waiting.body).toMatchObject({ terminal: false, pollAfterMs: 3000 });
    expect(['queued', 'running']).toContain(waiting.body.status);
    expect(waiting.body.progress).toMatchObject({ tasksQueued: 3, tasksDone: 0, waitingFor: ['domain'] });

    worker = startWorker();
    const done = await pollTerminal(h, t.key, jobRef);
    expect(done.body.status).toBe('completed');
    expect(done.body.progress.waitingFor).toBeUndefined();
    expect(done.body.result.result.registration).toMatchObject({ registered: true });
    expect(await expectSettledJob(h.deps.db, await jobId(h, jobRef))).toEqual({ captured: 2, released: 0 });
    await expectBalancedWorkspace(h.deps.db, t.wsId);
  }, 90_000);

  it('after the grace (2 s here) admission answers 503 capability_unavailable; the job accepted during it still runs', async () => {
    await laneAlive(short);
    const t = await fundedTenant(short, 10);
    expect(await worker.stop('SIGTERM')).toBe(0);
    await health(short).refresh();
    expect(health(short).state('domain')).toBe('restarting');
    const during = await client(short.app, t.key).post(DOMAIN, { value: rdapNames.registered });
    expect(during.status, JSON.stringify(during.body)).toBe(202);
    await until(
      'the grace over',
      async () => {
        await health(short).refresh();
        return health(short).state('domain') === 'down';
      },
      10_000,
      100,
    );
    const after = await client(short.app, t.key).post(DOMAIN, { value: rdapNames.registered });
    expect(after.status).toBe(503);
    expect(after.body.error).toMatchObject({ code: 'capability_unavailable', retryable: true });
    // The job accepted during the grace waits (it is not lost): it runs once a lane is back.
    const waiting = await client(short.app, t.key).get(`/v2/jobs/${during.body.jobRef}`);
    expect(waiting.body).toMatchObject({ terminal: false, pollAfterMs: 3000 });
    expect(waiting.body.progress.waitingFor).toEqual(['domain']);
    worker = startWorker();
    expect((await pollTerminal(short, t.key, during.body.jobRef)).body.status).toBe('completed');
  }, 90_000);

  it('SIGKILL and restart: accepted while the lane is down, run by the new process', async () => {
    await laneAlive(h);
    const t = await fundedTenant(h, 10);
    expect(await worker.stop('SIGKILL')).toBe(137);
    const accepted = await client(h.app, t.key).post(DOMAIN, { value: rdapNames.expiringSoon });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    worker = startWorker();
    const done = await pollTerminal(h, t.key, accepted.body.jobRef);
    expect(done.body.status).toBe('completed');
    expect(await expectSettledJob(h.deps.db, await jobId(h, accepted.body.jobRef))).toEqual({
      captured: 2,
      released: 0,
    });
    await expectBalancedWorkspace(h.deps.db, t.wsId);
  }, 90_000);
});
