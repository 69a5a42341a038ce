// `npm run bench:scan` = `node test/bench/scan.ts`: deep scans of the generated lab zone at 200 and
// at 2,000 hosts in one run, each on real processes, and what they cost each process in memory.
//
//   Why: a recursive scan plans as results arrive and keeps nothing of a job in process memory
//   (ARCHITECTURE.md, "Planning as results arrive"; the output writer caps objects; finalizing
//   reads counts). So a scan ten times the size should take about ten times as long (target: wall
//   ratio ≤ 12×, near linear) and no process may grow with it (target: peak RSS ≤ 256 MB for every
//   process, whatever N). Both are measured, not assumed.
//
//   What: POST /v2/scans { profile: 'deep', target: gen<N>.test, options: { active: false,
//   maxCredits: 5000 } } for N = 200, then N = 2,000 (test/lab/scan-zones.ts: N hosts linked as a
//   tree from the apex page, a third web hosts, a third CNAMEs, a third dead, every 25th with an MX).
//   Each scan is timed from its POST to the poll (GET /v2/jobs/<ref>, every 250 ms) that sees it
//   terminal; its objects are counted by paging GET /v2/jobs/<ref>/results?limit=500 to the end
//   (and compared with the job view's progress.objects). A deep scan's budget is at most 5,000
//   credits and it keeps at most 5,000 objects, so the 2,000-host scan may stop on either: the
//   report says how many tasks ran and how many were recorded budget_exhausted, whether
//   budget_exhausted / object_cap_reached are in the job's limitations, and gives tasks/s for both
//   sizes, so a wall ratio flattered by a budget stop shows as such.
//
//   Processes: for each size a fresh set of the Procfile roles, each its own OS process started
//   with its Procfile command (Node options included: the heap sizing of docs/operations.md):
//   `src/server.ts` (WEB_CONCURRENCY=1: the cluster primary and its one Express worker),
//   `workers/orchestrator.ts`, and `workers/lane.ts <lane>` for each lane a passive deep
//   scan uses (dns, mail, web, domain), with the default worker settings (LANE_CONCURRENCY 32,
//   LANE_TENANT_CONCURRENCY 8, LANE_POOL_THREADS 2). VmRSS of every process and of its descendants
//   (the web worker) is read from /proc/<pid>/status every 200 ms; the report gives, per process
//   and size, the RSS once ready (idle), the peak sampled from the POST to the end of the result
//   paging, and VmHWM (the kernel's lifetime peak, start-up included) read just before the
//   processes are stopped. Each process serves its private /metrics (METRICS_PORT, as deployed):
//   its V8 heap used / total and external memory, read when ready and 5 s after the results were
//   paged, say how much of an RSS is the main thread's JS heap (no GC is forced). The lab (DNS,
//   RDAP, web, mail and scan hosts on 127.x) runs in this process: its RSS is reported apart, not
//   part of the target. The processes log at warn (BENCH_LOG_LEVEL overrides); the report counts
//   what they logged and their exit codes after SIGTERM.
//
//   Like the other benchmarks it makes MySQL and Redis available (ops/services.ts), uses a
//   throwaway database lss_benchscan_<time>_<hex> and Redis prefix lssbench:<same>:, and removes
//   both at the end, on an error and on Ctrl-C. Every connection goes to 127.0.0.0/8: the lab DNS
//   answers every name, RDAP_BASE_URL is the lab's, well-known ports are mapped to lab ports.
//   BENCH_SCAN_TIMEOUT_S (default 1800) bounds each scan; a scan not terminal by then is cancelled,
//   reported, and the run exits 1.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDatabase, deletePrefixedKeys, dropDatabase, ensureServices, runTimestamp } from '../../ops/services.ts';
import { migrate } from '../../src/db/migrations.ts';
import { parseConfig } from '../../src/config/config.ts';
import { createDb, type DbHandle } from '../../src/db/database.ts';
import { createKey, createWorkspace, setLimits, workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { labEnv } from '../helpers/lab-runtime.ts';
import { ProcessGroup, freePort, until, type Proc } from '../helpers/processes.ts';
import { domainZones } from '../lab/domain-zones.ts';
import { mailLabPart } from '../lab/mail-lab.ts';
import { startLabRdap } from '../lab/rdap-server.ts';
import { scanLabPart } from '../lab/scan-lab.ts';
import { genFanout, genZoneName } from '../lab/scan-zones.ts';
import { startLab, type LabPartFactory, type RunningLab } from '../lab/serve.ts';
import { webLabPart } from '../lab/web-lab.ts';
import { fmt, procfileRoleArgs } from './bench-kit.ts';

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);
const root = path.resolve(import.meta.dirname, '../..');

const SIZES = [200, 2000] as const;
const PRODUCT = 'scan.recursive.v1';
const MAX_CREDITS = 5000;
/** The worker lanes a passive deep scan uses (src/products/scan/index.ts workerLanesFor). */
const LANES = ['dns', 'mail', 'web', 'domain'] as const;
const WALL_RATIO_TARGET = 12;
const RSS_TARGET_MB = 256;
const SAMPLE_MS = 200;
const POLL_MS = 250;
const PAGE_LIMIT = 500;
const READY_TIMEOUT_MS = 90_000;
const SCAN_TIMEOUT_MS = Number(process.env.BENCH_SCAN_TIMEOUT_S ?? 1800) * 1000;
const PROGRESS_EVERY_MS = 10_000;
/** Wait after the results are paged before the last RSS and heap reading. */
const SETTLE_MS = 5000;
const TERMINAL_TASK_RAN = ['completed', 'partial', 'unavailable', 'timeout', 'failed'] as const;

// ---------------------------------------------------------------------------------------------
// RSS of real processes, from /proc

interface ProcStatus {
  rssKb: number;
  hwmKb: number;
}

function readStatus(pid: number): ProcStatus | null {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? NaN);
    const rssKb = kb('VmRSS');
    return Number.isFinite(rssKb) ? { rssKb, hwmKb: kb('VmHWM') } : null;
  } catch {
    return null; // gone
  }
}

/** Child pids of `pid` (every thread's children file). */
function childrenOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((tid) => {
      try {
        return readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8')
          .trim()
          .split(/\s+/)
          .filter(Boolean)
          .map(Number);
      } catch {
        return [];
      }
    });
  } catch {
    return [];
  }
}

interface ProcRow {
  label: string;
  pid: number;
  /** RSS when every process was ready, before the POST. */
  idleKb: number | null;
  /** Highest VmRSS sampled from the POST to the end of the result paging. */
  peakKb: number;
  /** Highest VmRSS sampled at all (start-up included). */
  everKb: number;
  /** VmHWM read just before the stop (null: the process was gone by then). */
  hwmKb: number | null;
  samples: number;
}

class RssSampler {
  readonly rows = new Map<number, ProcRow>();
  #measuring = false;
  #timer: NodeJS.Timeout | undefined;
  readonly #roots: Array<{ role: string; pid: number }>;

  constructor(roots: Array<{ role: string; pid: number }>) {
    this.#roots = roots;
  }

  start(): void {
    this.sample();
    this.#timer = setInterval(() => this.sample(), SAMPLE_MS);
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  sample(): void {
    for (const { role, pid } of this.#roots) {
      const tree = [pid];
      for (let i = 0; i < tree.length; i++) tree.push(...childrenOf(tree[i]!));
      tree.forEach((p, i) => {
        const st = readStatus(p);
        if (!st) return;
        let row = this.rows.get(p);
        if (!row) {
          // The web role's children are its cluster workers; a replaced worker is a new row.
          const workers = [...this.rows.values()].filter((r) => r.label.startsWith('web (worker')).length;
          const label =
            i === 0
              ? role === 'web'
                ? 'web (primary)'
                : role
              : role === 'web'
                ? `web (worker${workers > 0 ? ` #${workers + 1}` : ''})`
                : `${role} (child ${p})`;
          row = { label, pid: p, idleKb: null, peakKb: 0, everKb: 0, hwmKb: null, samples: 0 };
          this.rows.set(p, row);
        }
        row.samples++;
        row.everKb = Math.max(row.everKb, st.rssKb);
        if (this.#measuring) row.peakKb = Math.max(row.peakKb, st.rssKb);
      });
    }
  }

  /** Idle figures now; the measured peak starts from here. */
  markIdle(): void {
    this.sample();
    for (const row of this.rows.values()) row.idleKb = readStatus(row.pid)?.rssKb ?? null;
    this.#measuring = true;
  }

  finish(): void {
    this.sample();
    this.#measuring = false;
    for (const row of this.rows.values()) row.hwmKb = readStatus(row.pid)?.hwmKb ?? null;
    this.stop();
  }
}

const mb = (kb: number | null) => (kb === null ? '—' : fmt(kb / 1024, 0));

/** prom-client's default process metrics, in bytes (the web role's come from its primary's aggregate of the worker). */
interface Heap {
  used: number;
  total: number;
  external: number;
}

async function heapOf(port: number): Promise<Heap | null> {
  try {
    const text = await (
      await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(10_000) })
    ).text();
    const v = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)$`, 'm').exec(text)?.[1] ?? NaN);
    const h = {
      used: v('nodejs_heap_size_used_bytes'),
      total: v('nodejs_heap_size_total_bytes'),
      external: v('nodejs_external_memory_bytes'),
    };
    return Number.isFinite(h.used) ? h : null;
  } catch {
    return null;
  }
}

async function heapsOf(procs: Array<{ role: string; metricsPort: number }>): Promise<Map<string, Heap | null>> {
  return new Map(await Promise.all(procs.map(async (p) => [p.role, await heapOf(p.metricsPort)] as const)));
}

// ---------------------------------------------------------------------------------------------
// The API, over loopback

interface LaneView {
  lane: string;
  status: string;
  tasks: number;
  completed: number;
  partial: number;
  unavailable: number;
  timeout: number;
  skipped: number;
  failed: number;
  cancelled: number;
  budgetExhausted: number;
}
interface JobView {
  jobRef: string;
  status: string;
  terminal: boolean;
  createdAt: string;
  startedAt: string | null;
  completedAt: string | null;
  progress: { tasksQueued: number; tasksDone: number; objects: number; findings: number };
  lanes: LaneView[];
  coverage: { complete: boolean; limitations: Array<{ code: string; message: string }> };
  ledger: { reserved: number; captured: number; released: number } | null;
}

async function api<T>(
  base: string,
  key: string,
  method: string,
  p: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
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

// ---------------------------------------------------------------------------------------------
// One size

interface SizeResult {
  n: number;
  /** The product's readiness in GET /v2/products when the scan was submitted. */
  readiness: string;
  jobRef: string;
  status: string;
  terminal: boolean;
  wallS: number;
  /** The job's own createdAt → completedAt. */
  jobS: number | null;
  tasks: number;
  ran: number;
  budgetExhausted: number;
  skipped: number;
  cancelled: number;
  byLane: LaneView[];
  objectsPaged: number;
  objectsProgress: number;
  pages: number;
  objectTypes: Map<string, number>;
  inScope: number;
  findings: number;
  limitations: Array<{ code: string; occurrences: number }>;
  ledger: JobView['ledger'];
  rows: ProcRow[];
  labRss: { idleKb: number; peakKb: number };
  heaps: Array<{ role: string; idle: Heap | null; end: Heap | null; rssEndKb: number | null }>;
  logs: Array<{ name: string; errors: number; warns: number; other: number; samples: string[]; exit: number | null }>;
}

function occurrences(message: string): number {
  return Number(/\((\d+) occurrences\)$/.exec(message)?.[1] ?? 1);
}

/** What a process wrote at LOG_LEVEL=warn: pino lines by level, anything else (Node warnings, stack traces). */
function logSummary(p: Proc): { errors: number; warns: number; other: number; samples: string[] } {
  let errors = 0;
  let warns = 0;
  let other = 0;
  const samples = new Set<string>();
  for (const line of p.output().split('\n')) {
    if (!line.trim()) continue;
    try {
      const j = JSON.parse(line) as { level?: number; msg?: string; err?: { message?: string } };
      if ((j.level ?? 0) >= 50) errors++;
      else if ((j.level ?? 0) >= 40) warns++;
      if ((j.level ?? 0) >= 40 && samples.size < 4)
        samples.add(
          `${j.level! >= 50 ? 'error' : 'warn'}: ${j.msg ?? ''}${j.err?.message ? ` (${j.err.message})` : ''}`.slice(
            0,
            200,
          ),
        );
    } catch {
      other++;
      if (samples.size < 4) samples.add(`stderr: ${line.slice(0, 200)}`);
    }
  }
  return { errors, warns, other, samples: [...samples] };
}

interface Ctx {
  lab: RunningLab;
  databaseUrl: string;
  redisUrl: string;
  basePrefix: string;
  secrets: { KEY_PEPPER: string; CURSOR_SECRET: string };
  key: string;
  /** The process group of the size running now (killed by the cleanup). */
  current?: ProcessGroup;
  stopping: boolean;
}

async function runSize(ctx: Ctx, n: number): Promise<SizeResult> {
  const env: Record<string, string | undefined> = {
    ...labEnv(ctx.lab.env),
    NODE_ENV: 'production',
    DATABASE_URL: ctx.databaseUrl,
    REDIS_URL: ctx.redisUrl,
    REDIS_CLUSTER_NODES: undefined,
    // A prefix per size: the second set of processes never sees the first one's heartbeats.
    REDIS_KEY_PREFIX: `${ctx.basePrefix}n${n}:`,
    ...ctx.secrets,
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL || 'warn',
    WEB_CONCURRENCY: '1',
    SHUTDOWN_TIMEOUT_MS: '5000',
    LANE_CONCURRENCY: undefined,
    LANE_TENANT_CONCURRENCY: undefined,
    LANE_POOL_THREADS: undefined,
    LANE_VISIBILITY_MS: undefined,
    // Each role runs its Procfile command, Node options (heap sizing) included. BENCH_NODE_OPTIONS
    // adds options through NODE_OPTIONS; BENCH_PROCFILE_NODE_OPTIONS=0 drops the Procfile's, e.g.
    // to measure with V8's default heap sizing.
    NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS ?? process.env.NODE_OPTIONS,
  };
  const procs = new ProcessGroup();
  ctx.current = procs;
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // Each process serves its private /metrics (METRICS_PORT, as in a deployment): the V8 heap
  // figures of prom-client's default metrics say whether a high RSS is live JS objects.
  const roles: Array<{ role: string; args: string[]; extra: Record<string, string> }> = [
    { role: 'web', args: procfileRoleArgs('web'), extra: { PORT: String(port) } },
    { role: 'orchestrator', args: procfileRoleArgs('orchestrator'), extra: {} },
    ...LANES.map((lane) => ({ role: `lane-${lane}`, args: procfileRoleArgs(`lane-${lane}`), extra: {} })),
  ];
  const started: Array<{ role: string; proc: Proc; metricsPort: number }> = [];
  for (const r of roles) {
    const metricsPort = await freePort();
    started.push({
      role: r.role,
      metricsPort,
      proc: procs.node(r.role, r.args, { ...env, ...r.extra, METRICS_PORT: String(metricsPort) }),
    });
  }
  const sampler = new RssSampler(started.map((s) => ({ role: s.role, pid: s.proc.child.pid! })));
  sampler.start();
  const self = { idleKb: 0, peakKb: 0 };
  const selfTimer = setInterval(
    () => (self.peakKb = Math.max(self.peakKb, readStatus(process.pid)?.rssKb ?? 0)),
    SAMPLE_MS,
  );
  try {
    let readiness = 'unknown';
    log(
      `N=${n}: started ${started.map((s) => `${s.role} (pid ${s.proc.child.pid})`).join(', ')}; waiting for readiness`,
    );
    await until(
      `${PRODUCT} with lanes ${LANES.join(', ')} ready`,
      async () => {
        const dead = started.find((s) => !s.proc.running());
        if (dead) throw new Error(`${dead.role} exited`);
        const r = await api<{
          products: Array<{ product: string; readiness: string; lanes: Array<{ lane: string; readiness: string }> }>;
        }>(base, ctx.key, 'GET', '/v2/products');
        const p = r.body.products?.find((x) => x.product === PRODUCT);
        readiness = p?.readiness ?? 'absent';
        // Without an active lane process the product reads partially_configured (the active lane is
        // optional and only advanced scans with options.active use it): the lanes a passive deep
        // scan needs being ready is what admission checks.
        return (
          (p?.readiness === 'available' || p?.readiness === 'partially_configured') &&
          LANES.every((l) => p.lanes.find((x) => x.lane === l)?.readiness === 'ready')
        );
      },
      READY_TIMEOUT_MS,
      250,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${procs.report(2000)}`);
    });
    await sleep(1000); // let the start-up garbage settle before the idle figure
    sampler.markIdle();
    const heapIdle = await heapsOf(started);
    self.idleKb = readStatus(process.pid)?.rssKb ?? 0;
    self.peakKb = self.idleKb;

    const zone = genZoneName(n);
    log(`N=${n}: POST /v2/scans deep ${zone} (fanout ${genFanout(n)}), maxCredits ${MAX_CREDITS}`);
    const t0 = performance.now();
    const accepted = await api<{ jobRef?: string }>(base, ctx.key, 'POST', '/v2/scans', {
      profile: 'deep',
      target: { type: 'domain_name', value: zone },
      options: { active: false, maxCredits: MAX_CREDITS },
    });
    if (accepted.status !== 202 || !accepted.body.jobRef)
      throw new Error(`POST /v2/scans → ${accepted.status} ${JSON.stringify(accepted.body)}`);
    const jobRef = accepted.body.jobRef;
    let view: JobView;
    let wallS: number;
    let lastLog = performance.now();
    for (;;) {
      const r = await api<JobView>(base, ctx.key, 'GET', `/v2/jobs/${jobRef}`);
      if (r.status !== 200) throw new Error(`GET /v2/jobs/${jobRef} → ${r.status} ${JSON.stringify(r.body)}`);
      view = r.body;
      const now = performance.now();
      if (view.terminal) {
        wallS = (now - t0) / 1000;
        break;
      }
      if (ctx.stopping) throw new Error('interrupted');
      if (now - t0 > SCAN_TIMEOUT_MS) {
        wallS = (now - t0) / 1000;
        log(`N=${n}: not terminal after ${fmt(wallS, 0)} s (BENCH_SCAN_TIMEOUT_S): cancelling ${jobRef}`);
        await api(base, ctx.key, 'POST', `/v2/jobs/${jobRef}/cancel`, {}).catch(() => {});
        break;
      }
      if (now - lastLog > PROGRESS_EVERY_MS) {
        lastLog = now;
        const biggest = [...sampler.rows.values()].sort((a, b) => b.peakKb - a.peakKb)[0];
        log(
          `N=${n}: ${fmt((now - t0) / 1000, 0)} s, ${view.status}: tasks done ${view.progress.tasksDone}, open ${view.progress.tasksQueued}, objects ${view.progress.objects}; largest RSS so far ${biggest?.label} ${mb(biggest?.peakKb ?? 0)} MB`,
        );
      }
      await sleep(POLL_MS);
    }
    log(`N=${n}: ${view.status} after ${fmt(wallS, 1)} s; paging the results`);

    // Objects kept: every page of the results, to the end.
    let objectsPaged = 0;
    let pages = 0;
    let inScope = 0;
    const objectTypes = new Map<string, number>();
    let cursor: string | null = null;
    do {
      const r: {
        status: number;
        body: {
          items: Array<{ type: string; projection?: { inScope?: boolean } }>;
          page: { nextCursor: string | null };
        };
      } = await api(
        base,
        ctx.key,
        'GET',
        `/v2/jobs/${jobRef}/results?limit=${PAGE_LIMIT}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      if (r.status !== 200) throw new Error(`results page ${pages + 1} → ${r.status} ${JSON.stringify(r.body)}`);
      pages++;
      objectsPaged += r.body.items.length;
      for (const it of r.body.items) {
        objectTypes.set(it.type, (objectTypes.get(it.type) ?? 0) + 1);
        if (it.projection?.inScope !== false) inScope++;
      }
      cursor = r.body.page.nextCursor;
    } while (cursor);
    // The job view once more (terminal: it no longer changes) for the final figures.
    view = (await api<JobView>(base, ctx.key, 'GET', `/v2/jobs/${jobRef}`)).body;

    sampler.finish();
    clearInterval(selfTimer);
    // Idle again: RSS and heap a few seconds after the scan (no forced GC: what V8 chose to keep).
    await sleep(SETTLE_MS);
    const heapEnd = await heapsOf(started);
    const rssEnd = new Map([...sampler.rows.values()].map((r) => [r.label, readStatus(r.pid)?.rssKb ?? null]));
    const sum = (k: keyof LaneView) => view.lanes.reduce((a, l) => a + Number(l[k]), 0);
    const ran = view.lanes.reduce((a, l) => a + TERMINAL_TASK_RAN.reduce((b, s) => b + l[s], 0), 0);
    const jobS =
      view.startedAt && view.completedAt ? (Date.parse(view.completedAt) - Date.parse(view.createdAt)) / 1000 : null;

    // Stop the processes (SIGTERM: their own drain), then read what they logged.
    await Promise.all(started.map((s) => s.proc.stop('SIGTERM', 10_000)));
    const logs = started.map((s) => ({ name: s.role, exit: s.proc.child.exitCode ?? null, ...logSummary(s.proc) }));
    return {
      n,
      jobRef,
      readiness,
      status: view.status,
      terminal: view.terminal,
      wallS,
      jobS,
      tasks: sum('tasks'),
      ran,
      budgetExhausted: sum('budgetExhausted'),
      skipped: sum('skipped'),
      cancelled: sum('cancelled'),
      byLane: view.lanes,
      objectsPaged,
      objectsProgress: view.progress.objects,
      pages,
      objectTypes,
      inScope,
      findings: view.progress.findings,
      limitations: view.coverage.limitations.map((l) => ({ code: l.code, occurrences: occurrences(l.message) })),
      ledger: view.ledger,
      rows: [...sampler.rows.values()],
      labRss: self,
      heaps: started.map((st) => ({
        role: st.role,
        idle: heapIdle.get(st.role) ?? null,
        end: heapEnd.get(st.role) ?? null,
        rssEndKb: rssEnd.get(st.role === 'web' ? 'web (worker)' : st.role) ?? null,
      })),
      logs,
    };
  } finally {
    sampler.stop();
    clearInterval(selfTimer);
    await procs.killAll();
    ctx.current = undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Report

function table(head: string[], rows: string[][]): string[] {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    `  ${r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ')}`.trimEnd();
  return [line(head), `  ${w.map((x) => '-'.repeat(x)).join('  ')}`, ...rows.map(line)];
}

function report(results: SizeResult[], loadAtStart: number[]): string {
  const out: string[] = [''];
  out.push(
    'Deep scans of the generated lab zone (test/lab/scan-zones.ts), one run, sizes sequential, fresh processes per size',
  );
  out.push(
    `  POST /v2/scans {profile: deep, target gen<N>.test, active: false, maxCredits ${MAX_CREDITS}}; wall = POST → the ${POLL_MS} ms poll that sees it terminal`,
  );
  out.push(
    `  processes: web (src/server.ts, WEB_CONCURRENCY=1: primary + 1 worker), orchestrator, lane-${LANES.join(', lane-')} (workers/lane.ts;`,
  );
  out.push(
    '  default LANE_CONCURRENCY 32, LANE_TENANT_CONCURRENCY 8, LANE_POOL_THREADS 2); one workspace; the lab in this process.',
  );
  const nodeOptions =
    procfileRoleArgs('lane-web')
      .filter((a) => a.startsWith('--'))
      .join(' ') || '(none)';
  out.push(
    `  Node options: the Procfile's ${nodeOptions}; NODE_OPTIONS ${process.env.BENCH_NODE_OPTIONS ?? process.env.NODE_OPTIONS ?? '(unset)'}`,
  );
  out.push(
    `  ${PRODUCT} readiness at submission: ${[...new Set(results.map((r) => r.readiness))].join(', ')} (no active lane process: a passive deep scan does not use it)`,
  );
  out.push(
    '  objects = items paged from GET /v2/jobs/<ref>/results?limit=500 to the end (progress.objects in brackets);',
  );
  out.push(
    "  hosts found = host objects kept (the zone's dead third serves no page, so its link subtrees are never found);",
  );
  out.push(
    '  tasks ran = completed + partial + unavailable + timeout + failed; budget-stopped = tasks recorded budget_exhausted (never run).',
  );
  out.push('');
  out.push('Scans');
  const STOPS = ['budget_exhausted', 'object_cap_reached', 'deadline_exceeded', 'cancelled'];
  const rows = results.map((r) => {
    const stops = r.limitations.filter((l) => STOPS.includes(l.code)).map((l) => l.code);
    return [
      String(r.n),
      String(r.objectTypes.get('host') ?? 0),
      fmt(r.wallS, 1),
      `${r.ran}/${r.tasks}`,
      fmt(r.ran / r.wallS, 1),
      String(r.budgetExhausted),
      `${r.objectsPaged} (${r.objectsProgress})`,
      fmt(r.objectsPaged / r.wallS, 1),
      stops.join(', ') || 'none',
      r.terminal ? r.status : `NOT terminal (${r.status})`,
    ];
  });
  out.push(
    ...table(
      [
        'zone hosts',
        'hosts found',
        'wall s',
        'tasks ran/all',
        'tasks/s',
        'budget-stopped',
        'objects',
        'objects/s',
        'stop limitations',
        'status',
      ],
      rows,
    ),
  );
  for (const r of results) {
    const lanes = r.byLane
      .map(
        (l) =>
          `${l.lane} ${l.tasks}${l.budgetExhausted ? ` (${l.budgetExhausted} budget)` : ''}${l.skipped ? ` (${l.skipped} skipped)` : ''}${l.failed + l.timeout + l.unavailable ? ` (${l.failed} failed, ${l.timeout} timeout, ${l.unavailable} unavailable)` : ''}`,
      )
      .join(', ');
    const types = [...r.objectTypes]
      .sort((a, b) => b[1] - a[1])
      .map(([t, c]) => `${t} ${c}`)
      .join(', ');
    const has = (c: string) => (r.limitations.some((l) => l.code === c) ? 'yes' : 'no');
    out.push(
      `  N=${r.n}: ${r.jobRef}; job createdAt→completedAt ${r.jobS === null ? '—' : `${fmt(r.jobS, 1)} s`}; tasks by lane: ${lanes}`,
    );
    out.push(
      `    objects by type: ${types || '—'} (${r.inScope} in scope); findings ${r.findings}; ${r.pages} result pages`,
    );
    out.push(
      `    budget_exhausted in limitations: ${has('budget_exhausted')}; object_cap_reached: ${has('object_cap_reached')}; credits captured ${r.ledger?.captured ?? '—'} of ${MAX_CREDITS} reserved, released ${r.ledger?.released ?? '—'}`,
    );
    out.push(
      `    limitations: ${r.limitations.map((l) => `${l.code}${l.occurrences > 1 ? ` ×${l.occurrences}` : ''}`).join(', ') || '—'}`,
    );
    if (r.objectsPaged !== r.objectsProgress)
      out.push(`    note: paged ${r.objectsPaged} objects but progress.objects says ${r.objectsProgress}`);
  }
  const [a, b] = results;
  if (a && b) {
    const wallRatio = b.wallS / a.wallS;
    const tpsRatio = b.ran / b.wallS / (a.ran / a.wallS);
    const workRatio = b.ran / Math.max(1, a.ran);
    const stopped =
      b.budgetExhausted > 0 ||
      b.limitations.some((l) => l.code === 'budget_exhausted' || l.code === 'object_cap_reached');
    out.push('');
    out.push(
      `Scaling ${a.n} → ${b.n} hosts (${fmt(b.n / a.n, 0)}× the zone; ${fmt(workRatio, 2)}× the tasks that ran)`,
    );
    out.push(
      `  wall ratio ${fmt(wallRatio, 2)}× — target ≤ ${WALL_RATIO_TARGET}×: ${wallRatio <= WALL_RATIO_TARGET ? 'met' : 'NOT met'}${!a.terminal || !b.terminal ? ' (a scan did not finish: the ratio is a lower bound)' : ''}`,
    );
    out.push(
      `  tasks/s ratio ${fmt(tpsRatio, 2)} (1.00 = the same rate per task at both sizes; below 1: each task got slower as the scan grew)`,
    );
    out.push(`  objects/s ratio ${fmt(b.objectsPaged / b.wallS / (a.objectsPaged / a.wallS), 2)}`);
    if (stopped)
      out.push(
        `  the ${b.n}-host scan stopped on its budget or object cap: its wall covers ${b.ran} tasks, not the whole zone; tasks/s is the fair comparison`,
      );
  }

  out.push('');
  out.push(
    `Peak RSS per process (MB): idle when ready / peak sampled every ${SAMPLE_MS} ms from the POST to the end of paging / VmHWM at the stop (lifetime, start-up included)`,
  );
  const labels = [...new Set(results.flatMap((r) => r.rows.map((x) => x.label)))];
  const rssRows = labels.map((label) => [
    label,
    ...results.map((r) => {
      const x = r.rows.find((y) => y.label === label);
      return x ? `${mb(x.idleKb)} / ${mb(x.peakKb)} / ${mb(x.hwmKb)}` : '—';
    }),
  ]);
  rssRows.push([
    '(this process: bench + lab, not in the target)',
    ...results.map((r) => `${mb(r.labRss.idleKb)} / ${mb(r.labRss.peakKb)} / —`),
  ]);
  out.push(...table(['process', ...results.map((r) => `N=${r.n}`)], rssRows));
  const over = results.flatMap((r) =>
    r.rows
      .filter((x) => Math.max(x.peakKb, x.everKb, x.hwmKb ?? 0) > RSS_TARGET_MB * 1024)
      .map((x) => `${x.label} at N=${r.n} (${mb(Math.max(x.peakKb, x.everKb, x.hwmKb ?? 0))} MB)`),
  );
  out.push(
    `  every process ≤ ${RSS_TARGET_MB} MB at both sizes: ${over.length === 0 ? 'met' : `NOT met: ${over.join('; ')}`}`,
  );
  if (a && b) {
    const growth = labels
      .map((label) => {
        const x = a.rows.find((y) => y.label === label);
        const y = b.rows.find((z) => z.label === label);
        return x && y ? { label, d: (y.peakKb - x.peakKb) / 1024 } : null;
      })
      .filter((g): g is { label: string; d: number } => g !== null)
      .sort((p, q) => q.d - p.d);
    out.push(
      `  sampled peak at N=${b.n} minus N=${a.n}: ${growth.map((g) => `${g.label} ${g.d >= 0 ? '+' : ''}${fmt(g.d, 0)}`).join(', ')} MB`,
    );
  }

  out.push('');
  out.push(
    `Memory at rest (MB): RSS / V8 heap used / heap total / external, when ready and ${SETTLE_MS / 1000} s after the results were paged (no forced GC;`,
  );
  out.push("  from each process's /metrics; web: the primary's aggregate, i.e. its one worker)");
  const h = (x: Heap | null, rssKb: number | null) =>
    `${mb(rssKb)} / ${x ? `${fmt(x.used / 2 ** 20, 0)} / ${fmt(x.total / 2 ** 20, 0)} / ${fmt(x.external / 2 ** 20, 0)}` : '— / — / —'}`;
  const heapRoles = [...new Set(results.flatMap((r) => r.heaps.map((x) => x.role)))];
  out.push(
    ...table(
      ['process', ...results.flatMap((r) => [`N=${r.n} ready`, `N=${r.n} after`])],
      heapRoles.map((role) => [
        role,
        ...results.flatMap((r) => {
          const x = r.heaps.find((y) => y.role === role);
          const idleRow = r.rows.find((y) => y.label === (role === 'web' ? 'web (worker)' : role));
          return [h(x?.idle ?? null, idleRow?.idleKb ?? null), h(x?.end ?? null, x?.rssEndKb ?? null)];
        }),
      ]),
    ),
  );

  out.push('');
  out.push('Process logs (LOG_LEVEL=warn) and exit codes after SIGTERM');
  for (const r of results) {
    for (const l of r.logs) {
      const bad = l.errors + l.warns + l.other > 0 || l.exit !== 0;
      out.push(
        `  N=${r.n} ${l.name}: exit ${l.exit ?? 'signal'}, ${l.errors} error, ${l.warns} warn, ${l.other} other lines${bad && l.samples.length ? `: ${l.samples.join(' | ')}` : ''}`,
      );
    }
  }
  out.push('');
  out.push(
    `machine: ${os.availableParallelism()} cores (${os.cpus()[0]?.model ?? 'unknown'}), load average ${loadAtStart.map((l) => fmt(l, 2)).join(' / ')} at the start, ${os
      .loadavg()
      .map((l) => fmt(l, 2))
      .join(' / ')} at the end`,
  );
  out.push(
    '  (MariaDB, Redis, the lab, this process and every process above share these cores, with other users of the machine)',
  );
  return `${out.join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------
// Main

/** The lab's RDAP server (as test/lab/serve.ts starts it), so the domain lane asks loopback only. */
const rdapPart: LabPartFactory = async () => {
  const rdap = await startLabRdap();
  return { name: 'rdap', zones: domainZones, env: { RDAP_BASE_URL: rdap.baseUrl }, close: () => rdap.close() };
};

async function main(): Promise<number> {
  const loadAtStart = os.loadavg();
  const { databaseUrl: serverUrl, redisUrl } = await ensureServices({ root });
  const suffix = `${runTimestamp(new Date())}_${randomBytes(3).toString('hex')}`;
  const dbName = `lss_benchscan_${suffix}`;
  const basePrefix = `lssbench:${suffix}:`;
  let lab: RunningLab | undefined;
  let dbh: DbHandle | undefined;
  const ctx: Partial<Ctx> & { stopping: boolean } = { stopping: false };
  let cleaned: Promise<void> | undefined;
  const cleanup = () =>
    (cleaned ??= (async () => {
      await ctx.current?.killAll();
      await dbh?.close().catch(() => {});
      await lab?.close().catch(() => {});
      await dropDatabase(serverUrl, dbName).then(
        () => log(`dropped database ${dbName}`),
        (e: Error) => log(`warning: could not drop ${dbName}: ${e.message}`),
      );
      await deletePrefixedKeys(redisUrl, basePrefix).then(
        (k) => log(`deleted ${k} Redis keys ${basePrefix}*`),
        (e: Error) => log(`warning: could not delete Redis keys ${basePrefix}*: ${e.message}`),
      );
    })());
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      log(`${sig}: stopping and cleaning up`);
      ctx.stopping = true;
      void cleanup().finally(() => process.exit(130));
    });
  }

  try {
    const databaseUrl = await createDatabase(serverUrl, dbName);
    await migrate(databaseUrl);
    lab = await startLab({ parts: [rdapPart, webLabPart(), mailLabPart, scanLabPart({ generated: [...SIZES] })] });
    log(
      `database ${dbName}; Redis ${redisUrl} prefix ${basePrefix}; lab DNS ${lab.env.DNS_SERVERS}, parts ${lab.parts.join(', ')}`,
    );
    const secrets = {
      KEY_PEPPER: randomBytes(32).toString('base64url'),
      CURSOR_SECRET: randomBytes(32).toString('base64url'),
    };

    // One workspace: responsible use accepted (every scan profile needs it), generous limits,
    // credits for both scans' reservations, a key with the scan scopes.
    dbh = createDb(databaseUrl, { connectionLimit: 2 });
    // The policy version the processes will require: their config, parsed from the same env.
    const policy = parseConfig({
      ...process.env,
      ...labEnv(lab.env),
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      ...secrets,
    }).RESPONSIBLE_USE_VERSION;
    const ws = await createWorkspace(dbh.db, { name: 'bench-scan', acceptResponsibleUse: policy });
    await setLimits(dbh.db, ws.workspaceId, undefined, {
      app: { perMinute: 1_000_000, burst: 100_000 },
      products: { [PRODUCT]: { perMinute: 100_000, perHour: 1_000_000 } },
    });
    await grantCredits(
      dbh.db,
      await workspaceInternalId(dbh.db, ws.workspaceId),
      MAX_CREDITS * SIZES.length + 1000,
      `bench:scan:${ws.workspaceId}`,
    );
    const key = (
      await createKey(dbh.db, secrets.KEY_PEPPER, { workspace: ws.workspaceId, scopes: ['scan:create', 'scan:read'] })
    ).key;
    Object.assign(ctx, { lab, databaseUrl, redisUrl, basePrefix, secrets, key });

    const results: SizeResult[] = [];
    for (const n of SIZES) results.push(await runSize(ctx as Ctx, n));
    process.stdout.write(report(results, loadAtStart));
    return results.every((r) => r.terminal) ? 0 : 1;
  } finally {
    await cleanup();
  }
}

try {
  process.exit(await main());
} catch (e) {
  log(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exit(1);
}
