// Shared pieces of the HTTP benchmarks: loopback listeners, and the load generator run in a
// child process (so it never shares the measured server's event loop), stopped on Ctrl-C.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type autocannon from 'autocannon';
import { readProcfile } from '../../ops/procfile.ts';

export const fmt = (n: number, digits = 2): string => n.toFixed(digits);

/**
 * A Procfile node role's arguments (its Node options, script and script arguments), as the
 * benchmarks start it; BENCH_PROCFILE_NODE_OPTIONS=0 drops the Node options to measure without.
 */
/** A role's Procfile arguments; `checkout`: another checkout's Procfile (default: this one). */
export function procfileRoleArgs(role: string, checkout = path.resolve(import.meta.dirname, '../..')): string[] {
  const r = readProcfile(checkout).find((x) => x.name === role);
  if (!r || r.script === null) throw new Error(`Procfile has no node role ${role}`);
  return process.env.BENCH_PROCFILE_NODE_OPTIONS === '0' ? r.args.filter((a) => !a.startsWith('--')) : r.args;
}

export function listen(handler: http.RequestListener): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer({ keepAliveTimeout: 65_000 }, handler);
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }),
    );
  });
}

/**
 * Runs `node <script> --client <job JSON>` and resolves with the JSON of its last stdout line.
 * A first SIGINT/SIGTERM stops the running client (the caller's cleanup then runs); a second exits.
 */
export interface ClientRunner {
  run<T>(job: unknown): Promise<T>;
  readonly interrupted: boolean;
}

export function clientRunner(script: string, cwd: string, log: (msg: string) => void): ClientRunner {
  let client: ChildProcess | null = null;
  let interrupted = false;
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      if (interrupted) process.exit(130);
      interrupted = true;
      log(`${sig}: stopping and cleaning up`);
      client?.kill('SIGTERM');
    });
  }
  const run = <T>(job: unknown) =>
    new Promise<T>((resolve, reject) => {
      if (interrupted) return reject(new Error('interrupted'));
      const c = spawn(process.execPath, [script, '--client', JSON.stringify(job)], {
        cwd,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      client = c;
      let out = '';
      c.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
      c.on('error', reject);
      c.on('close', (code) => {
        client = null;
        if (interrupted) return reject(new Error('interrupted'));
        const last = out.trim().split('\n').pop() ?? '';
        if (code !== 0 || !last) return reject(new Error(`load generator failed (exit ${code}): ${out}`));
        resolve(JSON.parse(last) as T);
      });
    });
  return {
    run,
    get interrupted() {
      return interrupted;
    },
  };
}

/** What a load generator reports: one run (autocannon or pacedLoad), or several side by side. */
export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  /** Errors and timeouts. */
  errors: number;
}

/** Runs side by side (one per target) as one figure: rates and counts add up; the worst percentiles. */
export function summarize(runs: autocannon.Result[]): LoadResult {
  return {
    rps: runs.reduce((s, r) => s + r.requests.average, 0),
    p50: Math.max(...runs.map((r) => r.latency.p50)),
    p99: Math.max(...runs.map((r) => r.latency.p99)),
    requests: runs.reduce((s, r) => s + r.requests.total, 0),
    non2xx: runs.reduce((s, r) => s + r.non2xx, 0),
    errors: runs.reduce((s, r) => s + r.errors + r.timeouts, 0),
  };
}

/** A bench's entry: runs main, exits 0, 130 when interrupted, 1 with the error logged. */
export async function runBench(
  main: () => Promise<void>,
  runner: ClientRunner,
  log: (msg: string) => void,
): Promise<never> {
  try {
    await main();
    process.exit(runner.interrupted ? 130 : 0);
  } catch (e) {
    log(e instanceof Error ? (e.stack ?? e.message) : String(e));
    process.exit(runner.interrupted ? 130 : 1);
  }
}

/** One open-loop load run: what was sent, what came back, latency from each request's scheduled time. */
export interface PacedResult extends LoadResult {
  max: number;
  /** How late the generator itself sent, p99 in ms (its own health: near 0 means the schedule held). */
  sendLagP99: number;
  /** Replies per HTTP status (e.g. { "200": 990, "503": 10 }). */
  statuses: Record<string, number>;
}

export interface PacedJob {
  url: string;
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  /** The body of request number i, when it differs per request (instead of `body`). */
  bodyFor?: (i: number) => string;
  /** Headers of request number i (a fresh Idempotency-Key each, say). */
  headers: (i: number) => Record<string, string>;
  /** Requests per second, evenly spaced. */
  rate: number;
  durationS: number;
  connections: number;
}

/** The p-th percentile (nearest rank) of ascending values. */
export const percentile = (sorted: ArrayLike<number>, p: number): number =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

/**
 * An open-loop generator in the manner of wrk2: request i is due at start + i/rate whatever the
 * server is doing, and its latency is counted from that due time, so a stalled server is charged
 * for the requests that queued behind it (no coordinated omission). autocannon's `overallRate` is
 * not this: it gives each connection a per-second quota that it sends back to back at the top of
 * the second (measured: 906 of 1,000 requests arrived in the first 100 ms), which is a burst at
 * full speed once a second, not a paced load.
 */
export async function pacedLoad(job: PacedJob): Promise<PacedResult> {
  const { Pool } = await import('undici');
  const pool = new Pool(job.url, { connections: job.connections, pipelining: 1 });
  const total = Math.round(job.rate * job.durationS);
  const latencies = new Float64Array(total);
  const sendLags = new Float64Array(total);
  let done = 0;
  let non2xx = 0;
  let errors = 0;
  let sent = 0;
  const statuses: Record<string, number> = {};
  let lastDone = 0;
  const interval = 1000 / job.rate;
  const start = performance.now();
  const fire = (i: number, due: number) => {
    sendLags[i] = performance.now() - due;
    pool
      .request({ method: job.method, path: job.path, headers: job.headers(i), body: job.bodyFor?.(i) ?? job.body })
      .then(
        async (res) => {
          await res.body.dump();
          statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
          if (res.statusCode < 200 || res.statusCode > 299) non2xx++;
        },
        () => {
          errors++;
        },
      )
      .finally(() => {
        lastDone = performance.now();
        latencies[i] = lastDone - due;
        done++;
      });
  };
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      while (sent < total && start + sent * interval <= now) {
        fire(sent, start + sent * interval);
        sent++;
      }
      if (sent < total) setTimeout(tick, Math.max(0, start + sent * interval - performance.now()));
      else resolve();
    };
    tick();
  });
  while (done < total) await new Promise((r) => setTimeout(r, 5));
  await pool.close();
  latencies.sort();
  sendLags.sort();
  return {
    rps: total / ((lastDone - start) / 1000),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: latencies[latencies.length - 1] ?? 0,
    requests: total,
    non2xx,
    errors,
    sendLagP99: percentile(sendLags, 99),
    statuses,
  };
}

/** Child pids of `pid` (every thread's children file). */
export function childrenOf(pid: number): number[] {
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
