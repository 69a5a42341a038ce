// `node test/bench/web-check-cpu.ts [lookups]`: the main-thread CPU time of one web lookup's checks
// (web.http + web.tls for https://strict.weblab.test/: both request chains, the preflight, the
// handshake, pool parsing), without the queue and MySQL around them.
//
// Why: the web lane's event-loop lag (test/bench/web-lookups.ts) is the lane's own work plus
// whatever else the machine runs, and on a shared 2-core machine the second term wins; so does
// the lane's CPU per lookup there, since slower tasks wait longer for their permits. Here the
// checks run one lookup at a time in a child process (its own main thread, a real 2-thread parse
// pool, like a lane) while the lab serves from this process, and the child reads
// process.threadCpuUsage() of its main thread around the lookups: a figure of the checks' code
// that moves little with the load. Run it for two versions of the code in turn and compare the
// medians.
//
// Prints per lookup: main-thread CPU (median of RUNS runs of N lookups, with min and max), and the
// wall time. Traffic stays on 127.0.0.0/8 (the lab).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fmt } from './bench-kit.ts';

const RUNS = 5;
const URL_UNDER_TEST = 'https://strict.weblab.test/';
const root = path.resolve(import.meta.dirname, '..', '..');

async function child(lookups: number): Promise<void> {
  const { runtimeFor } = await import('../helpers/lab-runtime.ts');
  const { createWebChecks } = await import('../../src/products/web/index.ts');
  const { createParsePool } = await import('../../workers/pool/parse-pool.ts');
  // The lane's own DNS timeout, not the tests' short one: a loaded machine delays the lab's answers.
  const runtime = runtimeFor(JSON.parse(process.env.LSS_BENCH_LAB_ENV!) as Record<string, string>, {
    DNS_TIMEOUT_MS: '5000',
  });
  const pool = createParsePool(2);
  const checks = createWebChecks().filter((c) => c.name === 'web.http' || c.name === 'web.tls');
  const task = { objectKey: URL_UNDER_TEST, target: URL_UNDER_TEST, params: { url: URL_UNDER_TEST } };
  const lookup = async () => {
    const signal = new AbortController().signal;
    const ctx = {
      runtime,
      signal,
      runInPool: <T>(name: string, payload: unknown) => pool.run<T>(name, payload, { signal }),
    };
    const outs = await Promise.all(checks.map((c) => c.run(task, ctx)));
    for (const o of outs)
      if (o.status !== 'completed') throw new Error(`a check ended ${o.status} (${o.reason ?? 'no reason'})`);
  };
  for (let i = 0; i < 20; i++) await lookup(); // warm-up: modules, JIT, pool threads
  const cpu: number[] = [];
  const wall: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const c0 = process.threadCpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < lookups; i++) await lookup();
    const c = process.threadCpuUsage(c0);
    cpu.push((c.user + c.system) / 1000 / lookups);
    wall.push((performance.now() - t0) / lookups);
  }
  await pool.destroy();
  process.stdout.write(`${JSON.stringify({ cpu, wall })}\n`);
}

async function main(): Promise<void> {
  const lookups = Number(process.argv[2] ?? 100);
  const { startLab } = await import('../lab/serve.ts');
  const { webLabPart } = await import('../lab/web-lab.ts');
  const { labEnv } = await import('../helpers/lab-runtime.ts');
  const lab = await startLab({ parts: [webLabPart()] });
  try {
    const out = await new Promise<string>((resolve, reject) => {
      const c = spawn(process.execPath, [import.meta.filename, '--child', String(lookups)], {
        cwd: root,
        // NODE_EXTRA_CA_CERTS (the lab CA) is in the lab's env: Node reads it at the child's start.
        env: { ...process.env, ...labEnv(lab.env), LSS_BENCH_LAB_ENV: JSON.stringify(lab.env) },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let text = '';
      c.stdout.on('data', (d) => (text += String(d)));
      c.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`the child exited ${code}`))));
    });
    const { cpu, wall } = JSON.parse(out) as { cpu: number[]; wall: number[] };
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    process.stdout.write(
      `web.http + web.tls of ${URL_UNDER_TEST}, one lookup at a time, ${RUNS} runs of ${lookups}:\n` +
        `  main-thread CPU per lookup: median ${fmt(med(cpu))} ms (min ${fmt(Math.min(...cpu))}, max ${fmt(Math.max(...cpu))})\n` +
        `  wall per lookup: median ${fmt(med(wall))} ms\n`,
    );
  } finally {
    await lab.close();
  }
}

if (process.argv[2] === '--child') await child(Number(process.argv[3] ?? 100));
else await main();
process.exit(0);
