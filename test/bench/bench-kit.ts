// Shared pieces of the HTTP benchmarks: loopback listeners, and the load generator run in a
// child process (so it never shares the measured server's event loop), stopped on Ctrl-C.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

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
