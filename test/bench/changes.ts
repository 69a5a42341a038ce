// `npm run bench:changes` = `node test/bench/changes.ts`: what change detection (CONTRACT §13)
// costs a scan, and what a changes page costs next to a results page.
//
//   Targets (issue 28): at 20,000 hosts against a 20,000-host baseline, the comparison adds at
//   most 10 % to the scan's wall and no process grows more than 32 MB over the same scan without a
//   baseline; reading a changes page costs what a results page costs (depth independence, §10).
//
//   What: the generated lab zone gen<N>.test (test/lab/scan-zones.ts), N = BENCH_CHANGES_N
//   (default 2,000; the lead reruns 20,000 on a quiet machine), deep scans with maxCredits 3.5 × N
//   as bench:scan. Three scans, each on a fresh set of the Procfile roles (web with
//   WEB_CONCURRENCY=1, orchestrator, lane-dns, lane-mail, lane-web, lane-domain; each its
//   Procfile command), in this order:
//     A  workspace 1, no baseline (it becomes the baseline of C)
//     B  workspace 2, no baseline: the same scan without change detection, on warm MySQL
//     C  workspace 1: baseline A; rechecks A's names, compares with A when it ends
//   Wall = POST → the 250 ms poll that sees the job terminal. Per process, the peak VmRSS sampled
//   every 200 ms from the POST to terminal, over its RSS when ready (growth). C vs B: wall ratio
//   (target ≤ 1.10) and growth difference per process (target ≤ 32 MB). The comparison's own time
//   is change_runs' created_at → updated_at (its first and last chunk); stored: C's job_changes
//   rows next to the identities its comparison counted (one row each before issue 44 item 14).
//   Then, on C's processes: GET /v2/jobs/<C>/results?limit=50 and /changes?limit=50 (every mark,
//   so the list is as long as the results), each at its first page and at the page after 90 % of
//   its items (a cursor the API handed out), interleaved, BENCH_CHANGES_PAGE_ITERATIONS (200)
//   times each over keep-alive fetch: medians, changes ÷ results at each depth, deep ÷ first.
//
//   First, the comparison alone at scale without a scan (BENCH_CHANGES_OBJECTS, default 3.5 × N;
//   BENCH_CHANGES_SYNTHETIC_ONLY=1 stops there): two jobs written in bulk, compared in this process.
//
//   Throwaway database and Redis prefix (dropped at the end, on an error and on Ctrl-C); every
//   connection goes to 127.0.0.0/8 (the lab in this process).
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { createDatabase, deletePrefixedKeys, dropDatabase, ensureServices, runTimestamp } from '../../ops/services.ts';
import { migrate } from '../../src/db/migrations.ts';
import { parseConfig } from '../../src/config/config.ts';
import { createDb, type DbHandle } from '../../src/db/database.ts';
import { createKey, createWorkspace, setLimits, workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { labEnv } from '../helpers/lab-runtime.ts';
import { ProcessGroup, freePort, until } from '../helpers/processes.ts';
import { domainZones } from '../lab/domain-zones.ts';
import { mailLabPart } from '../lab/mail-lab.ts';
import { startLabRdap } from '../lab/rdap-server.ts';
import { scanLabPart } from '../lab/scan-lab.ts';
import { genZoneName } from '../lab/scan-zones.ts';
import { startLab, type LabPartFactory, type RunningLab } from '../lab/serve.ts';
import { webLabPart } from '../lab/web-lab.ts';
import { childrenOf, fmt, procfileRoleArgs } from './bench-kit.ts';
import { createHash } from 'node:crypto';
import { publicId } from '../../src/contract/ids.ts';
import { runComparison } from '../../src/jobs/changes/comparison.ts';
import { scanChangeRules } from '../../src/products/scan/changes.ts';

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);
const root = path.resolve(import.meta.dirname, '../..');

const N = Number(process.env.BENCH_CHANGES_N ?? 2000);
const CREDITS = Math.round(N * 3.5);
const PRODUCT = 'scan.recursive.v1';
const LANES = ['dns', 'mail', 'web', 'domain'] as const;
const WALL_TARGET = 1.1;
const GROWTH_TARGET_MB = 32;
const PAGE = 50;
const PAGE_ITERATIONS = Number(process.env.BENCH_CHANGES_PAGE_ITERATIONS ?? 200);
const SCAN_TIMEOUT_MS = Number(process.env.BENCH_CHANGES_TIMEOUT_S ?? 1800) * 1000;
const ALL_MARKS = 'new,changed,gone,resolved,unconfirmed,unchanged';
/** The synthetic comparison: two jobs of this many objects (a 20,000-host deep scan keeps ~69,000). */
const SYNTHETIC_OBJECTS = Number(process.env.BENCH_CHANGES_OBJECTS ?? Math.round(N * 3.5));

function rssKb(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** A role's RSS: its process and its descendants (the web role's cluster worker), summed per process label. */
function sampleRoles(roots: Array<{ role: string; pid: number }>): Map<string, number> {
  const out = new Map<string, number>();
  for (const { role, pid } of roots) {
    const tree = [pid];
    for (let i = 0; i < tree.length; i++) tree.push(...childrenOf(tree[i]!));
    tree.forEach((p, i) => {
      const kb = rssKb(p);
      if (kb !== null) out.set(i === 0 ? role : `${role} (child)`, kb);
    });
  }
  return out;
}

async function api<T>(base: string, key: string, method: string, p: string, body?: unknown) {
  const res = await fetch(`${base}${p}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined
        ? { 'content-type': 'application/json', 'idempotency-key': `bench-${randomBytes(12).toString('hex')}` }
        : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  return { status: res.status, body: (await res.json()) as T };
}

interface JobView {
  jobRef: string;
  status: string;
  terminal: boolean;
  baseline: { jobRef: string } | null;
  changes: Record<string, Record<string, number>> | null;
  progress: { tasksDone: number; objects: number; findings: number };
}

interface ScanRun {
  label: string;
  jobRef: string;
  status: string;
  wallS: number;
  tasks: number;
  objects: number;
  baseline: string | null;
  changes: JobView['changes'];
  /** Per process: peak RSS from the POST to terminal minus the RSS when ready, in kB. */
  growthKb: Map<string, number>;
  peakKb: Map<string, number>;
  pages?: PageCosts;
}

interface PageCosts {
  results: { first: number; deep: number; depth: number };
  changes: { first: number; deep: number; depth: number };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The cursor after ~90 % of a list's items, walked with limit 500 as a client would. */
async function deepCursor(
  base: string,
  key: string,
  p: string,
  total: number,
): Promise<{ cursor: string; depth: number }> {
  let cursor: string | null = null;
  let depth = 0;
  let last: string | null = null;
  do {
    const r: { body: { items: unknown[]; page: { nextCursor: string | null } } } = await api<{
      items: unknown[];
      page: { nextCursor: string | null };
    }>(
      base,
      key,
      'GET',
      `${p}${p.includes('?') ? '&' : '?'}limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    depth += r.body.items.length;
    last = cursor;
    cursor = r.body.page.nextCursor;
    if (cursor && depth >= total * 0.9) return { cursor, depth };
  } while (cursor);
  return { cursor: last ?? '', depth: 0 };
}

async function pageCosts(base: string, key: string, jobRef: string): Promise<PageCosts> {
  const results = `/v2/jobs/${jobRef}/results`;
  const changes = `/v2/jobs/${jobRef}/changes?change=${ALL_MARKS}`;
  const objects = (await api<JobView>(base, key, 'GET', `/v2/jobs/${jobRef}`)).body.progress.objects;
  const rows = (await api<{ items: unknown[] }>(base, key, 'GET', `${changes}&limit=1`)).body.items.length;
  const rDeep = await deepCursor(base, key, results, objects);
  const cDeep = await deepCursor(base, key, changes, objects);
  if (rows === 0) throw new Error('the changes list is empty');
  const urls = {
    rFirst: `${results}?limit=${PAGE}`,
    rDeep: `${results}?limit=${PAGE}&cursor=${encodeURIComponent(rDeep.cursor)}`,
    cFirst: `${changes}&limit=${PAGE}`,
    cDeep: `${changes}&limit=${PAGE}&cursor=${encodeURIComponent(cDeep.cursor)}`,
  };
  const t: Record<keyof typeof urls, number[]> = { rFirst: [], rDeep: [], cFirst: [], cDeep: [] };
  for (let i = 0; i < PAGE_ITERATIONS + 20; i++) {
    for (const k of Object.keys(urls) as Array<keyof typeof urls>) {
      const t0 = performance.now();
      const r = await fetch(`${base}${urls[k]}`, { headers: { authorization: `Bearer ${key}` } });
      await r.arrayBuffer();
      if (r.status !== 200) throw new Error(`${urls[k]} → ${r.status}`);
      if (i >= 20) t[k].push(performance.now() - t0);
    }
  }
  return {
    results: { first: median(t.rFirst), deep: median(t.rDeep), depth: rDeep.depth },
    changes: { first: median(t.cFirst), deep: median(t.cDeep), depth: cDeep.depth },
  };
}

interface Ctx {
  lab: RunningLab;
  databaseUrl: string;
  redisUrl: string;
  prefix: string;
  secrets: Record<string, string>;
  current?: ProcessGroup;
}

interface Synthetic {
  objects: number;
  findings: number;
  seconds: number;
  rows: number;
  /** Identities the comparison marked (objects and findings of either job, each once). */
  identities: number;
  heapGrowthMb: number;
  rssGrowthMb: number;
}

/**
 * The comparison alone, in this process, on two jobs written in bulk: SYNTHETIC_OBJECTS host
 * objects each with a scan-like projection (seven DNS types' answers), a finding on every tenth;
 * 1 % of the second job's objects changed, 0.5 % new, 0.5 % missing (no task: not rechecked).
 * Timed from the first chunk to the last; heap and RSS growth of this process while it ran.
 */
async function syntheticComparison(dbh: DbHandle, workspaceId: number, apiKeyId: number): Promise<Synthetic> {
  const db = dbh.db;
  const job = async (): Promise<number> => {
    const r = await db
      .insertInto('jobs')
      .values({
        public_id: publicId('job'),
        workspace_id: workspaceId,
        api_key_id: apiKeyId,
        product: PRODUCT,
        status: 'completed',
        profile: 'deep',
        target_type: 'domain_name',
        target_value: 'synthetic.test',
        input: '{}',
        request_id: publicId('req'),
        credits_reserved: 0,
        credits_released: null,
        settled_at: null,
        result: null,
        coverage: null,
        month: '2026-11',
        started_at: new Date(),
        completed_at: new Date(),
        cancel_requested_at: null,
        deadline_at: new Date(Date.now() + 3_600_000),
      })
      .executeTakeFirstOrThrow();
    return Number(r.insertId);
  };
  const base = await job();
  const cur = await job();
  const projection = (i: number, moved: boolean) => {
    const name = `h${i}.synthetic.test`;
    const a = `127.0.4.${(i % 250) + (moved ? 1 : 0)}`;
    const rec = (data: unknown[]) => ({ outcome: data.length ? 'answer' : 'nodata', rcode: 'NOERROR', data });
    return JSON.stringify({
      name,
      inScope: true,
      exists: true,
      wildcard: 'real',
      foundVia: 'link',
      foundFrom: `h${Math.floor(i / 27)}.synthetic.test`,
      records: { A: rec([a]), AAAA: rec([]), CNAME: rec([]), MX: rec([]), NS: rec([]), TXT: rec([]), CAA: rec([]) },
    });
  };
  let findings = 0;
  for (const [jobId, second] of [
    [base, false],
    [cur, true],
  ] as const) {
    for (let start = 0; start < SYNTHETIC_OBJECTS; start += 1000) {
      const rows = [];
      for (let i = start; i < Math.min(start + 1000, SYNTHETIC_OBJECTS); i++) {
        if (second && i % 200 === 0) continue; // missing from the second job
        const n = second && i % 200 === 1 ? i + SYNTHETIC_OBJECTS : i; // new in the second job
        const name = `h${n}.synthetic.test`;
        rows.push({
          public_id: publicId('obj'),
          job_id: jobId,
          seq: i + 1,
          workspace_id: workspaceId,
          type: 'host',
          okey: name,
          okey_hash: createHash('sha256').update(`host\n${name}`).digest(),
          distance: 2,
          projection: projection(n, second && i % 100 === 2),
          lanes: JSON.stringify([
            { lane: 'dns', status: 'completed' },
            { lane: 'web', status: 'partial' },
          ]),
          evidence: JSON.stringify([{ summary: `A of ${name}` }]),
        });
      }
      await db.insertInto('objects').values(rows).execute();
    }
    await sql`INSERT INTO findings (public_id, job_id, seq, workspace_id, object_id, code, severity, confidence, title, summary, evidence, sources)
      SELECT CONCAT('fnd_', LPAD(HEX(id), 26, '0')), job_id, seq, workspace_id, id, 'web_csp_missing', 2, 'confirmed', 't', 's', '[]',
        '[{"lane":"web","source":"http_fetch"}]'
      FROM objects WHERE job_id = ${jobId} AND seq % 10 = 0`.execute(db);
    findings += Number(
      (await sql<{ n: number }>`SELECT COUNT(*) AS n FROM findings WHERE job_id = ${jobId}`.execute(db)).rows[0]!.n,
    );
  }
  await sql`UPDATE jobs SET baseline_job_id = ${base} WHERE id = ${cur}`.execute(db);
  const heap0 = process.memoryUsage().heapUsed;
  const rss0 = process.memoryUsage().rss;
  let heapPeak = heap0;
  let rssPeak = rss0;
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    heapPeak = Math.max(heapPeak, m.heapUsed);
    rssPeak = Math.max(rssPeak, m.rss);
  }, 50);
  const t0 = performance.now();
  await runComparison(
    db,
    cur,
    scanChangeRules,
    process.env.BENCH_CHANGES_CHUNK ? { chunk: Number(process.env.BENCH_CHANGES_CHUNK) } : {},
  );
  const seconds = (performance.now() - t0) / 1000;
  clearInterval(timer);
  const rows = Number(
    (await sql<{ n: number }>`SELECT COUNT(*) AS n FROM job_changes WHERE job_id = ${cur}`.execute(db)).rows[0]!.n,
  );
  const identities = await identitiesCompared(db, cur);
  return {
    objects: SYNTHETIC_OBJECTS,
    findings,
    seconds,
    rows,
    identities,
    heapGrowthMb: (heapPeak - heap0) / 2 ** 20,
    rssGrowthMb: (rssPeak - rss0) / 2 ** 20,
  };
}

/** What the run counted, every mark of both kinds: the rows job_changes held when every identity had one. */
async function identitiesCompared(db: DbHandle['db'], jobId: number): Promise<number> {
  const res = await sql<{ counts: unknown }>`SELECT counts FROM change_runs WHERE job_id = ${jobId}`.execute(db);
  const raw = res.rows[0]?.counts;
  const c = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Record<string, Record<string, number>> | undefined;
  let n = 0;
  for (const kind of ['objects', 'findings'])
    for (const [mark, v] of Object.entries(c?.[kind] ?? {})) if (mark !== 'work') n += Number(v) || 0;
  return n;
}

async function scan(ctx: Ctx, label: string, key: string, withPages: boolean): Promise<ScanRun> {
  const procs = new ProcessGroup();
  ctx.current = procs;
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env: Record<string, string | undefined> = {
    ...labEnv(ctx.lab.env),
    NODE_ENV: 'production',
    DATABASE_URL: ctx.databaseUrl,
    REDIS_URL: ctx.redisUrl,
    REDIS_CLUSTER_NODES: undefined,
    REDIS_KEY_PREFIX: `${ctx.prefix}${label}:`,
    ...ctx.secrets,
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL || 'warn',
    WEB_CONCURRENCY: '1',
    SHUTDOWN_TIMEOUT_MS: '5000',
    LANE_CONCURRENCY: undefined,
    LANE_POOL_THREADS: undefined,
  };
  const roles = [
    { role: 'web', extra: { PORT: String(port) } },
    { role: 'orchestrator', extra: {} },
    ...LANES.map((l) => ({ role: `lane-${l}`, extra: {} })),
  ];
  const started: Array<{ role: string; proc: ReturnType<ProcessGroup['node']> }> = [];
  for (const r of roles) {
    // Every process its own private /metrics port: never the web role's default 9091 (shared machine).
    const metrics = String(await freePort());
    started.push({
      role: r.role,
      proc: procs.node(r.role, procfileRoleArgs(r.role), { ...env, ...r.extra, METRICS_PORT: metrics }, { cwd: root }),
    });
  }
  const roots = started.map((s) => ({ role: s.role, pid: s.proc.child.pid! }));
  try {
    await until(
      'the scan product ready',
      async () => {
        const dead = started.find((s) => !s.proc.running());
        if (dead) throw new Error(`${dead.role} exited\n${procs.report(2000)}`);
        const r = await api<{
          products: Array<{ product: string; lanes: Array<{ lane: string; readiness: string }> }>;
        }>(base, key, 'GET', '/v2/products').catch(() => null);
        const p = r?.body.products?.find((x) => x.product === PRODUCT);
        return LANES.every((l) => p?.lanes.find((x) => x.lane === l)?.readiness === 'ready');
      },
      90_000,
      250,
    );
    await sleep(1000);
    const idle = sampleRoles(roots);
    const peak = new Map(idle);
    const timer = setInterval(() => {
      for (const [k, v] of sampleRoles(roots)) peak.set(k, Math.max(peak.get(k) ?? 0, v));
    }, 200);
    const t0 = performance.now();
    const accepted = await api<{ jobRef: string }>(base, key, 'POST', '/v2/scans', {
      profile: 'deep',
      target: { type: 'domain_name', value: genZoneName(N) },
      options: { active: false, maxCredits: CREDITS },
    });
    if (accepted.status !== 202)
      throw new Error(`POST /v2/scans → ${accepted.status} ${JSON.stringify(accepted.body)}`);
    let view: JobView;
    let lastLog = t0;
    for (;;) {
      view = (await api<JobView>(base, key, 'GET', `/v2/jobs/${accepted.body.jobRef}`)).body;
      if (view.terminal) break;
      if (performance.now() - t0 > SCAN_TIMEOUT_MS) throw new Error(`${label}: not terminal in time`);
      if (performance.now() - lastLog > 10_000) {
        lastLog = performance.now();
        log(
          `${label}: ${fmt((lastLog - t0) / 1000, 0)} s, tasks done ${view.progress.tasksDone}, objects ${view.progress.objects}`,
        );
      }
      await sleep(250);
    }
    const wallS = (performance.now() - t0) / 1000;
    clearInterval(timer);
    for (const [k, v] of sampleRoles(roots)) peak.set(k, Math.max(peak.get(k) ?? 0, v));
    log(`${label}: ${view.status} in ${fmt(wallS, 1)} s (baseline ${view.baseline?.jobRef ?? 'none'})`);
    const run: ScanRun = {
      label,
      jobRef: view.jobRef,
      status: view.status,
      wallS,
      tasks: view.progress.tasksDone,
      objects: view.progress.objects,
      baseline: view.baseline?.jobRef ?? null,
      changes: view.changes,
      growthKb: new Map([...peak].map(([k, v]) => [k, v - (idle.get(k) ?? v)])),
      peakKb: peak,
    };
    if (withPages) run.pages = await pageCosts(base, key, view.jobRef);
    return run;
  } finally {
    await procs.killAll();
    ctx.current = undefined;
  }
}

const rdapPart: LabPartFactory = async () => {
  const rdap = await startLabRdap();
  return { name: 'rdap', zones: domainZones, env: { RDAP_BASE_URL: rdap.baseUrl }, close: () => rdap.close() };
};

async function main(): Promise<number> {
  const load = os.loadavg();
  const { databaseUrl: serverUrl, redisUrl } = await ensureServices({ root });
  const suffix = `${runTimestamp(new Date())}_${randomBytes(3).toString('hex')}`;
  const dbName = `lss_benchchanges_${suffix}`;
  const prefix = `lssbench:${suffix}:`;
  let lab: RunningLab | undefined;
  let dbh: DbHandle | undefined;
  const ctx: Partial<Ctx> = {};
  let cleaned: Promise<void> | undefined;
  const cleanup = () =>
    (cleaned ??= (async () => {
      await ctx.current?.killAll();
      await dbh?.close().catch(() => {});
      await lab?.close().catch(() => {});
      await dropDatabase(serverUrl, dbName).catch((e: Error) => log(`could not drop ${dbName}: ${e.message}`));
      await deletePrefixedKeys(redisUrl, prefix).catch(() => {});
    })());
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.once(sig, () => void cleanup().finally(() => process.exit(130)));
  try {
    lab = await startLab({ parts: [rdapPart, webLabPart(), mailLabPart, scanLabPart({ generated: [N] })] });
    const databaseUrl = await createDatabase(serverUrl, dbName);
    await migrate(databaseUrl);
    dbh = createDb(databaseUrl, { connectionLimit: 2 });
    const secrets = {
      KEY_PEPPER: randomBytes(32).toString('base64url'),
      CURSOR_SECRET: randomBytes(32).toString('base64url'),
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64url'),
    };
    const policy = parseConfig({
      ...process.env,
      ...labEnv(lab.env),
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      ...secrets,
    }).RESPONSIBLE_USE_VERSION;
    const workspace = async (name: string, credits: number) => {
      const ws = await createWorkspace(dbh!.db, { name, acceptResponsibleUse: policy });
      await setLimits(dbh!.db, ws.workspaceId, undefined, {
        app: { perMinute: 1_000_000, burst: 100_000 },
        products: { [PRODUCT]: { perMinute: 100_000, perHour: 1_000_000 } },
      });
      await grantCredits(dbh!.db, await workspaceInternalId(dbh!.db, ws.workspaceId), credits, `bench:changes:${name}`);
      return (
        await createKey(dbh!.db, secrets.KEY_PEPPER, {
          workspace: ws.workspaceId,
          scopes: ['scan:create', 'scan:read', 'finding:read'],
        })
      ).key;
    };
    const k1 = await workspace('bench-changes-1', 2 * CREDITS + 100);
    const k2 = await workspace('bench-changes-2', CREDITS + 100);
    const anyKey = await sql<{
      id: number;
      workspace_id: number;
    }>`SELECT id, workspace_id FROM api_keys LIMIT 1`.execute(dbh.db);
    log(`synthetic: two jobs of ${SYNTHETIC_OBJECTS} objects, compared in this process`);
    const synthetic = await syntheticComparison(dbh, Number(anyKey.rows[0]!.workspace_id), Number(anyKey.rows[0]!.id));
    log(`synthetic: ${fmt(synthetic.seconds, 2)} s`);
    if (process.env.BENCH_CHANGES_SYNTHETIC_ONLY === '1') {
      process.stdout.write(`${syntheticReport(synthetic)}\n`);
      return 0;
    }
    Object.assign(ctx, { lab, databaseUrl, redisUrl, prefix, secrets });
    const c = ctx as Ctx;
    log(`N=${N}: database ${dbName}; three deep scans of ${genZoneName(N)}, maxCredits ${CREDITS}`);
    const a = await scan(c, 'A', k1, false);
    const b = await scan(c, 'B', k2, false);
    const cRun = await scan(c, 'C', k1, true);
    if (cRun.baseline !== a.jobRef) throw new Error(`C's baseline is ${cRun.baseline}, not A (${a.jobRef})`);
    const run = await sql<{ s: number; n: number }>`
      SELECT TIMESTAMPDIFF(MICROSECOND, r.created_at, r.updated_at) / 1e6 AS s,
        (SELECT COUNT(*) FROM job_changes c WHERE c.job_id = r.job_id) AS n
      FROM change_runs r JOIN jobs j ON j.id = r.job_id WHERE j.public_id = ${cRun.jobRef}`.execute(dbh.db);
    const cId = (await sql<{ id: number }>`SELECT id FROM jobs WHERE public_id = ${cRun.jobRef}`.execute(dbh.db))
      .rows[0]!;
    const identities = await identitiesCompared(dbh.db, Number(cId.id));
    process.stdout.write(
      report([a, b, cRun], Number(run.rows[0]?.s ?? NaN), Number(run.rows[0]?.n ?? 0), identities, load),
    );
    process.stdout.write(`${syntheticReport(synthetic)}\n`);
    return [a, b, cRun].every((r) => r.status === 'completed' || r.status === 'partial') ? 0 : 1;
  } finally {
    await cleanup();
  }
}

function syntheticReport(x: Synthetic): string {
  return [
    '',
    `The comparison alone (synthetic, this process): two jobs of ${x.objects} host objects (+ ${x.findings} findings in all;`,
    '  1 % changed, 0.5 % new, 0.5 % missing), src/jobs/changes/comparison.ts runComparison, chunks of 500:',
    `  ${fmt(x.seconds, 2)} s, ${x.rows} rows stored in job_changes for ${x.identities} identities compared (${fmt((100 * x.rows) / Math.max(1, x.identities), 1)} %), ${fmt(x.objects / x.seconds, 0)} objects/s; heap growth ${fmt(x.heapGrowthMb, 1)} MB, RSS growth ${fmt(x.rssGrowthMb, 1)} MB`,
    "  (this process's V8 flags; under the orchestrator's: BENCH_CHANGES_SYNTHETIC_ONLY=1 node --max-semi-space-size=4 --max-old-space-size=128 test/bench/changes.ts)",
  ].join('\n');
}

function report(runs: ScanRun[], compareS: number, rows: number, identities: number, load: number[]): string {
  const [a, b, c] = runs as [ScanRun, ScanRun, ScanRun];
  const out: string[] = [''];
  out.push(
    `Change detection at N=${N} (deep scans of ${genZoneName(N)}, maxCredits ${CREDITS}; fresh processes per scan)`,
  );
  out.push(
    '  scan  baseline  status      wall s   tasks  objects  changes (objects: new/changed/gone/unconfirmed/unchanged)',
  );
  for (const r of runs) {
    const o = r.changes?.objects;
    out.push(
      `  ${r.label.padEnd(4)}  ${(r.baseline ? 'A' : 'none').padEnd(8)}  ${r.status.padEnd(10)}  ${fmt(r.wallS, 1).padStart(6)}  ${String(r.tasks).padStart(6)}  ${String(r.objects).padStart(7)}  ${o ? `${o.new}/${o.changed}/${o.gone}/${o.unconfirmed}/${o.unchanged}` : '—'}`,
    );
  }
  const ratio = c.wallS / b.wallS;
  out.push('');
  out.push(
    `  wall with a baseline ÷ without (C ÷ B): ${fmt(ratio, 3)} (target ≤ ${WALL_TARGET}: ${ratio <= WALL_TARGET ? 'met' : 'NOT met'}); A ÷ B ${fmt(a.wallS / b.wallS, 3)} (the same scan twice: the noise)`,
  );
  out.push(`  the comparison itself: ${fmt(compareS, 2)} s (first chunk → last)`);
  out.push(
    `  stored: ${rows} rows in job_changes for ${identities} identities compared (${fmt((100 * rows) / Math.max(1, identities), 1)} %; one row per identity before issue 44 item 14)`,
  );
  out.push('');
  out.push('  RSS growth over ready (peak from the POST to terminal − ready), MB:');
  const labels = [...new Set([...b.growthKb.keys(), ...c.growthKb.keys()])];
  let worst = 0;
  for (const l of labels) {
    const gb = (b.growthKb.get(l) ?? 0) / 1024;
    const gc = (c.growthKb.get(l) ?? 0) / 1024;
    worst = Math.max(worst, gc - gb);
    out.push(
      `    ${l.padEnd(22)} B ${fmt(gb, 0).padStart(5)}   C ${fmt(gc, 0).padStart(5)}   C − B ${fmt(gc - gb, 0).padStart(5)}   (C peak ${fmt((c.peakKb.get(l) ?? 0) / 1024, 0)})`,
    );
  }
  out.push(
    `  largest C − B: ${fmt(worst, 1)} MB (target ≤ ${GROWTH_TARGET_MB}: ${worst <= GROWTH_TARGET_MB ? 'met' : 'NOT met'})`,
  );
  const p = c.pages!;
  out.push('');
  out.push(`  pages of C, limit ${PAGE}, median of ${PAGE_ITERATIONS} interleaved reads (ms):`);
  out.push(
    `    results  first ${fmt(p.results.first, 2)}   after ${p.results.depth} items ${fmt(p.results.deep, 2)}   deep ÷ first ${fmt(p.results.deep / p.results.first, 2)}`,
  );
  out.push(
    `    changes  first ${fmt(p.changes.first, 2)}   after ${p.changes.depth} items ${fmt(p.changes.deep, 2)}   deep ÷ first ${fmt(p.changes.deep / p.changes.first, 2)}`,
  );
  out.push(
    `    changes ÷ results: first ${fmt(p.changes.first / p.results.first, 2)}, deep ${fmt(p.changes.deep / p.results.deep, 2)}`,
  );
  out.push('');
  out.push(
    `  machine: ${os.availableParallelism()} cores, load ${load.map((x) => fmt(x, 2)).join(' / ')} at the start, ${os
      .loadavg()
      .map((x) => fmt(x, 2))
      .join(' / ')} at the end`,
  );
  return `${out.join('\n')}\n`;
}

try {
  process.exit(await main());
} catch (e) {
  log(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exit(1);
}
