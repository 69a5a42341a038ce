// `npm run bench:rss` = `node test/bench/rss/rss-at-rest.ts [role…] [--cache warm|cold|off] [--modules] [--settle S] [--root DIR]`:
// what each Procfile role costs in memory at rest. Each role (all but `release`, or those named)
// is started alone, as `npm run up` starts it (ops/procfile.ts: this Node with the Procfile's Node
// options), against a throwaway database lss_rss_<time>_<hex> and Redis prefix lssrss:<same>:;
// once ready (a lane or the orchestrator logged that it started; web answers /livez with every
// worker forked) it is left alone for --settle seconds (default 5), then VmRSS and the thread
// count of the process (and of each web worker) are read from /proc, and it is stopped.
// Goals (issue 19): the orchestrator and every lane ≤ 120 MB, each web process ≤ 170 MB.
// --cache: Node's module compile cache (workers/compile-cache.mjs, in the Procfile) in a scratch
// directory of this run. warm (default): each role is started and stopped once before it is
// measured, as every start but a deploy's first is; cold: an empty cache, as a deploy's first
// start; off: NODE_DISABLE_COMPILE_CACHE=1, every module type-stripped and compiled at start.
// --modules also starts each role with test/bench/rss/module-log-hook.ts and lists which of the
// heavy libraries and datasets each of its threads loaded (the hook itself costs a little memory).
// --root measures another checkout of the project with this script (e.g. main, for a "before").
// Sends no traffic anywhere: the roles only talk to the local MySQL and Redis.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { readProcfile } from '../../../ops/procfile.ts';
import {
  createDatabase,
  deletePrefixedKeys,
  dropDatabase,
  ensureServices,
  runTimestamp,
} from '../../../ops/services.ts';
import { migrate } from '../../../src/db/migrations.ts';
import { WATCHED, childPids, freePort, procStatus, startRole, type ProcStatus } from './role-process.ts';

const here = path.resolve(import.meta.dirname, '../../..');
const argv = process.argv.slice(2);
const flag = (name: string) => {
  const i = argv.indexOf(name);
  if (i < 0) return undefined;
  const v = argv[i + 1];
  argv.splice(i, 2);
  return v;
};
const root = path.resolve(flag('--root') ?? here);
const settleS = Number(flag('--settle') ?? 5);
const withModules = argv.includes('--modules');
const cache = flag('--cache') ?? 'warm';
if (!['warm', 'cold', 'off'].includes(cache)) throw new Error('--cache is warm, cold or off');
const wanted = argv.filter((a) => !a.startsWith('--'));
const WEB_WORKERS = 2;
const GOAL_MB: Record<string, number> = { web: 170 };
const goalOf = (role: string) => GOAL_MB[role] ?? 120;

const log = (m: string) => process.stderr.write(`[rss] ${m}\n`);

interface Row {
  role: string;
  process: string;
  status: ProcStatus;
  goal: number;
  loaded: string;
}

async function main(): Promise<number> {
  const roles = readProcfile(root).filter(
    (r) => r.name !== 'release' && r.script !== null && (wanted.length === 0 || wanted.includes(r.name)),
  );
  if (roles.length === 0) throw new Error(`no Procfile role matches ${wanted.join(' ')}`);
  const { databaseUrl: serverUrl, redisUrl } = await ensureServices({ root: here });
  const suffix = `${runTimestamp(new Date())}_${randomBytes(3).toString('hex')}`;
  const dbName = `lss_rss_${suffix}`;
  const keyPrefix = `lssrss:${suffix}:`;
  const rows: Row[] = [];
  const cacheRoot = mkdtempSync(path.join(os.tmpdir(), 'lss-rss-compile-cache-'));
  try {
    const databaseUrl = await createDatabase(serverUrl, dbName);
    await migrate(databaseUrl);
    log(`database ${dbName}; Redis ${redisUrl} prefix ${keyPrefix}; root ${root}`);
    const base: Record<string, string | undefined> = {
      ...process.env,
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      REDIS_CLUSTER_NODES: undefined,
      REDIS_KEY_PREFIX: keyPrefix,
      KEY_PEPPER: randomBytes(32).toString('base64url'),
      CURSOR_SECRET: randomBytes(32).toString('base64url'),
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64url'),
      // Nothing is looked up at rest; should anything be, it stays on loopback.
      DNS_SERVERS: '127.0.0.1:9',
      // RDAP goes nowhere either (and no bootstrap file is asked for): valid in older checkouts too.
      RDAP_BASE_URL: 'http://127.0.0.1:9/',
      RDAP_BOOTSTRAP_URL: undefined,
      METRICS_PORT: undefined,
    };
    for (const role of roles) {
      const cacheEnv =
        cache === 'off'
          ? { NODE_DISABLE_COMPILE_CACHE: '1', NODE_COMPILE_CACHE: undefined }
          : { NODE_DISABLE_COMPILE_CACHE: undefined, NODE_COMPILE_CACHE: mkdtempSync(path.join(cacheRoot, 'c-')) };
      const env = {
        ...base,
        ...cacheEnv,
        ...(role.name === 'web' ? { METRICS_PORT: String(await freePort()) } : {}),
      };
      const start = async () =>
        startRole(role, { root, env, modules: withModules, webWorkers: WEB_WORKERS, port: await freePort() });
      if (cache === 'warm') {
        // Fills the cache as a previous start would have (written when the role exits).
        await (await start()).stop();
      }
      const t0 = Date.now();
      const started = await start();
      log(`${role.name}: ready in ${Date.now() - t0} ms; settling ${settleS} s`);
      await sleep(settleS * 1000);
      const pids = [started.child.pid!, ...(role.name === 'web' ? childPids(started.child.pid!) : [])];
      const statuses = pids.map(procStatus).filter((s): s is ProcStatus => s !== null);
      await started.stop();
      const modules = started.modules();
      statuses.forEach((status, i) => {
        const threads = modules.get(status.pid);
        const loaded = threads
          ? [...threads.entries()]
              .map(([tid, urls]) => {
                const hit = Object.entries(WATCHED)
                  .filter(([, frag]) => urls.some((u) => u.includes(frag)))
                  .map(([n]) => n);
                return `${tid === 0 ? 'main' : `thread ${tid}`}: ${hit.join(', ') || '-'}`;
              })
              .join('; ')
          : '';
        rows.push({
          role: role.name,
          process: role.name === 'web' ? (i === 0 ? 'primary' : `worker ${i}`) : 'main',
          status,
          goal: goalOf(role.name),
          loaded,
        });
      });
    }
  } finally {
    rmSync(cacheRoot, { recursive: true, force: true });
    await dropDatabase(serverUrl, dbName).catch((e: Error) => log(`could not drop ${dbName}: ${e.message}`));
    await deletePrefixedKeys(redisUrl, keyPrefix).catch(() => 0);
  }
  const head = ['role', 'process', 'RSS MB', 'threads', 'goal MB', 'within', ...(withModules ? ['loaded'] : [])];
  const body = rows.map((r) => [
    r.role,
    r.process,
    r.status.rssMB.toFixed(1),
    String(r.status.threads),
    `≤ ${r.goal}`,
    r.status.rssMB <= r.goal ? 'yes' : 'NO',
    ...(withModules ? [r.loaded] : []),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  const out = [
    '',
    `RSS at rest, ${settleS} s after ready, one role at a time (${root}); compile cache ${cache}; Node ${process.version}, ${os.availableParallelism()} CPUs, WEB_CONCURRENCY=${WEB_WORKERS}${withModules ? ', module log hook on' : ''}`,
    line(head),
    line(widths.map((w) => '-'.repeat(w))),
    ...body.map(line),
    '',
  ];
  process.stdout.write(`${out.join('\n')}\n`);
  return rows.every((r) => r.status.rssMB <= r.goal) ? 0 : 1;
}

try {
  process.exitCode = await main();
} catch (e) {
  log(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exitCode = 2;
}
