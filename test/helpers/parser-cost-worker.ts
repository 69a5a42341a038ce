// Times one parser case in a worker thread (test/unit/parser-bounds.test.ts): the test can
// terminate the thread when a parse runs away, which it cannot do to its own thread. Each request
// builds its input, runs the parser `reps` times (the first run after a small warm-up, so module
// loading and JIT do not count) and answers the fastest run: load on the machine only ever adds.
import { parentPort } from 'node:worker_threads';
import { buildInput, parserCases } from './parser-cases.ts';

export interface CostRequest {
  id: number;
  caseName: string;
  shape: [number, number, number];
  size: number;
  reps: number;
  /** Stop repeating once a run took this long (it has already failed). */
  budgetMs: number;
}

export interface CostReply {
  id: number;
  bytes: number;
  ms: number;
}

const warm = new Set<string>();

parentPort!.on('message', async (r: CostRequest) => {
  const c = parserCases.find((x) => x.name === r.caseName)!;
  if (!warm.has(c.name)) {
    await c.run(buildInput(c, 0, 0, 0, 512));
    warm.add(c.name);
  }
  const input = buildInput(c, ...r.shape, r.size);
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < r.reps; i++) {
    const t0 = performance.now();
    await c.run(input);
    const ms = performance.now() - t0;
    best = Math.min(best, ms);
    if (ms > r.budgetMs) break;
  }
  parentPort!.postMessage({ id: r.id, bytes: input.length, ms: best } satisfies CostReply);
});
