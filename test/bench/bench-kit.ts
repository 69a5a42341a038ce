// Shared pieces of the HTTP benchmarks: loopback listeners, and the load generator run in a
// child process (so it never shares the measured server's event loop), stopped on Ctrl-C.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type autocannon from 'autocannon';

export const fmt = (n: number, digits = 2): string => n.toFixed(digits);

export function listen(handler: http.RequestListener): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer({ keepAliveTimeout: 65_000 }, handler);
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
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
  const run = <T>(job: unknown) => new Promise<T>((resolve, reject) => {
    if (interrupted) return reject(new Error('interrupted'));
    const c = spawn(process.execPath, [script, '--client', JSON.stringify(job)], { cwd, stdio: ['ignore', 'pipe', 'inherit'] });
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

/** What a load generator reports: one autocannon run, or several run side by side. */
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
export async function runBench(main: () => Promise<void>, runner: ClientRunner, log: (msg: string) => void): Promise<never> {
  try {
    await main();
    process.exit(runner.interrupted ? 130 : 0);
  } catch (e) {
    log(e instanceof Error ? (e.stack ?? e.message) : String(e));
    process.exit(runner.interrupted ? 130 : 1);
  }
}
