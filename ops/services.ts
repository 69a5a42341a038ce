// Makes MySQL (MariaDB) and Redis available on any machine, fresh or not.
//
// For each service, in order:
//   1. $DATABASE_URL / $REDIS_URL, if set and reachable;
//   2. the local defaults mysql://root@127.0.0.1:3306 and redis://127.0.0.1:6379;
//   3. a project-private instance under <root>/.data/ (git-ignored): MariaDB on
//      127.0.0.1:3307, Redis on 127.0.0.1:6380 — reused when already running,
//      started otherwise;
//   4. if the server binaries are missing, the Debian packages are installed
//      with apt-get (directly as root, else via `sudo -n`) before step 3.
//
// Environment:
//   LSS_SERVICES_SKIP_DEFAULTS=1  skip step 2 (used by tests of this script, to
//                                 simulate a machine where nothing runs on the
//                                 default ports).
//
// CLI:
//   node ops/services.ts [ensure]   print DATABASE_URL=… and REDIS_URL=… lines
//   node ops/services.ts stop       stop the project-private instances, if running

import { execFile, spawn } from 'node:child_process';
import { constants as fsConstants, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createConnection, type Connection } from 'mysql2/promise';
import { Redis } from 'ioredis';

export type Log = (msg: string) => void;

export interface ServiceUrls {
  databaseUrl: string;
  redisUrl: string;
}

const DEFAULT_MYSQL_URL = 'mysql://root@127.0.0.1:3306';
const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
const PRIVATE_MYSQL_PORT = 3307;
const PRIVATE_REDIS_PORT = 6380;
const PRIVATE_MYSQL_URL = `mysql://root@127.0.0.1:${PRIVATE_MYSQL_PORT}`;
const PRIVATE_REDIS_URL = `redis://127.0.0.1:${PRIVATE_REDIS_PORT}`;
const PROBE_TIMEOUT_MS = 1500;
const MYSQL_START_TIMEOUT_MS = 60_000;
const REDIS_START_TIMEOUT_MS = 15_000;
const LOCK_TIMEOUT_MS = 120_000;
const DB_NAME_RE = /^[a-z0-9_]{1,64}$/;

const defaultLog: Log = (msg) => {
  process.stderr.write(`[services] ${msg}\n`);
};

// ---------------------------------------------------------------------------
// Public API

export async function ensureServices(opts: { root: string; log?: Log }): Promise<ServiceUrls> {
  const log = opts.log ?? defaultLog;
  const paths = privatePaths(opts.root);
  const skipDefaults = process.env.LSS_SERVICES_SKIP_DEFAULTS === '1';

  let databaseUrl = await findMysql(process.env.DATABASE_URL, skipDefaults, log);
  let redisUrl = await findRedis(process.env.REDIS_URL, skipDefaults, log);
  if (databaseUrl !== null && redisUrl !== null) return { databaseUrl, redisUrl };

  // Something has to come from <root>/.data/. Serialise against concurrent runs.
  await fs.mkdir(paths.dataDir, { recursive: true });
  const unlock = await acquireLock(paths.lockDir, log);
  try {
    await ensureBinaries({ mysql: databaseUrl === null, redis: redisUrl === null }, paths, log);
    databaseUrl ??= await ensurePrivateMysql(paths, log);
    redisUrl ??= await ensurePrivateRedis(paths, log);
  } finally {
    await unlock();
  }
  return { databaseUrl, redisUrl };
}

/**
 * CREATE DATABASE `name` (utf8mb4_bin); returns serverUrl with the database as its path.
 * With `ifNotExists`, an existing database of that name is kept as it is (idempotent).
 */
export async function createDatabase(
  serverUrl: string,
  name: string,
  opts: { ifNotExists?: boolean } = {},
): Promise<string> {
  checkDbName(name);
  const conn = await createConnection({ uri: stripDatabase(serverUrl), connectTimeout: 10_000 });
  try {
    const ifNotExists = opts.ifNotExists ? 'IF NOT EXISTS ' : '';
    await conn.query(`CREATE DATABASE ${ifNotExists}\`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  } finally {
    await closeMysql(conn);
  }
  return withDatabase(serverUrl, name);
}

/**
 * The suite runs many processes that each hold a pool (the scale-out and soak tests start seven
 * roles, vitest runs files in parallel): MariaDB's default of 151 connections ends in "Too many
 * connections" under load. Raise the server's limit when it is lower and we may (a local server
 * as root); otherwise say so and go on, since a managed server sets its own.
 */
export const TEST_MAX_CONNECTIONS = 1000;

export async function ensureConnectionHeadroom(serverUrl: string, log: Log = defaultLog): Promise<void> {
  const conn = await createConnection({ uri: stripDatabase(serverUrl), connectTimeout: 10_000 });
  try {
    const [rows] = await conn.query('SELECT @@max_connections AS n');
    const n = Number((rows as Array<{ n: unknown }>)[0]?.n);
    if (n >= TEST_MAX_CONNECTIONS) return;
    await conn.query(`SET GLOBAL max_connections = ${TEST_MAX_CONNECTIONS}`).then(
      () => log(`MySQL: max_connections raised from ${n} to ${TEST_MAX_CONNECTIONS} for the suite`),
      (e: unknown) =>
        log(`MySQL: max_connections is ${n} and could not be raised (${e instanceof Error ? e.message : String(e)})`),
    );
  } finally {
    await closeMysql(conn);
  }
}

export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  checkDbName(name);
  const conn = await createConnection({ uri: stripDatabase(serverUrl), connectTimeout: 10_000 });
  try {
    await conn.query(`DROP DATABASE IF EXISTS \`${name}\``);
  } finally {
    await closeMysql(conn);
  }
}

/** Stops the project-private MariaDB/Redis under <root>/.data/, if running (pid files). */
export async function stopPrivateServices(opts: { root: string; log?: Log }): Promise<void> {
  const log = opts.log ?? defaultLog;
  const paths = privatePaths(opts.root);
  for (const [label, pidFile, comm] of [
    ['MariaDB', paths.mysqlPidFile, 'mariadbd'],
    ['Redis', paths.redisPidFile, 'redis-server'],
  ] as const) {
    const pid = await livePid(pidFile, comm);
    if (pid === null) {
      log(`private ${label}: not running`);
      continue;
    }
    log(`private ${label}: stopping pid ${pid}`);
    await stopPid(pid);
    await fs.rm(pidFile, { force: true });
  }
}

/** A MariaDB server of one benchmark run, on its own port and datadir, that the run may stop. */
export interface BenchMariadb {
  /** mysql://root@127.0.0.1:<port> (no database). */
  readonly url: string;
  readonly port: number;
  /** The server's pid now (a new one after each start), or null while it is stopped. */
  pid(): number | null;
  /** SIGTERM (a clean shutdown) or SIGKILL (a crash); resolves once the process has exited. */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Starts it again on the same datadir and port; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it and deletes its datadir. */
  remove(): Promise<void>;
}

/**
 * Starts a MariaDB server of its own for a benchmark that injects database faults (stopping the
 * server, killing every connection): never the machine's shared server, nor the project's
 * private one on 3307 that test runs share. Its datadir is `dir` (created and initialised), its
 * port `port`; root connects without a password from 127.0.0.1.
 */
export async function startBenchMariadb(opts: {
  dir: string;
  port: number;
  log?: Log;
  /** The server's max_connections (default the suite's TEST_MAX_CONNECTIONS): a test of the connection budget sets it low. */
  maxConnections?: number;
}): Promise<BenchMariadb> {
  const log = opts.log ?? defaultLog;
  const mariadbd = await which('mariadbd');
  const installDb = await which('mariadb-install-db');
  if (!mariadbd || !installDb) throw new Error(missingMessage(['mariadb-server']));
  const dir = path.resolve(opts.dir);
  const dataDir = path.join(dir, 'data');
  const logFile = path.join(dir, 'mariadb.log');
  let socket = path.join(dir, 'mysql.sock');
  if (Buffer.byteLength(socket) > 100) {
    socket = path.join(
      os.tmpdir(),
      `lss-bench-mysql-${createHash('sha256').update(dir).digest('hex').slice(0, 12)}.sock`,
    );
  }
  const user = currentUser();
  await fs.mkdir(dir, { recursive: true });
  await initMariadbDatadir(installDb, dataDir, path.join(dir, 'install.log'), user, log);
  const url = `mysql://root@127.0.0.1:${opts.port}`;
  const args = mariadbServerArgs({ dataDir, port: opts.port, socket, pidFile: path.join(dir, 'mysql.pid'), user }).map(
    (a) => (opts.maxConnections && a.startsWith('--max-connections=') ? `--max-connections=${opts.maxConnections}` : a),
  );
  let child: ReturnType<typeof spawn> | null = null;
  let exited: Promise<void> = Promise.resolve();

  const ours = async (): Promise<boolean> => {
    const r = await withMysql(url, async (c) => {
      const [rows] = await c.query('SELECT @@datadir AS d');
      return String((rows as Array<{ d: unknown }>)[0]?.d ?? '');
    });
    return r.ok && (await samePath(r.value, dataDir));
  };
  const start = async (): Promise<void> => {
    const out = await fs.open(logFile, 'a');
    let gone: string | null = null;
    try {
      await out.write(`\n--- ${new Date().toISOString()} ${mariadbd} ${args.join(' ')}\n`);
      const c = spawn(mariadbd, args, { stdio: ['ignore', out.fd, out.fd] });
      child = c;
      exited = new Promise((resolve) => c.once('exit', () => resolve()));
      c.on('error', (e) => (gone = `failed to spawn: ${e.message}`));
      c.on('exit', (code, sig) => {
        gone = `exited with ${sig ?? `code ${code}`}`;
        if (child === c) child = null;
      });
      const deadline = Date.now() + MYSQL_START_TIMEOUT_MS;
      while (!(await ours())) {
        if (gone !== null) throw new Error(`bench mariadbd ${gone}; see ${logFile}\n${await tailFile(logFile)}`);
        if (Date.now() > deadline)
          throw new Error(`bench mariadbd did not accept connections on ${opts.port}; see ${logFile}`);
        await sleep(100);
      }
    } finally {
      await out.close();
    }
  };
  const stop = async (signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> => {
    const c = child;
    if (!c) return;
    c.kill(signal);
    await exited;
  };
  log(`MySQL: starting a bench MariaDB on 127.0.0.1:${opts.port} (${dir})`);
  await start();
  return {
    url,
    port: opts.port,
    pid: () => (child as ReturnType<typeof spawn> | null)?.pid ?? null,
    stop,
    start,
    async remove() {
      await stop('SIGTERM').catch(() => {});
      await fs.rm(dir, { recursive: true, force: true });
      await fs.rm(socket, { force: true });
    },
  };
}

// ---------------------------------------------------------------------------
// Finding a running server

async function findMysql(envUrl: string | undefined, skipDefaults: boolean, log: Log): Promise<string | null> {
  if (envUrl) {
    const url = stripDatabase(envUrl);
    const err = await probeMysql(url);
    if (err === null) {
      log(`MySQL: using DATABASE_URL (${redact(url)})`);
      return url;
    }
    log(`MySQL: DATABASE_URL (${redact(url)}) not reachable: ${err}`);
  }
  if (skipDefaults) {
    log('MySQL: LSS_SERVICES_SKIP_DEFAULTS=1, not trying the local default');
  } else if (!envUrl || stripDatabase(envUrl) !== DEFAULT_MYSQL_URL) {
    const err = await probeMysql(DEFAULT_MYSQL_URL);
    if (err === null) {
      log(`MySQL: using local default ${DEFAULT_MYSQL_URL}`);
      return DEFAULT_MYSQL_URL;
    }
    log(`MySQL: local default ${DEFAULT_MYSQL_URL} not reachable: ${err}`);
  }
  return null;
}

async function findRedis(envUrl: string | undefined, skipDefaults: boolean, log: Log): Promise<string | null> {
  if (envUrl) {
    const err = await probeRedis(envUrl);
    if (err === null) {
      log(`Redis: using REDIS_URL (${redact(envUrl)})`);
      return envUrl;
    }
    log(`Redis: REDIS_URL (${redact(envUrl)}) not reachable: ${err}`);
  }
  if (skipDefaults) {
    log('Redis: LSS_SERVICES_SKIP_DEFAULTS=1, not trying the local default');
  } else if (envUrl !== DEFAULT_REDIS_URL) {
    const err = await probeRedis(DEFAULT_REDIS_URL);
    if (err === null) {
      log(`Redis: using local default ${DEFAULT_REDIS_URL}`);
      return DEFAULT_REDIS_URL;
    }
    log(`Redis: local default ${DEFAULT_REDIS_URL} not reachable: ${err}`);
  }
  return null;
}

/** Connects to url (as given: no database selected by callers) and runs `query`; never throws. */
async function withMysql<T>(
  url: string,
  query: (c: Connection) => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; error: string }> {
  let conn: Connection | undefined;
  try {
    const connecting = createConnection({ uri: url, connectTimeout: PROBE_TIMEOUT_MS });
    conn = await withTimeout(connecting, PROBE_TIMEOUT_MS + 1000, 'connect timeout', (c) => c.destroy());
    const value = await withTimeout(query(conn), 5000, 'query timeout');
    return { ok: true, value };
  } catch (e) {
    return { ok: false, error: errMsg(e) };
  } finally {
    if (conn) await closeMysql(conn);
  }
}

async function closeMysql(conn: Connection): Promise<void> {
  await withTimeout(conn.end(), 2000, 'close timeout').catch(() => conn.destroy());
}

async function probeMysql(url: string): Promise<string | null> {
  const r = await withMysql(url, (c) => c.query('SELECT 1'));
  return r.ok ? null : r.error;
}

export async function withRedis<T>(
  url: string,
  fn: (r: Redis) => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; error: string }> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: PROBE_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  // Connection errors are reported here; connect() then only rejects with "Connection is closed."
  let connectError: unknown = null;
  client.on('error', (e) => (connectError ??= e));
  try {
    await withTimeout(client.connect(), PROBE_TIMEOUT_MS + 1000, 'connect timeout');
    const value = await withTimeout(fn(client), 5000, 'command timeout');
    return { ok: true, value };
  } catch (e) {
    return { ok: false, error: errMsg(connectError ?? e) };
  } finally {
    client.disconnect();
  }
}

async function probeRedis(url: string): Promise<string | null> {
  const r = await withRedis(url, (c) => c.ping());
  return r.ok ? null : r.error;
}

// ---------------------------------------------------------------------------
// Project-private instances

interface PrivatePaths {
  dataDir: string;
  lockDir: string;
  mysqlDataDir: string;
  mysqlSocket: string;
  mysqlPidFile: string;
  mysqlLog: string;
  mysqlInstallLog: string;
  redisDir: string;
  redisPidFile: string;
  redisLog: string;
  aptLog: string;
}

function privatePaths(root: string): PrivatePaths {
  const dataDir = path.resolve(root, '.data');
  let mysqlSocket = path.join(dataDir, 'mysql.sock');
  // A unix socket path must fit in sun_path (108 bytes on Linux).
  if (Buffer.byteLength(mysqlSocket) > 100) {
    const h = createHash('sha256').update(dataDir).digest('hex').slice(0, 12);
    mysqlSocket = path.join(os.tmpdir(), `lss-mysql-${h}.sock`);
  }
  return {
    dataDir,
    lockDir: path.join(dataDir, 'services.lock'),
    mysqlDataDir: path.join(dataDir, 'mysql'),
    mysqlSocket,
    mysqlPidFile: path.join(dataDir, 'mysql.pid'),
    mysqlLog: path.join(dataDir, 'mysql.log'),
    mysqlInstallLog: path.join(dataDir, 'mysql-install.log'),
    redisDir: path.join(dataDir, 'redis'),
    redisPidFile: path.join(dataDir, 'redis.pid'),
    redisLog: path.join(dataDir, 'redis.log'),
    aptLog: path.join(dataDir, 'apt.log'),
  };
}

/** Whether the server on the private port is ours (same datadir), absent, or someone else's. */
async function privateMysqlState(p: PrivatePaths): Promise<'ours' | 'none' | { foreign: string }> {
  const r = await withMysql(PRIVATE_MYSQL_URL, async (c) => {
    const [rows] = await c.query('SELECT @@datadir AS d');
    return String((rows as Array<{ d: unknown }>)[0]?.d ?? '');
  });
  if (!r.ok) return 'none';
  return (await samePath(r.value, p.mysqlDataDir)) ? 'ours' : { foreign: `datadir ${r.value}` };
}

async function ensurePrivateMysql(p: PrivatePaths, log: Log): Promise<string> {
  const state = await privateMysqlState(p);
  if (state === 'ours') {
    log(`MySQL: reusing private MariaDB on ${PRIVATE_MYSQL_URL} (${p.mysqlDataDir})`);
    return PRIVATE_MYSQL_URL;
  }
  if (state !== 'none') {
    throw new Error(
      `port ${PRIVATE_MYSQL_PORT} is taken by another MySQL/MariaDB server (${state.foreign}); ` +
        `stop it, or point DATABASE_URL at a server that accepts root without a password`,
    );
  }

  // A previous run may have started it and it is still booting (or recovering).
  const running = await livePid(p.mysqlPidFile, 'mariadbd');
  if (running !== null) {
    log(`MySQL: private mariadbd (pid ${running}) is running but not ready yet; waiting`);
    const w = await waitMysqlReady(p, null, running);
    if (w.ok) {
      log(`MySQL: reusing private MariaDB on ${PRIVATE_MYSQL_URL}`);
      return PRIVATE_MYSQL_URL;
    }
    if (!w.exited) throw new Error(w.message);
    log(`MySQL: that mariadbd exited; starting a new one`);
  }

  const mariadbd = await which('mariadbd');
  const installDb = await which('mariadb-install-db');
  if (!mariadbd || !installDb) throw new Error(missingMessage(['mariadb-server']));
  const user = currentUser();

  await initMariadbDatadir(installDb, p.mysqlDataDir, p.mysqlInstallLog, user, log);

  const args = mariadbServerArgs({
    dataDir: p.mysqlDataDir,
    port: PRIVATE_MYSQL_PORT,
    socket: p.mysqlSocket,
    pidFile: p.mysqlPidFile,
    user,
  });
  log(`MySQL: starting private MariaDB on 127.0.0.1:${PRIVATE_MYSQL_PORT} (log: ${p.mysqlLog})`);
  const out = await fs.open(p.mysqlLog, 'a');
  let exited: string | null = null;
  try {
    await out.write(`\n--- ${new Date().toISOString()} ${mariadbd} ${args.join(' ')}\n`);
    const child = spawn(mariadbd, args, { detached: true, stdio: ['ignore', out.fd, out.fd] });
    child.on('error', (e) => (exited = `failed to spawn: ${e.message}`));
    child.on('exit', (code, sig) => (exited = `exited with ${sig ?? `code ${code}`}`));
    child.unref();
    const w = await waitMysqlReady(p, () => exited, child.pid ?? null);
    if (!w.ok) throw new Error(w.message);
  } finally {
    await out.close();
  }
  log(`MySQL: private MariaDB ready on ${PRIVATE_MYSQL_URL}`);
  return PRIVATE_MYSQL_URL;
}

/** Initialises an empty MariaDB datadir (system tables, root without a password); keeps a populated one. */
async function initMariadbDatadir(
  installDb: string,
  dataDir: string,
  installLog: string,
  user: string,
  log: Log,
): Promise<void> {
  await fs.mkdir(dataDir, { recursive: true, mode: 0o700 });
  if ((await fs.readdir(dataDir)).length === 0) {
    log(`MySQL: initialising ${dataDir} (log: ${installLog})`);
    const help = await run(installDb, ['--help']).then(
      (r) => r.stdout + r.stderr,
      () => '',
    );
    const args = ['--no-defaults', `--datadir=${dataDir}`];
    // --user is documented as root-only for mariadb-install-db (it chowns files);
    // as any other user, files are owned by the current user anyway.
    if (process.getuid?.() === 0) args.push(`--user=${user}`);
    if (help === '' || help.includes('--auth-root-authentication-method')) {
      args.push('--auth-root-authentication-method=normal');
    }
    if (help.includes('--skip-test-db')) args.push('--skip-test-db');
    const res = await run(installDb, args, { maxBuffer: 64 * 1024 * 1024 }).catch((e: RunError) => e);
    await fs.writeFile(installLog, `$ ${installDb} ${args.join(' ')}\n${res.stdout}${res.stderr}`);
    if (res instanceof Error) {
      // Leave no half-initialised datadir behind: the next run starts from scratch.
      await fs.rm(dataDir, { recursive: true, force: true });
      throw new Error(
        `mariadb-install-db failed (${res.message}); see ${installLog}\n${tail(res.stdout + res.stderr)}`,
      );
    }
  } else if (!(await exists(path.join(dataDir, 'mysql')))) {
    throw new Error(
      `${dataDir} is not empty but holds no MariaDB system tables; ` + `remove it (rm -rf ${dataDir}) and run again`,
    );
  }
}

function mariadbServerArgs(o: {
  dataDir: string;
  port: number;
  socket: string;
  pidFile: string;
  user: string;
}): string[] {
  return [
    '--no-defaults',
    `--datadir=${o.dataDir}`,
    `--port=${o.port}`,
    '--bind-address=127.0.0.1',
    `--socket=${o.socket}`,
    `--pid-file=${o.pidFile}`,
    `--user=${o.user}`,
    // No reverse DNS for client addresses: root@127.0.0.1 is matched directly.
    '--skip-name-resolve',
    // The suite runs many service processes at once (see ensureConnectionHeadroom).
    `--max-connections=${TEST_MAX_CONNECTIONS}`,
  ];
}

type WaitResult = { ok: true } | { ok: false; exited: boolean; message: string };

async function waitMysqlReady(
  p: PrivatePaths,
  exitedReason: (() => string | null) | null,
  pid: number | null,
): Promise<WaitResult> {
  const deadline = Date.now() + MYSQL_START_TIMEOUT_MS;
  for (;;) {
    const state = await privateMysqlState(p);
    if (state === 'ours') return { ok: true };
    if (state !== 'none') {
      return {
        ok: false,
        exited: false,
        message: `port ${PRIVATE_MYSQL_PORT} is taken by another MySQL/MariaDB server (${state.foreign})`,
      };
    }
    const reason = exitedReason?.() ?? (pid !== null && !pidAlive(pid) ? 'exited' : null);
    if (reason !== null) {
      const message = `private mariadbd ${reason} before accepting connections; see ${p.mysqlLog}\n${await tailFile(p.mysqlLog)}`;
      return { ok: false, exited: true, message };
    }
    if (Date.now() > deadline) {
      const message =
        `private mariadbd${pid !== null ? ` (pid ${pid})` : ''} did not accept connections on ` +
        `127.0.0.1:${PRIVATE_MYSQL_PORT} within ${MYSQL_START_TIMEOUT_MS / 1000}s; see ${p.mysqlLog}\n${await tailFile(p.mysqlLog)}`;
      return { ok: false, exited: false, message };
    }
    await sleep(300);
  }
}

async function privateRedisState(p: PrivatePaths): Promise<'ours' | 'none' | { foreign: string }> {
  const r = await withRedis(PRIVATE_REDIS_URL, (c) => c.config('GET', 'dir') as Promise<unknown>);
  if (!r.ok) {
    // Something answers but refuses CONFIG (or auth): not ours.
    return /ECONNREFUSED|timeout|ECONNRESET|closed/i.test(r.error) ? 'none' : { foreign: r.error };
  }
  const dir = Array.isArray(r.value) ? String(r.value[1] ?? '') : '';
  return (await samePath(dir, p.redisDir)) ? 'ours' : { foreign: `dir ${dir}` };
}

async function ensurePrivateRedis(p: PrivatePaths, log: Log): Promise<string> {
  const state = await privateRedisState(p);
  if (state === 'ours') {
    log(`Redis: reusing private Redis on ${PRIVATE_REDIS_URL} (${p.redisDir})`);
    return PRIVATE_REDIS_URL;
  }
  if (state !== 'none') {
    throw new Error(
      `port ${PRIVATE_REDIS_PORT} is taken by another Redis server (${state.foreign}); stop it, or set REDIS_URL`,
    );
  }
  const redisServer = await which('redis-server');
  if (!redisServer) throw new Error(missingMessage(['redis-server']));

  await fs.mkdir(p.redisDir, { recursive: true });
  const args = [
    '--port',
    String(PRIVATE_REDIS_PORT),
    '--bind',
    '127.0.0.1',
    '--daemonize',
    'yes',
    '--dir',
    p.redisDir,
    '--save',
    '',
    '--appendonly',
    'no',
    '--logfile',
    p.redisLog,
    '--pidfile',
    p.redisPidFile,
  ];
  log(`Redis: starting private Redis on 127.0.0.1:${PRIVATE_REDIS_PORT} (log: ${p.redisLog})`);
  const res = await run(redisServer, args).catch((e: RunError) => e);
  if (res instanceof Error) {
    throw new Error(
      `redis-server failed to start (${res.message}); see ${p.redisLog}\n${tail(res.stdout + res.stderr)}\n${await tailFile(p.redisLog)}`,
    );
  }
  const deadline = Date.now() + REDIS_START_TIMEOUT_MS;
  for (;;) {
    const s = await privateRedisState(p);
    if (s === 'ours') break;
    if (s !== 'none') throw new Error(`port ${PRIVATE_REDIS_PORT} is taken by another Redis server (${s.foreign})`);
    if (Date.now() > deadline) {
      throw new Error(
        `private redis-server did not answer on 127.0.0.1:${PRIVATE_REDIS_PORT} within ${REDIS_START_TIMEOUT_MS / 1000}s; see ${p.redisLog}\n${await tailFile(p.redisLog)}`,
      );
    }
    await sleep(200);
  }
  log(`Redis: private Redis ready on ${PRIVATE_REDIS_URL}`);
  return PRIVATE_REDIS_URL;
}

// ---------------------------------------------------------------------------
// Installing missing binaries (Debian)

let aptUpdated = false;

async function ensureBinaries(need: { mysql: boolean; redis: boolean }, p: PrivatePaths, log: Log): Promise<void> {
  const missing: string[] = [];
  if (need.mysql && (!(await which('mariadbd')) || !(await which('mariadb-install-db'))))
    missing.push('mariadb-server');
  if (need.redis && !(await which('redis-server'))) missing.push('redis-server');
  if (missing.length === 0) return;

  const aptGet = await which('apt-get');
  if (!aptGet) throw new Error(missingMessage(missing, 'apt-get not found'));
  let prefix: string[] = [];
  if (process.getuid?.() !== 0) {
    const sudo = await which('sudo');
    if (!sudo) throw new Error(missingMessage(missing, 'not root and sudo not found'));
    prefix = [sudo, '-n'];
  }
  // Through sudo the environment may be reset, so set it with env(1) as well.
  const envCmd = prefix.length > 0 ? ['env', 'DEBIAN_FRONTEND=noninteractive'] : [];
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const exec = async (args: string[]): Promise<void> => {
    const argv = [...prefix, ...envCmd, aptGet, ...args];
    const [cmd, ...rest] = argv as [string, ...string[]];
    log(`installing: ${argv.join(' ')}`);
    const res = await run(cmd, rest, { env, maxBuffer: 256 * 1024 * 1024 }).catch((e: RunError) => e);
    await fs.appendFile(p.aptLog, `$ ${argv.join(' ')}\n${res.stdout}${res.stderr}\n`);
    if (res instanceof Error) {
      throw new Error(
        missingMessage(
          missing,
          `\`${argv.join(' ')}\` failed: ${res.message}; see ${p.aptLog}\n${tail(res.stdout + res.stderr)}`,
        ),
      );
    }
  };
  log(`missing ${missing.join(', ')}; installing with apt-get (this can take a minute; log: ${p.aptLog})`);
  if (!aptUpdated) {
    await exec(['update']);
    aptUpdated = true;
  }
  await exec(['install', '-y', ...missing]);

  const still: string[] = [];
  if (need.mysql && (!(await which('mariadbd')) || !(await which('mariadb-install-db')))) still.push('mariadb-server');
  if (need.redis && !(await which('redis-server'))) still.push('redis-server');
  if (still.length > 0) throw new Error(missingMessage(still, 'binaries still not found after apt-get install'));
}

function missingMessage(pkgs: string[], why?: string): string {
  return (
    `MariaDB/Redis server binaries are missing (mariadbd, mariadb-install-db, redis-server)` +
    (why ? `: ${why}` : '') +
    `.\nInstall them, e.g.: sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y ${pkgs.join(' ')}` +
    `\nor point DATABASE_URL / REDIS_URL at running servers.`
  );
}

// ---------------------------------------------------------------------------
// Helpers

/** Finds an executable in PATH, then /usr/sbin and /usr/bin. */
export async function which(cmd: string): Promise<string | null> {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean), '/usr/sbin', '/usr/bin'];
  for (const dir of dirs) {
    const file = path.join(dir, cmd);
    try {
      await fs.access(file, fsConstants.X_OK);
      if ((await fs.stat(file)).isFile()) return file;
    } catch {
      // not here
    }
  }
  return null;
}

type RunError = Error & { stdout: string; stderr: string };

function run(
  cmd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; maxBuffer?: number } = {},
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      { env: opts.env ?? process.env, maxBuffer: opts.maxBuffer ?? 16 * 1024 * 1024, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (err) reject(Object.assign(err, { stdout: String(stdout ?? ''), stderr: String(stderr ?? '') }) as RunError);
        else resolve({ stdout, stderr });
      },
    );
  });
}

function currentUser(): string {
  try {
    return os.userInfo().username;
  } catch {
    return process.env.USER ?? String(process.getuid?.() ?? 'root');
  }
}

async function acquireLock(lockDir: string, log: Log): Promise<() => Promise<void>> {
  const deadline = Date.now() + LOCK_TIMEOUT_MS;
  let announced = false;
  for (;;) {
    try {
      await fs.mkdir(lockDir);
      await fs.writeFile(path.join(lockDir, 'pid'), String(process.pid));
      return () => fs.rm(lockDir, { recursive: true, force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    // Stale lock: holder gone (pid file) or older than the timeout.
    const holder = Number(await fs.readFile(path.join(lockDir, 'pid'), 'utf8').catch(() => ''));
    const age = await fs.stat(lockDir).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    );
    if ((holder > 0 && !pidAlive(holder)) || age > LOCK_TIMEOUT_MS) {
      await fs.rm(lockDir, { recursive: true, force: true });
      continue;
    }
    if (!announced) {
      log(`waiting for another process setting up services (${lockDir})`);
      announced = true;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for lock ${lockDir}; remove it if no other run is active`);
    await sleep(250);
  }
}

/** Alive = signalable and, where /proc tells, not a zombie (an unreaped, already dead process). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 3 (state) follows the parenthesised command name, which may itself contain ')'.
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc: trust kill(0)
  }
}

/** The pid in pidFile if that process is alive and (where /proc tells) is `comm`. */
export async function livePid(pidFile: string, comm: string): Promise<number | null> {
  const pid = Number((await fs.readFile(pidFile, 'utf8').catch(() => '')).trim());
  if (!Number.isInteger(pid) || pid <= 0 || !pidAlive(pid)) return null;
  const name = await fs.readFile(`/proc/${pid}/comm`, 'utf8').catch(() => null);
  if (name !== null && !name.trim().startsWith(comm.slice(0, 15))) return null;
  return pid;
}

async function stopPid(pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + 30_000;
  while (pidAlive(pid)) {
    if (Date.now() > deadline) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
      await sleep(200);
      return;
    }
    await sleep(100);
  }
}

async function samePath(a: string, b: string): Promise<boolean> {
  if (!a) return false;
  const real = (x: string) => fs.realpath(x).catch(() => path.resolve(x));
  return (await real(a)) === (await real(b));
}

async function exists(p: string): Promise<boolean> {
  return fs.access(p).then(
    () => true,
    () => false,
  );
}

function checkDbName(name: string): void {
  if (!DB_NAME_RE.test(name))
    throw new Error(`invalid database name ${JSON.stringify(name)} (must match ${DB_NAME_RE})`);
}

/** The server URL without a database path (query kept). */
function stripDatabase(url: string): string {
  const u = new URL(url);
  u.pathname = '';
  return u.toString().replace(/\/(?=\?|$)/, '');
}

function withDatabase(serverUrl: string, name: string): string {
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<invalid URL>';
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string, onLate?: (v: T) => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  return Promise.race([
    p.then((v) => {
      if (timedOut) onLate?.(v);
      return v;
    }),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        timedOut = true;
        reject(new Error(what));
      }, ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function errMsg(e: unknown): string {
  if (e instanceof Error) {
    const code = (e as NodeJS.ErrnoException).code;
    const msg = e.message || code || e.name;
    return code && !msg.includes(code) ? `${code}: ${msg}` : msg;
  }
  return String(e);
}

function tail(text: string, lines = 20): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

async function tailFile(file: string, lines = 20): Promise<string> {
  return tail(await fs.readFile(file, 'utf8').catch(() => ''), lines);
}

// ---------------------------------------------------------------------------
// CLI

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(import.meta.dirname, '..');
  const cmd = process.argv[2] ?? 'ensure';
  try {
    if (cmd === 'ensure') {
      const urls = await ensureServices({ root });
      process.stdout.write(`DATABASE_URL=${urls.databaseUrl}\nREDIS_URL=${urls.redisUrl}\n`);
    } else if (cmd === 'stop') {
      await stopPrivateServices({ root });
    } else {
      process.stderr.write('usage: node ops/services.ts [ensure|stop]\n');
      process.exitCode = 2;
    }
  } catch (e) {
    process.stderr.write(`[services] ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  }
}

// ---------------------------------------------------------------------------
// Scratch resources of a test or benchmark run

/** yyyymmddhhmmss (UTC): the time part of scratch database names and key prefixes. */
export function runTimestamp(d: Date = new Date()): string {
  return d.toISOString().replace(/[-:T]/g, '').slice(0, 14);
}

/** Deletes every key under `prefix` (SCAN + UNLINK in batches); returns how many. */
export async function deletePrefixedKeys(redisUrl: string, prefix: string): Promise<number> {
  const { Redis } = await import('ioredis');
  const client = new Redis(redisUrl, {
    lazyConnect: true,
    connectTimeout: 5000,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  });
  client.on('error', () => {});
  let deleted = 0;
  try {
    await client.connect();
    const match = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', match, 'COUNT', 1000);
      cursor = next;
      for (let i = 0; i < keys.length; i += 500) deleted += await client.unlink(...keys.slice(i, i + 500));
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
  return deleted;
}
