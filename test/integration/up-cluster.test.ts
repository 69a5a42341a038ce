// `npm run up -- --cluster`: every Procfile role on a loopback Redis Cluster that ops/up.ts starts
// and stops itself. The real script, its real roles, a scratch database; the cluster is its own
// (this file runs in the single-Redis pass only).
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { Cluster } from 'ioredis';
import {
  createScratchDatabase,
  freePort,
  pingRedis,
  ProcessGroup,
  until,
  type ScratchDatabase,
} from '../helpers/processes.ts';
import { testPrefix } from '../helpers/redis.ts';
import { redisReady } from '../../src/redis/client.ts';

const group = new ProcessGroup();
let db: ScratchDatabase | undefined;
let upProc: ReturnType<ProcessGroup['node']> | undefined;

afterAll(async () => {
  // SIGTERM first: up.ts stops its roles and its cluster (a SIGKILL would orphan them).
  if (upProc?.running()) await upProc.stop('SIGTERM', 60_000);
  await group.killAll();
  await db?.drop().catch(() => {});
});

describe('npm run up -- --cluster', () => {
  it('runs the roles on a cluster of its own, answers with the demo key, and stops the cluster with the roles', async () => {
    db = await createScratchDatabase('up');
    const port = await freePort();
    const metricsPort = await freePort();
    const prefix = testPrefix('up');
    const up = group.node('up', ['ops/up.ts', '--cluster'], {
      DATABASE_URL: db.url,
      PORT: String(port),
      REDIS_KEY_PREFIX: prefix,
      REDIS_CLUSTER_NODES: undefined,
      KEY_PEPPER: randomBytes(32).toString('base64url'),
      CURSOR_SECRET: randomBytes(32).toString('base64url'),
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64url'),
      WEB_CONCURRENCY: '1',
      METRICS_PORT: String(metricsPort),
      LOG_LEVEL: 'warn',
    });
    upProc = up;
    const failed = () => new Error(`ops/up.ts exited:\n${up.output().slice(-3000)}`);
    const key = await until(
      'the banner with the demo key',
      async () => {
        if (!up.running()) throw failed();
        return /Demo API key[^\n]*\n\n\s+(\S+)\n/.exec(up.output())?.[1];
      },
      120_000,
      250,
    );
    const seeds = /REDIS_CLUSTER_NODES=(\S+)/.exec(up.output())?.[1];
    expect(seeds, up.output().slice(-2000)).toMatch(/^127\.0\.0\.1:\d+(,127\.0\.0\.1:\d+){2}$/);
    const ports = seeds!.split(',').map((s) => Number(s.split(':')[1]));

    // The banner may come before the web role answers (it says "starting" then): on a loaded
    // machine the roles take longer than up.ts waits for /livez.
    await until(
      'the web role answering /livez',
      async () => {
        if (!up.running()) throw failed();
        return fetch(`http://127.0.0.1:${port}/livez`).then(
          (r) => r.ok || undefined,
          () => undefined,
        );
      },
      60_000,
      250,
    );
    const res = await fetch(`http://127.0.0.1:${port}/v2/lookups/mac`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'idempotency-key': 'up-cluster-1',
      },
      body: JSON.stringify({ value: 'F4:F5:E8:12:34:56' }),
    });
    expect(res.status, await res.clone().text()).toBe(200);

    // The roles' data is on the cluster: the lookup's idempotency marker, and the heartbeats of
    // the orchestrator and a lane worker.
    const cluster = new Cluster(
      ports.map((p) => ({ host: '127.0.0.1', port: p })),
      { keyPrefix: prefix },
    );
    try {
      await redisReady(cluster);
      // KEYS per master (node clients may carry the prefix too: match on the full names).
      const keys = (
        await Promise.all(cluster.nodes('master').map((n) => n.call('KEYS', '*') as Promise<string[]>))
      ).flat();
      expect(
        keys.filter((k) => k.startsWith(prefix) && k.includes(':idem:')),
        keys.slice(0, 20).join(' '),
      ).not.toHaveLength(0);
      await until(
        'the orchestrator and lane-dns heartbeats on the cluster',
        async () =>
          (await cluster.zcard('{lss}:lane-alive:orchestrator')) > 0 &&
          (await cluster.zcard('{lss}:lane-alive:dns')) > 0,
        30_000,
        250,
      );
    } finally {
      cluster.disconnect();
    }

    expect(await up.stop('SIGTERM', 60_000), up.output().slice(-3000)).toBe(0);
    expect(up.output()).toContain('Redis Cluster stopped');
    for (const p of ports) expect(await pingRedis(p)).toBe(false);
  }, 240_000);
});
