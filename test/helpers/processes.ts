// Real processes for integration tests: the project's entry points (`node workers/lane.ts domain`,
// `node workers/orchestrator.ts`, …) and a private redis-server, each tracked so a suite can kill
// every child it started whatever happened; scratch databases for suites whose orchestrator
// process must not sweep other test files' jobs; bounded polling.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { migrate } from '../../src/db/migrations.ts';
import { createDatabase, dropDatabase, which } from '../../ops/services.ts';
import { startRedisCluster } from '../../ops/redis-cluster.ts';
import { onCluster, redisEnv } from './redis.ts';

export const root = path.resolve(import.meta.dirname, '../..');

export interface Proc {
  readonly name: string;
  readonly child: ChildProcess;
  /** stdout and stderr so far, interleaved. */
  output(): string;
  /** Resolves on exit with the code, or 128 + 9/15… style when killed by a signal (as a shell reports it). */
  readonly exited: Promise<number>;
  running(): boolean;
  /** Sends the signal if the process still runs; resolves on its exit (SIGKILL after `graceMs`). */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<number>;
}

const SIGNALS: Record<string, number> = { SIGKILL: 9, SIGTERM: 15, SIGINT: 2 };

/** Children started through a ProcessGroup; kill them all with killAll(). */
export class ProcessGroup {
  readonly #procs: Proc[] = [];

  /** `node <args…>` on this very node binary, in the project root, with process.env + `env`. */
  node(name: string, args: string[], env: Record<string, string | undefined>, opts: { cwd?: string } = {}): Proc {
    return this.spawn(name, process.execPath, args, { ...process.env, ...env }, opts);
  }

  /** `opts.cwd`: another checkout to run from (a benchmark comparing with older code). */
  spawn(
    name: string,
    command: string,
    args: string[],
    env: NodeJS.ProcessEnv = process.env,
    opts: { cwd?: string } = {},
  ): Proc {
    const child = spawn(command, args, { cwd: opts.cwd ?? root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const append = (d: string) => {
      out += d;
      if (out.length > 200_000) out = out.slice(-100_000); // bounded: only the tail matters in a failure message
    };
    child.stdout!.setEncoding('utf8').on('data', append);
    child.stderr!.setEncoding('utf8').on('data', append);
    const exited = new Promise<number>((resolve) => {
      child.once('error', (err) => {
        append(`\n[spawn error] ${err.message}\n`);
        resolve(127);
      });
      child.once('exit', (code, signal) => resolve(code ?? 128 + (signal ? (SIGNALS[signal] ?? 1) : 1)));
    });
    const running = () => child.exitCode === null && child.signalCode === null;
    const proc: Proc = {
      name,
      child,
      output: () => out,
      exited,
      running,
      async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 5000) {
        if (running()) child.kill(signal);
        if (signal !== 'SIGKILL') {
          const timer = setTimeout(() => {
            if (running()) child.kill('SIGKILL');
          }, graceMs);
          try {
            return await exited;
          } finally {
            clearTimeout(timer);
          }
        }
        return exited;
      },
    };
    this.#procs.push(proc);
    return proc;
  }

  /** SIGKILL every child still running and wait (bounded) for all of them. Never throws. */
  async killAll(): Promise<void> {
    for (const p of this.#procs) {
      if (p.running()) {
        try {
          p.child.kill('SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    await Promise.race([Promise.allSettled(this.#procs.map((p) => p.exited)), sleep(5000)]);
  }

  /** The tail of every child's output, for a failure message. */
  report(chars = 3000): string {
    return this.#procs
      .map(
        (p) =>
          `--- ${p.name} (pid ${p.child.pid}, ${p.running() ? 'running' : `exited ${p.child.exitCode ?? p.child.signalCode}`}) ---\n${p.output().slice(-chars)}`,
      )
      .join('\n');
  }
}

/**
 * Ports handed to child processes come from below the kernel's ephemeral range. A port that
 * listen(0) returned is in that range, and between closing it and the child's bind any outgoing
 * connection of the dozen processes a test runs (MySQL, Redis, the lab) or another file's listen(0)
 * may take it: CI once saw a web process of the scale-out test exit with EADDRINUSE that way.
 * Below the range only another freePort() could pick the same port, so each vitest worker (and
 * each other process) walks its own slice of it. The floor leaves 10000–24999 to the Redis
 * Clusters' data and bus ports (ops/redis-cluster.ts), which a killed node keeps until revive().
 */
const PORT_FLOOR = 25_000;
const PORT_SLICES = 16;
let portCursor = -1;

function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > PORT_FLOOR + PORT_SLICES * 64) return low;
  } catch {
    // not Linux: the IANA dynamic range starts at 49152
  }
  return 49_152;
}

/** Whether `port` can be bound on every address, as the web role binds it. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, () => srv.close(() => resolve(true)));
  });
}

/** A port free on every address, outside the kernel's ephemeral range, for a child to listen on. */
export async function freePort(): Promise<number> {
  const size = Math.floor((ephemeralLow() - PORT_FLOOR) / PORT_SLICES);
  const worker = Number(process.env.VITEST_POOL_ID);
  const slice = Number.isInteger(worker) && worker > 0 ? worker % PORT_SLICES : process.pid % PORT_SLICES;
  if (portCursor < 0) portCursor = Math.floor(Math.random() * size);
  for (let tries = 0; tries < size; tries++) {
    portCursor = (portCursor + 1) % size;
    const port = PORT_FLOOR + slice * size + portCursor;
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port in ${PORT_FLOOR + slice * size}..${PORT_FLOOR + (slice + 1) * size - 1}`);
}

/** Polls `fn` every `everyMs` until it returns something truthy; throws after `timeoutMs`. */
export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false>,
  timeoutMs = 20_000,
  everyMs = 100,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > end) {
      const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await sleep(everyMs);
  }
}

export interface ScratchDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * A migrated database of its own beside the run's (`<run db>_<suffix>_<hex>`) on the same server:
 * an orchestrator process sweeps every job of its database, so it must not see other files' jobs.
 */
export async function createScratchDatabase(suffix: string): Promise<ScratchDatabase> {
  if (!process.env.DATABASE_URL) throw new Error('needs DATABASE_URL: run with `npm test`');
  const base = new URL(process.env.DATABASE_URL);
  const name = `${base.pathname.slice(1)}_${suffix}_${randomBytes(2).toString('hex')}`.slice(0, 64);
  base.pathname = '/';
  const server = base.toString();
  const url = await createDatabase(server, name);
  try {
    await migrate(url);
  } catch (err) {
    await dropDatabase(server, name).catch(() => {});
    throw err;
  }
  return { url, drop: () => dropDatabase(server, name) };
}

export interface RedisServerProc {
  port: number;
  url: string;
  proc: Proc;
}

/**
 * A private, empty, non-persistent redis-server on `port` (a child of this process, never the
 * shared one), ready when this resolves.
 */
export async function startRedisServer(group: ProcessGroup, port: number): Promise<RedisServerProc> {
  const bin = await which('redis-server');
  if (!bin) throw new Error('redis-server not found (ops/services.ts installs it for `npm test`)');
  const proc = group.spawn(`redis-server:${port}`, bin, [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--daemonize',
    'no',
    '--protected-mode',
    'no',
    '--dir',
    os.tmpdir(),
  ]);
  await until(
    `redis-server on ${port}`,
    async () => {
      if (!proc.running()) throw new Error(`redis-server exited: ${proc.output()}`);
      return pingRedis(port);
    },
    10_000,
    50,
  );
  return { port, url: `redis://127.0.0.1:${port}`, proc };
}

/** A raw PING over TCP (no client library state to clean up). */
export function pingRedis(port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(timeoutMs, () => done(false));
    s.once('error', () => done(false));
    s.once('connect', () => s.write('PING\r\n'));
    s.once('data', (d) => done(d.toString().startsWith('+PONG')));
  });
}

/**
 * A Redis of a suite's own that it may kill and bring back empty, in the form of the run's Redis:
 * a private redis-server in the single-Redis pass, a private 3-master cluster in the cluster pass
 * (killed whole; revived on the same ports with its nodes.conf, so the same slots and no data).
 */
export interface PrivateRedis {
  /** REDIS_URL or REDIS_CLUSTER_NODES for the processes that must use it. */
  env: Record<string, string | undefined>;
  kill(): Promise<void>;
  /** One node lost: the only one, or one master of the cluster (its shard). */
  killOne(): Promise<void>;
  /** Starts what was killed again, empty. */
  revive(): Promise<void>;
  /** No node answers PING. */
  down(): Promise<boolean>;
  stop(): Promise<void>;
}

export async function startPrivateRedis(group: ProcessGroup): Promise<PrivateRedis> {
  if (onCluster()) {
    const cluster = await startRedisCluster({ root, log: () => {} });
    return {
      env: redisEnv({ seeds: cluster.seeds }),
      kill: () => cluster.kill(),
      killOne: () => cluster.killNode(0),
      revive: () => cluster.revive(),
      down: async () => (await Promise.all(cluster.ports.map((p) => pingRedis(p)))).every((up) => !up),
      stop: () => cluster.stop(),
    };
  }
  const port = await freePort();
  let server = await startRedisServer(group, port);
  return {
    env: redisEnv({ url: server.url }),
    kill: async () => void (await server.proc.stop('SIGKILL')),
    killOne: async () => void (await server.proc.stop('SIGKILL')),
    revive: async () => {
      server = await startRedisServer(group, port);
    },
    down: async () => !(await pingRedis(port)),
    stop: async () => void (await server.proc.stop('SIGKILL')),
  };
}
