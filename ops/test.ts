// `npm test` = `node ops/test.ts [vitest args…]`
//
//   1. makes MySQL and Redis available (ops/services.ts);
//   2. creates a throwaway database lss_test_<yyyymmddhhmmss>_<hex6> and picks the
//      Redis key prefix lsstest:<same suffix>:;
//   3. type-checks (tsc -p tsconfig.json), failing fast;
//   4. runs `vitest run <args…>` against them (the vitest globalSetup migrates), trusting the
//      lab CA (test/lab/ca.ts) through NODE_EXTRA_CA_CERTS;
//   5. always drops the database and deletes the prefixed Redis keys, also on
//      SIGINT/SIGTERM;
//   6. exits with vitest's exit code (or tsc's, if type-checking failed).

import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDatabase, deletePrefixedKeys, dropDatabase, ensureServices, runTimestamp } from './services.ts';
import { LAB_CA_DIR_ENV, loadLabCa } from '../test/lab/ca.ts';

const root = path.resolve(import.meta.dirname, '..');
const vitestArgs = process.argv.slice(2);

// Fixed secrets for tests, used only when the environment does not set them (48 chars each).
const TEST_KEY_PEPPER = 'lss-test-key-pepper-0123456789abcdefghijklmnopqr';
const TEST_CURSOR_SECRET = 'lss-test-cursor-secret-0123456789abcdefghijklmno';

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
  const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { bin?: string | Record<string, string> };
  const rel = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin?.[bin];
  if (!rel) throw new Error(`${pkg}/package.json has no bin "${bin}" (run npm install?)`);
  return path.join(dir, rel);
}

/** Runs node <script> <args…>; resolves with the exit code (128+n when killed by a signal). */
function runNode(script: string, args: string[], opts: { env?: NodeJS.ProcessEnv; capture?: boolean }): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [script, ...args], {
      cwd: root,
      env: opts.env ?? process.env,
      stdio: opts.capture ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    });
    child = c;
    let output = '';
    c.stdout?.setEncoding('utf8').on('data', (d: string) => (output += d));
    c.stderr?.setEncoding('utf8').on('data', (d: string) => (output += d));
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



async function main(): Promise<number> {
  const { databaseUrl: serverUrl, redisUrl } = await ensureServices({ root });
  checkInterrupted();

  const suffix = `${runTimestamp(new Date())}_${randomBytes(3).toString('hex')}`;
  const dbName = `lss_test_${suffix}`;
  const keyPrefix = `lsstest:${suffix}:`;

  let cleaned = false;
  const cleanup = async (): Promise<void> => {
    if (cleaned) return;
    cleaned = true;
    try {
      await dropDatabase(serverUrl, dbName);
      log(`dropped database ${dbName}`);
    } catch (e) {
      log(`warning: could not drop database ${dbName}: ${e instanceof Error ? e.message : String(e)}`);
    }
    try {
      const n = await deletePrefixedKeys(redisUrl, keyPrefix);
      log(`deleted ${n} Redis key(s) with prefix ${keyPrefix}`);
    } catch (e) {
      log(`warning: could not delete Redis keys ${keyPrefix}*: ${e instanceof Error ? e.message : String(e)}`);
    }
  };

  mayHaveResources = true;
  try {
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
      [LAB_CA_DIR_ENV]: ca.dir,
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: keyPrefix,
      NODE_ENV: 'test',
      LSS_TEST_DB_SERVER: serverUrl,
      KEY_PEPPER: process.env.KEY_PEPPER || TEST_KEY_PEPPER,
      CURSOR_SECRET: process.env.CURSOR_SECRET || TEST_CURSOR_SECRET,
    };
    log(`vitest run ${vitestArgs.join(' ')}`.trimEnd());
    // A JSON report beside the usual output, so the run ends with one plain, machine-readable
    // line ("N passed, N failed") that CI can read whatever reporter is on screen.
    const report = path.join(os.tmpdir(), `lss-vitest-${suffix}.json`);
    const vitest = await runNode(binEntry('vitest', 'vitest'),
      ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...vitestArgs], { env });
    try {
      const r = JSON.parse(readFileSync(report, 'utf8')) as { numPassedTests: number; numFailedTests: number; numPendingTests: number };
      process.stdout.write(`tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed${r.numPendingTests ? `, ${r.numPendingTests} skipped` : ''}\n`);
      rmSync(report, { force: true });
    } catch {
      log('no vitest JSON report was written');
    }
    return vitest.code;
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
