// A throwaway Redis Cluster on loopback for tests and benchmarks: N masters (`redis-server
// --cluster-enabled yes`, no persistence) on free ports, joined with `redis-cli --cluster create
// … --cluster-replicas 0 --cluster-yes`. Each node has its own directory under
// <root>/.data/redis-cluster/<run>/ (its nodes.conf lives there, so restart() brings the same
// cluster back, empty). The nodes are children of this process; stop() kills them and removes the
// directory. A run that died without stopping (SIGKILL) is swept by the next start: its owner pid
// is gone, so its nodes are killed and its directory removed.
//
// CLI (for trying things by hand):
//   node ops/redis-cluster.ts            start 3 masters, print REDIS_CLUSTER_NODES=…, stop on Ctrl-C
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFile } from 'node:child_process';
import { Cluster } from 'ioredis';
import { livePid, pidAlive, which, withRedis, type Log } from './services.ts';

export interface RedisCluster {
  /** The REDIS_CLUSTER_NODES value: `127.0.0.1:p1,127.0.0.1:p2,…`. */
  readonly seeds: string;
  readonly ports: readonly number[];
  readonly dir: string;
  /** SIGKILL every node: the whole cluster is down (for fault tests). */
  kill(): Promise<void>;
  /** SIGKILL the node on ports[i]: one shard lost (for fault tests; revive() restarts it). */
  killNode(i: number): Promise<void>;
  /** Start the killed nodes again on the same ports: the same slots, no data. */
  revive(): Promise<void>;
  /** Kill the nodes and remove the directory. Idempotent. */
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 20_000;
/** Cluster bus port = data port + 10000 (Redis' fixed offset). */
const BUS_OFFSET = 10_000;
/**
 * Data ports 10000–14999, so bus ports 20000–24999: both below the kernel's ephemeral range
 * (32768 and up), where an outgoing connection could take a port between the check and the bind,
 * or while a killed node waits for revive(); and apart from the tests' freePort() (25000 up to
 * that range, test/helpers/processes.ts), which could otherwise hand out a dead node's port.
 */
const CLUSTER_PORT_LOW = 10_000;
const CLUSTER_PORT_SPAN = 5_000;

const defaultLog: Log = (msg) => {
  process.stderr.write(`[redis-cluster] ${msg}\n`);
};

export async function startRedisCluster(opts: { root: string; masters?: number; log?: Log }): Promise<RedisCluster> {
  const log = opts.log ?? defaultLog;
  const masters = opts.masters ?? 3;
  const [server, cli] = await Promise.all([which('redis-server'), which('redis-cli')]);
  if (!server || !cli)
    throw new Error(
      'redis-server and redis-cli are needed for the Redis Cluster (Debian package redis-server; ops/services.ts installs it)',
    );
  const base = path.resolve(opts.root, '.data', 'redis-cluster');
  await sweepStaleRuns(base, log);
  const dir = path.join(base, `${process.pid}-${randomBytes(3).toString('hex')}`);
  await fs.mkdir(dir, { recursive: true });
  await fs.writeFile(path.join(dir, 'owner.pid'), String(process.pid));

  const ports = await freeClusterPorts(masters);
  const children = new Map<number, ChildProcess>();
  const startNode = async (port: number): Promise<void> => {
    const nodeDir = path.join(dir, String(port));
    await fs.mkdir(nodeDir, { recursive: true });
    const child = spawn(
      server,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--protected-mode',
        'no',
        '--daemonize',
        'no',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        'nodes.conf',
        '--cluster-node-timeout',
        '2000',
        '--dir',
        nodeDir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--logfile',
        path.join(nodeDir, 'redis.log'),
        '--pidfile',
        path.join(nodeDir, 'redis.pid'),
      ],
      { stdio: 'ignore' },
    );
    child.on('error', () => {});
    children.set(port, child);
  };
  const killNode = async (port: number): Promise<void> => {
    const c = children.get(port);
    children.delete(port);
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    await new Promise<void>((r) => {
      c.once('exit', () => r());
      c.kill('SIGKILL');
    });
  };
  const killNodes = async (): Promise<void> => {
    await Promise.all([...children.keys()].map(killNode));
  };
  let stopping: Promise<void> | undefined;
  const handle: RedisCluster = {
    seeds: ports.map((p) => `127.0.0.1:${p}`).join(','),
    ports,
    dir,
    kill: killNodes,
    killNode: (i) => killNode(ports[i]!),
    async revive() {
      await Promise.all(ports.filter((p) => !children.has(p)).map(startNode));
      await waitClusterOk(ports, dir);
    },
    stop() {
      stopping ??= (async () => {
        await killNodes();
        await fs.rm(dir, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
  try {
    await Promise.all(ports.map(startNode));
    await Promise.all(ports.map((p) => waitPing(p, dir)));
    await run(cli, [
      '--cluster',
      'create',
      ...ports.map((p) => `127.0.0.1:${p}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    await waitClusterOk(ports, dir);
  } catch (err) {
    await handle.stop();
    throw err;
  }
  log(`Redis Cluster of ${masters} masters ready on ${handle.seeds} (${dir})`);
  return handle;
}

/**
 * Deletes every key under `prefix` on every master of the cluster named by `seeds` (SCAN + UNLINK
 * node by node: a key lives on one master, and a multi-key UNLINK may not cross slots). Returns
 * how many.
 */
export async function deletePrefixedClusterKeys(seeds: string, prefix: string): Promise<number> {
  const nodes = seeds
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      const i = s.lastIndexOf(':');
      return { host: s.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(s.slice(i + 1)) };
    });
  const cluster = new Cluster(nodes, {
    lazyConnect: true,
    clusterRetryStrategy: () => null,
    redisOptions: { connectTimeout: 5000, maxRetriesPerRequest: 1 },
  });
  cluster.on('error', () => {});
  let deleted = 0;
  try {
    await cluster.connect();
    const match = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
    for (const node of cluster.nodes('master')) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', match, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) {
          const p = node.pipeline();
          for (const k of keys) p.unlink(k);
          for (const [err, n] of (await p.exec()) ?? []) {
            if (err) throw err;
            deleted += Number(n);
          }
        }
      } while (cursor !== '0');
    }
  } finally {
    cluster.disconnect();
  }
  return deleted;
}

/** Kills the nodes of runs whose owner process is gone and removes their directories. */
async function sweepStaleRuns(base: string, log: Log): Promise<void> {
  const runs = await fs.readdir(base).catch(() => [] as string[]);
  for (const name of runs) {
    const runDir = path.join(base, name);
    const owner = Number((await fs.readFile(path.join(runDir, 'owner.pid'), 'utf8').catch(() => '')).trim());
    if (owner > 0 && pidAlive(owner)) continue;
    for (const node of await fs.readdir(runDir).catch(() => [] as string[])) {
      const pid = await livePid(path.join(runDir, node, 'redis.pid'), 'redis-server');
      if (pid !== null) process.kill(pid, 'SIGKILL');
    }
    await fs.rm(runDir, { recursive: true, force: true });
    log(`removed the Redis Cluster left by a dead run (${runDir})`);
  }
}

/** `count` ports p (random, 20000–45000) where both p and its bus port p+10000 are free now. */
async function freeClusterPorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  for (let tries = 0; ports.length < count; tries++) {
    if (tries > 500) throw new Error('no free port pair for the Redis Cluster');
    const p = CLUSTER_PORT_LOW + Math.floor(Math.random() * CLUSTER_PORT_SPAN);
    if (ports.includes(p) || ports.includes(p + BUS_OFFSET) || ports.includes(p - BUS_OFFSET)) continue;
    if ((await portFree(p)) && (await portFree(p + BUS_OFFSET))) ports.push(p);
  }
  return ports;
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

async function waitPing(port: number, dir: string): Promise<void> {
  await poll(
    `redis-server on ${port}`,
    dir,
    async () => (await withRedis(`redis://127.0.0.1:${port}`, (c) => c.ping())).ok,
  );
}

/** Every node says cluster_state:ok (all slots served, every node reachable). */
async function waitClusterOk(ports: readonly number[], dir: string): Promise<void> {
  await poll('cluster_state:ok on every node', dir, async () => {
    const states = await Promise.all(
      ports.map((p) => withRedis(`redis://127.0.0.1:${p}`, (c) => c.cluster('INFO') as Promise<string>)),
    );
    return states.every((s) => s.ok && /cluster_state:ok/.test(s.value));
  });
}

async function poll(what: string, dir: string, ok: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; node logs under ${dir}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { encoding: 'utf8', timeout: START_TIMEOUT_MS }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${path.basename(cmd)} ${args.join(' ')} failed: ${err.message}\n${stdout}${stderr}`));
      else resolve(stdout);
    });
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const cluster = await startRedisCluster({ root: path.resolve(import.meta.dirname, '..') });
  process.stdout.write(`REDIS_CLUSTER_NODES=${cluster.seeds}\n`);
  const stop = () => void cluster.stop().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
