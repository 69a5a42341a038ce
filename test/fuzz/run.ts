// `npm run fuzz [-- --requests N] [--seed S]`: the HTTP fuzzer against a real service on a scratch
// database (default 20,000 requests). Prints the number of requests, a status histogram, the error
// codes seen, the 5xx that are not documented 503s (must be 0), any violation, and whether a
// secret reached the logs. Exits 1 on any violation.
import { runFuzz, secretsInLogs } from './fuzz-http.ts';
import { startFuzzTarget } from './fuzz-target.ts';
import { withScratchEnv } from '../helpers/scratch-env.ts';

function arg(flag: string, fallback: number): number {
  const i = process.argv.indexOf(flag);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isSafeInteger(v) || v < 0) {
    process.stderr.write('usage: npm run fuzz [-- --requests N] [--seed S]\n');
    process.exit(64);
  }
  return v;
}

const requests = arg('--requests', 20_000);
const seed = arg('--seed', Date.now() % 2 ** 31);
const log = (m: string) => process.stderr.write(`[fuzz] ${m}\n`);

const ok = await withScratchEnv(
  'fuzz',
  { LOG_LEVEL: 'info' },
  async (config) => {
    const running = await startFuzzTarget(config);
    try {
      log(`seed ${seed}, ${requests} requests`);
      const t0 = performance.now();
      const stats = await runFuzz(running.target, {
        requests,
        seed,
        concurrency: 8,
        onProgress: (n) => {
          if (n % 2000 === 0) log(`${n} sent`);
        },
      });
      const seconds = (performance.now() - t0) / 1000;
      const secretHits = secretsInLogs(running.logLines, running.secrets);
      const sorted = (o: Record<string, number>) => Object.entries(o).sort((a, b) => b[1] - a[1]);
      const out = process.stdout;
      out.write(
        `\nrequests: ${stats.requests} in ${seconds.toFixed(1)} s (${(stats.requests / seconds).toFixed(0)}/s), seed ${seed}\n`,
      );
      out.write(
        `by generator: ${sorted(stats.byKind)
          .map(([k, n]) => `${k} ${n}`)
          .join(', ')}\n`,
      );
      out.write('status histogram:\n');
      for (const [status, n] of Object.entries(stats.byStatus).sort()) out.write(`  ${status}  ${n}\n`);
      out.write('error codes:\n');
      for (const [code, n] of sorted(stats.byCode)) out.write(`  ${code.padEnd(34)} ${n}\n`);
      out.write(`unexplained 5xx: ${stats.unexplained5xx}\n`);
      out.write(`violations: ${stats.violations.length}\n`);
      for (const v of stats.violations.slice(0, 20))
        out.write(`  #${v.index} [${v.kind}] ${v.problem}\n    request ${v.request}\n    reply   ${v.reply}\n`);
      out.write(`log lines: ${running.logLines.length}, holding a secret: ${secretHits.length}\n`);
      return stats.violations.length === 0 && secretHits.length === 0 && stats.requests === requests;
    } finally {
      await running.close();
    }
  },
  log,
);
process.exit(ok ? 0 : 1);
