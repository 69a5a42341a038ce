// `npm run bench:scan` = `node test/bench/scan.ts`: deep scans of the generated lab zone at 2,000
// and at 20,000 hosts in one run, each on real processes, against the network floor of the same
// zone, and what they cost each process in memory.
//
//   Why: a recursive scan plans as results arrive, applies finished tasks in batches per job and
//   keeps nothing of a job in process memory (ARCHITECTURE.md, "Planning as results arrive";
//   docs/operations.md, "Scan size"). Targets (issue 20): at 2,000 hosts, tasks/s ≥ 3× the old
//   code's (BENCH_SCAN_BASE below); at 20,000 hosts, every host covered, wall ≤ 11× the 2,000-host
//   wall, scan wall ≤ 30× the network floor, and every process ≤ 256 MB RSS.
//
//   What: POST /v2/scans { profile: 'deep', target: gen<N>.test, options: { active: false,
//   maxCredits: 3.5 × N } } (7,000 and 70,000: enough for every host; the object cap scales with
//   it) for each size of BENCH_SCAN_SIZES (default "2000,20000"; BENCH_SCAN_SIZES=2000 is the fast
//   run). test/lab/scan-zones.ts: N hosts linked as a tree from the apex page, a third web hosts,
//   a third CNAMEs, a third without a web server, every 25th with an MX. Each scan is timed from
//   its POST to the poll (GET /v2/jobs/<ref>, every 250 ms) that sees it terminal; its objects are
//   counted by paging GET /v2/jobs/<ref>/results?limit=500 to the end, and "covered" counts the
//   zone's names (apex, h1..h(N-1), mail) among the host objects. Before each size, with no
//   service process running, the network floor (test/bench/network-floor.ts): every name resolved
//   once over UDP with dns-packet and every page fetched once over HTTP, 32 at a time, against
//   the same lab; the report prints wall ÷ floor next to tasks/s.
//
//   The old code in the same run: BENCH_SCAN_BASE=<checkout> (e.g. `git worktree add --detach
//   ../a-scan-base <commit>` with this checkout's node_modules linked into it) scans each size up to
//   BENCH_SCAN_BASE_MAX_N (default 2,000) first with that checkout's processes (its Procfile, run
//   from its directory; same lab; a database of its own, built by its own migrations, so an index
//   added since does not speed the old code up), maxCredits capped at
//   BENCH_SCAN_BASE_CREDITS (default 5,000, the old deep bound): compare tasks/s.
//
//   Processes: for each size a fresh set of the Procfile roles, each its own OS process started
//   with its Procfile command (Node options included: the heap sizing of docs/operations.md):
//   `src/server.ts` (WEB_CONCURRENCY=1: the cluster primary and its one Express worker),
//   `workers/orchestrator.ts`, and `workers/lane.ts <lane>` for each lane a passive deep
//   scan uses (dns, mail, web, domain), with the default worker settings (LANE_CONCURRENCY 32,
//   LANE_CONCURRENCY 256: the lane's capacity, shared between workspaces; LANE_POOL_THREADS 2). VmRSS of every process and of its descendants
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
//   The latency lab (issue 32): `npm run bench:scan -- --latency 50,150` answers every DNS reply
//   50 ms late and every page of the generated zone 150 ms late (test/lab/dns-server.ts
//   replyDelayMs, test/lab/scan-lab.ts pageDelayMs), and the floor is measured on the same lab
//   (every name resolved once, 100 at a time; every page fetched once, 50 at a time). Targets with
//   latency: wall ≤ 3× the floor; without: ≤ 30×. The zone is the issue's: N hosts as an F-ary tree
//   of links, every host a page, pages on 250 loopback addresses, HTTP only.
//   `--fairness` (with BENCH_SCAN_SIZES=2000): two workspaces start a deep scan of the zone at once,
//   and a third workspace's web lookup of one page is timed on the idle lanes first, then while
//   both scans run (BENCH_SCAN_LOOKUPS, default 5, of each, one after the other; the medians are
//   the figures): targets each scan's wall within 1.3× of the other's, the lookup within 2× of its
//   idle time. Each lookup's path is printed from the database's own timestamps (job created →
//   each task planned, claimed by a lane, done, applied → job terminal → seen by the poll).
//   BENCH_CPU_PROF=<dir> (BENCH_CPU_PROF_ROLES=orchestrator,lane-web; default every role): each
//   such role writes a V8 CPU profile there when it stops. BENCH_LANE_POOL_THREADS sets every
//   lane's LANE_POOL_THREADS (default: the service's 2; 0 parses inline): what the parse threads
//   cost in RSS (docs/products/scan.md, "Memory").
//   CPU: each process's user + system seconds (its threads and children) from the POST to the job
//   terminal, and the machine's MariaDB and Redis servers' and this process's (the lab and the
//   bench): whether the two cores were the bound, and which process spent them. Steadier than the
//   wall on a shared machine; a change's CPU per task (ms per task = CPU-seconds per 1,000 tasks)
//   is the figure to compare. Issue 48's target: the roles, MariaDB and Redis ≤ 3 ms a task. The
//   machine's MariaDB also serves other work on a shared machine, so the report adds what its
//   threads serving this run's database spent (test/bench/db-thread-cpu.ts). The report also
//   counts the tasks by outcome (every lane's) and the zone's hosts covered.
//
//   Like the other benchmarks it makes MySQL and Redis available (ops/services.ts), uses a
//   throwaway database lss_benchscan_<time>_<hex> and Redis prefix lssbench:<same>:, and removes
//   both at the end, on an error and on Ctrl-C. Every connection goes to 127.0.0.0/8: the lab DNS
//   answers every name, RDAP_BASE_URL is the lab's, well-known ports are mapped to lab ports.
//   The rate-limited zone (issue 48): BENCH_SCAN_DNS_RRL=<replies/s> (e.g. 200, NSD's default) makes
//   the lab DNS server drop the UDP replies beyond that rate to one client, as NSD's and BIND's
//   response rate limiting do (test/lab/dns-server.ts `rateLimit`; the floor meets it too). The
//   report adds, per scan, the tasks whose DNS questions were asked again (dns_questions_retried)
//   and those with a question left indeterminate (dns_indeterminate); target: every host covered
//   and resolved (no dns task `timeout`).
//   BENCH_SCAN_RESOLVER=unbound: the roles resolve through a real recursive resolver (Debian's
//   Unbound 1.17, installed on demand; test/lab/recursive-resolver.ts) in front of the lab's DNS
//   server, as a deployment does: a fresh Unbound per scan (a cold cache each time), its CPU
//   reported on its own line and left out of the roles' sum like the lab's. With
//   BENCH_SCAN_DNS_RRL the zone rate-limits Unbound (one client), which then answers late or
//   SERVFAIL. The floor still asks the lab directly.
//   BENCH_SCAN_TIMEOUT_S (default 1800) bounds each scan; a scan not terminal by then is cancelled,
//   reported, and the run exits 1.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDatabase, deletePrefixedKeys, dropDatabase, ensureServices, runTimestamp } from '../../ops/services.ts';
import { migrate } from '../../src/db/migrations.ts';
import { parseConfig } from '../../src/config/config.ts';
import { connectionPlan, describePlan } from '../../src/config/connection-budget.ts';
import { createDb, type DbHandle } from '../../src/db/database.ts';
import { createKey, createWorkspace, setLimits, workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { labEnv } from '../helpers/lab-runtime.ts';
import { ProcessGroup, freePort, until, type Proc } from '../helpers/processes.ts';
import { domainZones } from '../lab/domain-zones.ts';
import { mailLabPart } from '../lab/mail-lab.ts';
import { startLabRdap } from '../lab/rdap-server.ts';
import { scanLabPart } from '../lab/scan-lab.ts';
import { GEN_WEB_ADDRESSES, genFanout, genZoneName } from '../lab/scan-zones.ts';
import { startLab, type LabPartFactory, type RunningLab } from '../lab/serve.ts';
import { startUnbound } from '../lab/recursive-resolver.ts';
import { webLabPart } from '../lab/web-lab.ts';
import { childrenOf, fmt, procfileRoleArgs } from './bench-kit.ts';
import { DbThreadCpu } from './db-thread-cpu.ts';
import { genNames, measureFloor, type Floor } from './network-floor.ts';

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);
const root = path.resolve(import.meta.dirname, '../..');

/** Zone sizes, in order; BENCH_SCAN_SIZES=2000 runs only the fast one. */
const SIZES = (process.env.BENCH_SCAN_SIZES ?? '2000,20000').split(',').map((x) => Number(x.trim()));
const PRODUCT = 'scan.recursive.v1';
/** maxCredits per zone host: 7,000 at 2,000 hosts, 70,000 at 20,000 (enough for every host). */
const CREDITS_PER_HOST = 3.5;
const creditsFor = (n: number) => Math.round(n * CREDITS_PER_HOST);
/**
 * BENCH_SCAN_BASE=<checkout> (e.g. a `git worktree` of main): each size up to BENCH_SCAN_BASE_MAX_N
 * (default 2,000) is scanned first by that checkout's processes (its Procfile, run from its
 * directory; same lab; its own database, built by its own migrations), with maxCredits capped at
 * BENCH_SCAN_BASE_CREDITS (default 5,000: the old deep bound): tasks/s is the fair comparison.
 */
const BASE = process.env.BENCH_SCAN_BASE ? path.resolve(process.env.BENCH_SCAN_BASE) : null;
const BASE_MAX_N = Number(process.env.BENCH_SCAN_BASE_MAX_N ?? 2000);
const BASE_CREDITS = Number(process.env.BENCH_SCAN_BASE_CREDITS ?? 5000);
const TPS_VS_BASE_TARGET = 3;
const argValue = (flag: string): string | undefined => {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
/** --latency DNS_MS,PAGE_MS: every lab DNS reply and every generated page that much late. */
const LATENCY = (() => {
  const v = argValue('--latency');
  if (!v) return { dnsMs: 0, pageMs: 0 };
  const [dnsMs, pageMs] = v.split(',').map((x) => Number(x.trim()));
  if (!Number.isFinite(dnsMs) || !Number.isFinite(pageMs)) throw new Error('--latency DNS_MS,PAGE_MS');
  return { dnsMs: dnsMs!, pageMs: pageMs! };
})();
const WITH_LATENCY = LATENCY.dnsMs > 0 || LATENCY.pageMs > 0;
const FAIRNESS = process.argv.includes('--fairness');
/** BENCH_SCAN_DNS_RRL=<replies/s>: the lab DNS server rate-limits like NSD's RRL (issue 48). */
const DNS_RRL = process.env.BENCH_SCAN_DNS_RRL ? Number(process.env.BENCH_SCAN_DNS_RRL) : null;
/** BENCH_SCAN_RESOLVER=unbound: the roles ask a recursive resolver in front of the lab (issue 48 item 5). */
const RESOLVER = process.env.BENCH_SCAN_RESOLVER ?? 'direct';
if (RESOLVER !== 'direct' && RESOLVER !== 'unbound') {
  process.stderr.write(`BENCH_SCAN_RESOLVER must be direct or unbound (got ${RESOLVER})\n`);
  process.exit(2);
}
/** The lane's capacity (LANE_CONCURRENCY's default) the report divides check time by. */
const CAPACITY = Number(process.env.LANE_CONCURRENCY ?? 256);
const FLOOR_RATIO_TARGET = WITH_LATENCY ? 3 : 30;
const FAIR_WALL_TARGET = 1.3;
const FAIR_LOOKUP_TARGET = 2;
/** The worker lanes a passive deep scan uses (src/products/scan/index.ts workerLanesFor). */
const LANES = ['dns', 'mail', 'web', 'domain'] as const;
const WALL_RATIO_TARGET = 11;
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

// CPU time (user + system, seconds) of a process and its descendants (the web role's workers,
// lane pool threads are threads of their process): read at the POST and when the job is terminal,
// the scan's CPU per process, a figure far steadier than the wall on a shared 2-core machine.
const CLK_TCK = 100; // USER_HZ on Linux
function cpuSeconds(pid: number): number {
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...childrenOf(tree[i]!));
  let ticks = 0;
  for (const p of tree) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      // Fields after the command (which may hold spaces) start after its closing parenthesis.
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]); // utime, stime (fields 14 and 15)
    } catch {
      // gone
    }
  }
  return ticks / CLK_TCK;
}

/** The machine's MariaDB and Redis servers (by process name), whose CPU the scan also spends. */
function serverPids(): Array<{ label: string; pid: number }> {
  const out: Array<{ label: string; pid: number }> = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const comm = readFileSync(`/proc/${d}/comm`, 'utf8').trim();
      if (comm === 'mariadbd' || comm === 'mysqld') out.push({ label: `MariaDB (${comm} ${d})`, pid: Number(d) });
      else if (comm === 'redis-server') out.push({ label: `Redis (redis-server ${d})`, pid: Number(d) });
    } catch {
      // gone
    }
  }
  return out;
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

/** A histogram of a process's /metrics, all labels summed: how many observations, and their sum. */
async function histogramOf(port: number, name: string): Promise<{ count: number; sumS: number } | null> {
  try {
    const text = await (
      await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(10_000) })
    ).text();
    const total = (suffix: string) =>
      [...text.matchAll(new RegExp(`^${name}_${suffix}(?:\\{[^}]*\\})? ([0-9.e+]+)$`, 'gm'))].reduce(
        (a, m) => a + Number(m[1]),
        0,
      );
    return { count: total('count'), sumS: total('sum') };
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

interface Run {
  n: number;
  /** This checkout's code, or BENCH_SCAN_BASE's. */
  code: 'new' | 'base';
  credits: number;
  floor: Floor;
}

interface SizeResult extends Run {
  /** --fairness: the two scans' walls and the third workspace's lookup, idle and during them. */
  fair: Fairness | null;
  label: string;
  /** Per lane role: its checks, and the seconds they took in all (the lane's own histogram). */
  checkTimes: Map<string, { count: number; sumS: number } | null>;
  /** The orchestrator's result batches (null: the base code has none). */
  batches: { tasks: { count: number; sumS: number } | null; seconds: { count: number; sumS: number } | null };
  /** Names of the zone (genNames) found as host objects, of how many. */
  covered: number;
  zoneNames: number;
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
  limitations: Array<{ code: string; occurrences: number; message: string }>;
  ledger: JobView['ledger'];
  rows: ProcRow[];
  /** CPU seconds from the POST to the job terminal, per process (the bench's own: the lab and the bench). */
  cpu: Array<{ label: string; s: number }>;
  /** CPU seconds of the MariaDB threads serving this run's database (db-thread-cpu.ts), POST to terminal, and how many. */
  dbCpu: { s: number; threads: number; peakConnections: number; refused: number | null };
  /** The roles' connection plan (src/config/connection-budget.ts), as their settings give it. */
  connectionPlan: string | null;
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
  /** Per code: its own database (the base checkout's migrations for the base: its schema, its indexes). */
  databases: Record<'new' | 'base', { databaseUrl: string; key: string; others: string[] } | undefined>;
  redisUrl: string;
  basePrefix: string;
  secrets: { KEY_PEPPER: string; CURSOR_SECRET: string; WEBHOOK_SECRET_KEY: string };
  /** The process group of the size running now (killed by the cleanup). */
  current?: ProcessGroup;
  stopping: boolean;
}

interface Fairness {
  t0: number;
  jobRefs: string[];
  wallsS: number[];
  /** Medians of LOOKUPS_EACH lookups. */
  lookupIdleMs: number;
  lookupBusyMs: number;
  idle: TimedLookup[];
  busy: TimedLookup[];
  /** The lab's own answer for the lookup's page, fetched directly (no service): medians idle and during the scans (ms). */
  labIdleMs: number;
  labBusyMs: number;
}

/**
 * The control: the lookup's page fetched straight from the lab (its address and mapped port, the
 * Host header), timed from the request to the last byte. The lab (DNS and 250 web servers) runs in
 * this process and serves both scans too, so its own queueing under their load is part of what
 * the lookup sees, and not the service's.
 */
function labFetch(address: string, port: number, host: string): Promise<number> {
  const t = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.get({ host: address, port, path: '/', headers: { host }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(performance.now() - t));
    });
    req.on('error', reject);
    req.setTimeout(30_000, () => req.destroy(new Error('lab fetch timed out')));
  });
}

/** Lookups timed on the idle lanes and during the scans (the median is the figure). */
const LOOKUPS_EACH = Number(process.env.BENCH_SCAN_LOOKUPS ?? 5);

interface TimedLookup {
  jobRef: string;
  ms: number;
  /** Wall-clock ms of the POST and of the poll that saw it terminal (to line up with the database's timestamps). */
  postedAt: number;
  seenAt: number;
}

/** A web lookup of one page of the zone by `key`, from its POST to the poll that sees it terminal (ms). */
async function timedLookup(base: string, key: string, url: string): Promise<TimedLookup> {
  const postedAt = Date.now();
  const t = performance.now();
  const r = await api<{ jobRef?: string }>(base, key, 'POST', '/v2/lookups/web', { url });
  if (r.status !== 202 || !r.body.jobRef)
    throw new Error(`POST /v2/lookups/web → ${r.status} ${JSON.stringify(r.body)}`);
  for (;;) {
    const v = await api<JobView>(base, key, 'GET', `/v2/jobs/${r.body.jobRef}`);
    if (v.body.terminal) return { jobRef: r.body.jobRef, ms: performance.now() - t, postedAt, seenAt: Date.now() };
    await sleep(25);
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/**
 * Where a timed lookup spent its time, from the database's own timestamps (one clock: the
 * MariaDB server's, DATETIME(3)): admission (job created) → planned (its first task row) →
 * claimed by a lane (started_at) → check done (finished_at) → applied by the orchestrator
 * (applied_at) → terminal (completed_at) → seen by the poll.
 */
async function lookupPath(databaseUrl: string, lookups: TimedLookup[]): Promise<string[]> {
  const dbh = createDb(databaseUrl, { connectionLimit: 1 });
  const out: string[] = [];
  try {
    for (const l of lookups) {
      const job = await dbh.db
        .selectFrom('jobs')
        .select(['id', 'created_at', 'completed_at'])
        .where('public_id', '=', l.jobRef)
        .executeTakeFirst();
      if (!job) continue;
      const tasks = await dbh.db
        .selectFrom('tasks')
        .select(['check_name', 'created_at', 'started_at', 'finished_at', 'applied_at'])
        .where('job_id', '=', job.id)
        .execute();
      const ms = (d: Date | null | undefined) => (d ? new Date(d).getTime() : NaN);
      const c = ms(job.created_at as Date);
      const rel = (d: Date | null | undefined) => fmt(ms(d) - c, 0);
      const parts = tasks.map(
        (t) =>
          `${t.check_name}: planned +${rel(t.created_at as Date)} claimed +${rel(t.started_at as Date | null)} done +${rel(t.finished_at as Date | null)} applied +${rel(t.applied_at as Date | null)}`,
      );
      out.push(
        `${fmt(l.ms, 0)} ms: POST→created ${fmt(c - l.postedAt, 0)}; ${parts.join('; ')}; terminal +${rel(job.completed_at as Date | null)}; seen +${fmt(l.seenAt - c, 0)}`,
      );
    }
  } finally {
    await dbh.close();
  }
  return out;
}

/**
 * --fairness: the third workspace's lookup on the idle lanes; then two workspaces' deep scans of
 * the zone posted at once; the lookup again while both run; both scans polled to the end.
 */
async function fairness(
  base: string,
  keys: string[],
  zone: string,
  credits: number,
  labPort: number,
): Promise<Fairness> {
  const [a, b, c] = keys as [string, string, string];
  const url = `http://h1.${zone}/`;
  // h1's address in the generated zone (test/lab/scan-zones.ts: host i on address i mod 250).
  const lab = () => labFetch(GEN_WEB_ADDRESSES[1 % GEN_WEB_ADDRESSES.length]!, labPort, `h1.${zone}`);
  const labIdle: number[] = [];
  for (let i = 0; i < LOOKUPS_EACH; i++) labIdle.push(await lab());
  await timedLookup(base, c, url); // warm: the web lane's first check loads its modules
  const idle: TimedLookup[] = [];
  for (let i = 0; i < LOOKUPS_EACH; i++) idle.push(await timedLookup(base, c, url));
  const t0 = performance.now();
  const accepted = await Promise.all(
    [a, b].map((k) =>
      api<{ jobRef?: string }>(base, k, 'POST', '/v2/scans', {
        profile: 'deep',
        target: { type: 'domain_name', value: zone },
        options: { active: false, maxCredits: credits },
      }),
    ),
  );
  const jobRefs = accepted.map((r) => {
    if (r.status !== 202 || !r.body.jobRef) throw new Error(`POST /v2/scans → ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.jobRef;
  });
  const walls: Array<number | null> = [null, null];
  const polling = (async () => {
    while (walls.some((w) => w === null)) {
      for (const i of [0, 1]) {
        if (walls[i] !== null) continue;
        const v = await api<JobView>(base, [a, b][i]!, 'GET', `/v2/jobs/${jobRefs[i]}`);
        if (v.body.terminal) walls[i] = (performance.now() - t0) / 1000;
      }
      if (performance.now() - t0 > SCAN_TIMEOUT_MS) throw new Error('fairness scans not terminal in time');
      await sleep(POLL_MS);
    }
  })();
  await sleep(3000); // both scans fanned out
  const busy: TimedLookup[] = [];
  const labBusy: number[] = [];
  for (let i = 0; i < LOOKUPS_EACH && walls.every((w) => w === null); i++) {
    busy.push(await timedLookup(base, c, url));
    labBusy.push(await lab());
    await sleep(500);
  }
  await polling;
  const lookupIdleMs = median(idle.map((l) => l.ms));
  const lookupBusyMs = median(busy.map((l) => l.ms));
  log(
    `fairness: scans ${walls.map((w) => fmt(w!, 1)).join(' s / ')} s; lookup ${fmt(lookupIdleMs, 0)} ms idle, ${fmt(lookupBusyMs, 0)} ms during the scans`,
  );
  const labIdleMs = median(labIdle);
  const labBusyMs = median(labBusy);
  log(
    `fairness: the lab's own answer for that page ${fmt(labIdleMs, 0)} ms idle, ${fmt(labBusyMs, 0)} ms during the scans`,
  );
  return { t0, jobRefs, wallsS: walls as number[], lookupIdleMs, lookupBusyMs, idle, busy, labIdleMs, labBusyMs };
}

/** The connection plan the roles compute from `env` (what each role's pool may open), as one line. */
function rolePlan(env: Record<string, string | undefined>): string | null {
  try {
    const merged = Object.fromEntries(
      Object.entries({ ...process.env, ...env }).filter((e): e is [string, string] => e[1] !== undefined),
    );
    return describePlan(connectionPlan(parseConfig(merged)));
  } catch {
    return null;
  }
}

async function runSize(ctx: Ctx, run: Run): Promise<SizeResult> {
  const { n, credits } = run;
  const label = `N=${n}${run.code === 'base' ? ' base' : ''}`;
  const checkout = run.code === 'base' ? BASE! : root;
  const { databaseUrl, key } = ctx.databases[run.code]!;
  const env: Record<string, string | undefined> = {
    ...labEnv(ctx.lab.env),
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl,
    REDIS_URL: ctx.redisUrl,
    REDIS_CLUSTER_NODES: undefined,
    // A prefix per size: the second set of processes never sees the first one's heartbeats.
    REDIS_KEY_PREFIX: `${ctx.basePrefix}n${n}${run.code}:`,
    ...ctx.secrets,
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL || 'warn',
    WEB_CONCURRENCY: '1',
    SHUTDOWN_TIMEOUT_MS: '5000',
    LANE_CONCURRENCY: undefined,
    // BENCH_LANE_POOL_THREADS: the lanes' parse threads (0 parses inline: what the pool threads cost in RSS).
    LANE_POOL_THREADS: process.env.BENCH_LANE_POOL_THREADS,
    LANE_VISIBILITY_MS: undefined,
    // Each role runs its Procfile command, Node options (heap sizing) included. BENCH_NODE_OPTIONS
    // adds options through NODE_OPTIONS; BENCH_PROCFILE_NODE_OPTIONS=0 drops the Procfile's, e.g.
    // to measure with V8's default heap sizing.
    NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS ?? process.env.NODE_OPTIONS,
  };
  const procs = new ProcessGroup();
  ctx.current = procs;
  // A fresh resolver per scan: the second of two runs never starts with the first one's cache.
  const resolver = RESOLVER === 'unbound' ? await startUnbound(procs, ctx.lab.env.DNS_SERVERS!, log) : null;
  if (resolver) env.DNS_SERVERS = `[127.0.0.1]:${resolver.address.split(':')[1]}`;
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // Each process serves its private /metrics (METRICS_PORT, as in a deployment): the V8 heap
  // figures of prom-client's default metrics say whether a high RSS is live JS objects.
  // BENCH_CPU_PROF=<dir> (with BENCH_CPU_PROF_ROLES=orchestrator,lane-web; default every role):
  // each such role writes a V8 CPU profile there when it stops (node --cpu-prof).
  const profDir = process.env.BENCH_CPU_PROF;
  const profRoles = new Set((process.env.BENCH_CPU_PROF_ROLES ?? '').split(',').filter(Boolean));
  const argsOf = (role: string) => {
    const args = procfileRoleArgs(role, checkout);
    return profDir && (profRoles.size === 0 || profRoles.has(role))
      ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(profDir)}`, `--cpu-prof-name=${role}-${n}.cpuprofile`, ...args]
      : args;
  };
  const roles: Array<{ role: string; args: string[]; extra: Record<string, string> }> = [
    { role: 'web', args: argsOf('web'), extra: { PORT: String(port) } },
    { role: 'orchestrator', args: argsOf('orchestrator'), extra: {} },
    ...LANES.map((lane) => ({ role: `lane-${lane}`, args: argsOf(`lane-${lane}`), extra: {} })),
  ];
  const started: Array<{ role: string; proc: Proc; metricsPort: number }> = [];
  for (const r of roles) {
    const metricsPort = await freePort();
    started.push({
      role: r.role,
      metricsPort,
      proc: procs.node(r.role, r.args, { ...env, ...r.extra, METRICS_PORT: String(metricsPort) }, { cwd: checkout }),
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
      `${label}: started ${started.map((s) => `${s.role} (pid ${s.proc.child.pid})`).join(', ')}; waiting for readiness`,
    );
    await until(
      `${PRODUCT} with lanes ${LANES.join(', ')} ready`,
      async () => {
        const dead = started.find((s) => !s.proc.running());
        if (dead) throw new Error(`${dead.role} exited`);
        const r = await api<{
          products: Array<{ product: string; readiness: string; lanes: Array<{ lane: string; readiness: string }> }>;
        }>(base, key, 'GET', '/v2/products');
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
    log(`${label}: POST /v2/scans deep ${zone} (fanout ${genFanout(n)}), maxCredits ${credits}`);
    const cpuOf = [
      ...started.map((st) => ({ label: st.role, pid: st.proc.child.pid! })),
      ...serverPids(),
      ...(resolver ? [{ label: 'Unbound (the resolver, not in the sums)', pid: resolver.proc.child.pid! }] : []),
      { label: 'this process (the lab, the bench)', pid: process.pid },
    ];
    const cpuAtPost = cpuOf.map((c) => (c.pid === process.pid ? process.cpuUsage() : cpuSeconds(c.pid)));
    // MariaDB's CPU for this run's database alone (its connections' threads): the server's own
    // figure also counts whatever else it serves on a shared machine.
    const dbThreads = new DbThreadCpu(
      serverPids()
        .filter((sp) => sp.label.startsWith('MariaDB'))
        .map((sp) => sp.pid),
      databaseUrl,
    );
    await dbThreads.sample();
    dbThreads.start();
    let t0 = performance.now();
    let jobRef: string;
    let fair: Fairness | null = null;
    if (FAIRNESS && run.code === 'new') {
      const labPort = Number(/(?:^|,)80=(\d+)/.exec(ctx.lab.env.OUTBOUND_PORT_MAP ?? '')?.[1]);
      fair = await fairness(base, [key, ...ctx.databases.new!.others], zone, credits, labPort);
      for (const [when, list] of [
        ['idle', fair.idle],
        ['during the scans', fair.busy],
      ] as const)
        for (const line of await lookupPath(databaseUrl, list)) log(`lookup ${when}: ${line}`);
      t0 = fair.t0;
      jobRef = fair.jobRefs[0]!;
    } else {
      const accepted = await api<{ jobRef?: string }>(base, key, 'POST', '/v2/scans', {
        profile: 'deep',
        target: { type: 'domain_name', value: zone },
        options: { active: false, maxCredits: credits },
      });
      if (accepted.status !== 202 || !accepted.body.jobRef)
        throw new Error(`POST /v2/scans → ${accepted.status} ${JSON.stringify(accepted.body)}`);
      jobRef = accepted.body.jobRef;
    }
    let view: JobView;
    let wallS: number;
    let lastLog = performance.now();
    for (;;) {
      const r = await api<JobView>(base, key, 'GET', `/v2/jobs/${jobRef}`);
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
        log(`${label}: not terminal after ${fmt(wallS, 0)} s (BENCH_SCAN_TIMEOUT_S): cancelling ${jobRef}`);
        await api(base, key, 'POST', `/v2/jobs/${jobRef}/cancel`, {}).catch(() => {});
        break;
      }
      if (now - lastLog > PROGRESS_EVERY_MS) {
        lastLog = now;
        const biggest = [...sampler.rows.values()].sort((a, b) => b.peakKb - a.peakKb)[0];
        log(
          `${label}: ${fmt((now - t0) / 1000, 0)} s, ${view.status}: tasks done ${view.progress.tasksDone}, open ${view.progress.tasksQueued}, objects ${view.progress.objects}; largest RSS so far ${biggest?.label} ${mb(biggest?.peakKb ?? 0)} MB`,
        );
      }
      await sleep(POLL_MS);
    }
    const cpu = cpuOf.map((c, i) => {
      const before = cpuAtPost[i]!;
      const sNow =
        typeof before === 'number'
          ? cpuSeconds(c.pid) - before
          : ((u) => (u.user + u.system) / 1e6)(process.cpuUsage(before));
      return { label: c.label, s: sNow };
    });
    const dbCpu = await dbThreads.stop();
    if (fair) wallS = fair.wallsS[0]!;
    log(`${label}: ${view.status} after ${fmt(wallS, 1)} s; paging the results`);

    // Objects kept: every page of the results, to the end.
    let objectsPaged = 0;
    let pages = 0;
    let inScope = 0;
    const objectTypes = new Map<string, number>();
    const hostKeys = new Set<string>();
    let cursor: string | null = null;
    do {
      const r: {
        status: number;
        body: {
          items: Array<{ type: string; key: string; projection?: { inScope?: boolean } }>;
          page: { nextCursor: string | null };
        };
      } = await api(
        base,
        key,
        'GET',
        `/v2/jobs/${jobRef}/results?limit=${PAGE_LIMIT}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      if (r.status !== 200) throw new Error(`results page ${pages + 1} → ${r.status} ${JSON.stringify(r.body)}`);
      pages++;
      objectsPaged += r.body.items.length;
      for (const it of r.body.items) {
        objectTypes.set(it.type, (objectTypes.get(it.type) ?? 0) + 1);
        if (it.type === 'host') hostKeys.add(it.key.toLowerCase());
        if (it.projection?.inScope !== false) inScope++;
      }
      cursor = r.body.page.nextCursor;
    } while (cursor);
    // The job view once more (terminal: it no longer changes) for the final figures.
    view = (await api<JobView>(base, key, 'GET', `/v2/jobs/${jobRef}`)).body;

    sampler.finish();
    clearInterval(selfTimer);
    // Idle again: RSS and heap a few seconds after the scan (no forced GC: what V8 chose to keep).
    await sleep(SETTLE_MS);
    const heapEnd = await heapsOf(started);
    const orchestratorPort = started.find((st) => st.role === 'orchestrator')!.metricsPort;
    const batches = {
      tasks: await histogramOf(orchestratorPort, 'lss_result_batch_tasks'),
      seconds: await histogramOf(orchestratorPort, 'lss_result_batch_seconds'),
    };
    const checkTimes = new Map(
      await Promise.all(
        started
          .filter((st) => st.role.startsWith('lane-'))
          .map(async (st) => [st.role, await histogramOf(st.metricsPort, 'lss_task_duration_seconds')] as const),
      ),
    );
    const rssEnd = new Map([...sampler.rows.values()].map((r) => [r.label, readStatus(r.pid)?.rssKb ?? null]));
    const sum = (k: keyof LaneView) => view.lanes.reduce((a, l) => a + Number(l[k]), 0);
    const ran = view.lanes.reduce((a, l) => a + TERMINAL_TASK_RAN.reduce((b, s) => b + l[s], 0), 0);
    const jobS =
      view.startedAt && view.completedAt ? (Date.parse(view.completedAt) - Date.parse(view.createdAt)) / 1000 : null;

    // Stop the processes (SIGTERM: their own drain), then read what they logged.
    await Promise.all(started.map((s) => s.proc.stop('SIGTERM', 10_000)));
    const logs = started.map((s) => ({ name: s.role, exit: s.proc.child.exitCode ?? null, ...logSummary(s.proc) }));
    const names = genNames(n);
    return {
      ...run,
      fair,
      label,
      checkTimes,
      batches,
      covered: names.filter((nm) => hostKeys.has(nm)).length,
      zoneNames: names.length,
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
      limitations: view.coverage.limitations.map((l) => ({
        code: l.code,
        occurrences: occurrences(l.message),
        message: l.message,
      })),
      ledger: view.ledger,
      rows: [...sampler.rows.values()],
      cpu,
      dbCpu,
      connectionPlan: rolePlan(env),
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
    `  POST /v2/scans {profile: deep, target gen<N>.test, active: false, maxCredits ${CREDITS_PER_HOST} × N}; wall = POST → the ${POLL_MS} ms poll that sees it terminal`,
  );
  out.push(
    `  processes: web (src/server.ts, WEB_CONCURRENCY=1: primary + 1 worker), orchestrator, lane-${LANES.join(', lane-')} (workers/lane.ts;`,
  );
  out.push(
    `  LANE_CONCURRENCY ${CAPACITY}, LANE_POOL_THREADS ${process.env.BENCH_LANE_POOL_THREADS ?? 2}); one workspace; the lab in this process; latency: ${WITH_LATENCY ? `DNS +${LATENCY.dnsMs} ms, pages +${LATENCY.pageMs} ms` : 'none'}.`,
  );
  out.push(
    `  DNS: ${RESOLVER === 'unbound' ? "the roles ask Unbound (a fresh one per scan) in front of the lab's server" : "the roles ask the lab's server directly"}${DNS_RRL ? `; the zone rate-limits at ${DNS_RRL} replies/s per client` : ''}.`,
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
    '  covered = names of the zone (apex, h1..h(N-1), mail) found as host objects; floor = every name resolved once (UDP,',
  );
  out.push(
    '  dns-packet) + every page fetched once (HTTP), 100 / 50 at a time, from this process against the same lab (test/bench/network-floor.ts);',
  );
  out.push(`  "base" rows: the checkout BENCH_SCAN_BASE (${BASE ?? 'not set'}), maxCredits capped at ${BASE_CREDITS};`);
  out.push(
    '  tasks ran = completed + partial + unavailable + timeout + failed; budget-stopped = tasks recorded budget_exhausted (never run).',
  );
  out.push('');
  out.push('Scans');
  const STOPS = ['budget_exhausted', 'object_cap_reached', 'deadline_exceeded', 'cancelled'];
  const rows = results.map((r) => {
    const stops = r.limitations.filter((l) => STOPS.includes(l.code)).map((l) => l.code);
    return [
      r.label,
      String(r.credits),
      `${r.covered}/${r.zoneNames}`,
      fmt(r.wallS, 1),
      fmt(r.floor.totalS, 2),
      fmt(r.wallS / r.floor.totalS, 0),
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
        'run',
        'maxCredits',
        'covered',
        'wall s',
        'floor s',
        'wall/floor',
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
      `  ${r.label}: ${r.jobRef}; job createdAt→completedAt ${r.jobS === null ? '—' : `${fmt(r.jobS, 1)} s`}; tasks by lane: ${lanes}`,
    );
    out.push(
      `    objects by type: ${types || '—'} (${r.inScope} in scope); findings ${r.findings}; ${r.pages} result pages`,
    );
    const occurrences = (c: string) => r.limitations.find((x) => x.code === c)?.occurrences ?? 0;
    if (DNS_RRL)
      out.push(
        `    rate-limited zone (${DNS_RRL} replies/s): dns tasks with questions retried ${occurrences('dns_questions_retried')}; tasks with questions left indeterminate ${occurrences('dns_indeterminate')}`,
      );
    out.push(
      `    budget_exhausted in limitations: ${has('budget_exhausted')}; object_cap_reached: ${has('object_cap_reached')}; credits captured ${r.ledger?.captured ?? '—'} of ${r.credits} reserved, released ${r.ledger?.released ?? '—'}`,
    );
    out.push(
      `    limitations: ${r.limitations.map((l) => `${l.code}${l.occurrences > 1 ? ` ×${l.occurrences}` : ''}`).join(', ') || '—'}`,
    );
    // A chain that failed on many hosts of the lab (which serves every page) is the bench's or the
    // service's problem, not the zone's: its first message says how it failed.
    for (const l of r.limitations)
      if (/^https?_chain_(failed|timeout)$/.test(l.code) && l.occurrences >= 10)
        out.push(`    ${l.code} ×${l.occurrences}, e.g.: ${l.message.slice(0, 240)}`);
    out.push(
      `    floor: ${r.floor.names} names in ${fmt(r.floor.dnsS, 2)} s + ${r.floor.pages} pages in ${fmt(r.floor.httpS, 2)} s${r.floor.dnsFailures + r.floor.httpFailures > 0 ? ` (${r.floor.dnsFailures} names, ${r.floor.httpFailures} pages failed)` : ''}; every host covered: ${r.covered === r.zoneNames ? 'yes' : `NO (${r.zoneNames - r.covered} missing)`}`,
    );
    if (r.objectsPaged !== r.objectsProgress)
      out.push(`    note: paged ${r.objectsPaged} objects but progress.objects says ${r.objectsProgress}`);
  }
  const fresh = results.filter((r) => r.code === 'new');
  for (const r of fresh) {
    const base = results.find((x) => x.code === 'base' && x.n === r.n);
    if (!base) continue;
    const ratio = r.ran / r.wallS / (base.ran / base.wallS);
    out.push('');
    out.push(
      `Against the base code at N=${r.n}: tasks/s ${fmt(r.ran / r.wallS, 1)} vs ${fmt(base.ran / base.wallS, 1)} = ${fmt(ratio, 2)}× — target ≥ ${TPS_VS_BASE_TARGET}×: ${ratio >= TPS_VS_BASE_TARGET ? 'met' : 'NOT met'}`,
    );
  }
  for (const r of fresh) {
    const ratio = r.wallS / r.floor.totalS;
    out.push(
      `  N=${r.n}: scan wall ÷ network floor ${fmt(ratio, 1)}× (target ≤ ${FLOOR_RATIO_TARGET}×${WITH_LATENCY ? '' : ' at 20,000 hosts'}: ${ratio <= FLOOR_RATIO_TARGET ? 'met' : 'NOT met'}); every host covered: ${r.covered === r.zoneNames ? 'yes' : 'NO'}`,
    );
  }
  for (const r of fresh) {
    if (!r.fair) continue;
    const [wa, wb] = r.fair.wallsS as [number, number];
    const wallRatio = Math.max(wa, wb) / Math.min(wa, wb);
    const lookupRatio = r.fair.lookupBusyMs / r.fair.lookupIdleMs;
    out.push('');
    out.push(`Fairness at N=${r.n}: two workspaces' deep scans started at once, a third workspace's web lookup`);
    out.push(
      `  scan walls ${fmt(wa, 1)} s and ${fmt(wb, 1)} s: the later within ${fmt(wallRatio, 2)}× of the other (target ≤ ${FAIR_WALL_TARGET}×: ${wallRatio <= FAIR_WALL_TARGET ? 'met' : 'NOT met'})`,
    );
    out.push(
      `  lookup ${fmt(r.fair.lookupIdleMs, 0)} ms on the idle lanes, ${fmt(r.fair.lookupBusyMs, 0)} ms during both scans: ${fmt(lookupRatio, 2)}× (target ≤ ${FAIR_LOOKUP_TARGET}×: ${lookupRatio <= FAIR_LOOKUP_TARGET ? 'met' : 'NOT met'})`,
    );
    out.push(
      `  control: the lab's own answer for the lookup's page (fetched directly, no service) ${fmt(r.fair.labIdleMs, 0)} ms idle, ${fmt(r.fair.labBusyMs, 0)} ms during both scans (medians)`,
    );
  }
  const [a, b] = [fresh[0], fresh[fresh.length - 1]];
  if (a && b && a !== b) {
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
    `Where the time goes, per lane: checks run, mean check time, and the least wall a capacity of ${CAPACITY} allows (checks × mean ÷ capacity)`,
  );
  for (const r of results) {
    const parts = [...r.checkTimes].map(([role, t]) =>
      t && t.count > 0
        ? `${role} ${t.count} × ${fmt((t.sumS / t.count) * 1000, 0)} ms → ≥ ${fmt(t.sumS / CAPACITY, 1)} s`
        : `${role} —`,
    );
    out.push(`  ${r.label} (wall ${fmt(r.wallS, 1)} s): ${parts.join('; ')}`);
    const b = r.batches;
    if (b.tasks && b.seconds && b.tasks.count > 0)
      out.push(
        `    orchestrator: ${b.tasks.count} result batches, ${fmt(b.tasks.sumS / b.tasks.count, 1)} tasks each on average, ${fmt((b.seconds.sumS / b.seconds.count) * 1000, 0)} ms each, ${fmt(b.seconds.sumS, 1)} s under job row locks in all`,
      );
  }

  out.push('');
  out.push(
    'Tasks by outcome (every lane; ran = completed + partial + unavailable + timeout + failed) and hosts covered',
  );
  {
    const outcomes = [
      'completed',
      'partial',
      'unavailable',
      'timeout',
      'failed',
      'skipped',
      'cancelled',
      'budgetExhausted',
    ] as const;
    out.push(
      ...table(
        ['outcome', ...results.map((r) => r.label)],
        [
          ...outcomes.map((o) => [
            o === 'budgetExhausted' ? 'budget_exhausted' : o,
            ...results.map((r) => String(r.byLane.reduce((a, l) => a + Number(l[o]), 0))),
          ]),
          ['all tasks', ...results.map((r) => String(r.tasks))],
          ['ran', ...results.map((r) => String(r.ran))],
          [
            'hosts covered',
            ...results.map(
              (r) => `${r.covered}/${r.zoneNames} (${fmt((100 * r.covered) / Math.max(1, r.zoneNames), 1)} %)`,
            ),
          ],
        ],
      ),
    );
  }

  out.push('');
  out.push(
    "CPU seconds from the POST to the job terminal, per process (user + system; MariaDB and Redis are the machine's, shared with anything else running), and ms per task run",
  );
  {
    const strip = (l: string) => l.replace(/ \(\S+ \d+\)$/, '');
    const labels = [...new Set(results.flatMap((r) => r.cpu.map((c) => strip(c.label))))];
    const secondsOf = (r: SizeResult, label: string) => r.cpu.find((x) => strip(x.label) === label)?.s ?? null;
    const perTask = (r: SizeResult, s: number | null) => (s === null ? '—' : fmt((s * 1000) / Math.max(1, r.ran), 2));
    // The issue's figure: the roles, MariaDB and Redis (the lab and the bench left out).
    const services = (r: SizeResult) =>
      r.cpu
        .filter((c) => !c.label.startsWith('this process') && !c.label.startsWith('Unbound'))
        .reduce((a, c) => a + c.s, 0);
    const all = (r: SizeResult) => r.cpu.reduce((a, c) => a + c.s, 0);
    // The same with MariaDB counted as this database's connection threads only (not other work on the server).
    const own = (r: SizeResult) =>
      services(r) - r.cpu.filter((c) => c.label.startsWith('MariaDB')).reduce((a, c) => a + c.s, 0) + r.dbCpu.s;
    out.push(
      ...table(
        ['process', ...results.flatMap((r) => [`${r.label} s`, 'ms/task'])],
        [
          ...labels.map((l) => [
            l,
            ...results.flatMap((r) => {
              const sec = secondsOf(r, l);
              return [sec === null ? '—' : fmt(sec, 2), perTask(r, sec)];
            }),
          ]),
          [
            "MariaDB: this database's connection threads",
            // No thread seen: MariaDB is not this machine's process (or PROCESSLIST has no TID).
            ...results.flatMap((r) =>
              r.dbCpu.threads === 0
                ? ['not readable', '—']
                : [`${fmt(r.dbCpu.s, 2)} (${r.dbCpu.threads} threads)`, perTask(r, r.dbCpu.s)],
            ),
          ],
          ['roles + MariaDB + Redis', ...results.flatMap((r) => [fmt(services(r), 2), perTask(r, services(r))])],
          [
            "roles + this database's MariaDB threads + Redis",
            ...results.flatMap((r) => (r.dbCpu.threads === 0 ? ['—', '—'] : [fmt(own(r), 2), perTask(r, own(r))])),
          ],
          [
            'all of these (the lab and any resolver included)',
            ...results.flatMap((r) => [fmt(all(r), 2), perTask(r, all(r))]),
          ],
          // The row earlier reports printed: all of these, CPU-seconds per 1,000 tasks run.
          ['per 1,000 tasks run', ...results.flatMap((r) => [fmt((all(r) * 1000) / Math.max(1, r.ran), 2), ''])],
        ],
      ),
    );
    out.push('  target (issue 48): roles + MariaDB + Redis ≤ 3 ms a task');
    out.push('');
    out.push(
      "Database connections (issue 48 item 2): the most this run's database had open at once (PROCESSLIST, sampled every second),",
      "  the roles' plan from their settings (src/config/connection-budget.ts), and the connections MariaDB refused meanwhile",
      '  (Connection_errors_max_connections: server-wide, any database)',
    );
    for (const r of results)
      out.push(
        `  ${r.label}: peak ${r.dbCpu.peakConnections} open; plan ${r.connectionPlan ?? 'not readable'}; refused ${r.dbCpu.refused ?? 'not readable'}`,
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
  out.push(...table(['process', ...results.map((r) => r.label)], rssRows));
  const over = results.flatMap((r) =>
    r.rows
      .filter((x) => Math.max(x.peakKb, x.everKb, x.hwmKb ?? 0) > RSS_TARGET_MB * 1024)
      .map((x) => `${x.label} at ${r.label} (${mb(Math.max(x.peakKb, x.everKb, x.hwmKb ?? 0))} MB)`),
  );
  out.push(
    `  every process ≤ ${RSS_TARGET_MB} MB in every run: ${over.length === 0 ? 'met' : `NOT met: ${over.join('; ')}`}`,
  );
  if (a && b && a !== b) {
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
      ['process', ...results.flatMap((r) => [`${r.label} ready`, `${r.label} after`])],
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
        `  ${r.label} ${l.name}: exit ${l.exit ?? 'signal'}, ${l.errors} error, ${l.warns} warn, ${l.other} other lines${bad && l.samples.length ? `: ${l.samples.join(' | ')}` : ''}`,
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
  const handles: DbHandle[] = [];
  const dbNames = [dbName];
  const ctx: Partial<Ctx> & { stopping: boolean } = { stopping: false };
  let cleaned: Promise<void> | undefined;
  const cleanup = () =>
    (cleaned ??= (async () => {
      await ctx.current?.killAll();
      for (const h of handles) await h.close().catch(() => {});
      await lab?.close().catch(() => {});
      for (const name of dbNames)
        await dropDatabase(serverUrl, name).then(
          () => log(`dropped database ${name}`),
          (e: Error) => log(`warning: could not drop ${name}: ${e.message}`),
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
    lab = await startLab({
      parts: [rdapPart, webLabPart(), mailLabPart, scanLabPart({ generated: [...SIZES], pageDelayMs: LATENCY.pageMs })],
      dnsDelayMs: LATENCY.dnsMs,
      ...(DNS_RRL ? { dnsRateLimit: { responsesPerSecond: DNS_RRL } } : {}),
    });
    log(
      `database ${dbName}; Redis ${redisUrl} prefix ${basePrefix}; lab DNS ${lab.env.DNS_SERVERS}, parts ${lab.parts.join(', ')}`,
    );
    const secrets = {
      KEY_PEPPER: randomBytes(32).toString('base64url'),
      CURSOR_SECRET: randomBytes(32).toString('base64url'),
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64url'),
    };
    const labEnvironment = lab.env;
    // One workspace per database: responsible use accepted (every scan profile needs it),
    // generous limits, credits for its scans' reservations, a key with the scan scopes.
    const setup = async (name: string, runMigrations: (url: string) => Promise<unknown>, credits: number) => {
      const databaseUrl = await createDatabase(serverUrl, name);
      await runMigrations(databaseUrl);
      const dbh = createDb(databaseUrl, { connectionLimit: 2 });
      handles.push(dbh);
      // The policy version the processes will require: their config, parsed from the same env.
      const policy = parseConfig({
        ...process.env,
        ...labEnv(labEnvironment),
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
        credits,
        `bench:scan:${ws.workspaceId}`,
      );
      const key = (
        await createKey(dbh.db, secrets.KEY_PEPPER, { workspace: ws.workspaceId, scopes: ['scan:create', 'scan:read'] })
      ).key;
      // --fairness: two more workspaces (a second scan, and the web lookup timed beside them).
      const others: string[] = [];
      for (const other of FAIRNESS ? ['bench-scan-b', 'bench-lookup-c'] : []) {
        const w = await createWorkspace(dbh.db, { name: other, acceptResponsibleUse: policy });
        await setLimits(dbh.db, w.workspaceId, undefined, {
          app: { perMinute: 1_000_000, burst: 100_000 },
          products: { [PRODUCT]: { perMinute: 100_000, perHour: 1_000_000 } },
        });
        await grantCredits(
          dbh.db,
          await workspaceInternalId(dbh.db, w.workspaceId),
          credits,
          `bench:scan:${w.workspaceId}`,
        );
        others.push(
          (
            await createKey(dbh.db, secrets.KEY_PEPPER, {
              workspace: w.workspaceId,
              scopes: ['scan:create', 'scan:read'],
            })
          ).key,
        );
      }
      return { databaseUrl, key, others };
    };
    const databases: Ctx['databases'] = {
      new: await setup(
        dbName,
        migrate,
        SIZES.reduce((sum, n) => sum + creditsFor(n), 1000),
      ),
      base: undefined,
    };
    if (BASE) {
      // The base code on its own schema: its checkout's migrations (an index added since would
      // speed the old code up and flatter it).
      const baseMigrations = (await import(pathToFileURL(path.join(BASE, 'src/db/migrations.ts')).href)) as {
        migrate: (url: string) => Promise<unknown>;
      };
      dbNames.push(`${dbName}_base`);
      databases.base = await setup(`${dbName}_base`, baseMigrations.migrate, SIZES.length * BASE_CREDITS + 1000);
    }
    Object.assign(ctx, { lab, databases, redisUrl, basePrefix, secrets });

    const results: SizeResult[] = [];
    for (const n of SIZES) {
      // The floor first, with no service process running: the lab's own least time for the zone.
      const floor = await measureFloor(n, lab.env.DNS_SERVERS!, lab.env.OUTBOUND_PORT_MAP);
      log(
        `N=${n}: network floor ${fmt(floor.totalS, 2)} s (DNS ${fmt(floor.dnsS, 2)} s for ${floor.names} names, HTTP ${fmt(floor.httpS, 2)} s for ${floor.pages} pages)`,
      );
      if (BASE && n <= BASE_MAX_N)
        results.push(
          await runSize(ctx as Ctx, { n, code: 'base', credits: Math.min(BASE_CREDITS, creditsFor(n)), floor }),
        );
      results.push(await runSize(ctx as Ctx, { n, code: 'new', credits: creditsFor(n), floor }));
    }
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
