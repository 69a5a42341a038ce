// `npm test` = `node ops/test.ts [vitest args…]`
//
//   1. makes MySQL and Redis available (ops/services.ts);
//   2. creates a throwaway database lss_test_<yyyymmddhhmmss>_<hex6> and picks the
//      Redis key prefix lsstest:<same suffix>:;
//   3. type-checks (tsc -p tsconfig.json) and checks the import rules (ops/lint.ts), failing fast;
//   4. runs `vitest run <args…>` against them (the vitest globalSetup migrates), trusting the
//      lab CA (test/lab/ca.ts) through NODE_EXTRA_CA_CERTS: the single-Redis pass, its unit files
//      that share nothing (unitFiles below) first, on two workers;
//   5. starts a 3-master Redis Cluster on loopback (ops/redis-cluster.ts) and runs the suites
//      that exercise Redis (CLUSTER_SUITES, those matching the args' file filters) again, the
//      same files, with REDIS_CLUSTER_NODES instead of REDIS_URL and a database of their own:
//      the cluster pass (CLUSTER_ONLY files run only there unless named);
//   6. always drops the databases, deletes the prefixed Redis keys and stops the cluster, also on
//      SIGINT/SIGTERM;
//   7. exits non-zero when either pass failed (or tsc, if type-checking failed).
//
// LSS_TEST_REDIS=single|cluster|both (default both) picks the passes; `npm run test:cluster` is
// LSS_TEST_REDIS=cluster. With REDIS_CLUSTER_NODES set, the cluster pass uses that cluster (under
// the run's key prefix, deleted afterwards from every master) instead of starting one.
// LSS_TEST_REPORT_DIR=<dir> keeps a copy of each pass's vitest JSON report there (per-file durations).

import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  createDatabase,
  deletePrefixedKeys,
  dropDatabase,
  ensureConnectionHeadroom,
  ensureServices,
  runTimestamp,
} from './services.ts';
import { importRulesHold } from './lint.ts';
import { deletePrefixedClusterKeys, startRedisCluster, type RedisCluster } from './redis-cluster.ts';
import { LAB_CA_DIR_ENV, loadLabCa } from '../test/lab/ca.ts';

const root = path.resolve(import.meta.dirname, '..');
const vitestArgs = process.argv.slice(2);

/**
 * The suites that run a second time against a Redis Cluster: everything that holds the Redis
 * layout's guarantees (admission, idempotency, limits, streams and their trimming, the job
 * pipeline, the fault tests) and the many-processes test written for the cluster.
 */
const CLUSTER_SUITES = [
  'test/integration/admission.test.ts',
  'test/integration/idempotency.test.ts',
  'test/integration/rate-limit.test.ts',
  'test/integration/jobs-pipeline.test.ts',
  'test/integration/jobs-processes.test.ts',
  'test/integration/faults.test.ts',
  'test/integration/scale-out.test.ts',
  'test/unit/streams-trim.test.ts',
  'test/integration/lane-streams-read.test.ts',
];

type RedisMode = 'single' | 'cluster' | 'both';
const redisMode = (process.env.LSS_TEST_REDIS ?? 'both') as RedisMode;
if (!['single', 'cluster', 'both'].includes(redisMode)) {
  process.stderr.write(`[test] LSS_TEST_REDIS must be single, cluster or both (got ${redisMode})\n`);
  process.exit(2);
}

/**
 * Run in the cluster pass only, unless named: the many-processes test is written for the
 * scale-out deployment and is the dearest file (about a minute of 7 processes on 2 cores).
 */
const CLUSTER_ONLY = ['test/integration/scale-out.test.ts'];

/** File filters among the args (vitest matches them as substrings of test file paths). */
const fileFilters = vitestArgs.filter((a) => !a.startsWith('-') && (/\.test\.ts$/.test(a) || /^(test|src)\//.test(a)));
const clusterFiles =
  fileFilters.length === 0 ? CLUSTER_SUITES : CLUSTER_SUITES.filter((f) => fileFilters.some((x) => f.includes(x)));
const otherArgs = vitestArgs.filter((a) => !fileFilters.includes(a));

/**
 * The unit files share nothing with one another or with the other files: no database (their
 * DATABASE_URL is a placeholder for parseConfig), no Redis, labs on ports the kernel picks. So
 * they run first in a pass of their own on two workers (vitest's default is one on two cores),
 * and the rest after them, one file at a time as before. Out of it: the unit files that bound
 * elapsed time or CPU cost (a parser's ms per KiB, a DNS answer within 150 ms, a pause, a pacing)
 * and would then share a core, and the cluster suites. LSS_TEST_UNIT_WORKERS=1 runs them all in
 * one pass as before.
 */
const UNIT_WORKERS = Number(process.env.LSS_TEST_UNIT_WORKERS || 2);
const UNIT_TIMED = [
  'dns-dead-zone',
  'dns-resolver',
  'dns-tcp-drip',
  'ip-context-recovery',
  'mail-bimi',
  'memory-reclaim',
  'outbound-congestion',
  'outbound-guard',
  'outbound-politeness',
  'paced-load',
  'parse-pool',
  'parser-bounds',
  'rdap-breaker',
  'rdap-client',
  'special-use',
  'stub-resolver-recovery',
  'web-checks',
].map((n) => `test/unit/${n}.test.ts`);
const unitFiles =
  UNIT_WORKERS < 2 || otherArgs.some((a) => a === '-c' || a.startsWith('--config'))
    ? []
    : readdirSync(path.join(root, 'test/unit'))
        .filter((f) => f.endsWith('.test.ts'))
        .map((f) => `test/unit/${f}`)
        .filter((f) => !UNIT_TIMED.includes(f) && !CLUSTER_SUITES.includes(f))
        .filter((f) => fileFilters.length === 0 || fileFilters.some((x) => f.includes(x)));
const unitArgs = [...otherArgs, `--maxWorkers=${UNIT_WORKERS}`, ...unitFiles];
const singleArgs = [
  ...vitestArgs,
  ...CLUSTER_ONLY.filter((f) => !fileFilters.some((x) => f.includes(x))).map((f) => `--exclude=${f}`),
  ...unitFiles.map((f) => `--exclude=${f}`),
  // Filters that name unit files only leave this pass nothing to run: not a failure then.
  ...(unitFiles.length > 0 && fileFilters.length > 0 ? ['--passWithNoTests'] : []),
];

// Fixed secrets for tests, used only when the environment does not set them (48 chars each).
const TEST_KEY_PEPPER = 'lss-test-key-pepper-0123456789abcdefghijklmnopqr';
const TEST_CURSOR_SECRET = 'lss-test-cursor-secret-0123456789abcdefghijklmno';
const TEST_WEBHOOK_SECRET_KEY = 'lss-test-webhook-secret-key-0123456789abcdefghij';

const log = (msg: string): void => {
  process.stderr.write(`[test] ${msg}\n`);
};

const SIGNAL_NUMBERS = { SIGINT: 2, SIGTERM: 15 } as const;
type HandledSignal = keyof typeof SIGNAL_NUMBERS;

let child: ChildProcess | null = null;
let interrupted: HandledSignal | null = null;
let mayHaveResources = false; // set just before the database is created

class Interrupted extends Error {}

function checkInterrupted(): void {
  if (interrupted) throw new Interrupted(interrupted);
}

for (const sig of Object.keys(SIGNAL_NUMBERS) as HandledSignal[]) {
  process.on(sig, () => {
    if (interrupted) {
      // Second signal: stop waiting politely for the child; cleanup still runs.
      child?.kill('SIGKILL');
      return;
    }
    interrupted = sig;
    log(`${sig} received; cleaning up`);
    if (child) {
      // The main flow resumes when the child exits and cleans up in its `finally`.
      child.kill(sig);
    } else if (!mayHaveResources) {
      process.exit(128 + SIGNAL_NUMBERS[sig]);
    }
    // Otherwise the main flow is between two short steps and sees `interrupted`.
  });
}

/** The JS entry of a package's bin, to run on this very node binary. */
function binEntry(pkg: string, bin: string): string {
  const dir = path.join(root, 'node_modules', pkg);
  const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
    bin?: string | Record<string, string>;
  };
  const rel = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin?.[bin];
  if (!rel) throw new Error(`${pkg}/package.json has no bin "${bin}" (run npm install?)`);
  return path.join(dir, rel);
}

/** Runs node <script> <args…>; resolves with the exit code (128+n when killed by a signal). */
function runNode(
  script: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; capture?: boolean; tee?: boolean },
): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [script, ...args], {
      cwd: root,
      env: opts.env ?? process.env,
      stdio: opts.capture || opts.tee ? ['inherit', 'pipe', 'pipe'] : 'inherit',
    });
    child = c;
    let output = '';
    // tee: shown as it comes and kept (vitestPass reads which file's worker crashed).
    const keep = (to: NodeJS.WriteStream) => (d: string) => {
      output += d;
      if (opts.tee) to.write(d);
    };
    c.stdout?.setEncoding('utf8').on('data', keep(process.stdout));
    c.stderr?.setEncoding('utf8').on('data', keep(process.stderr));
    c.on('error', (e) => {
      child = null;
      reject(e);
    });
    c.on('close', (code, signal) => {
      child = null;
      const n = signal ? 128 + (os.constants.signals[signal] ?? 1) : (code ?? 1);
      resolve({ code: n, output });
    });
  });
}

interface PassResult {
  name: string;
  code: number;
  passed: number;
  failed: number;
  skipped: number;
  /** Files that failed outside any test (a hook, an import): their tests count as skipped. */
  failedFiles: number;
  seconds: number;
  /** Files whose test worker was killed by a signal and that passed when run again alone. */
  crashedThenPassed?: string[];
}

/** Files whose vitest worker died of a signal (SIGSEGV…: Node itself crashed), from vitest's output. */
function crashedFiles(output: string): Array<{ file: string; signal: string }> {
  // The ANSI colour codes vitest writes around words.
  const plain = output.replace(/\u001b\[[0-9;]*m/g, '');
  const found = new Map<string, string>();
  for (const m of plain.matchAll(
    /Worker exited unexpectedly with signal (SIG[A-Z]+) during \w+ state while running test file (\S+)/g,
  ))
    found.set(path.relative(root, m[2]!), m[1]!);
  return [...found].map(([file, signal]) => ({ file, signal }));
}

/** One `vitest run`, with a JSON report beside the usual output for the closing summary line. */
async function vitestPass(
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  suffix: string,
  rerunArgs?: string[],
): Promise<PassResult> {
  log(`${name}: vitest run ${args.join(' ')}`.trimEnd());
  const report = path.join(os.tmpdir(), `lss-vitest-${suffix}-${name.replace(/\W+/g, '-')}.json`);
  const started = Date.now();
  const vitest = await runNode(
    binEntry('vitest', 'vitest'),
    ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...args],
    // Piped to be read, it is no terminal: colours as before when this one is.
    { env: process.stdout.isTTY && !env.NO_COLOR ? { FORCE_COLOR: '1', ...env } : env, tee: true },
  );
  const result: PassResult = {
    name,
    code: vitest.code,
    passed: 0,
    failed: 0,
    skipped: 0,
    failedFiles: 0,
    seconds: Math.round((Date.now() - started) / 1000),
  };
  try {
    const r = JSON.parse(readFileSync(report, 'utf8')) as {
      numPassedTests: number;
      numFailedTests: number;
      numPendingTests: number;
      testResults?: Array<{ status: string; assertionResults: Array<{ status: string }> }>;
    };
    const failedFiles = (r.testResults ?? []).filter(
      (f) => f.status === 'failed' && !f.assertionResults.some((a) => a.status === 'failed'),
    ).length;
    Object.assign(result, {
      passed: r.numPassedTests,
      failed: r.numFailedTests,
      skipped: r.numPendingTests,
      failedFiles,
    });
    // LSS_TEST_REPORT_DIR keeps each pass's report (per-file and per-test durations) there.
    const keepDir = process.env.LSS_TEST_REPORT_DIR;
    if (keepDir) copyFileSync(report, path.join(keepDir, path.basename(report)));
    rmSync(report, { force: true });
  } catch {
    log(`${name}: no vitest JSON report was written`);
  }
  // A worker that died of a signal is Node crashing (seen once: SIGSEGV in a unit file's fork),
  // not a test that failed. Only when that is the whole failure are those files run once more,
  // alone; the summary says so either way, and a second failure fails the pass.
  const crashed = crashedFiles(vitest.output);
  if (
    vitest.code !== 0 &&
    result.failed === 0 &&
    crashed.length > 0 &&
    crashed.length >= result.failedFiles &&
    rerunArgs
  ) {
    for (const c of crashed) log(`${name}: the worker running ${c.file} died of ${c.signal}; running it again alone`);
    const again = await vitestPass(
      `${name}, crashed files again`,
      [...rerunArgs, ...crashed.map((c) => c.file)],
      env,
      `${suffix}-again`,
    );
    if (again.code === 0 && again.failed === 0 && again.failedFiles === 0) {
      result.code = 0;
      result.crashedThenPassed = crashed.map((c) => `${c.file} (${c.signal})`);
    }
  }
  return result;
}

async function main(): Promise<number> {
  const { databaseUrl: serverUrl, redisUrl } = await ensureServices({ root });
  checkInterrupted();

  const suffix = `${runTimestamp(new Date())}_${randomBytes(3).toString('hex')}`;
  const dbName = `lss_test_${suffix}`;
  // The cluster pass gets a database of its own: the two passes never see each other's rows.
  const clusterDbName = `${dbName}_c`;
  const keyPrefix = `lsstest:${suffix}:`;
  const runSingle = redisMode !== 'cluster';
  const runCluster = redisMode !== 'single' && clusterFiles.length > 0;
  let cluster: RedisCluster | undefined;
  const externalCluster = process.env.REDIS_CLUSTER_NODES;
  let usedExternalCluster = false;
  const created = [dbName];

  let cleaned = false;
  const cleanup = async (): Promise<void> => {
    if (cleaned) return;
    cleaned = true;
    for (const name of created) {
      try {
        await dropDatabase(serverUrl, name);
        log(`dropped database ${name}`);
      } catch (e) {
        log(`warning: could not drop database ${name}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    try {
      const n = await deletePrefixedKeys(redisUrl, keyPrefix);
      log(`deleted ${n} Redis key(s) with prefix ${keyPrefix}`);
    } catch (e) {
      log(`warning: could not delete Redis keys ${keyPrefix}*: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (cluster) {
      await cluster
        .stop()
        .catch((e: unknown) =>
          log(`warning: could not stop the Redis Cluster: ${e instanceof Error ? e.message : String(e)}`),
        );
      log('stopped the Redis Cluster');
    } else if (externalCluster && usedExternalCluster) {
      await deletePrefixedClusterKeys(externalCluster, keyPrefix).then(
        (n) => log(`deleted ${n} key(s) with prefix ${keyPrefix} from the Redis Cluster`),
        (e: unknown) =>
          log(
            `warning: could not delete Redis Cluster keys ${keyPrefix}*: ${e instanceof Error ? e.message : String(e)}`,
          ),
      );
    }
  };

  mayHaveResources = true;
  try {
    await ensureConnectionHeadroom(serverUrl, log);
    const databaseUrl = await createDatabase(serverUrl, dbName);
    log(`database ${dbName} on ${serverUrl}; Redis ${redisUrl} with key prefix ${keyPrefix}`);
    checkInterrupted();

    log('type-checking: tsc -p tsconfig.json');
    const tsc = await runNode(binEntry('typescript', 'tsc'), ['-p', 'tsconfig.json'], { capture: true });
    checkInterrupted();
    if (tsc.code !== 0) {
      process.stderr.write(tsc.output);
      log(`tsc failed (exit ${tsc.code})`);
      return tsc.code;
    }
    if (tsc.output.trim()) process.stderr.write(tsc.output);

    log('import rules: no circle, no import against the layers (.dependency-cruiser.cjs)');
    const imports = await importRulesHold();
    checkInterrupted();
    if (imports !== 0) {
      log(`the import rules do not hold (exit ${imports})`);
      return imports;
    }

    // The lab CA must be trusted from the first instruction of every test process: Node reads
    // NODE_EXTRA_CA_CERTS only at start.
    const ca = await loadLabCa();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      NODE_EXTRA_CA_CERTS: ca.caFile,
      // Tests send traffic only to loopback: without a lab, a test's DNS questions go to a dead
      // loopback port, never to the machine's own resolvers. Tests that need DNS set their lab.
      DNS_SERVERS: process.env.LSS_TEST_DNS_SERVERS || '127.0.0.1:9',
      ALLOW_PRIVATE_TARGETS: '',
      // Never IANA's real bootstrap file (the default): a test that needs one serves the lab's.
      RDAP_BOOTSTRAP_URL: 'off',
      [LAB_CA_DIR_ENV]: ca.dir,
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: keyPrefix,
      NODE_ENV: 'test',
      // Node's on-disk cache of compiled modules (keyed by their content): the suite starts some
      // hundreds of node processes (CLIs, roles, workers), each compiling the same modules again;
      // with the cache a start costs about half the CPU (0.8 s -> 0.45 s for the admin CLI).
      NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE || path.join(os.tmpdir(), 'lss-node-compile-cache'),
      LSS_TEST_DB_SERVER: serverUrl,
      KEY_PEPPER: process.env.KEY_PEPPER || TEST_KEY_PEPPER,
      CURSOR_SECRET: process.env.CURSOR_SECRET || TEST_CURSOR_SECRET,
      WEBHOOK_SECRET_KEY: process.env.WEBHOOK_SECRET_KEY || TEST_WEBHOOK_SECRET_KEY,
    };
    delete env.REDIS_CLUSTER_NODES;
    const passes: PassResult[] = [];
    if (runSingle && unitFiles.length > 0)
      passes.push(await vitestPass(`unit, ${UNIT_WORKERS} workers`, unitArgs, env, suffix, otherArgs));
    checkInterrupted();
    if (runSingle) passes.push(await vitestPass('single Redis', singleArgs, env, suffix, otherArgs));
    checkInterrupted();
    if (runCluster) {
      let seeds: string;
      if (externalCluster) {
        usedExternalCluster = true;
        seeds = externalCluster;
        log(`Redis Cluster: using REDIS_CLUSTER_NODES (${seeds}) with key prefix ${keyPrefix}`);
      } else {
        cluster = await startRedisCluster({ root, log: (m) => log(m) });
        seeds = cluster.seeds;
      }
      checkInterrupted();
      created.push(clusterDbName);
      const clusterDbUrl = await createDatabase(serverUrl, clusterDbName);
      // REDIS_URL is removed, not only overridden: a test that still reads it fails loudly
      // instead of quietly running against the single Redis.
      const clusterEnv: NodeJS.ProcessEnv = { ...env, DATABASE_URL: clusterDbUrl, REDIS_CLUSTER_NODES: seeds };
      delete clusterEnv.REDIS_URL;
      passes.push(
        await vitestPass('Redis Cluster', [...otherArgs, ...clusterFiles], clusterEnv, `${suffix}-c`, otherArgs),
      );
    } else if (redisMode !== 'single') {
      log('Redis Cluster pass: no cluster suite matches the file filters');
    }
    // One plain, machine-readable summary whatever reporter is on screen.
    for (const p of passes) {
      process.stdout.write(
        `tests (${p.name}, ${p.seconds} s): ${p.passed} passed, ${p.failed} failed${p.skipped ? `, ${p.skipped} skipped` : ''}${p.failedFiles ? `, ${p.failedFiles} file(s) failed outside a test` : ''}${p.crashedThenPassed ? `; their worker crashed, and run again alone they passed: ${p.crashedThenPassed.join(', ')}` : ''}\n`,
      );
    }
    const sum = (k: 'passed' | 'failed' | 'skipped' | 'failedFiles') => passes.reduce((n, p) => n + p[k], 0);
    const crashes = passes.flatMap((p) => p.crashedThenPassed ?? []);
    process.stdout.write(
      `tests: ${sum('passed')} passed, ${sum('failed')} failed${sum('skipped') ? `, ${sum('skipped')} skipped` : ''}${sum('failedFiles') ? `, ${sum('failedFiles')} file(s) failed outside a test` : ''}${crashes.length ? ` (${crashes.length} of them crashed and passed when run again alone)` : ''}\n`,
    );
    return passes.find((p) => p.code !== 0)?.code ?? 0;
  } finally {
    await cleanup();
  }
}

let exitCode: number;
try {
  exitCode = await main();
} catch (e) {
  if (e instanceof Interrupted) {
    exitCode = 1;
  } else {
    log(e instanceof Error ? e.message : String(e));
    exitCode = 1;
  }
}
if (interrupted) exitCode = 128 + SIGNAL_NUMBERS[interrupted];
process.exit(exitCode);
