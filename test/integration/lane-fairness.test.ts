// The lane's capacity shared between workspaces (issue 32; workers/lane-runner/run-gate.ts,
// src/queue/lane-streams-consumer.ts), on real MySQL, Redis streams, an orchestrator and two lane
// workers (each its own Redis connections, consumer name and capacity, as two lane processes):
//   - work conserving: one workspace alone with work runs as many checks as the two processes hold
//     (12), where the fixed per-(workspace, lane) permit capped it at 8;
//   - a workspace that arrives behind another's backlog takes every slot that frees until it holds
//     its share (half of each process), then each freed slot goes to whoever holds fewer, so both
//     keep an equal share while both have work;
// And the runner's answer to a check that met this process's resource limits (EMFILE: noted as the
// outbound guard notes it, src/net/local-failures.ts): nothing recorded, the task runs again.
// Each check blocks on its own gate until the test opens it, and reports which worker runs it:
// assertions are on states and start orders, never on durations.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../../src/config/config.ts';
import { Authenticator } from '../../src/auth/authenticator.ts';
import type { Principal } from '../../src/auth/principal.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { createDb, type DbHandle } from '../../src/db/database.ts';
import { createKey, createWorkspace } from '../../src/auth/tenancy-repo.ts';
import { acceptJob, markOutboxPublished } from '../../src/jobs/jobs-repo.ts';
import { startOrchestrator, type OrchestratorHandle } from '../../src/jobs/orchestration/orchestrator.ts';
import { publishJob, streams } from '../../src/queue/streams.ts';
import type { RedisClient } from '../../src/redis/client.ts';
import type { CheckSpec, ProductDefinition } from '../../src/products/kit/product-contract.ts';
import { noteIfLocal } from '../../src/net/local-failures.ts';
import type { QueueSettings } from '../../src/queue/queue-settings.ts';
import { checkTimeoutMs } from '../../workers/lane-runner/registry.ts';
import { startLaneWorker, type LaneWorkerHandle } from '../../workers/start-lane-worker.ts';
import { hasRedis, testPrefix, testRedis } from '../helpers/redis.ts';

const silent = pino({ level: 'silent' });
const PER_PROCESS = 6;
const CHECK = 'test.fair';

/** A gate per task key: the test opens them one by one. */
const gates = new Map<string, () => void>();
const opened = new Set<string>();
/** Checks running now, per worker: task key → its workspace's letter. */
const running: Array<Map<string, string>> = [new Map(), new Map()];
/** Every start, in order: worker and task key. */
const starts: Array<{ worker: number; key: string }> = [];

/** Task key → how many more of its runs meet EMFILE (as the guard would note a connect failing so). */
const localFailRuns = new Map<string, number>();

function open(key: string): void {
  opened.add(key);
  gates.get(key)?.();
}

function fairCheck(worker: number): CheckSpec {
  return {
    name: CHECK,
    lane: 'dns',
    timeoutMs: 60_000,
    async run(task, ctx) {
      const key = task.objectKey;
      running[worker]!.set(key, key.slice(0, 1));
      starts.push({ worker, key });
      try {
        await new Promise<void>((resolve, reject) => {
          if (opened.has(key)) return resolve();
          gates.set(key, resolve);
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
        });
      } finally {
        running[worker]!.delete(key);
      }
      const shortages = localFailRuns.get(key) ?? 0;
      if (shortages > 0) {
        localFailRuns.set(key, shortages - 1);
        // What a port check would make of a connect that failed so: "closed", the target's fact.
        noteIfLocal(Object.assign(new Error('connect EMFILE'), { code: 'EMFILE' }));
        return { ...EMPTY_OUTPUT, projection: { state: 'closed' } };
      }
      return { ...EMPTY_OUTPUT, projection: { state: 'open' } };
    },
  };
}

const EMPTY_OUTPUT = {
  status: 'completed' as const,
  objects: [],
  relations: [],
  findings: [],
  limitations: [],
  sources: [],
};

const product: ProductDefinition<{ letter: string; n: number }> = {
  id: `test.fair.${randomBytes(2).toString('hex')}`,
  title: 'fair share test product',
  mode: 'async',
  method: 'POST',
  path: '/v2/test/fair',
  scope: 'scan:create',
  rateClass: 'async_lookup',
  input: z.any(),
  lanes: [{ lane: 'probe', required: false, description: 'test lane' }],
  price: () => 0,
  readiness: () => ({ probe: 'ready' }),
  job: {
    workerLanes: ['dns'],
    target: () => ({ type: 'domain_name', value: 'example.test' }),
    plan: (input) =>
      Array.from({ length: input.n }, (_, i) => ({
        check: CHECK,
        lane: 'dns',
        productLane: 'probe',
        required: false,
        unitCost: 1,
        objectKey: `${input.letter}${i}`,
        params: {},
      })),
    deadlineMs: 120_000,
  },
};

const settings = {
  LANE_CONCURRENCY: PER_PROCESS,
  LANE_LAG_TARGET_MS: 0, // a fixed capacity: the lag controller is tested on its own
  LANE_POOL_THREADS: 0,
  LANE_VISIBILITY_MS: 30_000,
};

let dbh: DbHandle;
let redis: RedisClient;
let config: Config;
let orchestrator: OrchestratorHandle;
const workers: LaneWorkerHandle[] = [];
const tenants: Record<'a' | 'b', Principal> = {} as never;

async function until<T>(what: string, fn: () => T | Promise<T>, timeoutMs = 20_000): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

async function accept(letter: 'a' | 'b', n: number): Promise<number> {
  const accepted = await acceptJob(dbh.db, {
    principal: tenants[letter],
    product: product.id,
    target: { type: 'domain_name', value: 'example.test' },
    profile: null,
    input: { letter, n },
    price: n,
    deadlineMs: 120_000,
    requestId: `req_${randomBytes(8).toString('hex')}`,
    claim: undefined,
    objectCap: null,
  });
  await publishJob(redis, accepted.jobId, 'plan');
  await markOutboxPublished(dbh.db, accepted.jobId, 'plan');
  return accepted.jobId;
}

/** A lane worker (as one lane process) whose checks report as worker `w`. */
function startWorker(w: number, withSettings: Partial<QueueSettings>): Promise<LaneWorkerHandle> {
  const spec = fairCheck(w);
  return startLaneWorker('dns', {
    config,
    log: silent,
    db: dbh.db,
    redis,
    settings: withSettings,
    blockMs: 50,
    checks: (name) => (name === CHECK ? spec : undefined),
  });
}

const count = (w: number, letter: string) => [...running[w]!.values()].filter((l) => l === letter).length;
const total = (letter: string) => count(0, letter) + count(1, letter);

beforeAll(async () => {
  if (!process.env.DATABASE_URL || !hasRedis()) throw new Error('needs DATABASE_URL and Redis: run with `npm test`');
  config = parseConfig({ ...process.env, LOG_LEVEL: 'silent' });
  dbh = createDb(config.DATABASE_URL);
  redis = await testRedis(testPrefix('fair'));
  for (const letter of ['a', 'b'] as const) {
    const ws = await createWorkspace(dbh.db, { name: `fair-${letter}-${randomBytes(3).toString('hex')}` });
    const key = await createKey(dbh.db, config.KEY_PEPPER, { workspace: ws.workspaceId });
    tenants[letter] = (await new Authenticator(dbh.db, config.KEY_PEPPER, 0).verify(key.key))!;
    await grantCredits(dbh.db, tenants[letter].workspaceId, 1000, `grant:${ws.workspaceId}`);
  }
  orchestrator = await startOrchestrator({
    config,
    log: silent,
    db: dbh.db,
    redis,
    products: [product],
    settings,
    checkTimeoutMs,
    timing: { relayEveryMs: 200, relayAfterMs: 2000, reconcileEveryMs: 1000, sweepEveryMs: 1000 },
  });
  for (const w of [0, 1]) workers.push(await startWorker(w, settings));
});

afterAll(async () => {
  for (const key of [...gates.keys()]) open(key);
  for (const w of workers) await w.close();
  await orchestrator?.close();
  await redis?.quit().catch(() => {});
  await dbh?.close();
});

describe("the lane's capacity: work conserving, max-min fair between workspaces, across lane processes", () => {
  it("one workspace alone uses both processes' whole capacity; one that arrives gets its share at the next freed slots", async () => {
    const aJob = await accept('a', 40);
    // Work conserving: A alone runs 2 × PER_PROCESS checks (the old per-workspace permit stopped at 8).
    await until('a running on every slot of both processes', () => total('a') === 2 * PER_PROCESS);
    expect([count(0, 'a'), count(1, 'a')]).toEqual([PER_PROCESS, PER_PROCESS]);

    const bJob = await accept('b', 40);
    const bStream = streams.laneJob('dns', bJob);
    const wsB = String(tenants.b.workspaceId);
    // B's entries are read by both processes although A's backlog of 28 came first, and wait for a slot.
    await until("b's checks waiting in both processes", () =>
      workers.every((w) => w.runner.gate.waitingFor(wsB) > 0 && w.runner.waitingOn(bStream) > 0),
    );
    expect(total('b')).toBe(0);
    const before = starts.length;

    // Free A's slots one at a time, alternating processes: every freed slot goes to B until B holds
    // half of each process (it has fewer running than A), and nothing else starts in between.
    const half = PER_PROCESS / 2;
    for (let i = 0; i < PER_PROCESS; i++) {
      const w = i % 2;
      const key = [...running[w]!.entries()].find(([, l]) => l === 'a')![0];
      const started = starts.length;
      open(key);
      await until(`a start after freeing ${key}`, () => starts.length > started);
    }
    const next = starts.slice(before);
    expect(next.map((s) => s.key.slice(0, 1))).toEqual(Array(PER_PROCESS).fill('b'));
    expect([count(0, 'a'), count(0, 'b'), count(1, 'a'), count(1, 'b')]).toEqual([half, half, half, half]);

    // From the equal share on, whoever frees a slot gets it back: both keep their share.
    for (let i = 0; i < 4; i++) {
      const letter = i % 2 === 0 ? 'a' : 'b';
      const w = i < 2 ? 0 : 1;
      const key = [...running[w]!.entries()].find(([, l]) => l === letter)![0];
      const started = starts.length;
      open(key);
      await until(`a start after freeing ${key}`, () => starts.length > started);
      expect(starts.at(-1)).toMatchObject({ worker: w });
      expect(starts.at(-1)!.key.slice(0, 1)).toBe(letter);
      expect([count(w, 'a'), count(w, 'b')]).toEqual([half, half]);
    }

    // Let both finish.
    for (const letter of ['a', 'b']) for (let i = 0; i < 40; i++) open(`${letter}${i}`);
    for (const jobId of [aJob, bJob])
      await until(
        `job ${jobId} terminal`,
        async () =>
          (await dbh.db.selectFrom('jobs').select('status').where('id', '=', jobId).executeTakeFirstOrThrow())
            .status === 'completed',
        60_000,
      );
  }, 120_000);
});

describe("a check that met this process's resource limits (EMFILE)", () => {
  it("records nothing: the task goes back and runs again, and only a run without the shortage is its outcome; one that lasts ends dead-lettered, never as the target's fact", async () => {
    for (const w of workers.splice(0)) await w.close();
    // Entries given back are delivered again after 300 ms here; the third delivery is the last.
    workers.push(await startWorker(0, { ...settings, LANE_VISIBILITY_MS: 300, LANE_MAX_DELIVERIES: 3 }));
    opened.add('a0');
    opened.add('b0');
    localFailRuns.set('a0', 1); // its first run only
    localFailRuns.set('b0', 99); // every run
    const aJob = await accept('a', 1);
    const bJob = await accept('b', 1);
    const terminal = async (jobId: number) =>
      (await dbh.db.selectFrom('jobs').select('status').where('id', '=', jobId).executeTakeFirstOrThrow()).status;
    for (const jobId of [aJob, bJob])
      await until(`job ${jobId} terminal`, async () =>
        ['completed', 'partial', 'failed'].includes(await terminal(jobId)),
      );
    const taskOf = (jobId: number) =>
      dbh.db
        .selectFrom('tasks')
        .select(['status', 'reason', 'attempts', 'output'])
        .where('job_id', '=', jobId)
        .executeTakeFirstOrThrow();
    const a = await taskOf(aJob);
    expect([a.status, a.attempts, await terminal(aJob)]).toEqual(['completed', 2, 'completed']);
    const out = typeof a.output === 'string' ? JSON.parse(a.output) : a.output;
    expect(out.projection).toEqual({ state: 'open' });
    const b = await taskOf(bJob);
    expect([b.status, b.reason, b.attempts, b.output]).toEqual(['failed', 'dead_lettered', 3, null]);
    expect(await terminal(bJob)).not.toBe('completed');
  }, 60_000);
});
