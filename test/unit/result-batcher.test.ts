// The orchestrator's result batcher (src/jobs/orchestration/result-batcher.ts): one batch per job
// at a time, at most maxConcurrent batches at once, and jobs take turns: a job whose batch
// committed goes behind the jobs waiting, so a job with a backlog never holds the slots while
// another job's notice waits. The apply function records what it was given and waits for the
// test to finish each batch: assertions are on orders, never on durations.
import { setImmediate as tick } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { ResultBatcher } from '../../src/jobs/orchestration/result-batcher.ts';

function recorder() {
  const calls: Array<{ jobId: number; ids: number[]; done: () => void; fail: (e: Error) => void }> = [];
  const apply = (jobId: number, ids: number[]) =>
    new Promise<void>((done, fail) => {
      calls.push({ jobId, ids, done, fail });
    });
  return { calls, apply };
}

const turns = async (n = 3) => {
  for (let i = 0; i < n; i++) await tick();
};

describe('ResultBatcher', () => {
  it('a job with a backlog and one batch slot: a later job is applied after one batch of it, not after the backlog', async () => {
    const { calls, apply } = recorder();
    const b = new ResultBatcher(apply, { maxBatch: 2, maxConcurrent: 1 });
    const bigDone = [1, 2, 3, 4, 5, 6].map((t) => b.submit(100, t));
    await turns();
    const smallDone = b.submit(200, 7);
    await turns();
    expect(calls.map((c) => [c.jobId, c.ids])).toEqual([[100, [1, 2]]]);
    calls[0]!.done();
    await turns();
    // Job 200 was waiting: its turn comes before job 100's next batch.
    expect(calls.map((c) => [c.jobId, c.ids])).toEqual([
      [100, [1, 2]],
      [200, [7]],
    ]);
    calls[1]!.done();
    await smallDone;
    await turns();
    calls[2]!.done();
    await turns();
    calls[3]!.done();
    await Promise.all(bigDone);
    expect(calls.map((c) => [c.jobId, c.ids])).toEqual([
      [100, [1, 2]],
      [200, [7]],
      [100, [3, 4]],
      [100, [5, 6]],
    ]);
    expect(b.applying).toBe(0);
  });

  it('never more than maxConcurrent batches at once, and never two of one job', async () => {
    const { calls, apply } = recorder();
    const b = new ResultBatcher(apply, { maxBatch: 1, maxConcurrent: 2 });
    const all = [1, 1, 2, 3].map((job, i) => b.submit(job, i + 10));
    await turns();
    expect(calls.map((c) => c.jobId)).toEqual([1, 2]);
    expect(b.applying).toBe(2);
    calls[0]!.done();
    await turns();
    // Job 3 waited longer than job 1's second notice's job took its turn.
    expect(calls.map((c) => c.jobId)).toEqual([1, 2, 3]);
    calls[1]!.done();
    await turns();
    expect(calls.map((c) => c.jobId)).toEqual([1, 2, 3, 1]);
    calls[2]!.done();
    calls[3]!.done();
    await Promise.all(all);
    expect(b.applying).toBe(0);
  });

  it('a failed batch is applied again one notice at a time; only the failing notice is rejected', async () => {
    const seen: number[][] = [];
    const b = new ResultBatcher(
      async (_job, ids) => {
        seen.push(ids);
        if (ids.includes(2)) throw new Error('bad output');
      },
      { maxBatch: 8, maxConcurrent: 1 },
    );
    const results = await Promise.allSettled([1, 2, 3].map((t) => b.submit(5, t)));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(seen).toEqual([[1, 2, 3], [1], [2], [3]]);
  });
});
