// The job pipeline end to end on real MySQL and Redis streams: acceptance → orchestrator plan →
// lane runner → task results → capture → finalize → release, plus the failure paths (timeout,
// cancel, a dead consumer, dead-lettering, a skipped publish, a deleted stream).
//
// Each test gets its own product id (every orchestrator sweep is scoped to its products) and its
// own Redis key prefix (fresh streams), so tests never see each other's jobs or entries.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { z } from 'zod';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FIXED_CERTIFICATE_PEM } from '../helpers/fixed-certificate.ts';
import { parseConfig, type Config } from '../../src/config/config.ts';
import { Authenticator } from '../../src/auth/authenticator.ts';
import type { Principal } from '../../src/auth/principal.ts';
import { balance, grantCredits } from '../../src/credits/ledger.ts';
import { createDb, type DbHandle } from '../../src/db/database.ts';
import { createKey, createWorkspace } from '../../src/auth/tenancy-repo.ts';
import { acceptJob, markOutboxPublished, requestCancel } from '../../src/jobs/jobs-repo.ts';
import { applyTaskResult, applyTaskResults } from '../../src/jobs/orchestration/apply-result.ts';
import { cancelJob } from '../../src/jobs/orchestration/cancel-job.ts';
import type { OrchestrationContext } from '../../src/jobs/orchestration/context.ts';
import { planJob } from '../../src/jobs/orchestration/plan-job.ts';
import { productCatalog } from '../../src/jobs/orchestration/product-catalog.ts';
import { Reconciler } from '../../src/jobs/orchestration/reconciler.ts';
import { parseQueueSettings } from '../../src/queue/queue-settings.ts';
import { purgeExpiredJobs } from '../../src/jobs/orchestration/retention.ts';
import { startOrchestrator, type OrchestratorHandle } from '../../src/jobs/orchestration/orchestrator.ts';
import type { QueueSettings } from '../../src/queue/queue-settings.ts';
import { LaneHealth } from '../../src/queue/lane-health.ts';
import { groups, publishJob, publishTaskResult, queueKeys, streams } from '../../src/queue/streams.ts';
import { ensureTasksEnqueued } from '../../src/queue/task-enqueue.ts';
import { pendingTaskRefs, stillPending } from '../../src/jobs/tasks/task-repo.ts';
import type { Redis } from 'ioredis';
import type { RedisClient } from '../../src/redis/client.ts';
import { delKeys, hasRedis, testPrefix, testRedis } from '../helpers/redis.ts';
import type { CheckOutput, TaskOutcomeView } from '../../src/contract/tasks.ts';
import type { CheckSpec, ProductDefinition } from '../../src/products/kit/product-contract.ts';
import { checkTimeoutMs, registerCheck } from '../../workers/lane-runner/registry.ts';
import { startLaneWorker, type LaneWorkerHandle } from '../../workers/start-lane-worker.ts';

// ---- a tiny product and its checks ---------------------------------------------------------

interface TaskSpec {
  check?: string;
  behavior?: 'ok' | 'timeout' | 'throw' | 'unavailable' | 'gate' | 'pool';
  cost?: number;
  required?: boolean;
  lane?: string;
}
interface TestInput {
  tasks: TaskSpec[];
}

const gates = new Map<string, { promise: Promise<void>; open(): void }>();
function gate(name: string) {
  let g = gates.get(name);
  if (!g) {
    let open!: () => void;
    const promise = new Promise<void>((r) => (open = r));
    g = { promise, open };
    gates.set(name, g);
  }
  return g;
}

function okOutput(key: string, extra: Record<string, unknown> = {}): CheckOutput {
  return {
    status: 'completed',
    projection: { [key]: { seen: true, ...extra } },
    objects: [{ type: 'host', key, projection: { name: key, ...extra }, evidence: [{ summary: `probed ${key}` }] }],
    relations: [
      { from: { type: 'host', key }, relation: 'discovered_from', to: { type: 'domain', key: 'example.test' } },
    ],
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

const waitForAbort = (signal: AbortSignal) =>
  new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));

const probe: CheckSpec = {
  name: 'test.probe',
  lane: 'dns',
  timeoutMs: 300,
  async run(task, ctx) {
    switch (task.params.behavior) {
      case 'timeout':
        return waitForAbort(ctx.signal);
      case 'throw':
        throw new Error('internal detail that must not be stored');
      case 'unavailable':
        return {
          ...okOutput(task.objectKey),
          status: 'unavailable',
          reason: 'resolver_unreachable',
          objects: [],
          relations: [],
          findings: [],
        };
      default:
        return okOutput(task.objectKey);
    }
  },
};

/**
 * Parses in the lane's real piscina pool. A check of its own: the probe's 300 ms timeout is for the
 * timeout case, and the pool starts with the first task that uses it (a thread and its modules:
 * hundreds of milliseconds on a loaded machine).
 */
const pooled: CheckSpec = {
  name: 'test.pooled',
  lane: 'dns',
  timeoutMs: 30_000,
  async run(task, ctx) {
    const cert = await ctx.runInPool!<{ sans: string[]; keyType: string }>('parseCertificate', FIXED_CERTIFICATE_PEM);
    return okOutput(task.objectKey, { cert });
  },
};

const gated: CheckSpec = {
  name: 'test.gated',
  lane: 'dns',
  timeoutMs: 20_000,
  async run(task, ctx) {
    await Promise.race([gate(String(task.params.gate)).promise, waitForAbort(ctx.signal)]);
    return okOutput(task.objectKey);
  },
};

/** Reports what it was given: its gate's result (when released) and the children it found. */
const grow: CheckSpec = {
  name: 'test.grow',
  lane: 'dns',
  timeoutMs: 2000,
  async run(task) {
    const out = okOutput(task.objectKey, { gate: task.params.gate ?? null });
    return { ...out, projection: { children: task.params.children ?? [], gate: task.params.gate ?? null } };
  },
};

registerCheck(probe);
registerCheck(pooled);
registerCheck(gated);
registerCheck(grow);

let productSeq = 0;
interface ExpandInput {
  /** Children of each generation: the root plans n children gated on one gate task; each child plans n more until depth. */
  fanout: number;
  depth: number;
  cost: number;
}

/** A product that plans as results arrive: a gate task, a root, and children gated on the gate. */
function makeExpandingProduct(objectCap?: number): ProductDefinition<ExpandInput> {
  const id = `test.expand${++productSeq}.${randomBytes(2).toString('hex')}`;
  const child = (key: string, depth: number, i: ExpandInput) => ({
    check: grow.name,
    lane: 'dns' as const,
    productLane: 'probe',
    required: false,
    unitCost: i.cost,
    objectKey: key,
    distance: depth,
    params: { children: depth < i.depth ? Array.from({ length: i.fanout }, (_, n) => `${key}.${n}`) : [] },
    gate: { check: grow.name, objectKey: 'gate' },
  });
  return {
    id,
    title: 'expanding test product',
    mode: 'async',
    method: 'POST',
    path: `/v2/test/${id}`,
    scope: 'scan:create',
    rateClass: 'scan',
    input: z.any(),
    lanes: [{ lane: 'probe', required: false, description: 'test lane' }],
    price: () => 0,
    readiness: () => ({ probe: 'ready' }),
    job: {
      workerLanes: ['dns'],
      target: () => ({ type: 'domain_name', value: 'example.test' }),
      // The gate comes last in the plan: insertion still puts it first.
      plan: (i) => [child('root', 0, i), { ...child('gate', 0, { ...i, depth: 0 }), gate: undefined }],
      expand: (i, task) => {
        if (task.check !== grow.name || task.objectKey === 'gate') return [];
        const kids = (task.output?.projection.children as string[] | undefined) ?? [];
        return kids.map((k) => child(k, task.distance + 1, i));
      },
      ...(objectCap ? { objectCap: () => objectCap } : {}),
      deadlineMs: 60_000,
    },
  };
}

function makeProduct(opts: { assemble?: boolean; derive?: boolean } = {}): ProductDefinition<TestInput> {
  const id = `test.pipeline${++productSeq}.${randomBytes(2).toString('hex')}`;
  const gateName = `${id}:gate`;
  return {
    id,
    title: 'pipeline test product',
    mode: 'async',
    method: 'POST',
    path: `/v2/test/${id}`,
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
        input.tasks.map((t, n) => ({
          check: t.check ?? (t.behavior === 'gate' ? gated.name : t.behavior === 'pool' ? pooled.name : probe.name),
          lane: 'dns',
          productLane: t.lane ?? 'probe',
          required: t.required ?? false,
          unitCost: t.cost ?? 1,
          objectKey: `h${n}.example.test`,
          params: { behavior: t.behavior ?? 'ok', gate: gateName },
        })),
      ...(opts.assemble
        ? {
            assemble: (_input: TestInput, tasks: TaskOutcomeView[]) => ({
              result: Object.assign({}, ...tasks.map((t) => t.output?.projection ?? {})),
              lanes: tasks.map((t) => ({
                lane: t.productLane,
                required: t.required,
                status: t.status,
                ...(t.reason ? { reason: t.reason } : {}),
              })),
              sources: [{ source: 'test_probe' }],
              limitations: [],
              // A cross-lane fact: how many tasks completed, as one finding on the target.
              ...(opts.derive
                ? {
                    derived: [
                      {
                        lane: 'probe',
                        objects: [],
                        relations: [],
                        sources: [{ source: 'test_derivation' }],
                        findings: [
                          {
                            code: 'test_derived',
                            severity: 'info' as const,
                            confidence: 'firm' as const,
                            title: 'Derived',
                            summary: `${tasks.filter((t) => t.status === 'completed').length} of ${tasks.length} completed`,
                            object: { type: 'domain', key: 'example.test' },
                          },
                        ],
                      },
                    ],
                  }
                : {}),
            }),
          }
        : {}),
      deadlineMs: 60_000,
    },
  };
}

// ---- harness ---------------------------------------------------------------------------------

const silent = pino({ level: 'silent' });
let dbh: DbHandle;
let principal: Principal;

function configWith(env: Record<string, string> = {}): Config {
  if (!process.env.DATABASE_URL || !hasRedis())
    throw new Error('needs DATABASE_URL and REDIS_URL (or REDIS_CLUSTER_NODES): run with `npm test`');
  return parseConfig({ ...process.env, LOG_LEVEL: 'silent', ...env });
}

const FAST_TIMING = {
  relayEveryMs: 200,
  relayAfterMs: 2000,
  reconcileEveryMs: 250,
  unappliedAfterMs: 1000,
  sweepEveryMs: 250,
  purgeEveryMs: 3_600_000,
};

interface Rig {
  redis: RedisClient;
  product: ProductDefinition<TestInput>;
  config: Config;
  settings: Partial<QueueSettings>;
  orchestrator?: OrchestratorHandle;
  lanes: LaneWorkerHandle[];
  startOrchestrator(): Promise<OrchestratorHandle>;
  startLane(extra?: Partial<QueueSettings>): Promise<LaneWorkerHandle>;
}

const rigs: Rig[] = [];

async function rig(
  opts: { assemble?: boolean; derive?: boolean; settings?: Partial<QueueSettings>; env?: Record<string, string> } = {},
): Promise<Rig> {
  const redis = await testRedis(testPrefix('pipeline'));
  const r: Rig = {
    redis,
    product: makeProduct(opts),
    config: configWith(opts.env),
    settings: { LANE_VISIBILITY_MS: 1000, LANE_POOL_THREADS: 0, ...opts.settings },
    lanes: [],
    async startOrchestrator() {
      r.orchestrator = await startOrchestrator({
        config: r.config,
        log: silent,
        db: dbh.db,
        redis,
        products: [r.product],
        settings: r.settings,
        checkTimeoutMs,
        timing: FAST_TIMING,
      });
      return r.orchestrator;
    },
    async startLane(extra = {}) {
      const w = await startLaneWorker('dns', {
        config: r.config,
        log: silent,
        db: dbh.db,
        redis,
        settings: { ...r.settings, ...extra },
        blockMs: 200,
      });
      r.lanes.push(w);
      return w;
    },
  };
  rigs.push(r);
  return r;
}

async function accept(r: Rig, input: TestInput, price: number, opts: { publish?: boolean; deadlineMs?: number } = {}) {
  const accepted = await acceptJob(dbh.db, {
    principal,
    product: r.product.id,
    target: { type: 'domain_name', value: 'example.test' },
    profile: null,
    input,
    price,
    deadlineMs: opts.deadlineMs ?? 60_000,
    requestId: `req_${randomBytes(8).toString('hex')}`,
    claim: undefined,
    objectCap: (r.product.job as { objectCap?: (i: unknown) => number } | undefined)?.objectCap?.(input) ?? null,
  });
  if (opts.publish !== false) {
    await publishJob(r.redis, accepted.jobId, 'plan');
    await markOutboxPublished(dbh.db, accepted.jobId, 'plan');
  }
  return accepted.jobId;
}

/**
 * An expanding product's job (fanout 2, depth 1, 10 credits) planned by a started orchestrator,
 * with no lane: the test finishes its two tasks (root and gate) by hand.
 */
async function expandingJobPlanned() {
  const r = await rig();
  r.product = makeExpandingProduct() as never;
  const o = await r.startOrchestrator();
  const jobId = await accept(r, { fanout: 2, depth: 1, cost: 1 } as never, 10);
  const planned = await until('planned', async () => {
    const ts = await tasks(jobId);
    return ts.length === 2 ? ts : null;
  });
  return { r, o, jobId, planned };
}

async function until<T>(what: string, fn: () => Promise<T | undefined | null | false>, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

const TERMINAL = ['completed', 'partial', 'cancelled', 'failed', 'unavailable'];

async function job(jobId: number) {
  return dbh.db.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirstOrThrow();
}

async function terminal(jobId: number, timeoutMs?: number) {
  return until(
    `job ${jobId} terminal`,
    async () => {
      const j = await job(jobId);
      return TERMINAL.includes(j.status) ? j : null;
    },
    timeoutMs,
  );
}

async function tasks(jobId: number) {
  return dbh.db.selectFrom('tasks').selectAll().where('job_id', '=', jobId).orderBy('id').execute();
}

async function ledger(jobId: number) {
  const entries = await dbh.db.selectFrom('credit_entries').selectAll().where('job_id', '=', jobId).execute();
  return {
    captures: entries.filter((e) => e.kind === 'capture'),
    releases: entries.filter((e) => e.kind === 'release'),
  };
}

/** Every entry of the stream delivered to the group and acknowledged. */
async function drained(redis: RedisClient, stream: string, group: string): Promise<void> {
  const [last] = (await redis.xrevrange(stream, '+', '-', 'COUNT', 1))[0] ?? [];
  await until(`${stream} drained`, async () => {
    const info = (await redis.xinfo('GROUPS', stream)) as unknown[][];
    const g = info
      .map((row) => Object.fromEntries(Array.from({ length: row.length / 2 }, (_, i) => [row[2 * i], row[2 * i + 1]])))
      .find((x) => x.name === group);
    return g && Number(g.pending) === 0 && (!last || g['last-delivered-id'] === last);
  });
}

const json = (v: unknown): any => (typeof v === 'string' ? JSON.parse(v) : v);

beforeAll(async () => {
  dbh = createDb(configWith().DATABASE_URL);
  const ws = await createWorkspace(dbh.db, { name: `pipeline-${randomBytes(3).toString('hex')}` });
  const key = await createKey(dbh.db, configWith().KEY_PEPPER, { workspace: ws.workspaceId });
  principal = (await new Authenticator(dbh.db, configWith().KEY_PEPPER, 0).verify(key.key))!;
  await grantCredits(dbh.db, principal.workspaceId, 100_000, `grant:${ws.workspaceId}`);
});

afterEach(async () => {
  for (const g of gates.values()) g.open();
  for (const r of rigs.splice(0)) {
    await Promise.all(r.lanes.map((l) => l.close()));
    await r.orchestrator?.close();
    await r.redis.quit().catch(() => {});
  }
});

afterAll(async () => {
  // The ledger invariant holds for the workspace after everything above.
  const b = await balance(dbh.db, principal.workspaceId);
  expect(b.granted).toBe(b.available + b.reserved + b.captured);
  await dbh.close();
});

// ---- tests -----------------------------------------------------------------------------------

describe('job pipeline', () => {
  it('runs a job to completed: objects, findings, capture per completed task, one release', async () => {
    const r = await rig({ settings: { LANE_POOL_THREADS: 1 } });
    await r.startOrchestrator();
    const lane = await r.startLane();
    const jobId = await accept(r, { tasks: [{ cost: 2 }, { cost: 3 }, { cost: 1, behavior: 'pool' }] }, 10);
    const j = await terminal(jobId);
    expect(j.status).toBe('completed');
    expect(json(j.coverage)).toEqual({ complete: true, limitations: [] });
    expect(Number(j.credits_captured)).toBe(6);
    expect(Number(j.credits_released)).toBe(4);
    expect(j.settled_at).not.toBeNull();
    const l = await ledger(jobId);
    expect(l.captures.map((c) => Number(c.amount)).sort()).toEqual([1, 2, 3]);
    expect(l.releases.map((e) => Number(e.amount))).toEqual([4]);
    const ts = await tasks(jobId);
    expect(ts.map((t) => [t.status, t.attempts, t.applied_at !== null])).toEqual([
      ['completed', 1, true],
      ['completed', 1, true],
      ['completed', 1, true],
    ]);
    // The pool task ran in a piscina thread and its parse is in the stored output.
    expect(json(ts[2]!.output).projection['h2.example.test'].cert).toMatchObject({
      sans: ['lab.example.test', 'www.lab.example.test'],
      keyType: 'ec',
    });
    // 3 hosts + the shared domain object (a relation endpoint), deduplicated; pages ordered by seq.
    const objects = await dbh.db.selectFrom('objects').selectAll().where('job_id', '=', jobId).orderBy('seq').execute();
    expect(objects.map((o) => [o.seq, o.type, o.okey])).toHaveLength(4);
    expect(objects.map((o) => o.seq)).toEqual([1, 2, 3, 4]);
    expect(objects.filter((o) => o.type === 'domain')).toHaveLength(1);
    const host = objects.find((o) => o.okey === 'h0.example.test')!;
    expect(json(host.lanes)).toEqual([{ lane: 'probe', status: 'completed' }]);
    expect(json(host.evidence)[0].ref).toMatch(/^ev_[0-9A-Z]{26}$/);
    expect(host.public_id).toMatch(/^obj_/);
    const rels = await dbh.db.selectFrom('relations').selectAll().where('job_id', '=', jobId).execute();
    expect(rels).toHaveLength(3);
    const findings = await dbh.db
      .selectFrom('findings')
      .selectAll()
      .where('job_id', '=', jobId)
      .orderBy('seq')
      .execute();
    expect(findings.map((f) => [f.seq, f.code, f.severity])).toEqual([
      [1, 'test_seen', 1],
      [2, 'test_seen', 1],
      [3, 'test_seen', 1],
    ]);
    expect(Number(j.object_seq)).toBe(4);
    expect(Number(j.finding_seq)).toBe(3);
    // Each task was claimed from its carried entry in one statement, without reading its row first.
    expect([lane.runner.fastClaims, lane.runner.fastClaimMisses]).toEqual([3, 0]);
    // Metrics of the lane process.
    const text = await lane.metrics.metrics();
    expect(text).toMatch(/lss_task_duration_seconds_count\{lane="dns",outcome="completed"\} 3/);
    expect(text).toContain(`lss_stream_pending{stream="${streams.lane('dns')}",group="lane-dns"} 0`);
  });

  it('outcomes of checks that end together are written in one statement, each compare-and-set from its own attempt', async () => {
    const r = await rig();
    await r.startOrchestrator();
    const lane = await r.startLane();
    const spec = Array.from({ length: 6 }, () => ({ behavior: 'gate' as const, cost: 1 }));
    const jobId = await accept(r, { tasks: spec }, 6);
    await until('all running', async () => (await tasks(jobId)).filter((t) => t.status === 'running').length === 6);
    // A seventh run's attempt moves one task on (a takeover): that row's outcome must be left alone.
    const [moved] = await tasks(jobId);
    await dbh.db
      .updateTable('tasks')
      .set({ attempts: Number(moved!.attempts) + 1 })
      .where('id', '=', moved!.id)
      .execute();
    const before = { ...lane.runner.outcomes.stats };
    gate(`${r.product.id}:gate`).open();
    await until('five written', async () => (await tasks(jobId)).filter((t) => t.status === 'completed').length === 5);
    await sleep(200);
    const after = lane.runner.outcomes.stats;
    // Six outcomes ended in the same turn: fewer statements than outcomes (one, on an idle machine).
    expect(after.outcomes - before.outcomes).toBe(6);
    expect(after.statements - before.statements).toBeLessThan(6);
    const rows = await tasks(jobId);
    expect(rows.find((t) => t.id === moved!.id)!.status).toBe('running');
    expect(rows.filter((t) => t.id !== moved!.id).every((t) => t.status === 'completed' && t.output !== null)).toBe(
      true,
    );
  });

  it('persists what a lookup derives across lanes with the terminal status, once, attributed to its lane', async () => {
    const r = await rig({ assemble: true, derive: true });
    const o = await r.startOrchestrator();
    await r.startLane();
    const jobId = await accept(r, { tasks: [{ cost: 1 }, { cost: 1, behavior: 'unavailable' }] }, 2);
    const j = await terminal(jobId);
    expect(j.status).toBe('partial');
    const findings = await dbh.db
      .selectFrom('findings')
      .selectAll()
      .where('job_id', '=', jobId)
      .where('code', '=', 'test_derived')
      .execute();
    expect(findings).toHaveLength(1);
    expect(findings[0]!.summary).toBe('1 of 2 completed');
    expect(json(findings[0]!.sources)).toEqual([{ lane: 'probe', source: 'test_derivation' }]);
    const target = await dbh.db
      .selectFrom('objects')
      .selectAll()
      .where('job_id', '=', jobId)
      .where('okey', '=', 'example.test')
      .executeTakeFirstOrThrow();
    expect(findings[0]!.object_id).toBe(target.id);
    // A second finalize changes nothing (terminal CAS): still one derived finding.
    const { finalizeJob } = await import('../../src/jobs/orchestration/finalize-job.ts');
    expect(await finalizeJob(o.context, jobId, 'settle')).toBeNull();
    expect(
      await dbh.db
        .selectFrom('findings')
        .select('id')
        .where('job_id', '=', jobId)
        .where('code', '=', 'test_derived')
        .execute(),
    ).toHaveLength(1);
  });

  it('expands as results arrive: gated tasks wait for their gate, children are planned once, the budget stops scheduling for good', async () => {
    const r = await rig();
    r.product = makeExpandingProduct() as never;
    await r.startOrchestrator();
    await r.startLane();
    // gate 1 + root 1 + 3 children + 9 grandchildren = 14 tasks of cost 1; the reservation is 10.
    const jobId = await accept(r, { fanout: 3, depth: 2, cost: 1 } as never, 10);
    const j = await terminal(jobId);
    expect(j.status).toBe('partial');
    const ts = await tasks(jobId);
    const byKey = new Map(ts.map((t) => [t.object_key, t]));
    expect(ts).toHaveLength(14);
    // The gate ran first; everything gated on it received its result on release.
    const rootOut = json(byKey.get('root')!.output);
    expect(rootOut.projection.gate).toMatchObject({ status: 'completed', projection: { children: [] } });
    expect(ts.filter((t) => t.status === 'completed')).toHaveLength(10);
    expect(ts.filter((t) => t.status === 'budget_exhausted')).toHaveLength(4);
    // Scheduling stopped for good: once a child was refused, no later one ran.
    const firstRefused = Math.min(...ts.filter((t) => t.status === 'budget_exhausted').map((t) => Number(t.id)));
    expect(ts.filter((t) => Number(t.id) > firstRefused && t.status === 'completed')).toHaveLength(0);
    expect(Number(j.credits_captured)).toBe(10);
    expect(json(j.coverage).limitations.map((l: { code: string }) => l.code)).toContain('budget_exhausted');
  });

  it('does not settle while a finished task is still unapplied: its expansion may plan more', async () => {
    // No lane yet: the two planned tasks stay open until this test finishes them by hand.
    const { r, o, jobId, planned } = await expandingJobPlanned();
    const root = planned.find((t) => t.object_key === 'root')!;
    const gateTask = planned.find((t) => t.object_key === 'gate')!;
    // Both finish before either result is applied, as two runners finishing together would.
    const finish = (id: number, children: string[]) =>
      dbh.db
        .updateTable('tasks')
        .set({
          status: 'completed',
          finished_at: new Date(),
          output: JSON.stringify({ ...okOutput('x'), projection: { children } }),
        } as never)
        .where('id', '=', id)
        .execute();
    await finish(root.id, ['root.0', 'root.1']);
    await finish(gateTask.id, []);
    // The gate's apply sees nothing open, but root's result is not applied yet: no settle.
    await applyTaskResult(o.context, gateTask.id);
    expect((await job(jobId)).status).toBe('running');
    await applyTaskResult(o.context, root.id);
    expect((await tasks(jobId)).map((t) => t.object_key).sort()).toEqual(['gate', 'root', 'root.0', 'root.1']);
    await r.startLane();
    const j = await terminal(jobId);
    expect(j.status).toBe('completed');
    expect(Number(j.credits_captured)).toBe(4);
  });

  it("keeps the job row's task counters equal to what its tasks say, through plan, apply and cancel", async () => {
    // No lane: this test finishes the tasks by hand, then applies them itself.
    const { o, jobId, planned } = await expandingJobPlanned();
    // The definition (src/jobs/tasks/task-counters.ts), from the task rows.
    const fromTasks = async () => {
      const ts = await tasks(jobId);
      const open = ['pending', 'running', 'waiting'];
      const budgeted = [...open, 'completed', 'partial'];
      return {
        planned: ts
          .filter((t) => t.status !== 'budget_exhausted' && (!t.applied_at || budgeted.includes(t.status)))
          .reduce((a, t) => a + Number(t.unit_cost), 0),
        unapplied: ts.filter((t) => !t.applied_at || open.includes(t.status)).length,
        stopped: ts.some((t) => t.status === 'budget_exhausted'),
      };
    };
    const counters = async () => {
      const j = await job(jobId);
      return {
        planned: Number(j.tasks_planned_cost),
        unapplied: Number(j.tasks_unapplied),
        stopped: Number(j.budget_stopped) === 1,
      };
    };
    expect(await counters()).toEqual({ planned: 2, unapplied: 2, stopped: false });
    expect(await counters()).toEqual(await fromTasks());
    const root = planned.find((t) => t.object_key === 'root')!;
    const gateTask = planned.find((t) => t.object_key === 'gate')!;
    const finish = (id: number, status: string, children: string[]) =>
      dbh.db
        .updateTable('tasks')
        .set({
          status,
          finished_at: new Date(),
          output: JSON.stringify({ ...okOutput('x'), status, projection: { children } }),
        } as never)
        .where('id', '=', id)
        .execute();
    // A gate that failed did no paid work: its share comes back when it is applied, not before.
    await finish(gateTask.id, 'failed', []);
    await finish(root.id, 'completed', ['root.0', 'root.1']);
    expect(await counters()).toEqual({ planned: 2, unapplied: 2, stopped: false });
    await applyTaskResult(o.context, gateTask.id);
    expect(await counters()).toEqual({ planned: 1, unapplied: 1, stopped: false });
    expect(await counters()).toEqual(await fromTasks());
    // Root's expansion plans two children (gated on the failed gate: pending, with its result).
    await applyTaskResult(o.context, root.id);
    expect(await counters()).toEqual({ planned: 3, unapplied: 2, stopped: false });
    expect(await counters()).toEqual(await fromTasks());
    // A cancel ends the not-started children: applied, their shares back.
    await requestCancel(dbh.db, principal.workspaceId, (await job(jobId)).public_id);
    await cancelJob(o.context, jobId);
    expect(await counters()).toEqual({ planned: 1, unapplied: 0, stopped: false });
    expect(await counters()).toEqual(await fromTasks());
    expect((await job(jobId)).status).toBe('cancelled');
  });

  it('a counter that says nothing is unapplied is checked against the tasks before the job settles', async () => {
    const { o, jobId, planned } = await expandingJobPlanned();
    const root = planned.find((t) => t.object_key === 'root')!;
    const gateTask = planned.find((t) => t.object_key === 'gate')!;
    for (const t of [root, gateTask])
      await dbh.db
        .updateTable('tasks')
        .set({ status: 'completed', finished_at: new Date(), output: JSON.stringify(okOutput('x')) } as never)
        .where('id', '=', t.id)
        .execute();
    // A counter gone wrong (one too low): applying the gate brings it to 0 while root is unapplied.
    await dbh.db.updateTable('jobs').set({ tasks_unapplied: 1 }).where('id', '=', jobId).execute();
    await applyTaskResult(o.context, gateTask.id);
    const j = await job(jobId);
    expect(j.status).toBe('running');
    expect(Number(j.tasks_unapplied)).toBe(1);
    await applyTaskResult(o.context, root.id);
    expect((await job(jobId)).status).toBe('completed');
  });

  it("keeps at most the job's object cap, and says so", async () => {
    const r = await rig();
    r.product = makeExpandingProduct(5) as never;
    await r.startOrchestrator();
    await r.startLane();
    const jobId = await accept(r, { fanout: 4, depth: 1, cost: 0 } as never, 0);
    const j = await terminal(jobId);
    const objects = await dbh.db.selectFrom('objects').select('okey').where('job_id', '=', jobId).execute();
    expect(objects).toHaveLength(5);
    expect(j.status).toBe('partial');
    const limits = await dbh.db
      .selectFrom('job_limitations')
      .selectAll()
      .where('job_id', '=', jobId)
      .where('code', '=', 'object_cap_reached')
      .execute();
    expect(limits).toHaveLength(1);
    expect(Number(limits[0]!.occurrences)).toBeGreaterThan(0);
    expect(json(j.coverage).limitations.map((l: { code: string }) => l.code)).toContain('object_cap_reached');
  });

  it('captures each task once even when its result notice arrives again', async () => {
    const r = await rig();
    const o = await r.startOrchestrator();
    await r.startLane();
    const jobId = await accept(r, { tasks: [{ cost: 2 }, { cost: 2 }, { cost: 2 }] }, 6);
    const j = await terminal(jobId);
    expect(j.status).toBe('completed');
    const ts = await tasks(jobId);
    for (const t of ts) {
      await publishTaskResult(r.redis, 'dns', t.id, jobId);
      await publishTaskResult(r.redis, 'dns', t.id, jobId);
    }
    await Promise.all(ts.flatMap((t) => [applyTaskResult(o.context, t.id), applyTaskResult(o.context, t.id)]));
    await drained(r.redis, streams.laneResults('dns'), groups.orchestrator);
    const after = await job(jobId);
    expect(Number(after.credits_captured)).toBe(6);
    expect(Number(after.credits_released)).toBe(0);
    const l = await ledger(jobId);
    expect(l.captures).toHaveLength(3);
    expect(l.releases).toHaveLength(0); // nothing left to release
  });

  it('a check that times out leaves the task `timeout`, the job `partial`, nothing captured for it', async () => {
    const r = await rig();
    await r.startOrchestrator();
    await r.startLane();
    const jobId = await accept(r, { tasks: [{ cost: 2 }, { cost: 2 }, { cost: 2, behavior: 'timeout' }] }, 6);
    const j = await terminal(jobId);
    expect(j.status).toBe('partial');
    const ts = await tasks(jobId);
    expect(ts.map((t) => [t.status, t.reason])).toEqual([
      ['completed', null],
      ['completed', null],
      ['timeout', 'check_timeout'],
    ]);
    expect(Number(j.credits_captured)).toBe(4);
    expect(Number(j.credits_released)).toBe(2);
    expect(json(j.coverage)).toEqual({
      complete: false,
      limitations: [{ code: 'probe_timeout', message: expect.any(String) }],
    });
    const l = await ledger(jobId);
    expect(l.captures).toHaveLength(2);
    expect(l.releases).toHaveLength(1);
  });

  it('a check that throws is `failed` with reason internal_error; the message is not stored', async () => {
    const r = await rig();
    await r.startOrchestrator();
    await r.startLane();
    const jobId = await accept(r, { tasks: [{ behavior: 'throw' }] }, 1);
    const j = await terminal(jobId);
    expect(j.status).toBe('failed');
    const [t] = await tasks(jobId);
    expect([t!.status, t!.reason, t!.output]).toEqual(['failed', 'internal_error', null]);
    expect(JSON.stringify(j)).not.toContain('internal detail');
    expect(Number(j.credits_released)).toBe(1);
  });

  it('stops scheduling at the budget and records budget_exhausted', async () => {
    const r = await rig();
    await r.startOrchestrator();
    await r.startLane();
    const jobId = await accept(r, { tasks: [{ cost: 2 }, { cost: 2 }, { cost: 2 }, { cost: 0 }] }, 5);
    const j = await terminal(jobId);
    expect((await tasks(jobId)).map((t) => t.status)).toEqual([
      'completed',
      'completed',
      'budget_exhausted',
      'budget_exhausted',
    ]);
    expect(j.status).toBe('partial');
    expect(json(j.coverage).limitations.map((l: { code: string }) => l.code)).toEqual(['budget_exhausted']);
    expect([Number(j.credits_captured), Number(j.credits_released)]).toEqual([4, 1]);
  });

  it('a lookup job carries the CONTRACT §7 envelope: partial when a required lane failed but another measured, unavailable when none did', async () => {
    const r = await rig({ assemble: true });
    await r.startOrchestrator();
    await r.startLane();
    const ok = await terminal(
      await accept(
        r,
        {
          tasks: [
            { cost: 1, required: true, lane: 'main' },
            { cost: 1, lane: 'extra' },
          ],
        },
        2,
      ),
    );
    expect(ok.status).toBe('completed');
    const env = json(ok.result);
    expect(env).toMatchObject({
      product: r.product.id,
      status: 'completed',
      coverage: { complete: true },
      credits: { charged: 2 },
    });
    expect(env.lanes.map((l: { lane: string; status: string }) => [l.lane, l.status])).toEqual([
      ['main', 'completed'],
      ['extra', 'completed'],
    ]);

    const down = await terminal(
      await accept(
        r,
        {
          tasks: [
            { cost: 1, required: true, lane: 'main', behavior: 'unavailable' },
            { cost: 1, lane: 'extra' },
          ],
        },
        2,
      ),
    );
    // The extra lane answered: a fact about the target, so the job is partial and keeps it.
    expect(down.status).toBe('partial');
    const partialEnv = json(down.result);
    expect(partialEnv.status).toBe('partial');
    expect(partialEnv.result).toBeDefined();
    expect(partialEnv.credits).toEqual({ charged: 1 });
    expect(json(down.coverage).limitations.map((l: { code: string }) => l.code)).toEqual(['main_unavailable']);
    expect([Number(down.credits_captured), Number(down.credits_released)]).toEqual([1, 1]);

    const nothing = await terminal(
      await accept(
        r,
        {
          tasks: [
            { cost: 1, required: true, lane: 'main', behavior: 'unavailable' },
            { cost: 1, lane: 'extra', behavior: 'unavailable' },
          ],
        },
        2,
      ),
    );
    // No lane produced a fact: unavailable, and the envelope still says so.
    expect(nothing.status).toBe('unavailable');
    expect(json(nothing.result).status).toBe('unavailable');
    expect([Number(nothing.credits_captured), Number(nothing.credits_released)]).toEqual([0, 2]);
  });

  it('cancel mid-run: pending tasks cancelled, the running one finishes and is charged, remainder released once', async () => {
    const r = await rig({ settings: { LANE_CONCURRENCY: 1, LANE_LAG_TARGET_MS: 0, LANE_CONCURRENCY_FLOOR: 1 } });
    await r.startOrchestrator();
    await r.startLane();
    const jobId = await accept(
      r,
      {
        tasks: [
          { behavior: 'gate', cost: 3 },
          { behavior: 'gate', cost: 3 },
          { behavior: 'gate', cost: 3 },
        ],
      },
      9,
    );
    await until('one task running', async () => (await tasks(jobId)).some((t) => t.status === 'running'));
    const cancelled = await requestCancel(dbh.db, principal.workspaceId, (await job(jobId)).public_id);
    expect(cancelled?.changed).toBe(true);
    await publishJob(r.redis, jobId, 'cancel');
    await until(
      'pending tasks cancelled',
      async () => (await tasks(jobId)).filter((t) => t.status === 'cancelled').length === 2,
    );
    expect((await job(jobId)).status).toBe('cancelling');
    gate(`${r.product.id}:gate`).open();
    const j = await terminal(jobId);
    expect(j.status).toBe('cancelled');
    expect((await tasks(jobId)).map((t) => t.status).sort()).toEqual(['cancelled', 'cancelled', 'completed']);
    expect([Number(j.credits_captured), Number(j.credits_released)]).toEqual([3, 6]);
    const l = await ledger(jobId);
    expect(l.releases.map((e) => Number(e.amount))).toEqual([6]);
    expect(json(j.coverage).limitations.map((x: { code: string }) => x.code)).toContain('cancelled');
  });

  it('a carried entry of a cancelling job is not claimed in one statement: read from its row and cancelled, never run', async () => {
    const r = await rig();
    await r.startOrchestrator();
    const jobId = await accept(r, { tasks: [{ cost: 1 }, { cost: 1 }] }, 2);
    await until('planned', async () => (await tasks(jobId)).length === 2);
    // Cancelled before any runner reads the entries, and no cancel published: the runner alone
    // must see that the job is cancelling (the one-statement claim requires a queued or running job).
    expect((await requestCancel(dbh.db, principal.workspaceId, (await job(jobId)).public_id))?.changed).toBe(true);
    const lane = await r.startLane();
    const j = await terminal(jobId);
    expect(j.status).toBe('cancelled');
    expect((await tasks(jobId)).map((t) => [t.status, t.attempts])).toEqual([
      ['cancelled', 0],
      ['cancelled', 0],
    ]);
    expect([lane.runner.fastClaims, lane.runner.fastClaimMisses]).toEqual([0, 2]);
  });

  it('cancel with tasks still running past CANCEL_GRACE_MS: the sweeper finalizes `cancelled`', async () => {
    const r = await rig({ env: { CANCEL_GRACE_MS: '500' } });
    await r.startOrchestrator();
    await r.startLane();
    const jobId = await accept(
      r,
      {
        tasks: [
          { behavior: 'gate', cost: 2 },
          { behavior: 'gate', cost: 2 },
        ],
      },
      4,
    );
    await until('both running', async () => (await tasks(jobId)).every((t) => t.status === 'running'));
    await requestCancel(dbh.db, principal.workspaceId, (await job(jobId)).public_id);
    await publishJob(r.redis, jobId, 'cancel');
    const j = await terminal(jobId);
    expect(j.status).toBe('cancelled');
    expect([Number(j.credits_captured), Number(j.credits_released)]).toEqual([0, 4]);
    // The checks finish after the job ended: their compare-and-set fails, nothing is written or charged.
    gate(`${r.product.id}:gate`).open();
    await sleep(500);
    expect((await tasks(jobId)).map((t) => t.status)).toEqual(['cancelled', 'cancelled']);
    expect(await dbh.db.selectFrom('objects').select('id').where('job_id', '=', jobId).execute()).toHaveLength(0);
    expect((await ledger(jobId)).captures).toHaveLength(0);
    expect((await ledger(jobId)).releases).toHaveLength(1);
  });

  it('reclaims entries of a consumer that died (XAUTOCLAIM) and completes the job', async () => {
    const r = await rig({ settings: { LANE_VISIBILITY_MS: 500 } });
    await r.startOrchestrator();
    const jobId = await accept(r, { tasks: [{}, {}, {}] }, 3);
    await until('tasks on the lane stream', async () => (await r.redis.xlen(streams.laneJob('dns', jobId))) === 3);
    await r.redis.xgroup('CREATE', streams.laneJob('dns', jobId), groups.lane('dns'), '0', 'MKSTREAM').catch(() => {});
    const read = (await r.redis.xreadgroup(
      'GROUP',
      groups.lane('dns'),
      'ghost',
      'COUNT',
      10,
      'STREAMS',
      streams.laneJob('dns', jobId),
      '>',
    )) as Array<[string, unknown[]]>;
    expect(read[0]![1]).toHaveLength(3); // the ghost holds them and never acks
    await r.startLane();
    const j = await terminal(jobId);
    expect(j.status).toBe('completed');
    expect((await tasks(jobId)).map((t) => t.attempts)).toEqual([1, 1, 1]);
    const pending = (await r.redis.xpending(streams.laneJob('dns', jobId), groups.lane('dns'))) as [number];
    expect(Number(pending[0])).toBe(0);
    expect(await r.redis.xlen(streams.deadLetterOf(streams.laneJob('dns', jobId)))).toBe(0);
  });

  it('a reclaimed entry whose task its dead runner left `running` is re-run once the takeover window passes', async () => {
    // Regression: the reclaiming runner cannot take over yet (the task started moments ago, its
    // owner might be alive) and acknowledges the entry. It must drop the entry's marker with it,
    // or the acknowledged entry (still in the stream as the last delivered one) reads as "still
    // queued" and the reconciler never puts the task back: the job would wait for its deadline.
    const r = await rig({ settings: { LANE_VISIBILITY_MS: 300 } });
    await r.startOrchestrator();
    const jobId = await accept(r, { tasks: [{}] }, 1);
    await until('task on the lane stream', async () => (await r.redis.xlen(streams.laneJob('dns', jobId))) === 1);
    await r.redis.xgroup('CREATE', streams.laneJob('dns', jobId), groups.lane('dns'), '0', 'MKSTREAM').catch(() => {});
    const read = (await r.redis.xreadgroup(
      'GROUP',
      groups.lane('dns'),
      'ghost',
      'COUNT',
      10,
      'STREAMS',
      streams.laneJob('dns', jobId),
      '>',
    )) as Array<[string, unknown[]]>;
    expect(read[0]![1]).toHaveLength(1);
    // The ghost claimed the task and died just now.
    await dbh.db
      .updateTable('tasks')
      .set({ status: 'running', attempts: 1, started_at: new Date() })
      .where('job_id', '=', jobId)
      .execute();
    await r.startLane();
    const j = await terminal(jobId, 10_000);
    expect(j.status).toBe('completed');
    expect((await tasks(jobId)).map((t) => [t.status, t.attempts])).toEqual([['completed', 2]]);
  });

  it('dead-letters an entry delivered more than LANE_MAX_DELIVERIES times; coverage says so', async () => {
    const r = await rig({ settings: { LANE_VISIBILITY_MS: 400, LANE_MAX_DELIVERIES: 2 } });
    await r.startOrchestrator();
    const jobId = await accept(r, { tasks: [{}, {}, {}] }, 3);
    await until('tasks on the lane stream', async () => (await r.redis.xlen(streams.laneJob('dns', jobId))) === 3);
    await r.redis.xgroup('CREATE', streams.laneJob('dns', jobId), groups.lane('dns'), '0', 'MKSTREAM').catch(() => {});
    const read = (await r.redis.xreadgroup(
      'GROUP',
      groups.lane('dns'),
      'ghost',
      'COUNT',
      10,
      'STREAMS',
      streams.laneJob('dns', jobId),
      '>',
    )) as Array<[string, Array<[string, string[]]>]>;
    const [first] = read[0]![1];
    const deadTask = Number(first![1][first![1].indexOf('task') + 1]);
    // The ghost had started that task when it died (a poison task kills its runner)…
    await dbh.db
      .updateTable('tasks')
      .set({ status: 'running', attempts: 1, started_at: new Date(Date.now() - 60_000) })
      .where('id', '=', deadTask)
      .execute();
    // …and so did a second consumer that reclaimed it: its second delivery.
    await (r.redis as Redis).xclaim(streams.laneJob('dns', jobId), groups.lane('dns'), 'ghost2', 0, first![0]);
    await r.startLane();
    const j = await terminal(jobId);
    const ts = await tasks(jobId);
    expect(ts.map((t) => [t.id === deadTask, t.status, t.reason])).toEqual(
      ts.map((t) => (t.id === deadTask ? [true, 'failed', 'dead_lettered'] : [false, 'completed', null])),
    );
    expect(j.status).toBe('partial');
    expect(json(j.coverage).limitations.map((l: { code: string }) => l.code)).toEqual(['dead_lettered']);
    expect([Number(j.credits_captured), Number(j.credits_released)]).toEqual([2, 1]);
    const dl = (await r.redis.xrange(streams.deadLetterOf(streams.laneJob('dns', jobId)), '-', '+')) as Array<
      [string, string[]]
    >;
    expect(dl).toHaveLength(1);
    expect(dl[0]![1]).toEqual(
      expect.arrayContaining([
        'stream',
        streams.laneJob('dns', jobId),
        'entry',
        first![0],
        'deliveries',
        '3',
        'f.task',
        String(deadTask),
      ]),
    );
  });

  it('an entry that ran out of deliveries before its task ever started is re-queued, not dead-lettered', async () => {
    const r = await rig({ settings: { LANE_VISIBILITY_MS: 400, LANE_MAX_DELIVERIES: 2 } });
    await r.startOrchestrator();
    const jobId = await accept(r, { tasks: [{}] }, 1);
    await until('task on the lane stream', async () => (await r.redis.xlen(streams.laneJob('dns', jobId))) === 1);
    await r.redis.xgroup('CREATE', streams.laneJob('dns', jobId), groups.lane('dns'), '0', 'MKSTREAM').catch(() => {});
    const read = (await r.redis.xreadgroup(
      'GROUP',
      groups.lane('dns'),
      'ghost',
      'COUNT',
      10,
      'STREAMS',
      streams.laneJob('dns', jobId),
      '>',
    )) as Array<[string, Array<[string, string[]]>]>;
    // Two more deliveries that failed before the task started (e.g. MySQL was unreachable).
    for (const c of ['g2', 'g3'])
      await (r.redis as Redis).xclaim(streams.laneJob('dns', jobId), groups.lane('dns'), c, 0, read[0]![1][0]![0]);
    await r.startLane();
    const j = await terminal(jobId);
    expect(j.status).toBe('completed');
    expect((await tasks(jobId)).map((t) => [t.status, t.attempts])).toEqual([['completed', 1]]);
    expect(await r.redis.xlen(streams.deadLetterOf(streams.laneJob('dns', jobId)))).toBe(0);
  });

  it('the outbox relay publishes a job whose publish was skipped', async () => {
    const r = await rig();
    await r.startOrchestrator();
    await r.startLane();
    const started = Date.now();
    const jobId = await accept(r, { tasks: [{}, {}] }, 2, { publish: false });
    const j = await terminal(jobId);
    expect(j.status).toBe('completed');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1900); // the relay waits 2 s for the web process
    const rows = await dbh.db.selectFrom('outbox').selectAll().where('job_id', '=', jobId).execute();
    expect(rows.map((o) => [o.topic, o.published_at !== null])).toEqual([['plan', true]]);
  });

  it('completes a job whose Redis streams were deleted (the reconciler rebuilds them from MySQL)', async () => {
    const r = await rig({ settings: { LANE_VISIBILITY_MS: 500 } });
    await r.startOrchestrator();
    const jobId = await accept(r, { tasks: [{}, {}, {}] }, 3);
    await until('tasks on the lane stream', async () => (await r.redis.xlen(streams.laneJob('dns', jobId))) === 3);
    await delKeys(r.redis, streams.laneJob('dns', jobId), streams.laneResults('dns'), streams.jobs);
    await r.startLane();
    const j = await terminal(jobId);
    expect(j.status).toBe('completed');
    expect([Number(j.credits_captured), Number(j.credits_released)]).toEqual([3, 0]);
  });

  it('an upgrade from the single-tag layout loses nothing: tasks queued and notices published under the old keys are rebuilt from MySQL', async () => {
    // The layout before per-lane tags: everything under {lss}. New processes never read these
    // keys; what they held is rebuilt from the task rows (docs/operations.md, "Upgrading to this layout").
    const legacy = {
      lane: '{lss}:lane:dns',
      taskResults: '{lss}:task-results',
      taskMessage: (id: number) => `{lss}:task-msg:${id}`,
    };
    const r = await rig({ settings: { LANE_VISIBILITY_MS: 500 } });
    // Job A: planned by an old orchestrator, its tasks queued on the old lane stream.
    const old = await r.startOrchestrator();
    const queued = await accept(r, { tasks: [{}, {}] }, 2);
    await until('A on the lane stream', async () => (await r.redis.xlen(streams.laneJob('dns', queued))) === 2);
    await old.close();
    const entries = (await r.redis.xrange(streams.laneJob('dns', queued), '-', '+')) as Array<[string, string[]]>;
    for (const [, fields] of entries) {
      const task = Number(fields[fields.indexOf('task') + 1]);
      const id = await r.redis.xadd(legacy.lane, '*', ...fields);
      await r.redis.set(legacy.taskMessage(task), id!);
      await r.redis.del(queueKeys.taskMessage('dns', task));
    }
    await r.redis.del(streams.laneJob('dns', queued));
    // Job B: its task finished under an old runner, whose notice went to the old results stream.
    await r.startLane();
    await r.startOrchestrator();
    const finished = await accept(r, { tasks: [{ behavior: 'gate' }] }, 1);
    await until('B running', async () => (await tasks(finished))[0]?.status === 'running');
    await r.orchestrator!.close();
    gate(`${r.product.id}:gate`).open();
    await until(
      'B finished, its notice on the lane results stream',
      async () => (await r.redis.xlen(streams.laneResults('dns'))) >= 1,
    );
    for (const [, fields] of (await r.redis.xrange(streams.laneResults('dns'), '-', '+')) as Array<
      [string, string[]]
    >) {
      await r.redis.xadd(legacy.taskResults, '*', ...fields);
    }
    await r.redis.del(streams.laneResults('dns'));
    expect((await tasks(finished)).map((t) => [t.status, t.applied_at])).toEqual([['completed', null]]);
    // The new deployment: an orchestrator and the lane runner, reading only the new keys.
    await r.startOrchestrator();
    for (const jobId of [queued, finished]) expect((await terminal(jobId)).status).toBe('completed');
    expect((await tasks(queued)).map((t) => t.attempts)).toEqual([1, 1]);
    expect((await tasks(finished)).map((t) => t.attempts)).toEqual([1]);
  });

  it('resets a task stuck `running` by a runner that died with Redis flushed', async () => {
    const r = await rig({ settings: { LANE_VISIBILITY_MS: 300 } });
    await r.startOrchestrator();
    const jobId = await accept(r, { tasks: [{}] }, 1);
    await until('task on the lane stream', async () => (await r.redis.xlen(streams.laneJob('dns', jobId))) === 1);
    // A runner claimed the task and died; then Redis lost its stream.
    await dbh.db
      .updateTable('tasks')
      .set({ status: 'running', attempts: 1, started_at: new Date(Date.now() - 60_000) })
      .where('job_id', '=', jobId)
      .execute();
    await r.redis.del(streams.laneJob('dns', jobId));
    await r.startLane();
    const j = await terminal(jobId);
    expect(j.status).toBe('completed');
    expect((await tasks(jobId)).map((t) => [t.status, t.attempts])).toEqual([['completed', 2]]);
  });

  it('a redelivered plan re-enqueues nothing that is still queued', async () => {
    const r = await rig();
    await r.startOrchestrator();
    const jobId = await accept(r, { tasks: [{}, {}, {}] }, 3);
    await until('tasks on the lane stream', async () => (await r.redis.xlen(streams.laneJob('dns', jobId))) === 3);
    await publishJob(r.redis, jobId, 'plan');
    await publishJob(r.redis, jobId, 'plan');
    await drained(r.redis, streams.jobs, groups.orchestrator);
    expect(await r.redis.xlen(streams.laneJob('dns', jobId))).toBe(3);
    await r.startLane();
    expect((await terminal(jobId)).status).toBe('completed');
  });

  it('a task read as pending that a runner finishes before Redis is asked is not re-enqueued; one whose entry is lost is', async () => {
    const r = await rig();
    await r.startOrchestrator();
    const jobId = await accept(r, { tasks: [{}, {}] }, 2);
    await until('tasks on the lane stream', async () => (await r.redis.xlen(streams.laneJob('dns', jobId))) === 2);
    await r.orchestrator!.close(); // no reconciler of its own in between
    // What the reconciler read from MySQL: both pending.
    const read = await pendingTaskRefs(dbh.db, jobId);
    const [finished, lost] = read;
    // Then a runner claimed, finished and acknowledged the first (its marker goes with the ack),
    // and the second's entry was lost.
    await dbh.db.updateTable('tasks').set({ status: 'completed' }).where('id', '=', finished!.id).execute();
    await r.redis.del(queueKeys.taskMessage('dns', finished!.id), queueKeys.taskMessage('dns', lost!.id));
    const requeued = await ensureTasksEnqueued(r.redis, read, (l) => stillPending(dbh.db, l));
    expect(requeued).toBe(1);
    const entries = await r.redis.xrange(streams.laneJob('dns', jobId), '-', '+');
    expect(entries.map(([, fields]) => Number(fields[1]))).toEqual([finished!.id, lost!.id, lost!.id]);
  });

  it('the sweeper finalizes a job past its deadline: `partial` with what finished, the rest cancelled', async () => {
    const r = await rig();
    await r.startOrchestrator();
    await r.startLane();
    const jobId = await accept(r, { tasks: [{ cost: 2 }, { behavior: 'gate', cost: 2 }] }, 4, { deadlineMs: 1500 });
    const j = await terminal(jobId);
    expect(j.status).toBe('partial');
    expect((await tasks(jobId)).map((t) => [t.status, t.reason])).toEqual([
      ['completed', null],
      ['cancelled', 'deadline_exceeded'],
    ]);
    expect(json(j.coverage).limitations.map((l: { code: string }) => l.code)).toEqual(['deadline_exceeded']);
    expect([Number(j.credits_captured), Number(j.credits_released)]).toEqual([2, 2]);
    expect((await ledger(jobId)).releases).toHaveLength(1);
  });

  it('purges jobs past retention with everything under them, and nothing younger', async () => {
    const r = await rig();
    const o = await r.startOrchestrator();
    await r.startLane();
    const oldJob = await accept(r, { tasks: [{}, {}] }, 2);
    const youngJob = await accept(r, { tasks: [{}] }, 1);
    await terminal(oldJob);
    await terminal(youngJob);
    const days = r.config.JOB_RETENTION_DAYS;
    await dbh.db
      .updateTable('jobs')
      .set({ completed_at: new Date(Date.now() - (days + 1) * 86_400_000) })
      .where('id', '=', oldJob)
      .execute();
    expect(await purgeExpiredJobs(o.context)).toBe(1);
    for (const table of ['objects', 'findings', 'relations', 'tasks'] as const) {
      expect(await dbh.db.selectFrom(table).select('job_id').where('job_id', '=', oldJob).execute()).toHaveLength(0);
      expect(
        (await dbh.db.selectFrom(table).select('job_id').where('job_id', '=', youngJob).execute()).length,
      ).toBeGreaterThan(0);
    }
    expect(await dbh.db.selectFrom('jobs').select('id').where('id', '=', oldJob).execute()).toHaveLength(0);
    expect((await ledger(oldJob)).captures).toHaveLength(2); // the ledger is immutable
  });

  it('close() drains an in-flight task before returning; a second close() waits on the first', async () => {
    const r = await rig();
    await r.startOrchestrator();
    const w = await r.startLane();
    const jobId = await accept(r, { tasks: [{ behavior: 'gate', cost: 2 }] }, 2);
    await until('task running', async () => (await tasks(jobId))[0]?.status === 'running');
    const closing = [w.close(), w.close()];
    setTimeout(() => gate(`${r.product.id}:gate`).open(), 200);
    await Promise.all(closing);
    expect((await tasks(jobId)).map((t) => t.status)).toEqual(['completed']); // persisted before close returned
    expect((await terminal(jobId)).status).toBe('completed');
  });

  it('a shutdown that outlasts SHUTDOWN_TIMEOUT_MS hands the task back; another runner completes it', async () => {
    const r = await rig({ env: { SHUTDOWN_TIMEOUT_MS: '200' }, settings: { LANE_VISIBILITY_MS: 400 } });
    await r.startOrchestrator();
    const first = await r.startLane();
    const jobId = await accept(r, { tasks: [{ behavior: 'gate', cost: 2 }] }, 2);
    await until('task running', async () => (await tasks(jobId))[0]?.status === 'running');
    await first.close();
    expect((await tasks(jobId)).map((t) => [t.status, t.attempts])).toEqual([['pending', 1]]);
    gate(`${r.product.id}:gate`).open();
    await r.startLane(); // reclaims the entry the first runner left pending
    const j = await terminal(jobId);
    expect(j.status).toBe('completed');
    expect((await tasks(jobId)).map((t) => [t.status, t.attempts])).toEqual([['completed', 2]]);
    expect(Number(j.credits_captured)).toBe(2);
  });

  it('reports lane liveness from heartbeats', async () => {
    const r = await rig();
    const health = new LaneHealth(r.redis);
    await health.refresh();
    expect(health.alive('dns')).toBe(false);
    const w = await r.startLane();
    await health.refresh();
    expect([health.alive('dns'), health.alive('mail')]).toEqual([true, false]);
    await w.close();
    await w.close(); // idempotent
    await health.refresh();
    expect(health.alive('dns')).toBe(false);
  });
});

// ---- batched application (issue 20 item 1) ----------------------------------------------------
// The orchestrator applies a job's finished tasks in batches (apply-result.ts applyTaskResults):
// these finish tasks by hand (as runners would: status, output, finished_at) and apply them in
// batches directly, so what a batch does is pinned, not left to the timing of notices.

describe('batched application', () => {
  const finishByHand = (ids: number[]) =>
    Promise.all(
      ids.map(async (id) => {
        const t = await dbh.db.selectFrom('tasks').select('object_key').where('id', '=', id).executeTakeFirstOrThrow();
        await dbh.db
          .updateTable('tasks')
          .set({
            status: 'completed',
            finished_at: new Date(),
            output: JSON.stringify(okOutput(t.object_key)),
          } as never)
          .where('id', '=', id)
          .execute();
      }),
    );
  const planned = (jobId: number, n: number) =>
    until(`${n} tasks planned`, async () => {
      const ts = await tasks(jobId);
      return ts.length === n ? ts : null;
    });
  /** A rig whose orchestrator's reconciler is slow: only the batches a test applies apply its tasks. */
  const rigApplyingByHand = async () => {
    const r = await rig();
    const orchestrator = await startOrchestrator({
      config: r.config,
      log: silent,
      db: dbh.db,
      redis: r.redis,
      products: [r.product],
      settings: r.settings,
      checkTimeoutMs,
      timing: { ...FAST_TIMING, reconcileEveryMs: 60_000 },
    });
    return Object.assign(r, { orchestrator });
  };
  const invariant = async () => {
    const b = await balance(dbh.db, principal.workspaceId);
    expect(b.granted).toBe(b.available + b.reserved + b.captured);
  };

  it('a batch holding duplicates and redeliveries captures each task once and writes each output once', async () => {
    const r = await rigApplyingByHand();
    const jobId = await accept(r, { tasks: [{ cost: 2 }, { cost: 2 }, { cost: 2 }, { cost: 2 }, { cost: 2 }] }, 12);
    const ids = (await planned(jobId, 5)).map((t) => Number(t.id));
    await finishByHand(ids);
    // One batch names a task three times; a second batch, concurrent, repeats them all.
    await Promise.all([
      applyTaskResults(r.orchestrator.context, jobId, [...ids, ids[0]!, ids[0]!, ids[3]!]),
      applyTaskResults(r.orchestrator.context, jobId, [...ids].reverse()),
    ]);
    await applyTaskResults(r.orchestrator.context, jobId, ids);
    const j = await job(jobId);
    expect(j.status).toBe('completed');
    expect(Number(j.credits_captured)).toBe(10);
    expect(Number(j.credits_released)).toBe(2);
    const l = await ledger(jobId);
    expect(l.captures).toHaveLength(5);
    expect(new Set(l.captures.map((c) => c.dedupe_key)).size).toBe(5);
    expect(l.releases).toHaveLength(1);
    const objects = await dbh.db
      .selectFrom('objects')
      .select(['type', 'okey', 'evidence'])
      .where('job_id', '=', jobId)
      .execute();
    expect(objects.filter((o) => o.type === 'host')).toHaveLength(5);
    // Each host's evidence was written once (a second write of the output would append a copy).
    for (const o of objects.filter((x) => x.type === 'host')) expect(json(o.evidence)).toHaveLength(1);
    const findings = await dbh.db
      .selectFrom('findings')
      .select(['seq'])
      .where('job_id', '=', jobId)
      .orderBy('seq')
      .execute();
    expect(findings.map((f) => Number(f.seq))).toEqual([1, 2, 3, 4, 5]);
    await invariant();
  });

  it('a batch spanning a cancel: finished tasks are captured and written, the rest cancelled, the remainder released once', async () => {
    const r = await rig();
    const o = await r.startOrchestrator();
    const jobId = await accept(r, { tasks: [{ cost: 3 }, { cost: 3 }, { cost: 3 }, { cost: 3 }] }, 12);
    const ts = await planned(jobId, 4);
    const ids = ts.map((t) => Number(t.id));
    await finishByHand(ids.slice(0, 2));
    await requestCancel(dbh.db, principal.workspaceId, (await job(jobId)).public_id);
    // The batch names finished and still-open tasks of the cancelling job.
    await applyTaskResults(o.context, jobId, ids);
    expect((await job(jobId)).status).toBe('cancelling');
    await cancelJob(o.context, jobId);
    const j = await terminal(jobId);
    expect(j.status).toBe('cancelled');
    expect(Number(j.credits_captured)).toBe(6);
    expect(Number(j.credits_released)).toBe(6);
    const after = await tasks(jobId);
    expect(after.map((t) => t.status)).toEqual(['completed', 'completed', 'cancelled', 'cancelled']);
    expect(after.every((t) => t.applied_at !== null)).toBe(true);
    const hosts = await dbh.db
      .selectFrom('objects')
      .select('okey')
      .where('job_id', '=', jobId)
      .where('type', '=', 'host')
      .orderBy('okey')
      .execute();
    expect(hosts.map((h) => h.okey)).toEqual([ts[0]!.object_key, ts[1]!.object_key].sort());
    const l = await ledger(jobId);
    expect(l.captures).toHaveLength(2);
    expect(l.releases).toHaveLength(1);
    await invariant();
  });

  it('a crash between batches: the reconciler re-publishes what the first batch left, and it is applied once', async () => {
    const r = await rig();
    const o = await r.startOrchestrator();
    const jobId = await accept(r, { tasks: [{ cost: 1 }, { cost: 1 }, { cost: 1 }, { cost: 1 }] }, 4);
    const ids = (await planned(jobId, 4)).map((t) => Number(t.id));
    await finishByHand(ids);
    // The first batch was applied; the process died before the second (no notice was published).
    await applyTaskResults(o.context, jobId, ids.slice(0, 1));
    expect((await job(jobId)).status).toBe('running');
    // unappliedAfterMs is 1 s here: the reconciler re-publishes the rest, the batcher applies them.
    const j = await terminal(jobId);
    expect(j.status).toBe('completed');
    expect(Number(j.credits_captured)).toBe(4);
    expect((await ledger(jobId)).captures).toHaveLength(4);
    expect(
      await dbh.db.selectFrom('objects').select('id').where('job_id', '=', jobId).where('type', '=', 'host').execute(),
    ).toHaveLength(4);
    await invariant();
  });

  it('the reconciler re-publishes only lost notices: none still waiting in a results stream, delivered or not', async () => {
    const r = await rig();
    // No orchestrator consumes here: the test plays its consumer group by hand.
    const ctx: OrchestrationContext = {
      db: dbh.db,
      redis: r.redis,
      log: silent,
      config: r.config,
      settings: parseQueueSettings(process.env, r.settings),
      catalog: productCatalog([r.product]),
      checkTimeoutMs: () => 30_000,
    };
    const jobId = await accept(r, { tasks: Array.from({ length: 6 }, () => ({ cost: 1 })) }, 6, { publish: false });
    await planJob(ctx, jobId);
    const ids = (await planned(jobId, 6)).map((t) => Number(t.id));
    await finishByHand(ids);
    const results = streams.laneResults('dns');
    await r.redis.xgroup('CREATE', results, groups.orchestrator, '0', 'MKSTREAM');
    // Tasks 0 and 1: notices published and not yet delivered (an apply lag).
    for (const id of ids.slice(0, 2)) await publishTaskResult(r.redis, 'dns', id, jobId);
    // Tasks 2 and 3: delivered to an orchestrator that holds them (its batcher, or it died): pending.
    for (const id of ids.slice(2, 4)) await publishTaskResult(r.redis, 'dns', id, jobId);
    await r.redis.xreadgroup('GROUP', groups.orchestrator, 'held', 'COUNT', 4, 'STREAMS', results, '>');
    // Task 4: its notice was acknowledged without being applied (it counts as lost); task 5: never published.
    const acked = await publishTaskResult(r.redis, 'dns', ids[4]!, jobId);
    await r.redis.xreadgroup('GROUP', groups.orchestrator, 'other', 'COUNT', 1, 'STREAMS', results, '>');
    await r.redis.xack(results, groups.orchestrator, acked!);
    await sleep(20);
    const reconciler = new Reconciler(ctx, { unappliedAfterMs: 0 });
    expect(await reconciler.republishUnapplied()).toBe(2);
    const entries = (await r.redis.xrange(results, '-', '+')) as Array<[string, string[]]>;
    const noticesOf = (id: number) => entries.filter(([, f]) => f[f.indexOf('task') + 1] === String(id)).length;
    expect(ids.map(noticesOf)).toEqual([1, 1, 1, 1, 2, 1]);
    // A second pass finds every notice queued: no duplicate.
    expect(await reconciler.republishUnapplied()).toBe(0);
    expect(await r.redis.xlen(results)).toBe(entries.length);
  });

  it('the reconciler does not re-publish a notice applied and acknowledged while it read the streams', async () => {
    const r = await rig();
    let raced = false;
    let ackRace: () => Promise<void> = async () => {};
    // The orchestrator's batch commits and acknowledges its notice between the reconciler's read of
    // the unapplied tasks and its read of the results stream (the first stream command it sends).
    const redis = new Proxy(r.redis, {
      get(target, prop) {
        if (prop === 'xinfo')
          return async (...args: unknown[]) => {
            if (!raced) {
              raced = true;
              await ackRace();
            }
            return (target.xinfo as (...a: unknown[]) => Promise<unknown>)(...args);
          };
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const ctx: OrchestrationContext = {
      db: dbh.db,
      redis,
      log: silent,
      config: r.config,
      settings: parseQueueSettings(process.env, r.settings),
      catalog: productCatalog([r.product]),
      checkTimeoutMs: () => 30_000,
    };
    const jobId = await accept(r, { tasks: [{ cost: 1 }] }, 1, { publish: false });
    await planJob(ctx, jobId);
    const [id] = (await planned(jobId, 1)).map((t) => Number(t.id));
    await finishByHand([id!]);
    const results = streams.laneResults('dns');
    await r.redis.xgroup('CREATE', results, groups.orchestrator, '0', 'MKSTREAM');
    const entry = await publishTaskResult(r.redis, 'dns', id!, jobId);
    await r.redis.xreadgroup('GROUP', groups.orchestrator, 'batcher', 'COUNT', 1, 'STREAMS', results, '>');
    ackRace = async () => {
      await applyTaskResults(ctx, jobId, [id!]);
      await r.redis.xack(results, groups.orchestrator, entry!);
    };
    await sleep(20);
    const reconciler = new Reconciler(ctx, { unappliedAfterMs: 0 });
    expect(await reconciler.republishUnapplied()).toBe(0);
    expect(raced).toBe(true);
    expect(await r.redis.xlen(results)).toBe(1); // the one notice, no duplicate
    const [task] = await tasks(jobId);
    expect(task!.applied_at).not.toBeNull();
  });

  /** A finished task whose output MySQL refuses to write (a finding's confidence longer than its column). */
  const poison = (id: number) => {
    const out = okOutput('poison.example.test');
    return dbh.db
      .updateTable('tasks')
      .set({
        status: 'completed',
        finished_at: new Date(),
        output: JSON.stringify({ ...out, findings: [{ ...out.findings[0]!, confidence: 'x'.repeat(40) }] }),
      } as never)
      .where('id', '=', id)
      .execute();
  };

  it('a result that cannot be written fails alone: the rest of its batch is applied, it is dead-lettered with its error and the job ends partial', async () => {
    const r = await rig({ settings: { LANE_VISIBILITY_MS: 300, LANE_MAX_DELIVERIES: 2 } });
    const o = await r.startOrchestrator();
    const jobId = await accept(r, { tasks: Array.from({ length: 5 }, () => ({ cost: 1 })) }, 5);
    const ids = (await planned(jobId, 5)).map((t) => Number(t.id));
    await finishByHand(ids.filter((_, i) => i !== 2));
    await poison(ids[2]!);
    // All five notices at once: one batch.
    for (const id of ids) await publishTaskResult(r.redis, 'dns', id, jobId);
    const j = await terminal(jobId, 30_000);
    expect(j.status).toBe('partial');
    expect(json(j.coverage).limitations.map((l: { code: string }) => l.code)).toContain('result_not_applied');
    const after = await tasks(jobId);
    expect(after.map((t) => [t.status, t.reason, t.applied_at !== null])).toEqual([
      ['completed', null, true],
      ['completed', null, true],
      ['failed', 'apply_failed', true],
      ['completed', null, true],
      ['completed', null, true],
    ]);
    expect(Number(j.credits_captured)).toBe(4);
    expect((await ledger(jobId)).releases).toHaveLength(1);
    const hosts = await dbh.db
      .selectFrom('objects')
      .select('okey')
      .where('job_id', '=', jobId)
      .where('type', '=', 'host')
      .execute();
    expect(hosts).toHaveLength(4);
    const dead = (await r.redis.xrange(streams.deadLetterOf(streams.laneResults('dns')), '-', '+')) as Array<
      [string, string[]]
    >;
    const entry = dead.map(([, f]) => Object.fromEntries(f.flatMap((v, i) => (i % 2 ? [] : [[v, f[i + 1]]]))));
    expect(entry.map((e) => e['f.task'])).toEqual([String(ids[2])]);
    expect(entry[0]!.error).toMatch(/too long/i);
    await invariant();
    await o.close();
  }, 60_000);

  it('a cancel whose backlog holds a result that cannot be written settles the rest and ends cancelled', async () => {
    const r = await rigApplyingByHand();
    const jobId = await accept(r, { tasks: [{ cost: 2 }, { cost: 2 }, { cost: 2 }] }, 6);
    const ids = (await planned(jobId, 3)).map((t) => Number(t.id));
    await finishByHand([ids[0]!, ids[2]!]);
    await poison(ids[1]!);
    await requestCancel(dbh.db, principal.workspaceId, (await job(jobId)).public_id);
    await cancelJob(r.orchestrator.context, jobId);
    const j = await job(jobId);
    expect(j.status).toBe('cancelled');
    expect([Number(j.credits_captured), Number(j.credits_released)]).toEqual([4, 2]);
    expect((await tasks(jobId)).map((t) => [t.status, t.reason])).toEqual([
      ['completed', null],
      ['failed', 'apply_failed'],
      ['completed', null],
    ]);
    await invariant();
  });

  it('the ledger invariant holds after one big batch: 300 tasks, 300 captures, one release', async () => {
    const r = await rigApplyingByHand();
    const jobId = await accept(r, { tasks: Array.from({ length: 300 }, () => ({ cost: 1 })) }, 310);
    const ids = (await planned(jobId, 300)).map((t) => Number(t.id));
    await finishByHand(ids);
    await applyTaskResults(r.orchestrator.context, jobId, ids);
    const j = await job(jobId);
    expect(j.status).toBe('completed');
    expect(Number(j.credits_captured)).toBe(300);
    expect(Number(j.credits_released)).toBe(10);
    const l = await ledger(jobId);
    expect(l.captures).toHaveLength(300);
    expect(l.releases).toHaveLength(1);
    const objects = await dbh.db
      .selectFrom('objects')
      .select(['seq', 'type'])
      .where('job_id', '=', jobId)
      .orderBy('seq')
      .execute();
    // 300 hosts and the domain they were discovered from, page positions 1..301 without a gap.
    expect(objects).toHaveLength(301);
    expect(objects.map((x) => Number(x.seq))).toEqual(Array.from({ length: 301 }, (_, i) => i + 1));
    const relations = await dbh.db
      .selectFrom('relations')
      .select('from_object_id')
      .where('job_id', '=', jobId)
      .execute();
    expect(relations).toHaveLength(300);
    await invariant();
  });
});
