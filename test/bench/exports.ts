// `npm run bench:exports` = `node test/bench/exports.ts`: what exporting a large job costs the web
// role (CONTRACT §17, issue 47).
//
//   Targets: the export of a 20,000-host scan's objects and findings streamed at ≥ 20,000 items/s,
//   peak RSS growth of the web role ≤ 16 MB, first byte ≤ 200 ms.
//
//   What: a terminal scan job written in SQL (test/helpers/synthetic-job.ts) of BENCH_EXPORTS_N
//   host objects (default 20,000), each with one finding of a catalog code (20,000 findings), and a
//   job ten times smaller, so the growth of both can be compared (memory flat: the same growth
//   whatever the size). The web role runs as its Procfile command (WEB_CONCURRENCY=1: the primary
//   and one worker). Each export (findings as SARIF, CSV and JSONL; objects as CSV and JSONL) is
//   read by fetch in this process as fast as it comes, twice: the first of each (cold: its code
//   and the first pages' buffers loaded) is reported apart from the second (warm), on which the
//   targets are judged. Per export: first byte (request → first body chunk), items/s (items ÷
//   request → last byte), and the worker's peak VmRSS sampled every 20 ms over its VmRSS just before
//   the request. Throwaway database and Redis prefix (dropped at the end, on an error and on
//   Ctrl-C); every connection goes to 127.0.0.1.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDatabase, deletePrefixedKeys, dropDatabase, ensureServices, runTimestamp } from '../../ops/services.ts';
import { migrate } from '../../src/db/migrations.ts';
import { createDb, type DbHandle } from '../../src/db/database.ts';
import { createKey, createWorkspace, setLimits, workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { ProcessGroup, freePort, until } from '../helpers/processes.ts';
import { insertSyntheticJob, type SyntheticJob } from '../helpers/synthetic-job.ts';
import { childrenOf, fmt, procfileRoleArgs } from './bench-kit.ts';

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);
const root = path.resolve(import.meta.dirname, '../..');
const N = Number(process.env.BENCH_EXPORTS_N ?? 20_000);
const TARGET_ITEMS_PER_S = 20_000;
const TARGET_GROWTH_MB = 16;
const TARGET_FIRST_BYTE_MS = 200;

const EXPORTS = [
  { format: 'sarif', what: 'findings' },
  { format: 'csv', what: 'findings' },
  { format: 'jsonl', what: 'findings' },
  { format: 'csv', what: 'objects' },
  { format: 'jsonl', what: 'objects' },
] as const;

function rssKb(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

interface Run {
  label: string;
  items: number;
  bytes: number;
  firstByteMs: number;
  totalMs: number;
  itemsPerS: number;
  growthMb: number;
}

async function exportOnce(
  base: string,
  key: string,
  worker: number,
  job: SyntheticJob,
  e: (typeof EXPORTS)[number],
  label: string,
): Promise<Run> {
  await sleep(300);
  const rss0 = rssKb(worker);
  let peak = rss0;
  const timer = setInterval(() => {
    peak = Math.max(peak, rssKb(worker));
  }, 20);
  const t0 = performance.now();
  const res = await fetch(`${base}/v2/jobs/${job.ref}/export?format=${e.format}&what=${e.what}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  if (res.status !== 200 || !res.body) throw new Error(`${label}: HTTP ${res.status} ${await res.text()}`);
  const reader = res.body.getReader();
  let firstByteMs = -1;
  let bytes = 0;
  let newlines = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (firstByteMs < 0) firstByteMs = performance.now() - t0;
    bytes += value.length;
    for (let i = 0; i < value.length; i++) if (value[i] === 10) newlines++;
  }
  const totalMs = performance.now() - t0;
  clearInterval(timer);
  peak = Math.max(peak, rssKb(worker));
  const items = e.what === 'findings' ? job.findings : job.objects;
  // A sanity check of what came: JSONL is one line per item; CSV at least one per item.
  if (e.format === 'jsonl' && newlines !== items) throw new Error(`${label}: ${newlines} lines for ${items} items`);
  return {
    label,
    items,
    bytes,
    firstByteMs,
    totalMs,
    itemsPerS: items / (totalMs / 1000),
    growthMb: (peak - rss0) / 1024,
  };
}

async function main(): Promise<number> {
  const load = os.loadavg();
  const { databaseUrl: serverUrl, redisUrl } = await ensureServices({ root });
  const suffix = `${runTimestamp(new Date())}_${randomBytes(3).toString('hex')}`;
  const dbName = `lss_benchexports_${suffix}`;
  const prefix = `lssbench:${suffix}:`;
  let dbh: DbHandle | undefined;
  const procs = new ProcessGroup();
  let cleaned: Promise<void> | undefined;
  const cleanup = () =>
    (cleaned ??= (async () => {
      await procs.killAll();
      await dbh?.close().catch(() => {});
      await dropDatabase(serverUrl, dbName).catch((e: Error) => log(`could not drop ${dbName}: ${e.message}`));
      await deletePrefixedKeys(redisUrl, prefix).catch(() => {});
    })());
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.once(sig, () => void cleanup().finally(() => process.exit(130)));
  try {
    const databaseUrl = await createDatabase(serverUrl, dbName);
    await migrate(databaseUrl);
    dbh = createDb(databaseUrl, { connectionLimit: 2 });
    const secrets = {
      KEY_PEPPER: randomBytes(32).toString('base64url'),
      CURSOR_SECRET: randomBytes(32).toString('base64url'),
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64url'),
    };
    const ws = await createWorkspace(dbh.db, { name: 'bench-exports' });
    await setLimits(dbh.db, ws.workspaceId, undefined, { app: { perMinute: 1_000_000, burst: 100_000 } });
    const created = await createKey(dbh.db, secrets.KEY_PEPPER, {
      workspace: ws.workspaceId,
      scopes: ['scan:read', 'finding:read'],
    });
    const keyRow = await dbh.db
      .selectFrom('api_keys')
      .select('id')
      .where('public_id', '=', created.keyId)
      .executeTakeFirstOrThrow();
    const owner = { workspaceId: await workspaceInternalId(dbh.db, ws.workspaceId), keyId: Number(keyRow.id) };
    log(`writing a job of ${N} objects and findings, and one of ${N / 10}`);
    const t = performance.now();
    const big = await insertSyntheticJob(dbh.db, owner, { objects: N });
    const small = await insertSyntheticJob(dbh.db, owner, { objects: Math.round(N / 10) });
    log(`written in ${fmt((performance.now() - t) / 1000, 1)} s`);

    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const web = procs.node(
      'web',
      procfileRoleArgs('web'),
      {
        ...process.env,
        NODE_ENV: 'production',
        DATABASE_URL: databaseUrl,
        REDIS_URL: redisUrl,
        REDIS_CLUSTER_NODES: undefined,
        REDIS_KEY_PREFIX: prefix,
        ...secrets,
        LOG_LEVEL: process.env.BENCH_LOG_LEVEL || 'warn',
        WEB_CONCURRENCY: '1',
        PORT: String(port),
        METRICS_PORT: String(await freePort()),
      },
      { cwd: root },
    );
    await until(
      'the web role live',
      async () => {
        if (!web.running()) throw new Error(`web exited\n${procs.report(2000)}`);
        return (await fetch(`${base}/livez`).catch(() => null))?.status === 200;
      },
      60_000,
      200,
    );
    const worker = childrenOf(web.child.pid!)[0];
    if (!worker) throw new Error('no web worker process');
    await sleep(1000);
    const idleMb = rssKb(worker) / 1024;

    const runs: Run[] = [];
    for (const job of [small, big]) {
      for (const e of EXPORTS) {
        for (const pass of ['cold', 'warm']) {
          if (pass === 'cold' && job === big) continue; // the big job's passes come after the small one's warmed the code
          const label = `${e.what} ${e.format} (${job.objects} objects, ${pass})`;
          const r = await exportOnce(base, created.key, worker, job, e, label);
          runs.push(r);
          log(
            `${label}: ${fmt(r.itemsPerS, 0)} items/s, first byte ${fmt(r.firstByteMs, 1)} ms, RSS +${fmt(r.growthMb, 1)} MB`,
          );
        }
      }
    }

    const cpus = os.cpus();
    const lines = [
      `bench:exports — ${cpus.length} × ${cpus[0]?.model ?? 'cpu'}; load ${load.map((l) => l.toFixed(2)).join(' ')} at start`,
      `web worker RSS at rest ${fmt(idleMb, 1)} MB (WEB_CONCURRENCY=1, the Procfile's web command)`,
      '',
      '| export | items | MB | first byte ms | total s | items/s | RSS growth MB |',
      '|---|---|---|---|---|---|---|',
      ...runs.map(
        (r) =>
          `| ${r.label} | ${r.items} | ${fmt(r.bytes / 2 ** 20, 1)} | ${fmt(r.firstByteMs, 1)} | ${fmt(r.totalMs / 1000, 2)} | ${fmt(r.itemsPerS, 0)} | ${fmt(r.growthMb, 1)} |`,
      ),
    ];
    const judged = runs.filter((r) => r.items === N);
    const worst = {
      itemsPerS: Math.min(...judged.map((r) => r.itemsPerS)),
      growthMb: Math.max(...judged.map((r) => r.growthMb)),
      firstByteMs: Math.max(...judged.map((r) => r.firstByteMs)),
    };
    const smallGrowth = Math.max(
      ...runs.filter((r) => r.items !== N && r.label.includes('warm')).map((r) => r.growthMb),
    );
    const ok = {
      rate: worst.itemsPerS >= TARGET_ITEMS_PER_S,
      rss: worst.growthMb <= TARGET_GROWTH_MB,
      first: worst.firstByteMs <= TARGET_FIRST_BYTE_MS,
    };
    lines.push(
      '',
      `slowest export of the ${N}-item job: ${fmt(worst.itemsPerS, 0)} items/s (target ≥ ${TARGET_ITEMS_PER_S}) ${ok.rate ? 'MET' : 'MISSED'}`,
      `largest RSS growth: ${fmt(worst.growthMb, 1)} MB (target ≤ ${TARGET_GROWTH_MB}) ${ok.rss ? 'MET' : 'MISSED'}; ` +
        `the job ten times smaller: ${fmt(smallGrowth, 1)} MB (ratio ${fmt(worst.growthMb / Math.max(smallGrowth, 0.1), 2)})`,
      `slowest first byte: ${fmt(worst.firstByteMs, 1)} ms (target ≤ ${TARGET_FIRST_BYTE_MS}) ${ok.first ? 'MET' : 'MISSED'}`,
    );
    process.stdout.write(`${lines.join('\n')}\n`);
    return ok.rate && ok.rss && ok.first ? 0 : 1;
  } finally {
    await cleanup();
  }
}

process.exitCode = await main();
