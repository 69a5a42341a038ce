// The lane's parse pool: workspaces served in turn (the fair queue), and a deadline that stops a
// task's thread and replaces it, so the next task runs at once on a new thread. The pool runs a
// test worker (test/helpers/spin-pool-worker.ts) whose task can spin forever, as a parser stuck
// in a backtrack would; the real task names are used because the pool only takes those.
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import client from 'prom-client';
import type { CheckContext, CheckSpec } from '../../src/products/kit/product-contract.ts';
import type { CheckOutput } from '../../src/contract/tasks.ts';
import type { LaneTask } from '../../src/jobs/tasks/lane-task-repo.ts';
import { executeCheck } from '../../workers/lane-runner/execute-check.ts';
import { FairQueue } from '../../workers/pool/fair-queue.ts';
import { createParsePool, type ParsePool } from '../../workers/pool/parse-pool.ts';
import { PoolDeadlineExceeded } from '../../workers/pool/pool-deadline.ts';

const SPIN_WORKER = new URL('../helpers/spin-pool-worker.ts', import.meta.url).href;
const TASK = 'parseCertificate';

describe('the fair queue', () => {
  const order = (q: FairQueue<string>) => q.take().map((t) => t.item);

  it('serves workspaces round-robin, each in its own order', () => {
    const q = new FairQueue<string>(1);
    for (const i of [1, 2, 3, 4]) q.enqueue('a', `a${i}`);
    q.enqueue('b', 'b1');
    q.enqueue('c', 'c1');
    q.enqueue('b', 'b2');
    const seen: string[] = [];
    for (let i = 0; i < 7; i++) {
      const [t] = q.take();
      seen.push(t!.item);
      q.finish(t!.tenant);
    }
    expect(seen).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'a4']);
    expect(q.queued).toBe(0);
  });

  it('gives one thread per free slot, and never all of them to one workspace while another waits', () => {
    const q = new FairQueue<string>(2);
    for (const i of [1, 2, 3]) q.enqueue('a', `a${i}`);
    expect(order(q)).toEqual(['a1', 'a2']); // alone: both threads
    expect(order(q)).toEqual([]); // none free
    q.enqueue('b', 'b1');
    q.finish('a');
    // a still holds one thread and b waits: the free thread goes to b, not to a's third task
    expect(order(q)).toEqual(['b1']);
    q.finish('a');
    expect(order(q)).toEqual(['a3']);
  });

  it('one thread: a workspace waiting with nothing running goes before the workspace just served (issue 30)', () => {
    const q = new FairQueue<string>(1);
    q.enqueue('a', 'a1');
    q.enqueue('a', 'a2');
    expect(order(q)).toEqual(['a1']); // a runs, a2 waits
    q.enqueue('b', 'b1'); // b arrives while a1 runs: it has nothing running
    q.finish('a');
    // Before: a was first in the round (its queue was never empty), so a2 ran and b waited two tasks.
    expect(order(q)).toEqual(['b1']);
    q.finish('b');
    expect(order(q)).toEqual(['a2']);
  });

  it('one thread, three workspaces: each newcomer goes before those already served', () => {
    const q = new FairQueue<string>(1);
    for (const i of [1, 2, 3]) q.enqueue('a', `a${i}`);
    const seen: string[] = [];
    const step = () => {
      const [t] = q.take();
      seen.push(t!.item);
      return t!.tenant;
    };
    let running = step(); // a1
    q.enqueue('b', 'b1');
    q.finish(running);
    running = step(); // b1
    q.enqueue('c', 'c1');
    q.enqueue('b', 'b2');
    q.finish(running);
    while (q.queued > 0) {
      running = step();
      q.finish(running);
    }
    expect(seen).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
  });

  it('takes a cancelled item out; cancelling a started one says so', () => {
    const q = new FairQueue<string>(1);
    q.enqueue('a', 'a1');
    const cancelB = q.enqueue('b', 'b1');
    const cancelA2 = q.enqueue('a', 'a2');
    expect(cancelB()).toBe(true);
    expect(cancelB()).toBe(false);
    const [first] = q.take();
    expect(first!.item).toBe('a1');
    q.finish('a');
    expect(cancelA2()).toBe(true);
    expect(q.take()).toEqual([]);
    expect(q.queued).toBe(0);
    expect(q.free).toBe(1);
  });
});

describe('the parse pool', () => {
  let pool: ParsePool | undefined;
  afterEach(async () => {
    await pool?.destroy();
    pool = undefined;
  });

  it('stops a task past its deadline, replaces its thread, and runs the next task on the new one at once', async () => {
    const registry = new client.Registry();
    pool = createParsePool({ threads: 1, deadlineMs: 300, filename: SPIN_WORKER, metrics: { registry, lane: 'web' } });
    const before = await pool.run<{ threadId: number }>(TASK, {});
    const t0 = performance.now();
    const stuck = pool.run(TASK, { spin: true }, { tenant: 'a' });
    const next = pool.run<{ threadId: number }>(TASK, {}, { tenant: 'b' });
    const err = await stuck.catch((e: unknown) => e);
    const stoppedAfter = performance.now() - t0;
    expect(err).toBeInstanceOf(PoolDeadlineExceeded);
    expect(err).toMatchObject({ task: TASK, deadlineMs: 300 });
    const after = await next;
    const nextDoneAfter = performance.now() - t0;
    expect(after.threadId).not.toBe(before.threadId); // a new thread
    expect(stoppedAfter).toBeGreaterThanOrEqual(290);
    expect(stoppedAfter).toBeLessThan(3000);
    // The next task waited for the deadline and a thread start (~200 ms), not for the spin (forever).
    expect(nextDoneAfter).toBeLessThan(stoppedAfter + 3000);
    const text = await registry.metrics();
    expect(text).toMatch(/lss_pool_thread_replacements_total\{lane="web",task="parseCertificate"\} 1/);
    expect(text).toMatch(
      /lss_pool_task_duration_seconds_count\{lane="web",task="parseCertificate",outcome="deadline"\} 1/,
    );
  });

  it("the caller's abort (a check timing out) stops a running task's thread too, and a queued task leaves the queue", async () => {
    pool = createParsePool({ threads: 1, deadlineMs: 60_000, filename: SPIN_WORKER });
    const before = await pool.run<{ threadId: number }>(TASK, {});
    const ac = new AbortController();
    const running = pool.run(TASK, { spin: true }, { signal: ac.signal });
    const queuedAc = new AbortController();
    const queued = pool.run(TASK, {}, { signal: queuedAc.signal });
    await new Promise((r) => setTimeout(r, 100));
    queuedAc.abort(new Error('gone'));
    await expect(queued).rejects.toThrow('gone');
    ac.abort(new Error('check timed out'));
    await expect(running).rejects.toThrow('check timed out');
    const after = await pool.run<{ threadId: number }>(TASK, {});
    expect(after.threadId).not.toBe(before.threadId);
  });

  it("another workspace's task goes next, not behind every stuck task of a busier workspace", async () => {
    pool = createParsePool({ threads: 2, deadlineMs: 800, filename: SPIN_WORKER });
    await Promise.all([pool.run(TASK, {}), pool.run(TASK, {})]); // both threads up
    const t0 = performance.now();
    const settledAt = (p: Promise<unknown>) =>
      p.then(
        () => performance.now() - t0,
        (e: unknown) => {
          expect(e).toBeInstanceOf(PoolDeadlineExceeded);
          return performance.now() - t0;
        },
      );
    // Workspace a: four tasks that never end (two fill the threads, two wait); then b's ordinary one.
    const a = [1, 2, 3, 4].map(() => settledAt(pool!.run(TASK, { spin: true }, { tenant: 'a' })));
    await new Promise((r) => setTimeout(r, 20));
    const b = settledAt(pool.run(TASK, {}, { tenant: 'b' }));
    const [a1, a2, a3, a4] = await Promise.all(a);
    const bDone = await b;
    // One FIFO would start a3 and a4 on the replaced threads and b after them (two deadlines);
    // served in turn, b takes the first free thread and is done before a's third task ends.
    expect(bDone).toBeGreaterThan(Math.min(a1!, a2!) - 50);
    expect(bDone).toBeLessThan(Math.min(a3!, a4!));
  });

  it('one thread: a second workspace waits one deadline behind a stuck workspace, not two', async () => {
    pool = createParsePool({ threads: 1, deadlineMs: 600, filename: SPIN_WORKER });
    await pool.run(TASK, {}); // the thread is up
    const ended: string[] = [];
    const track = (name: string, p: Promise<unknown>) =>
      p.then(
        () => ended.push(name),
        () => ended.push(name),
      );
    // a: two tasks that never end; b: an ordinary one, queued while a's first runs.
    const a1 = track('a1', pool.run(TASK, { spin: true }, { tenant: 'a' }));
    const a2 = track('a2', pool.run(TASK, { spin: true }, { tenant: 'a' }));
    await new Promise((r) => setTimeout(r, 50));
    const b1 = track('b1', pool.run(TASK, {}, { tenant: 'b' }));
    await Promise.all([a1, a2, b1]);
    // Before the fix: a1, a2, b1 (b waited two deadlines); now b goes once a1's deadline frees the thread.
    expect(ended).toEqual(['a1', 'b1', 'a2']);
  });

  it('refuses an unknown task and works inline with 0 threads', async () => {
    pool = createParsePool(0);
    await expect(pool.run('eval', 'x')).rejects.toThrow(/unknown pool task/);
    const ac = new AbortController();
    ac.abort(new Error('already'));
    await expect(pool.run(TASK, 'x', { signal: ac.signal })).rejects.toThrow('already');
  });
});

describe('a check whose pool task passes its deadline', () => {
  const task: LaneTask = {
    id: 1,
    jobId: 1,
    workspaceId: 7,
    objectKey: 'https://x.test/',
    check: 'web.http',
    lane: 'web',
    productLane: 'http',
    distance: 0,
    params: {},
    status: 'pending',
    attempts: 0,
    jobStatus: 'running',
    target: 'https://x.test/',
  };
  const log = pino({ level: 'silent' });
  const runtime = {} as CheckContext['runtime'];
  const spec = (run: CheckSpec['run'], timeoutMs = 5000): CheckSpec => ({
    name: 'web.http',
    lane: 'web',
    timeoutMs,
    run,
  });

  it('ends timeout with parse_deadline_exceeded whether the check lets the error through or catches it', async () => {
    // The real pool, stuck task, short deadline: what the check sees is PoolDeadlineExceeded.
    const pool = createParsePool({ threads: 1, deadlineMs: 200, filename: SPIN_WORKER });
    try {
      const runInPool = <T>(name: string, payload: unknown, o: { signal: AbortSignal }) =>
        pool.run<T>(name, payload, { tenant: '7', signal: o.signal });
      const through = await executeCheck(
        spec(async (_t, ctx) => {
          await ctx.runInPool!(TASK, { spin: true });
          throw new Error('not reached');
        }),
        task,
        { runtime, runInPool },
        new AbortController().signal,
        log,
      );
      expect(through).toMatchObject({ kind: 'done', status: 'timeout', reason: 'parse_deadline_exceeded' });
      const out = (through as { output: CheckOutput }).output;
      expect(out.limitations.map((l) => l.code)).toEqual(['parse_deadline_exceeded']);
      const caught = await executeCheck(
        spec(async (_t, ctx) => {
          const r = await ctx.runInPool!(TASK, { spin: true }).catch(() => null);
          return {
            status: 'completed',
            projection: { parsed: r },
            objects: [{ type: 'host', key: 'x.test', distance: 0, projection: {} }],
            relations: [],
            findings: [],
            limitations: [{ code: 'other', message: 'kept' }],
            sources: [],
          };
        }),
        task,
        { runtime, runInPool },
        new AbortController().signal,
        log,
      );
      expect(caught).toMatchObject({ status: 'timeout', reason: 'parse_deadline_exceeded' });
      const kept = (caught as { output: CheckOutput }).output;
      expect(kept.objects).toHaveLength(1);
      expect(kept.limitations.map((l) => l.code)).toEqual(['other', 'parse_deadline_exceeded']);
    } finally {
      await pool.destroy();
    }
  });

  it("the check's own timeout stops its pool task's thread", async () => {
    const pool = createParsePool({ threads: 1, deadlineMs: 60_000, filename: SPIN_WORKER });
    try {
      const before = await pool.run<{ threadId: number }>(TASK, {});
      const runInPool = <T>(name: string, payload: unknown, o: { signal: AbortSignal }) =>
        pool.run<T>(name, payload, { signal: o.signal });
      const r = await executeCheck(
        spec(async (_t, ctx) => ctx.runInPool!(TASK, { spin: true }), 300),
        task,
        { runtime, runInPool },
        new AbortController().signal,
        log,
      );
      expect(r).toMatchObject({ status: 'timeout', reason: 'check_timeout' });
      const t0 = performance.now();
      const after = await pool.run<{ threadId: number }>(TASK, {});
      expect(after.threadId).not.toBe(before.threadId);
      expect(performance.now() - t0).toBeLessThan(5000);
    } finally {
      await pool.destroy();
    }
  });
});
