// `npm run up` = `node ops/up.ts [--lab] [--cluster]`: the whole service on one machine, from nothing.
//
//   1. makes MySQL and Redis available (ops/services.ts);
//   2. creates the database (the one named in $DATABASE_URL, else `lss`) if it is missing;
//   3. takes KEY_PEPPER / CURSOR_SECRET / WEBHOOK_SECRET_KEY from the environment, else from .data/secrets.env, which is
//      generated once (mode 0600, git-ignored) so keys stay valid from one run to the next;
//   4. validates the resulting configuration (src/config/config.ts) and runs the Procfile `release` role
//      (migrations), waiting for it;
//   5. creates a demo workspace (responsible use accepted, active work permitted, approved scope
//      lab.test) and a demo key, every run;
//   6. starts every other Procfile role whose entry file exists (a role whose script is not
//      written yet is skipped, and said so), each line of output prefixed with the role's name;
//      METRICS_PORT, when set, goes to `web` only, since every role would otherwise bind it;
//   7. prints the demo key once, in a banner with a ready-to-paste curl and `lss` commands to try
//      (with --lab, commands against the lab zones), when /livez answers;
//   8. forwards SIGINT/SIGTERM to the roles and exits once they all have exited; when a role
//      exits on its own, the others are stopped too (as foreman does).
//
// `npm run up -- --lab` first starts the lab (test/lab/serve.ts: DNS on 127.0.0.1:5353 with every
// fixture zone, RDAP on 8053, and every other lab part) and points the roles at it: DNS_SERVERS,
// RDAP_BASE_URL, ALLOW_PRIVATE_TARGETS, ALLOW_SPECIAL_USE_DOMAINS, OUTBOUND_PORT_MAP and
// NODE_EXTRA_CA_CERTS (the lab CA).
//
// `npm run up -- --cluster` runs every role on a Redis Cluster instead of the single Redis: a
// 3-master loopback cluster (ops/redis-cluster.ts, the one the tests use) started before the roles
// and given to them as REDIS_CLUSTER_NODES, and stopped (its files removed) after they exit. It
// keeps nothing from one run to the next, as the single local Redis keeps nothing on disk.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import readline from 'node:readline';
import { createDatabase, ensureServices } from './services.ts';
import { startRedisCluster, type RedisCluster } from './redis-cluster.ts';
import { readProcfile } from './procfile.ts';
import { ConfigError, parseConfig, type Config } from '../src/config/config.ts';
import { createDb } from '../src/db/database.ts';
import { createKey, createWorkspace, workspaceInternalId } from '../src/auth/tenancy-repo.ts';
import { specialUseOf, specialUsePolicy } from '../src/net/special-use.ts';
import { grantCredits } from '../src/credits/ledger.ts';

const root = path.resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const lab = args.includes('--lab');
const onCluster = args.includes('--cluster');
const unknown = args.filter((a) => a !== '--lab' && a !== '--cluster');
if (unknown.length > 0) {
  process.stderr.write(`usage: npm run up [-- [--lab] [--cluster]]\n(unknown argument: ${unknown.join(' ')})\n`);
  process.exit(64);
}

const SECRETS_FILE = path.join(root, '.data', 'secrets.env');
const SECRET_NAMES = ['KEY_PEPPER', 'CURSOR_SECRET', 'WEBHOOK_SECRET_KEY'] as const;
const DEFAULT_DB_NAME = 'lss';
const DEMO_SCOPE = 'lab.test';
const DEMO_CREDITS = 1000;
const LAB_DNS_PORT = 5353;
const LAB_RDAP_PORT = 8053;

const log = (msg: string): void => {
  process.stderr.write(`[up] ${msg}\n`);
};

// ---------------------------------------------------------------------------
// Secrets

function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^\s*([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (m) out[m[1]!] = m[2]!.trim();
  }
  return out;
}

/** KEY_PEPPER / CURSOR_SECRET / WEBHOOK_SECRET_KEY: the environment wins, else .data/secrets.env, created once. */
async function loadSecrets(): Promise<Record<(typeof SECRET_NAMES)[number], string>> {
  const fromEnv = Object.fromEntries(SECRET_NAMES.filter((n) => process.env[n]).map((n) => [n, process.env[n]!]));
  const readStored = async () => parseEnvFile(await fs.readFile(SECRETS_FILE, 'utf8').catch(() => ''));
  let stored = await readStored();
  const missing = SECRET_NAMES.filter((n) => !fromEnv[n] && !stored[n]);
  if (missing.length > 0) {
    await fs.mkdir(path.dirname(SECRETS_FILE), { recursive: true });
    const lines = missing.map((n) => `${n}=${randomBytes(48).toString('base64url')}\n`).join('');
    if (!existsSync(SECRETS_FILE)) {
      const header = '# Generated once by `npm run up`; keep it: API keys are hashed with KEY_PEPPER.\n';
      try {
        await fs.writeFile(SECRETS_FILE, header + lines, { flag: 'wx', mode: 0o600 });
        log(`generated ${missing.join(', ')} into ${path.relative(root, SECRETS_FILE)} (mode 0600)`);
      } catch (e) {
        // Another `up` created it meanwhile: use what it wrote.
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
    } else {
      await fs.appendFile(SECRETS_FILE, lines, { mode: 0o600 });
      log(`added ${missing.join(', ')} to ${path.relative(root, SECRETS_FILE)}`);
    }
    stored = await readStored();
  }
  const st = await fs.stat(SECRETS_FILE).catch(() => null);
  if (st && (st.mode & 0o077) !== 0) {
    await fs.chmod(SECRETS_FILE, 0o600);
    log(`${path.relative(root, SECRETS_FILE)} was readable by others; set it to mode 0600`);
  }
  const result = {} as Record<(typeof SECRET_NAMES)[number], string>;
  for (const n of SECRET_NAMES) {
    const v = fromEnv[n] ?? stored[n];
    if (!v) throw new Error(`${n}: neither in the environment nor in ${SECRETS_FILE}`);
    result[n] = v;
  }
  return result;
}

// ---------------------------------------------------------------------------
// Child processes

interface Running {
  name: string;
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running = new Map<string, Running>();
let stopping: NodeJS.Signals | null = null;
let unexpectedExit = false;
let labelWidth = 8;

function pipeLines(stream: NodeJS.ReadableStream | null, out: NodeJS.WriteStream, label: string): void {
  if (!stream) return;
  const rl = readline.createInterface({ input: stream, crlfDelay: Infinity });
  rl.on('line', (line) => out.write(`${label.padEnd(labelWidth)} | ${line}\n`));
}

function start(name: string, file: string, argv: string[], env: NodeJS.ProcessEnv): Running {
  const child = spawn(file, argv, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  pipeLines(child.stdout, process.stdout, name);
  pipeLines(child.stderr, process.stderr, name);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('error', (err) => {
      log(`${name}: could not start: ${err.message}`);
      resolve({ code: 127, signal: null });
    });
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  const r: Running = { name, child, exited };
  running.set(name, r);
  void exited.then(({ code, signal }) => {
    running.delete(name);
    log(`${name} exited (${signal ? `signal ${signal}` : `code ${code}`})`);
    const clean = code === 0 || (stopping !== null && signal === stopping);
    if (!clean) unexpectedExit = true;
    if (stopping === null && name !== 'release') {
      log(`${name} stopped on its own; stopping the other roles`);
      stopAll('SIGTERM');
    }
    if (stopping !== null && running.size === 0) finish();
  });
  return r;
}

let forceTimer: NodeJS.Timeout | undefined;
/** How long roles get to drain after the signal before they are killed (SHUTDOWN_TIMEOUT_MS + 5 s). */
let graceMs = 20_000;
function stopAll(signal: NodeJS.Signals): void {
  if (stopping !== null) {
    // A second signal: stop waiting politely.
    for (const r of running.values()) r.child.kill('SIGKILL');
    return;
  }
  stopping = signal;
  if (running.size === 0) {
    finish();
    return;
  }
  log(`stopping ${[...running.keys()].join(', ')} (${signal})`);
  for (const r of running.values()) r.child.kill(signal);
  forceTimer = setTimeout(() => {
    for (const r of running.values()) {
      log(`${r.name} did not stop within ${graceMs} ms; killing it`);
      r.child.kill('SIGKILL');
    }
  }, graceMs);
  forceTimer.unref();
}

let redisCluster: RedisCluster | undefined;

function finish(code: number = unexpectedExit ? 1 : 0): void {
  clearTimeout(forceTimer);
  if (!redisCluster) process.exit(code);
  // After the roles: they drain against it.
  void redisCluster
    .stop()
    .then(
      () => log('Redis Cluster stopped'),
      (e: unknown) => log(`warning: could not stop the Redis Cluster: ${e instanceof Error ? e.message : String(e)}`),
    )
    .finally(() => process.exit(code));
}

for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => stopAll(sig));

function checkStopping(): void {
  // Between setup steps: a signal received while nothing runs ends the run here.
  if (stopping !== null && running.size === 0) finish();
}

/** Waits for the first line of stdout of a child (its "ready" line), for at most `ms`. */
function firstLine(r: Running, ms: number): Promise<string | null> {
  return new Promise((resolve) => {
    // A plain listener beside pipeLines' reader (closing a second readline would pause the stream).
    const stdout = r.child.stdout!;
    let buf = '';
    const onData = (chunk: Buffer) => {
      buf += chunk.toString('utf8');
      const nl = buf.indexOf('\n');
      if (nl >= 0) done(buf.slice(0, nl));
    };
    const done = (line: string | null) => {
      clearTimeout(timer);
      stdout.off('data', onData);
      resolve(line);
    };
    const timer = setTimeout(() => done(null), ms);
    stdout.on('data', onData);
    void r.exited.then(() => done(null));
  });
}

async function waitLive(port: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && stopping === null) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/livez`, { signal: AbortSignal.timeout(1000) });
      if (res.ok) return true;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

// ---------------------------------------------------------------------------
// Demo tenant

async function createDemo(config: Config) {
  const handle = createDb(config.DATABASE_URL, { connectionLimit: 2 });
  try {
    // The lab's zone is approvable only where the lab is (ALLOW_SPECIAL_USE_DOMAINS lists `test`).
    const scopePolicy = specialUsePolicy(config);
    const ws = await createWorkspace(handle.db, {
      name: `demo ${new Date().toISOString()}`,
      active: true,
      approveScopes: specialUseOf(DEMO_SCOPE, scopePolicy) === null ? [DEMO_SCOPE] : [],
      scopePolicy,
      acceptResponsibleUse: config.RESPONSIBLE_USE_VERSION,
    });
    const key = await createKey(handle.db, config.KEY_PEPPER, { workspace: ws.workspaceId });
    await grantCredits(
      handle.db,
      await workspaceInternalId(handle.db, ws.workspaceId),
      DEMO_CREDITS,
      `grant:demo:${ws.workspaceId}`,
    );
    return { ...ws, ...key };
  } finally {
    await handle.close();
  }
}

/** The `lss` commands the banner suggests; the lab ones only with --lab (their targets are lab zones). */
function lssTryLines(withLab: boolean): string[] {
  const always = ['lss products', 'lss lookup mac F4:F5:E8:12:34:56', 'lss lookup ip 8.8.8.8'];
  const labOnly = [
    'lss lookup dns lab.test',
    'lss lookup dns partial.lab.test          # partial: exit code 2',
    'lss lookup domain lab-expired.test --fail-on high   # a job with a progress bar; exit 1',
    'lss --json lookup domain lab.test --no-wait          # then: lss job results <jobRef>',
    'lss scan lab.test --profile quick --max-credits 20 --wait',
    'lss monitor create domain lab.test --every 1h          # runs now, then hourly: lss monitor show <id>',
  ];
  return [...always, ...(withLab ? labOnly : [])].map((c) => `    ${c}`);
}

function banner(config: Config, demo: Awaited<ReturnType<typeof createDemo>>, live: boolean): string {
  const rule = '='.repeat(78);
  const url = `http://127.0.0.1:${config.PORT}`;
  return [
    '',
    rule,
    `  LSS is ${live ? 'up' : 'starting (web did not answer /livez yet)'}: ${url}  (GET /livez, /readyz, /v2/openapi.json)`,
    ...(redisCluster
      ? [`  Redis: a 3-master loopback cluster, REDIS_CLUSTER_NODES=${redisCluster.seeds} (stopped with the roles)`]
      : []),
    `  Demo workspace ${demo.workspaceId}: responsible use ${config.RESPONSIBLE_USE_VERSION} accepted,`,
    `  active work permitted, approved target scope ${DEMO_SCOPE}, ${DEMO_CREDITS} credits. Key ${demo.keyId}, scopes ${demo.scopes.join(',')}.`,
    '',
    '  Demo API key (shown once; only its hash is stored):',
    '',
    `    ${demo.key}`,
    '',
    '  Try it:',
    '',
    `    curl -sS -X POST ${url}/v2/lookups/mac \\`,
    `      -H 'Authorization: Bearer ${demo.key}' \\`,
    `      -H 'Content-Type: application/json' \\`,
    `      -H "Idempotency-Key: demo-$(date +%s%N)" \\`,
    `      -d '{"value":"F4:F5:E8:12:34:56"}'`,
    '',
    '  Or with the lss CLI (retries, polling and cursors done for you; docs/client.md):',
    '',
    `    export LSS_BASE_URL=${url} LSS_API_KEY=${demo.key}`,
    `    alias lss='${path.join(root, 'src', 'client', 'bin', 'lss')}'`,
    ...lssTryLines(lab),
    '',
    `  API reference: ${url}/docs`,
    rule,
    '',
  ].join('\n');
}

// ---------------------------------------------------------------------------

function dbNameFrom(url: string | undefined): string | null {
  if (!url) return null;
  try {
    const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
    return name || null;
  } catch {
    return null;
  }
}

async function main(): Promise<void> {
  const roles = readProcfile(root);
  labelWidth = Math.max(labelWidth, ...roles.map((r) => r.name.length), lab ? 'lab'.length : 0);
  const release = roles.find((r) => r.name === 'release');

  const { databaseUrl: serverUrl, redisUrl } = await ensureServices({ root });
  checkStopping();
  const dbName = dbNameFrom(process.env.DATABASE_URL) ?? DEFAULT_DB_NAME;
  const databaseUrl = await createDatabase(serverUrl, dbName, { ifNotExists: true });
  log(`database ${dbName} on ${serverUrl} (created if it was missing); Redis ${redisUrl}`);
  const secrets = await loadSecrets();
  checkStopping();

  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, ...secrets };
  if (onCluster) {
    redisCluster = await startRedisCluster({ root, log: (m) => log(`redis-cluster: ${m}`) });
    env.REDIS_CLUSTER_NODES = redisCluster.seeds;
    delete env.REDIS_URL;
    log(`Redis Cluster on ${redisCluster.seeds} (REDIS_CLUSTER_NODES; REDIS_URL unset for the roles)`);
    checkStopping();
  }

  if (lab) {
    // One process serves every lab part (test/lab/serve.ts) and prints the configuration that
    // points the roles at it; the lab CA it trusts reaches every role through NODE_EXTRA_CA_CERTS.
    const labScript = path.join(root, 'test', 'lab', 'serve.ts');
    const proc = start(
      'lab',
      process.execPath,
      [path.relative(root, labScript), '--dns-port', String(LAB_DNS_PORT), '--rdap-port', String(LAB_RDAP_PORT)],
      env,
    );
    const line = await firstLine(proc, 20_000);
    checkStopping();
    if (!running.has('lab'))
      throw new Error(`the lab exited during start (are ports ${LAB_DNS_PORT} and ${LAB_RDAP_PORT} taken?)`);
    if (line === null) throw new Error('the lab printed no ready line within 20 s');
    const ready = JSON.parse(line) as { parts: string[]; env: Record<string, string> };
    Object.assign(env, ready.env);
    log(
      `lab (${ready.parts.join(', ')}): ${Object.entries(ready.env)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
    );
  }

  let config: Config;
  try {
    config = parseConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      unexpectedExit = true;
      // finish() may still be stopping the cluster: stopAll would call it again with code 1.
      if (running.size === 0) finish(78);
      else stopAll('SIGTERM');
      return;
    }
    throw err;
  }
  graceMs = config.SHUTDOWN_TIMEOUT_MS + 5000;

  if (release) {
    log(`release: ${release.command}`);
    const r = start('release', release.file, release.args, env);
    const { code, signal } = await r.exited;
    checkStopping();
    if (code !== 0) throw new Error(`release failed (${signal ? `signal ${signal}` : `exit ${code}`})`);
  } else {
    log('Procfile has no release role; not migrating');
  }

  const demo = await createDemo(config);
  checkStopping();

  for (const role of roles) {
    if (role.name === 'release') continue;
    if (role.script !== null && !existsSync(path.resolve(root, role.script))) {
      log(`${role.name}: skipped, ${role.script} does not exist yet`);
      continue;
    }
    const roleEnv = { ...env };
    if (role.name !== 'web') delete roleEnv.METRICS_PORT;
    log(`${role.name}: ${role.command}`);
    start(role.name, role.file, role.args, roleEnv);
  }
  if (!running.has('web') && !roles.some((r) => r.name === 'web')) log('Procfile has no web role');

  const live = await waitLive(config.PORT, 20_000);
  if (stopping !== null) return;
  process.stdout.write(banner(config, demo, live));
  log('running; Ctrl-C (SIGINT) or SIGTERM stops every role');
}

try {
  await main();
} catch (err) {
  log(err instanceof Error ? err.message : String(err));
  unexpectedExit = true;
  if (running.size === 0) finish(1);
  else stopAll('SIGTERM');
}
