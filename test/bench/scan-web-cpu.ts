// `node test/bench/scan-web-cpu.ts [checks] [--vs <checkout>] [--rounds R] [--concurrency C]`: the
// CPU a scan's web check (scan.web: runScanWebCheck, the web lookup's http and tls checks and what
// they point at) costs lane-web, per check, for the kinds of host a scan meets:
//   http-only   a host of the generated zone (bench:scan): a page on :80, nothing on :443 (refused)
//   https       https://strict.weblab.test/: http:// redirecting to https://, a certificate
//   no-web      a name with an address where nothing listens on :80 or :443 (refused on both)
//
// Why: issue 48's CPU per task. bench:scan gives lane-web's CPU per task for a whole scan (with the
// database and the queue around it), too coarse and too slow to try a change by; this runs only
// the check, in a child process started with lane-web's Procfile Node options, as the lane runs it:
// a real 2-thread parse pool, the job-scoped DNS answer cache (a fresh scope per check: a web
// task's host is asked for the first time in lane-web), C checks at once, each task carrying its
// host's addresses as the planner gives them from the dns task (BENCH_CARRY=0: none). The child reads
// process.cpuUsage() (every thread of the process: main, parse pool, libuv, GC) and
// process.threadCpuUsage() (the main thread) around each kind's checks.
//
// --vs <checkout>: the same child from another checkout (its src/, workers/, test/helpers and
// node_modules; the lab stays this checkout's), in turn A B A B … for R rounds (default 5), with
// the ratio of each round's pair: on a shared 2-core machine the ratio of neighbours holds when
// the machine's speed drifts. Prints per kind: process CPU per check (median of the rounds, min,
// max), main-thread CPU, wall per check; with --vs the ratios A/B. BENCH_KINDS=http-only,…: only those
// kinds. BENCH_CPU_PROF=<dir>: each child writes a V8 CPU profile of its main thread there. Traffic stays on 127.0.0.0/8.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fmt, procfileRoleArgs } from './bench-kit.ts';

const here = path.resolve(import.meta.dirname, '..', '..');
const GEN_N = 400;
const KINDS = ['http-only', 'https', 'no-web'] as const;
type Kind = (typeof KINDS)[number];
type Figures = Record<Kind, { cpu: number; main: number; wall: number }>;

function hostOf(kind: Kind, i: number): string {
  if (kind === 'http-only') return `h${1 + (i % (GEN_N - 1))}.gen${GEN_N}.test`;
  if (kind === 'https') return 'strict.weblab.test';
  return `mail.gen${GEN_N}.test`;
}

async function child(codeRoot: string, checks: number, concurrency: number): Promise<void> {
  const from = (p: string) => import(path.join(codeRoot, p));
  const { runtimeFor } = await from('test/helpers/lab-runtime.ts');
  const { runScanWebCheck } = await from('src/products/scan/checks/posture-checks.ts');
  const { createParsePool } = await from('workers/pool/parse-pool.ts');
  const { AnswerCache } = await from('src/dns/answer-cache.ts');
  // The lane's own DNS timeout, not the tests' short one: a loaded machine delays the lab's answers.
  const base = runtimeFor(JSON.parse(process.env.LSS_BENCH_LAB_ENV!) as Record<string, string>, {
    DNS_TIMEOUT_MS: '5000',
  });
  // As lane-web: answers kept for the job while its checks run (workers/lane-runner/runner.ts).
  const answers = new AnswerCache({
    maxEntries: 4096,
    maxBytes: 1024 * 1024,
    maxEntryBytes: 4096,
    maxTtlS: 300,
    negativeTtlS: 60,
  });
  const pool = createParsePool(2);
  // The addresses the scan's dns task resolved, carried by the web task as the planner plans it
  // (src/products/scan/rules/planner.ts); a checkout whose check does not read them asks again.
  const carried = new Map<string, string[]>();
  if (process.env.BENCH_CARRY !== '0')
    for (const kind of KINDS)
      for (let i = 0; i < GEN_N; i++) {
        const host = hostOf(kind, i);
        if (!carried.has(host)) carried.set(host, await base.services.outbound.resolve(host));
      }
  let n = 0;
  const check = async (kind: Kind, i: number) => {
    const host = hostOf(kind, i);
    const resolver = answers.scoped(`bench:${n++}`, base.services.resolver);
    const runtime = {
      ...base,
      services: { ...base.services, resolver, outbound: base.services.outbound.over(resolver) },
    };
    const signal = new AbortController().signal;
    const ctx = {
      runtime,
      signal,
      runInPool: <T>(name: string, payload: unknown) => pool.run(name, payload, { signal }) as Promise<T>,
    };
    const zone = kind === 'https' ? 'weblab.test' : `gen${GEN_N}.test`;
    const out = await runScanWebCheck(
      {
        objectKey: host,
        params: {
          url: `https://${host}/`,
          host,
          cnameTargets: [],
          scope: zone,
          profile: 'deep',
          sourceCap: 50,
          ...(carried.has(host) ? { addresses: carried.get(host), addressesUntil: Date.now() + 300_000 } : {}),
        },
      },
      ctx,
    );
    // What the check observes per kind: a change that altered it would measure something else.
    const https = out.projection.http?.chains?.https?.outcome;
    const want = kind === 'https' ? 'response' : 'failed';
    if (https !== want) throw new Error(`${kind} ${host}: the https chain ended ${https}, not ${want}`);
  };
  const runKind = async (kind: Kind, count: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) await check(kind, next++);
      }),
    );
  };
  const kinds = KINDS.filter((k) => (process.env.BENCH_KINDS ?? k).split(',').includes(k));
  for (const kind of kinds) await runKind(kind, 30); // warm-up: modules, JIT, pool threads
  const figures = {} as Figures;
  const profiler = process.env.BENCH_CPU_PROF ? await startProfile() : null;
  for (const kind of kinds) {
    const p0 = process.cpuUsage();
    const m0 = process.threadCpuUsage();
    const t0 = performance.now();
    await runKind(kind, checks);
    const p = process.cpuUsage(p0);
    const m = process.threadCpuUsage(m0);
    figures[kind] = {
      cpu: (p.user + p.system) / 1000 / checks,
      main: (m.user + m.system) / 1000 / checks,
      wall: (performance.now() - t0) / checks,
    };
  }
  await profiler?.();
  await pool.destroy();
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}

/** Profiles the main thread from now (after the warm-up) until the returned function is called. */
async function startProfile(): Promise<() => Promise<void>> {
  const { Session } = await import('node:inspector/promises');
  const { writeFileSync } = await import('node:fs');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    const file = path.join(process.env.BENCH_CPU_PROF!, `scan-web-${process.pid}.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  };
}

function runChild(codeRoot: string, labEnv: Record<string, string>, rawLabEnv: string, args: string[]) {
  // lane-web's Node options (heap sizing changes the GC's share), from the measured checkout's Procfile.
  const nodeOptions = procfileRoleArgs('lane-web', codeRoot).filter((a) => a.startsWith('--'));
  return new Promise<Figures>((resolve, reject) => {
    const c = spawn(process.execPath, [...nodeOptions, import.meta.filename, '--child', codeRoot, ...args], {
      cwd: codeRoot,
      // NODE_EXTRA_CA_CERTS (the lab CA) is in the lab's env: Node reads it at the child's start.
      env: { ...process.env, ...labEnv, LSS_BENCH_LAB_ENV: rawLabEnv },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let text = '';
    c.stdout.on('data', (d) => (text += String(d)));
    c.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(text) as Figures) : reject(new Error(`the child exited ${code}`)),
    );
  });
}

function option(name: string, fallback: string): string {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1]! : fallback;
}

async function main(): Promise<void> {
  const checks = Number(process.argv[2] && !process.argv[2].startsWith('--') ? process.argv[2] : 200);
  const vs = option('--vs', '');
  const rounds = Number(option('--rounds', '5'));
  const concurrency = Number(option('--concurrency', '8'));
  const { startLab } = await import('../lab/serve.ts');
  const { webLabPart } = await import('../lab/web-lab.ts');
  const { scanLabPart } = await import('../lab/scan-lab.ts');
  const { labEnv } = await import('../helpers/lab-runtime.ts');
  const lab = await startLab({ parts: [webLabPart(), scanLabPart({ generated: [GEN_N] })] });
  const a: Figures[] = [];
  const b: Figures[] = [];
  try {
    const args = [String(checks), String(concurrency)];
    for (let r = 0; r < rounds; r++) {
      a.push(await runChild(here, labEnv(lab.env), JSON.stringify(lab.env), args));
      if (vs) b.push(await runChild(path.resolve(vs), labEnv(lab.env), JSON.stringify(lab.env), args));
    }
  } finally {
    await lab.close();
  }
  const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  const line = (xs: number[]) => `${fmt(med(xs))} ms (min ${fmt(Math.min(...xs))}, max ${fmt(Math.max(...xs))})`;
  let out = `scan.web checks, ${checks} of each kind per round, ${concurrency} at once, ${rounds} rounds\n`;
  for (const kind of KINDS.filter((k) => a[0]![k])) {
    out += `${kind} (${hostOf(kind, 0)}):\n`;
    out += `  A ${here}: process CPU ${line(a.map((f) => f[kind].cpu))}; main thread ${fmt(med(a.map((f) => f[kind].main)))} ms; wall ${fmt(med(a.map((f) => f[kind].wall)))} ms\n`;
    if (vs) {
      out += `  B ${path.resolve(vs)}: process CPU ${line(b.map((f) => f[kind].cpu))}; main thread ${fmt(med(b.map((f) => f[kind].main)))} ms; wall ${fmt(med(b.map((f) => f[kind].wall)))} ms\n`;
      out += `  A/B process CPU: median ${fmt(med(a.map((f, i) => f[kind].cpu / b[i]![kind].cpu)))} (per round: ${a.map((f, i) => fmt(f[kind].cpu / b[i]![kind].cpu)).join(' ')})\n`;
    }
  }
  process.stdout.write(out);
}

if (process.argv[2] === '--child')
  await child(process.argv[3]!, Number(process.argv[4] ?? 200), Number(process.argv[5] ?? 8));
else await main();
process.exit(0);
