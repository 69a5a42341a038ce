// Result notices of one job never wait behind another job's backlog (issue 32; the orchestrator's
// results consumers read far ahead and src/jobs/orchestration/result-batcher.ts lets jobs take
// turns), on real MySQL and Redis streams with a real orchestrator: a big job's 3,000 finished
// tasks have their notices queued on the lane's results stream ahead of a small job's one notice
// (an orchestrator restarting behind a backlog, or a scan's results arriving faster than they are
// applied). The small job's task is applied, and the job finished, while most of the big job's
// backlog still waits. Before: the results consumer held at most 512 notices, in stream order, so
// the small job's notice was read only after about 2,500 of the big job's were applied.
// Assertions are on counts at the moment the small job's task is applied, never on durations.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
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
import type { CheckOutput } from '../../src/contract/tasks.ts';
import type { ProductDefinition } from '../../src/products/kit/product-contract.ts';
import { hasRedis, testPrefix, testRedis } from '../helpers/redis.ts';

const silent = pino({ level: 'silent' });
const CHECK = 'test.result_fairness';
const BIG = 3000;

const product: ProductDefinition<{ letter: string; n: number }> = {
  id: `test.rfair.${randomBytes(2).toString('hex')}`,
  title: 'result fairness test product',
  mode: 'async',
  method: 'POST',
  path: '/v2/test/rfair',
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
        objectKey: `${input.letter}${i}.example.test`,
        params: {},
      })),
    deadlineMs: 300_000,
  },
};

/** What a finished check wrote: one host object and one finding, so applying a batch does real work. */
function output(key: string): CheckOutput {
  return {
    status: 'completed',
    projection: { seen: true },
    objects: [{ type: 'host', key, projection: { name: key }, evidence: [{ summary: `probed ${key}` }] }],
    relations: [],
    findings: [
      {
        code: 'test_seen',
        severity: 'low',
        confidence: 'confirmed',
        title: 'Seen',
        summary: `Saw ${key}`,
        object: { type: 'host', key },
      },
    ],
    limitations: [],
    sources: [{ source: 'test_probe' }],
  };
}

let dbh: DbHandle;
let redis: RedisClient;
let config: Config;
const orchestrators: OrchestratorHandle[] = [];
const tenants: Record<'a' | 'b', Principal> = {} as never;

async function until<T>(what: string, fn: () => T | Promise<T>, timeoutMs = 60_000): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

function orchestrate(): Promise<OrchestratorHandle> {
  return startOrchestrator({
    config,
    log: silent,
    db: dbh.db,
    redis,
    products: [product],
    settings: { LANE_VISIBILITY_MS: 60_000 },
    timing: { relayEveryMs: 200, relayAfterMs: 60_000, reconcileEveryMs: 600_000, sweepEveryMs: 600_000 },
  }).then((o) => {
    orchestrators.push(o);
    return o;
  });
}

async function accept(letter: 'a' | 'b', n: number): Promise<number> {
  const accepted = await acceptJob(dbh.db, {
    principal: tenants[letter],
    product: product.id,
    target: { type: 'domain_name', value: 'example.test' },
    profile: null,
    input: { letter, n },
    price: n,
    deadlineMs: 300_000,
    requestId: `req_${randomBytes(8).toString('hex')}`,
    claim: undefined,
    objectCap: null,
  });
  await publishJob(redis, accepted.jobId, 'plan');
  await markOutboxPublished(dbh.db, accepted.jobId, 'plan');
  return accepted.jobId;
}

const taskIds = async (jobId: number) =>
  (await dbh.db.selectFrom('tasks').select('id').where('job_id', '=', jobId).orderBy('id').execute()).map((t) =>
    Number(t.id),
  );

const unapplied = async (jobId: number) =>
  Number(
    (
      await sql<{ c: number }>`SELECT COUNT(*) AS c FROM tasks WHERE job_id = ${jobId} AND applied_at IS NULL`.execute(
        dbh.db,
      )
    ).rows[0]!.c,
  );

const statusOf = async (jobId: number) =>
  (await dbh.db.selectFrom('jobs').select('status').where('id', '=', jobId).executeTakeFirstOrThrow()).status;

beforeAll(async () => {
  if (!process.env.DATABASE_URL || !hasRedis()) throw new Error('needs DATABASE_URL and Redis: run with `npm test`');
  config = parseConfig({ ...process.env, LOG_LEVEL: 'silent' });
  dbh = createDb(config.DATABASE_URL);
  redis = await testRedis(testPrefix('rfair'));
  for (const letter of ['a', 'b'] as const) {
    const ws = await createWorkspace(dbh.db, { name: `rfair-${letter}-${randomBytes(3).toString('hex')}` });
    const key = await createKey(dbh.db, config.KEY_PEPPER, { workspace: ws.workspaceId });
    tenants[letter] = (await new Authenticator(dbh.db, config.KEY_PEPPER, 0).verify(key.key))!;
    await grantCredits(dbh.db, tenants[letter].workspaceId, 10_000, `grant:${ws.workspaceId}`);
  }
});

afterAll(async () => {
  for (const o of orchestrators) await o.close();
  await redis?.quit().catch(() => {});
  await dbh?.close();
});

describe("one job's backlog of result notices never stands in front of another job's notice", () => {
  it("a small job's finished task is applied, and the job ends, while a big job's backlog of 3,000 notices ahead of it still waits", async () => {
    const planner = await orchestrate();
    const big = await accept('a', BIG);
    const small = await accept('b', 1);
    await until(
      'both jobs planned',
      async () => (await taskIds(big)).length === BIG && (await taskIds(small)).length === 1,
    );
    await until(
      'both running',
      async () => (await statusOf(big)) === 'running' && (await statusOf(small)) === 'running',
    );
    // The orchestrator goes away; meanwhile a lane finishes every task of both jobs, the big job's first.
    await planner.close();
    for (const jobId of [big, small]) {
      await sql`UPDATE tasks SET status = 'completed', attempts = 1, started_at = NOW(3), finished_at = NOW(3)
        WHERE job_id = ${jobId}`.execute(dbh.db);
      for (const id of await taskIds(jobId))
        await sql`UPDATE tasks SET output = ${JSON.stringify(output(`t${id}.example.test`))} WHERE id = ${id}`.execute(
          dbh.db,
        );
    }
    const results = streams.laneResults('dns');
    const p = redis.pipeline();
    for (const id of await taskIds(big)) p.xadd(results, '*', 'task', String(id), 'job', String(big));
    for (const id of await taskIds(small)) p.xadd(results, '*', 'task', String(id), 'job', String(small));
    await p.exec();

    // An orchestrator starts behind the backlog.
    await orchestrate();
    await until("the small job's task applied", async () => (await unapplied(small)) === 0);
    const bigLeft = await unapplied(big);
    // Before: at most the 512 notices its results consumer held were left.
    expect(bigLeft).toBeGreaterThan(BIG / 3);
    await until('the small job terminal', async () => (await statusOf(small)) === 'completed');
    expect(await unapplied(big)).toBeGreaterThan(0);
    // The big job is not starved either: its backlog is applied to the end.
    await until('the big job terminal', async () => (await statusOf(big)) === 'completed', 180_000);
    expect(await unapplied(big)).toBe(0);
  }, 300_000);
});
