// The worker entry points as real processes: `node workers/lane.ts <lane>` and
// `node workers/orchestrator.ts`: they start, heartbeat, serve /metrics, do their work with the
// default product registry, and stop cleanly on SIGTERM.
//
// The CLI orchestrator owns every async product of the registry and sweeps its database, so these
// processes get a database of their own: other test files' jobs are never theirs to touch.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Authenticator } from '../../src/auth/authenticator.ts';
import type { Principal } from '../../src/auth/principal.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { createDb, type DbHandle } from '../../src/db/database.ts';
import { createKey, createWorkspace } from '../../src/auth/tenancy-repo.ts';
import { acceptJob, requestCancel } from '../../src/jobs/jobs-repo.ts';
import { LaneHealth } from '../../src/queue/lane-health.ts';
import { productById } from '../../src/products/registry.ts';
import { publishJob, streams } from '../../src/queue/streams.ts';
import type { RedisClient } from '../../src/redis/client.ts';
import { freePort } from '../helpers/processes.ts';
import { hasRedis, testRedis } from '../helpers/redis.ts';
import { migrate } from '../../src/db/migrations.ts';
import { createDatabase, dropDatabase } from '../../ops/services.ts';

const root = path.resolve(import.meta.dirname, '../..');

interface Proc {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number>;
}

const procs: Proc[] = [];

function start(args: string[], env: Record<string, string>): Proc {
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<number>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1))),
  );
  const p = { child, output: () => out, exited };
  procs.push(p);
  return p;
}

async function until<T>(what: string, fn: () => Promise<T | undefined | null | false>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

describe('worker processes', () => {
  let dbh: DbHandle;
  let redis: RedisClient;
  let principal: Principal;
  let env: Record<string, string>;
  let server: string;
  let dbName: string;

  beforeAll(async () => {
    if (!process.env.DATABASE_URL || !hasRedis())
      throw new Error('needs DATABASE_URL and REDIS_URL (or REDIS_CLUSTER_NODES): run with `npm test`');
    const base = new URL(process.env.DATABASE_URL);
    dbName = `${base.pathname.slice(1)}_procs`;
    base.pathname = '/';
    server = base.toString();
    const databaseUrl = await createDatabase(server, dbName);
    await migrate(databaseUrl);
    const prefix = `${process.env.REDIS_KEY_PREFIX ?? ''}procs:${randomBytes(4).toString('hex')}:`;
    env = {
      DATABASE_URL: databaseUrl,
      REDIS_KEY_PREFIX: prefix,
      LOG_LEVEL: 'info',
      SHUTDOWN_TIMEOUT_MS: '3000',
      LANE_POOL_THREADS: '1',
    };
    redis = await testRedis(prefix);
    dbh = createDb(databaseUrl);
    const pepper = process.env.KEY_PEPPER!;
    const ws = await createWorkspace(dbh.db, { name: `procs-${randomBytes(3).toString('hex')}` });
    const key = await createKey(dbh.db, pepper, { workspace: ws.workspaceId });
    principal = (await new Authenticator(dbh.db, pepper, 0).verify(key.key))!;
    await grantCredits(dbh.db, principal.workspaceId, 100, `grant:${ws.workspaceId}`);
  });

  afterAll(async () => {
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    await redis?.quit().catch(() => {});
    await dbh?.close();
    if (dbName) await dropDatabase(server, dbName);
  });

  it('refuses an unknown lane with a usage error', async () => {
    const p = start(['workers/lane.ts', 'smtp'], env);
    expect(await p.exited).toBe(64);
    expect(p.output()).toMatch(/usage: node workers\/lane\.ts <dns\|mail\|web\|domain\|active>/);
  });

  it('a lane process heartbeats, serves /metrics and stops cleanly on SIGTERM', async () => {
    const port = await freePort();
    const p = start(['workers/lane.ts', 'domain'], { ...env, METRICS_PORT: String(port) });
    const health = new LaneHealth(redis);
    await until('lane alive', async () => {
      await health.refresh();
      return health.alive('domain');
    });
    const metrics = await until('metrics', async () => {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      return res.ok ? res.text() : null;
    });
    expect(metrics).toContain(`lss_stream_length{stream="${streams.lane('domain')}"}`);
    expect(metrics).toContain('lss_stream_oldest_pending_age_seconds');
    expect(metrics).toContain('process_cpu_user_seconds_total');
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    await health.refresh();
    expect(health.alive('domain')).toBe(false); // the heartbeat key is removed on a clean stop
  });

  it('the orchestrator process relays and plans a job of the default registry, then cancels it', async () => {
    const p = start(['workers/orchestrator.ts'], env);
    const def = productById('lookup.domain.v1')!;
    // Not published: the orchestrator's outbox relay must find it.
    const accepted = await acceptJob(dbh.db, {
      principal,
      product: def.id,
      target: { type: 'domain_name', value: 'example.com' },
      profile: null,
      input: { value: 'example.com' },
      price: 2,
      deadlineMs: 120_000,
      requestId: 'req_processes',
      claim: undefined,
    });
    const jobRow = () =>
      dbh.db.selectFrom('jobs').selectAll().where('id', '=', accepted.jobId).executeTakeFirstOrThrow();
    const planned = await until('job planned', async () =>
      (await jobRow()).status !== 'queued' ? jobRow() : null,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n--- orchestrator output ---\n${p.output()}`);
    });
    if (!def.job) {
      // The registry still carries the product without its job runtime: failed, nothing charged.
      expect(planned.status).toBe('failed');
      expect(JSON.stringify(planned.coverage)).toContain('product_not_available');
      expect([Number(planned.credits_captured), Number(planned.credits_released)]).toEqual([0, 2]);
    } else {
      expect(planned.status).toBe('running');
      const tasks = await dbh.db
        .selectFrom('tasks')
        .select(['check_name', 'status'])
        .where('job_id', '=', accepted.jobId)
        .execute();
      expect(tasks.length).toBeGreaterThan(0);
      // The row turns running at the plan's commit; the tasks are put on the lane right after.
      await until(
        'tasks enqueued',
        async () => (await redis.xlen(streams.laneJob('domain', accepted.jobId))) === tasks.length,
      );
      await requestCancel(dbh.db, principal.workspaceId, accepted.jobRef);
      await publishJob(redis, accepted.jobId, 'cancel');
      const done = await until('job cancelled', async () =>
        (await jobRow()).status === 'cancelled' ? jobRow() : null,
      );
      expect([Number(done.credits_captured), Number(done.credits_released)]).toEqual([0, 2]);
    }
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    expect(p.output()).toContain('orchestrator started');
  });
});
