// Every parser of target-controlled text is linear up to its cap (issue 18): fast-check builds
// adversarial inputs (runs of blanks, of "?" before a line break, long labels, overlapping
// alternations, deep nesting; test/helpers/parser-cases.ts) between 1 KiB and the parser's cap,
// and each must cost at most a few milliseconds per KiB (plus a fixed 25 ms for what a call costs
// whatever its input: a cookie jar, the score). A quadratic parser costs tens to
// hundreds of ms per KiB at these sizes (6.9 s for a 60 KB CSP before the fix), so the bound is
// generous enough for a loaded 2-core machine and still fails the old code by an order of
// magnitude. Each case is timed in a worker thread (test/helpers/parser-cost-worker.ts), fastest
// of a few runs, and the thread is terminated when a parse runs away.
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { CostReply, CostRequest } from '../helpers/parser-cost-worker.ts';
import { parserCases, type ParserCase } from '../helpers/parser-cases.ts';

const KIB = 1024;
/** ms per KiB unless a case says otherwise. Linear parsers here measure 0.001–0.5 ms/KiB. */
const LIMIT_MS_PER_KIB = 3;
/** What one call may cost whatever its size (a cookie jar, the ten tests of the score). */
const FIXED_MS = 25;
/** A run still going after this is far past the bound at any size: the thread is terminated. */
const RUNAWAY_MS = 15_000;

/** The cost per KiB of each case's worst shape at its cap: the figures the docs quote. */
const atCap: Array<{ name: string; thread: string; bytes: number; msPerKib: number }> = [];

class CostWorker {
  #worker: Worker | null = null;
  #id = 0;

  #spawn(): Worker {
    this.#worker ??= new Worker(new URL('../helpers/parser-cost-worker.ts', import.meta.url));
    return this.#worker;
  }

  /** ms of the fastest run, or null when the first run was still going after RUNAWAY_MS. */
  async cost(req: Omit<CostRequest, 'id'>): Promise<CostReply | null> {
    const w = this.#spawn();
    const id = ++this.#id;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        w.off('message', onMessage);
        this.#worker = null;
        void w.terminate();
        resolve(null);
      }, RUNAWAY_MS);
      const onMessage = (m: CostReply) => {
        if (m.id !== id) return;
        clearTimeout(timer);
        w.off('message', onMessage);
        resolve(m);
      };
      w.on('message', onMessage);
      w.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      w.postMessage({ ...req, id } satisfies CostRequest);
    });
  }

  async close(): Promise<void> {
    await this.#worker?.terminate();
  }
}

async function check(worker: CostWorker, c: ParserCase, shape: [number, number, number], size: number) {
  const allowedMs = FIXED_MS + ((c.limitMsPerKib ?? LIMIT_MS_PER_KIB) * size) / KIB;
  const r = await worker.cost({ caseName: c.name, shape, size, reps: size > 256 * KIB ? 1 : 3, budgetMs: allowedMs });
  const label = `${c.name}: prefix ${JSON.stringify(c.prefixes[shape[0]])}, unit ${JSON.stringify(c.units[shape[1]])} × ${size} bytes, suffix ${JSON.stringify(c.suffixes[shape[2]])}`;
  const record = (ms: number) => {
    if (size === c.capBytes) atCap.push({ name: c.name, thread: c.thread, bytes: size, msPerKib: (ms * KIB) / size });
  };
  if (r === null) {
    record(RUNAWAY_MS);
    expect.fail(
      `${label}: still parsing after ${RUNAWAY_MS} ms (over ${((RUNAWAY_MS * KIB) / size).toFixed(0)} ms/KiB)`,
    );
  }
  record(r.ms);
  expect(r.ms, `${label}: ${r.ms.toFixed(1)} ms, ${((r.ms * KIB) / r.bytes).toFixed(3)} ms/KiB`).toBeLessThanOrEqual(
    allowedMs,
  );
}

describe('parsers of target-controlled text are linear up to their caps', () => {
  afterAll(() => {
    const lines = atCap.map(
      (m) =>
        `  ${m.name.padEnd(68)} ${m.thread.padEnd(5)} ${m.msPerKib.toFixed(3).padStart(8)} ms/KiB at ${(m.bytes / KIB).toFixed(0)} KiB (limit ${parserCases.find((c) => c.name === m.name)?.limitMsPerKib ?? LIMIT_MS_PER_KIB})`,
    );
    process.stdout.write(`cost per KiB of the worst shapes at the cap:\n${lines.join('\n')}\n`);
  });

  it.each(parserCases.map((c) => [c.name, c] as const))(
    '%s',
    async (_name, c) => {
      const worker = new CostWorker();
      try {
        // The known worst shapes at the cap first, then shapes and sizes fast-check picks.
        for (const shape of c.worst) await check(worker, c, shape, c.capBytes);
        await fc.assert(
          fc.asyncProperty(
            fc.tuple(fc.nat(c.prefixes.length - 1), fc.nat(c.units.length - 1), fc.nat(c.suffixes.length - 1)),
            fc.integer({ min: KIB, max: c.capBytes }),
            async (shape, size) => check(worker, c, shape, size),
          ),
          { numRuns: 4, endOnFailure: true },
        );
      } finally {
        await worker.close();
      }
    },
    120_000,
  );
});
