// A bounded, seeded run of the HTTP fuzzer in `npm test` (`npm run fuzz` runs ≥ 20,000). On a
// failure the seed and each violating request are printed: LSS_FUZZ_SEED=<seed> replays it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/config.ts';
import { testEnv } from '../helpers/harness.ts';
import { runFuzz, secretsInLogs } from './fuzz-http.ts';
import { startFuzzTarget, type RunningTarget } from './fuzz-target.ts';

const SEED = Number(process.env.LSS_FUZZ_SEED ?? Date.now() % 2 ** 31);
const REQUESTS = Number(process.env.LSS_FUZZ_REQUESTS ?? 1200);

let running: RunningTarget;

beforeAll(async () => {
  running = await startFuzzTarget(parseConfig(testEnv({ LOG_LEVEL: 'info' })));
});

afterAll(async () => {
  await running?.close();
});

describe(`HTTP fuzz (seed ${SEED}, ${REQUESTS} requests)`, () => {
  it('every reply keeps the invariants, and no secret reaches the logs', async () => {
    const stats = await runFuzz(running.target, { requests: REQUESTS, seed: SEED, concurrency: 6 });
    const report = `seed ${SEED} (replay: LSS_FUZZ_SEED=${SEED} npm test -- test/fuzz/http-fuzz.test.ts)\n${stats.violations
      .slice(0, 10)
      .map((v) => `#${v.index} [${v.kind}] ${v.problem}\n  request ${v.request}\n  reply   ${v.reply}`)
      .join('\n')}`;
    expect(stats.violations, report).toEqual([]);
    expect(stats.requests).toBe(REQUESTS);
    // The generators reach every class of input.
    expect(Object.keys(stats.byKind).sort()).toEqual([
      'contract',
      'encoding',
      'header',
      'method',
      'nesting',
      'path',
      'size',
    ]);
    expect(secretsInLogs(running.logLines, running.secrets), `seed ${SEED}`).toEqual([]);
  }, 180_000);
});
