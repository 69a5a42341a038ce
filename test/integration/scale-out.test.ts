// Many processes of each role at once, on one MySQL and one Redis (a 3-master Redis Cluster in the
// cluster pass of ops/test.ts, which is where npm test runs this file): 2 web processes
// (`node src/server.ts`), 3 lane processes of one lane (`node workers/lane.ts domain`) and 2
// orchestrators (`node workers/orchestrator.ts`), the lab (test/lab/serve.ts) as the world.
//
// 200 domain lookups are submitted across both web processes, each with its own Idempotency-Key
// and retried with that key until accepted. Once every process has taken work (seen holding
// entries of its streams), one process of each role is killed with SIGKILL: the web process that
// was answering, a lane runner with tasks in flight, an orchestrator with entries pending. Then
// every job completes exactly once, every task is captured once, the ledger invariant holds, and
// nothing is left pending or dead-lettered.
//
// The orchestrator scales out (several instances share the consumer groups; periodic work takes a
// tick lock; every step is idempotent under the job row lock): two run here, and the survivor
// takes over the entries of the one killed.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balance, grantCredits } from '../../src/credits/ledger.ts';
import { workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { groups, queueKeys, streams } from '../../src/queue/streams.ts';
import type { RedisClient } from '../../src/redis/client.ts';
import { createTenant, startHarness, type Harness } from '../helpers/harness.ts';
import { expectBalancedWorkspace, expectSettledJob } from '../helpers/ledger.ts';
import {
  createScratchDatabase,
  freePort,
  ProcessGroup,
  until,
  type Proc,
  type ScratchDatabase,
} from '../helpers/processes.ts';
import { onCluster, testPrefix } from '../helpers/redis.ts';
import { rdapNames } from '../lab/rdap-fixtures.ts';
import { startLab, type RunningLab } from '../lab/serve.ts';

const JOBS = 200;
const WORKSPACES = 4;
const PRICE = 2; // lookup.domain.v1: three checks, two credits
/** Names the lab answers in full: each job completes. */
const NAMES = [rdapNames.registered, rdapNames.signed, rdapNames.expiringSoon];
const GENEROUS = {
  app: { perMinute: 100_000, burst: 10_000 },
  products: { 'lookup.domain.v1': { perMinute: 100_000, perHour: 1_000_000 } },
};
const TERMINAL = ['completed', 'partial', 'failed', 'cancelled', 'unavailable'];
/** Submissions may not take longer than this, retries included. */
const SUBMIT_DEADLINE_MS = 90_000;

const procs = new ProcessGroup();
let lab: RunningLab;
let db: ScratchDatabase;
let h: Harness;

interface Reply {
  status: number;
  body: { jobRef?: string; error?: { code: string } };
}

interface Web {
  proc: Proc;
  port: number;
}

/** The pid inside a consumer name (`<role>-<host>-<pid>-<hex>`, src/queue/dead-letter.ts). */
function consumerPid(name: string): number {
  return Number(/-(\d+)-[0-9a-f]{6}$/.exec(name)?.[1]);
}

/** Consumers holding pending entries of `stream` in `group` right now. */
async function holders(redis: RedisClient, stream: string, group: string): Promise<string[]> {
  const summary = (await redis.xpending(stream, group).catch(() => [0, null, null, null])) as [
    number,
    unknown,
    unknown,
    Array<[string, string]> | null,
  ];
  return (summary[3] ?? []).map(([name]) => name);
}

/** The domain lane's job streams (one per job with tasks on the lane). */
async function domainJobStreams(redis: RedisClient): Promise<string[]> {
  return ((await redis.zrange(queueKeys.laneJobs('domain'), '0', '-1')) as string[]).map((j) =>
    streams.laneJob('domain', Number(j)),
  );
}

/** Consumers holding pending entries of any of the domain lane's job streams. */
async function laneHolders(redis: RedisClient): Promise<string[]> {
  const all = await Promise.all((await domainJobStreams(redis)).map((s) => holders(redis, s, groups.lane('domain'))));
  return all.flat();
}

/** Live heartbeats of a role (consumer names), from its sorted set. */
async function beating(redis: RedisClient, role: 'domain' | 'orchestrator'): Promise<string[]> {
  return redis.zrangebyscore(queueKeys.laneAlive(role), Date.now() - 10_000, '+inf');
}

beforeAll(async () => {
  [lab, db] = await Promise.all([startLab(), createScratchDatabase('scale')]);
});

afterAll(async () => {
  await procs.killAll();
  await h?.close();
  await db?.drop();
  await lab?.close();
});

describe(`2 web, 3 lane and 2 orchestrator processes on ${onCluster() ? 'a Redis Cluster' : 'one Redis'}`, () => {
  it(`${JOBS} jobs complete exactly once, each task captured once, the ledger holds, while one process of each role is killed`, async () => {
    const env: Record<string, string> = {
      ...lab.env,
      DATABASE_URL: db.url,
      REDIS_KEY_PREFIX: testPrefix('scale'),
      LANE_VISIBILITY_MS: '1500',
      LANE_POOL_THREADS: '0',
      // 8 tasks per lane process (4 workspaces x 8 permits cover all three).
      LANE_CONCURRENCY: '8',
      // The deployment, for the connection budget (DATABASE_MAX_CONNECTIONS, default 151): the two
      // web processes and this test's app, two orchestrators, three lane-domain processes.
      WEB_PROCESSES: '3',
      ORCHESTRATOR_PROCESSES: '2',
      LANE_PROCESSES: '0,domain=3',
      SHUTDOWN_TIMEOUT_MS: '3000',
      // A lease left by the killed web process blocks its key's retries this long at most.
      IDEMPOTENCY_LOCK_MS: '2000',
      WEB_CONCURRENCY: '1',
      METRICS_PORT: '0',
      LOG_LEVEL: 'warn',
    };
    h = await startHarness(env);
    const redis = h.deps.redis;
    const tenants = await Promise.all(
      Array.from({ length: WORKSPACES }, async () => {
        const t = await createTenant(h, { limits: GENEROUS });
        const wsId = await workspaceInternalId(h.deps.db, t.workspaceId);
        await grantCredits(h.deps.db, wsId, 1000, `grant:scale:${t.workspaceId}`);
        return { ...t, wsId };
      }),
    );

    const orchestrators = [0, 1].map((i) => procs.node(`orchestrator#${i}`, ['workers/orchestrator.ts'], env));
    const lanes = [0, 1, 2].map((i) => procs.node(`lane-domain#${i}`, ['workers/lane.ts', 'domain'], env));
    const webs: Web[] = [];
    for (const i of [0, 1]) {
      const port = await freePort();
      webs.push({ port, proc: procs.node(`web#${i}`, ['src/server.ts'], { ...env, PORT: String(port) }) });
    }
    const fail = (err: Error) => {
      throw new Error(`${err.message}\n${procs.report(1500)}`);
    };
    await until(
      'every process heartbeats and both web processes are ready',
      async () => {
        const [l, o] = await Promise.all([beating(redis, 'domain'), beating(redis, 'orchestrator')]);
        if (l.length < 3 || o.length < 2) return false;
        // Each web process sees the lane and the orchestrator (its readiness view refreshes every 2 s).
        const ready = await Promise.all(
          webs.map((w) =>
            fetch(`http://127.0.0.1:${w.port}/v2/products`, {
              headers: { Authorization: `Bearer ${tenants[0]!.key}` },
            }).then(
              async (r) =>
                r.ok &&
                ((await r.json()) as { products: Array<{ product: string; readiness: string }> }).products.some(
                  (p) => p.product === 'lookup.domain.v1' && p.readiness === 'available',
                ),
              () => false,
            ),
          ),
        );
        return ready.every(Boolean);
      },
      40_000,
      200,
    ).catch(fail);

    // Who holds entries of the role's streams, sampled until the kill.
    const seen = new Set<number>();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const names = (
          await Promise.all([
            holders(redis, streams.jobs, groups.orchestrator),
            holders(redis, streams.laneResults('domain'), groups.orchestrator),
            laneHolders(redis),
          ])
        ).flat();
        for (const n of names) seen.add(consumerPid(n));
        await sleep(20);
      }
    })();
    const allSeen = () => [...orchestrators, ...lanes].every((p) => seen.has(p.child.pid!));

    // Submissions: each key retried (same key, the other web process when one fails) until
    // accepted. A reply lost with a killed process is replayed from MySQL on the retry.
    const accepted = new Map<string, string>(); // Idempotency-Key → jobRef
    let next = 0;
    const retries = new Map<string, number>(); // "status code" → count, reported at the end
    const submit = async (i: number): Promise<void> => {
      const key = `scale-${i}-${randomBytes(6).toString('hex')}`;
      const tenant = tenants[i % WORKSPACES]!;
      let w = i % webs.length;
      const deadline = Date.now() + SUBMIT_DEADLINE_MS;
      for (;;) {
        const web = webs[w]!;
        const res = await fetch(`http://127.0.0.1:${web.port}/v2/lookups/domain`, {
          method: 'POST',
          headers: {
            Authorization: `Bearer ${tenant.key}`,
            'Idempotency-Key': key,
            'Content-Type': 'application/json',
          },
          body: JSON.stringify({ value: NAMES[i % NAMES.length] }),
          signal: AbortSignal.timeout(10_000),
        }).then(
          async (r): Promise<Reply> => ({ status: r.status, body: (await r.json()) as Reply['body'] }),
          (err: Error): Reply => ({ status: 0, body: { error: { code: err.message } } }),
        );
        if (res.status === 202) {
          accepted.set(key, res.body.jobRef!);
          return;
        }
        // 0: the process is gone; 409: the lease the killed process held is not expired yet.
        // Anything else (a 503 too: every process it needs is up) is a failure.
        if (![0, 409].includes(res.status) || Date.now() > deadline) {
          throw new Error(`submission ${i} answered ${res.status} ${JSON.stringify(res.body)}`);
        }
        const why = `${res.status} ${res.body.error?.code}`;
        retries.set(why, (retries.get(why) ?? 0) + 1);
        w = (w + 1) % webs.length;
        await sleep(100 + Math.random() * 200);
      }
    };
    const submitter = async () => {
      while (next < JOBS) await submit(next++);
    };

    let killed: { web: Proc; lane: Proc; orchestrator: Proc } | undefined;
    const killer = (async () => {
      await until(
        'every lane and orchestrator process took work, and a third of the jobs are in',
        async () => (allSeen() && accepted.size >= JOBS / 3) || accepted.size === JOBS,
        SUBMIT_DEADLINE_MS,
        20,
      );
      sampling = false;
      // The lane runner and the orchestrator that hold entries now: their work is mid-flight.
      const holding = new Set(
        (
          await Promise.all([
            laneHolders(redis),
            holders(redis, streams.laneResults('domain'), groups.orchestrator),
            holders(redis, streams.jobs, groups.orchestrator),
          ])
        )
          .flat()
          .map(consumerPid),
      );
      killed = {
        web: webs[0]!.proc,
        lane: lanes.find((p) => holding.has(p.child.pid!)) ?? lanes[0]!,
        orchestrator: orchestrators.find((p) => holding.has(p.child.pid!)) ?? orchestrators[0]!,
      };
      await Promise.all([killed.web.stop('SIGKILL'), killed.lane.stop('SIGKILL'), killed.orchestrator.stop('SIGKILL')]);
    })();

    await Promise.all([...Array.from({ length: 16 }, submitter), killer]).catch(fail);
    await sampler;
    expect(killed, 'the kill happened before the last submission').toBeDefined();
    expect([...orchestrators, ...lanes].filter((p) => !seen.has(p.child.pid!)).map((p) => p.name)).toEqual([]);
    expect([killed!.web, killed!.lane, killed!.orchestrator].map((p) => p.running())).toEqual([false, false, false]);

    // Every key accepted once, as one job.
    expect(accepted.size).toBe(JOBS);
    const refs = new Set(accepted.values());
    expect(refs.size).toBe(JOBS);
    const jobs = await until(
      `${JOBS} jobs terminal`,
      async () => {
        const rows = await h.deps.db.selectFrom('jobs').select(['id', 'public_id', 'status', 'workspace_id']).execute();
        return rows.length === JOBS && rows.every((r) => TERMINAL.includes(r.status)) ? rows : null;
      },
      120_000,
      500,
    ).catch(fail);
    expect(new Set(jobs.map((j) => j.public_id))).toEqual(refs);
    expect(jobs.filter((j) => j.status !== 'completed').map((j) => [j.public_id, j.status])).toEqual([]);

    // Each job settled once: each task captured once, nothing released (all work done).
    for (const j of jobs) expect(await expectSettledJob(h.deps.db, j.id)).toEqual({ captured: PRICE, released: 0 });
    const tasks = await h.deps.db.selectFrom('tasks').select(['status', 'attempts', 'applied_at']).execute();
    expect(tasks).toHaveLength(JOBS * 3);
    expect(tasks.filter((t) => t.status !== 'completed' || t.applied_at === null)).toEqual([]);
    for (const t of tenants) {
      await expectBalancedWorkspace(h.deps.db, t.wsId);
      const perWs = jobs.filter((j) => Number(j.workspace_id) === t.wsId).length;
      expect(perWs).toBe(JOBS / WORKSPACES);
      expect((await balance(h.deps.db, t.wsId)).captured).toBe(perWs * PRICE);
    }

    console.info(
      `scale-out: ${tasks.filter((t) => t.attempts > 1).length} task(s) re-run after the kill; submission retries ${JSON.stringify(Object.fromEntries(retries))}`,
    );
    // Nothing left behind in Redis: the dead consumers' entries were reclaimed and acknowledged,
    // nothing was dead-lettered.
    await until(
      'nothing pending on the lane and the orchestrator streams',
      async () => {
        const left = (await Promise.all([
          ...(await domainJobStreams(redis)).map((s) => redis.xpending(s, groups.lane('domain')).catch(() => [0])),
          redis.xpending(streams.laneResults('domain'), groups.orchestrator),
          redis.xpending(streams.jobs, groups.orchestrator),
        ])) as Array<[number]>;
        return left.every((p) => Number(p[0]) === 0);
      },
      20_000,
      200,
    ).catch(fail);
    for (const s of [streams.lane('domain'), streams.jobs]) expect(await redis.xlen(streams.deadLetterOf(s))).toBe(0);
    // The survivors are still at work.
    const survivors = [...orchestrators, ...lanes, ...webs.map((w) => w.proc)].filter((p) => p.running());
    expect(survivors).toHaveLength(4);
  }, 240_000);
});
