// Stream dispatch vs BullMQ on the same Redis, trivial tasks (queue mechanics only, no MySQL).
//
//   sh ops/bootstrap.sh test/bench/dispatch.ts [N] [rounds]     (defaults: 20,000 tasks, 3 rounds)
//
// Sides, each with its own throwaway keys, the same Redis, the same ioredis, the same concurrency
// (LANE_CONCURRENCY, as the lane runner uses) and its producer and consumer on separate connections
// in this one Node process:
//   (a)  ours: pipelined XADDs in chunks of 500 (the chunk of task-enqueue.ts) with the fields
//        enqueueTasks writes (task, job) plus the enqueue time `t`, consumed by our StreamConsumer
//        (src/queue/stream-consumer.ts) with the lane runner's settings (concurrency, visibility,
//        max deliveries, default batch/block/claim/trim); the handler records the time and ACKs.
//   (a+) ours as production does the Redis side of a task: the producer is enqueueTasks itself
//        (XADD + the task-message marker SET) and the handler settles as LaneRunner's #publish
//        does (XACK + XADD task-results + DEL marker in one MULTI). Reported for information;
//        enqueueTasks writes no timestamp, so its enqueue times are kept in an in-process map.
//   (b)  BullMQ: Queue.addBulk in chunks of 500 of jobs {task, job, t} with BullMQ's default job
//        options (completed jobs are kept, like our acked entries until a trim; it measured faster
//        than removeOnComplete: true here), Worker with the same concurrency and lockDuration =
//        LANE_VISIBILITY_MS, processor records the time and returns.
// Throughput: N tasks, enqueued while the consumer runs; tasks/s from the first enqueue to the
// last completion (our ack's MULTI returned / BullMQ's 'completed' event); also "drain": the same
// N queued first, consumer start → last completion (the consumer side alone). Both are run
// `rounds` times, the sides interleaved, and the median is reported. Latency: a separate
// run of LAT_N tasks enqueued one at a time at ~LAT_RATE/s, accept→start = the enqueue time taken
// just before XADD / queue.add (carried in the payload) → handler start, p50/p99. Each side gets
// a warm-up run first (JIT, Lua script cache). Every run uses fresh keys.
//
// Excluded on both sides: the MySQL work the lane runner does per task (load, claim, persist),
// tenant permits, the check itself. Keys live under lssbench:<time>_<hex>: and are deleted at the
// end (also on Ctrl-C). Targets are reported PASS/MISS; a MISS does not fail the process.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep, setImmediate as tick } from 'node:timers/promises';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { deletePrefixedKeys, ensureServices } from '../../ops/services.ts';
import { parseQueueSettings } from '../../src/queue/queue-settings.ts';
import { ACK, StreamConsumer, type Settlement } from '../../src/queue/stream-consumer.ts';
import { LaneStreamsConsumer } from '../../src/queue/lane-streams-consumer.ts';
import { groups, queueKeys, streams } from '../../src/queue/streams.ts';
import { enqueueTasks, type TaskRef } from '../../src/queue/task-enqueue.ts';
import { createRedis, redisReady } from '../../src/redis/client.ts';

const root = path.resolve(import.meta.dirname, '../..');
const N = Number(process.argv[2] ?? 20_000);
const ROUNDS = Number(process.argv[3] ?? 3);
const WARMUP_N = 3_000;
const LAT_N = 2_000;
const LAT_RATE = 500;
const CHUNK = 500;
const RUN_TIMEOUT_MS = 180_000;
const TARGET_RATIO = 1.5;
const TARGET_P50_MS = 5;
const LANE = 'dns' as const;

const log = (msg: string): void => {
  process.stderr.write(`[bench] ${msg}\n`);
};
const plog = pino({ level: 'warn' }, pino.destination(2));
const settings = parseQueueSettings(process.env);
const now = (): number => performance.now();

/** One side, fresh keys per instance: start the consumer, enqueue, wait for completions, close. */
interface Side {
  /** Connections and the producer side (BullMQ's Queue); no consumer yet. */
  open(): Promise<void>;
  /** Starts the consumer; `onStart` is called at handler start with the task's enqueue time. */
  consume(onStart: (sentAt: number) => void): Promise<void>;
  /** Tasks [from, from + n) in chunks of CHUNK, each chunk awaited (as enqueueTasks does). */
  enqueueBulk(from: number, n: number): Promise<void>;
  /** One task, stamped with the current time just before it is sent. */
  enqueueOne(i: number): Promise<unknown>;
  /** Resolves once n tasks have completed (settled in Redis). */
  done(n: number): Promise<void>;
  close(): Promise<void>;
}

type SideFactory = (run: string) => Side;

// ---------------------------------------------------------------------------
// (a) / (a+): our streams

function oursSide(redisUrl: string, basePrefix: string, production: boolean): SideFactory {
  return (run) => {
    // Each run gets its own key prefix, so the real stream/group names (and enqueueTasks) apply.
    const prefix = `${basePrefix}${run}:`;
    const producer = createRedis({ url: redisUrl }, prefix);
    const redis = createRedis({ url: redisUrl }, prefix);
    for (const r of [producer, redis]) r.on('error', (err) => log(`redis error (${run}): ${err.message}`));
    const stream = streams.lane(LANE);
    const sentAt = new Map<number, number>(); // (a+) only: enqueueTasks writes no timestamp
    let handled = 0;
    let consumer: StreamConsumer | LaneStreamsConsumer | undefined;
    let onStart: (t: number) => void = () => {};
    const settle = (task: string, job: string): Settlement =>
      production
        ? {
            // As LaneRunner#publish: the result notice and the marker deletion ride the ack's MULTI.
            ack: true,
            with: (tx) => {
              tx.xadd(streams.laneResults(LANE), '*', 'task', task, 'job', job);
              tx.del(queueKeys.taskMessage(LANE, Number(task)));
            },
          }
        : ACK;
    const taskRefs = (from: number, n: number): TaskRef[] =>
      Array.from({ length: n }, (_, k) => ({ id: from + k + 1, jobId: 1 + Math.floor((from + k) / 100), lane: LANE }));
    return {
      async open() {
        await Promise.all([redisReady(producer), redisReady(redis)]);
      },
      async consume(cb) {
        onStart = cb;
        const common = {
          log: plog,
          visibilityMs: settings.LANE_VISIBILITY_MS,
          maxDeliveries: settings.LANE_MAX_DELIVERIES,
          handle: async (d: { fields: Record<string, string> }) => {
            const t = production ? sentAt.get(Number(d.fields.task)) : Number(d.fields.t);
            onStart(t ?? Number.NaN);
            handled++;
            return settle(d.fields.task!, d.fields.job!);
          },
          deadLetter: async () => ACK,
        };
        // (a+) reads what enqueueTasks writes: the lane's job streams, as the lane runner does.
        consumer = production
          ? new LaneStreamsConsumer({
              ...common,
              redis,
              lane: LANE,
              consumer: `bench-${run}`,
              maxInFlight: settings.LANE_CONCURRENCY,
              wants: () => settings.LANE_CONCURRENCY,
            })
          : new StreamConsumer({
              ...common,
              redis,
              stream,
              group: groups.lane(LANE),
              consumer: `bench-${run}`,
              concurrency: settings.LANE_CONCURRENCY,
            });
        await consumer.start();
      },
      async enqueueBulk(from, n) {
        if (production) {
          const refs = taskRefs(from, n);
          const t = now();
          for (const r of refs) sentAt.set(r.id, t);
          await enqueueTasks(producer, refs);
          return;
        }
        for (let i = from; i < from + n; i += CHUNK) {
          const p = producer.pipeline();
          const t = String(now());
          for (let k = i; k < Math.min(i + CHUNK, from + n); k++) {
            p.xadd(stream, '*', 'task', String(k + 1), 'job', String(1 + Math.floor(k / 100)), 't', t);
          }
          for (const [err] of (await p.exec()) ?? []) if (err) throw err;
        }
      },
      enqueueOne(i) {
        if (production) {
          const refs = taskRefs(i, 1);
          sentAt.set(refs[0]!.id, now());
          return enqueueTasks(producer, refs);
        }
        return producer.xadd(
          stream,
          '*',
          'task',
          String(i + 1),
          'job',
          String(1 + Math.floor(i / 100)),
          't',
          String(now()),
        );
      },
      async done(n) {
        // Handler starts are counted; an entry leaves inFlight only after its ack's MULTI returned.
        while (handled < n || consumer!.inFlight > 0) {
          if (handled < n) await sleep(1);
          else await tick();
        }
      },
      async close() {
        await consumer?.close();
        await Promise.all([
          producer.quit().catch(() => producer.disconnect()),
          redis.quit().catch(() => redis.disconnect()),
        ]);
      },
    };
  };
}

// ---------------------------------------------------------------------------
// (b) BullMQ

interface BenchJob {
  task: number;
  job: number;
  t: number;
}

function bullSide(redisUrl: string, basePrefix: string): SideFactory {
  return (run) => {
    // BullMQ refuses ioredis keyPrefix; its own `prefix` namespaces the keys instead.
    const opts = { maxRetriesPerRequest: null, lazyConnect: true } as const;
    const qconn = new Redis(redisUrl, opts);
    const wconn = new Redis(redisUrl, opts);
    for (const r of [qconn, wconn]) r.on('error', (err) => log(`redis error (${run}): ${err.message}`));
    const prefix = `${basePrefix}bull`;
    const name = `dispatch-${run}`;
    let queue: Queue<BenchJob> | undefined;
    let worker: Worker<BenchJob> | undefined;
    let completed = 0;
    let waiter: { n: number; resolve: () => void } | undefined;
    const job = (i: number, t: number): BenchJob => ({ task: i + 1, job: 1 + Math.floor(i / 100), t });
    return {
      async open() {
        await Promise.all([qconn.connect(), wconn.connect()]);
        queue = new Queue<BenchJob>(name, { connection: qconn, prefix });
        queue.on('error', (err: Error) => log(`bullmq queue error: ${err.message}`));
        await queue.waitUntilReady();
      },
      async consume(onStart) {
        worker = new Worker<BenchJob>(
          name,
          async (j: { data: BenchJob }) => {
            onStart(j.data.t);
          },
          {
            connection: wconn,
            prefix,
            concurrency: settings.LANE_CONCURRENCY,
            lockDuration: settings.LANE_VISIBILITY_MS,
          },
        );
        worker.on('error', (err: Error) => log(`bullmq worker error: ${err.message}`));
        worker.on('failed', (_j: unknown, err: Error) => log(`bullmq job failed: ${err.message}`));
        worker.on('completed', () => {
          completed++;
          if (waiter && completed >= waiter.n) waiter.resolve();
        });
        await worker.waitUntilReady();
      },
      async enqueueBulk(from, n) {
        for (let i = from; i < from + n; i += CHUNK) {
          const t = now();
          const jobs = [];
          for (let k = i; k < Math.min(i + CHUNK, from + n); k++) jobs.push({ name: 'task', data: job(k, t) });
          await queue!.addBulk(jobs);
        }
      },
      enqueueOne(i) {
        return queue!.add('task', job(i, now()));
      },
      done(n) {
        if (completed >= n) return Promise.resolve();
        return new Promise<void>((resolve) => (waiter = { n, resolve }));
      },
      async close() {
        await worker?.close();
        await queue?.close();
        await Promise.all([qconn.quit().catch(() => qconn.disconnect()), wconn.quit().catch(() => wconn.disconnect())]);
      },
    };
  };
}

// ---------------------------------------------------------------------------
// Runs

interface Throughput {
  n: number;
  enqueueMs: number;
  totalMs: number;
  perS: number;
}
interface Drain {
  n: number;
  perS: number;
}
interface Latency {
  n: number;
  rate: number;
  p50: number;
  p99: number;
  max: number;
}

function withTimeout<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what}: no completion within ${RUN_TIMEOUT_MS / 1000} s`)),
      RUN_TIMEOUT_MS,
    );
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

async function throughputRun(make: SideFactory, run: string, n: number): Promise<Throughput> {
  const side = make(run);
  try {
    await side.open();
    await side.consume(() => {});
    const t0 = now();
    await side.enqueueBulk(0, n);
    const t1 = now();
    await withTimeout(side.done(n), run);
    const t2 = now();
    return { n, enqueueMs: t1 - t0, totalMs: t2 - t0, perS: n / ((t2 - t0) / 1000) };
  } finally {
    await side.close();
  }
}

/** Consumer side alone: N tasks are queued before the consumer starts; consumer start → last completion. */
async function drainRun(make: SideFactory, run: string, n: number): Promise<Drain> {
  const side = make(run);
  try {
    await side.open();
    await side.enqueueBulk(0, n);
    const t0 = now();
    await side.consume(() => {});
    await withTimeout(side.done(n), run);
    return { n, perS: n / ((now() - t0) / 1000) };
  } finally {
    await side.close();
  }
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

async function latencyRun(make: SideFactory, run: string, n: number, rate: number): Promise<Latency> {
  const side = make(run);
  const samples: number[] = [];
  try {
    await side.open();
    await side.consume((sentAt) => samples.push(now() - sentAt));
    const sends: Promise<unknown>[] = [];
    const t0 = now();
    for (let i = 0; i < n; i++) {
      const wait = t0 + (i * 1000) / rate - now();
      if (wait >= 1) await sleep(wait);
      sends.push(side.enqueueOne(i));
    }
    const elapsed = now() - t0;
    await Promise.all(sends);
    await withTimeout(side.done(n), run);
    if (samples.some((s) => !Number.isFinite(s))) throw new Error(`${run}: a task started without its enqueue time`);
    samples.sort((x, y) => x - y);
    return {
      n: samples.length,
      rate: n / (elapsed / 1000),
      p50: quantile(samples, 0.5),
      p99: quantile(samples, 0.99),
      max: samples.at(-1)!,
    };
  } finally {
    await side.close();
  }
}

// ---------------------------------------------------------------------------
// Main

async function redisVersion(redisUrl: string): Promise<string> {
  const r = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await r.connect();
    return /redis_version:(\S+)/.exec(await r.info('server'))?.[1] ?? 'unknown';
  } finally {
    r.disconnect();
  }
}

const fmt = (x: number, digits = 2): string => x.toFixed(digits);

function table(head: string[], rows: string[][]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
}

const { redisUrl } = await ensureServices({ root });
const suffix = `${new Date().toISOString().replace(/\D/g, '').slice(0, 14)}_${randomBytes(3).toString('hex')}`;
const basePrefix = `lssbench:${suffix}:`;
let cleaned = false;
async function cleanup(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  await deletePrefixedKeys(redisUrl, basePrefix).then(
    (n) => log(`deleted ${n} Redis key(s) with prefix ${basePrefix}`),
    (e: Error) => log(`warning: could not delete Redis keys ${basePrefix}*: ${e.message}`),
  );
}
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    log(`${sig}: cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}

const sides: Array<[label: string, key: string, make: SideFactory]> = [
  ['(a)  LSS: XADD + StreamConsumer, ack', 'a', oursSide(redisUrl, basePrefix, false)],
  ['(a+) LSS: enqueueTasks + StreamConsumer, ack as lane runner', 'ap', oursSide(redisUrl, basePrefix, true)],
  ['(b)  BullMQ: addBulk/add + Worker', 'b', bullSide(redisUrl, basePrefix)],
];

let exitCode = 0;
try {
  const version = await redisVersion(redisUrl);
  log(`Redis ${redisUrl} (${version}), key prefix ${basePrefix}; concurrency ${settings.LANE_CONCURRENCY}`);
  const tpAll = new Map<string, Throughput[]>(sides.map(([, key]) => [key, []]));
  const drainAll = new Map<string, Drain[]>(sides.map(([, key]) => [key, []]));
  const lat = new Map<string, Latency>();
  for (const [label, key, make] of sides) {
    log(`${label}: warm-up ${WARMUP_N}`);
    await throughputRun(make, `${key}-warm`, WARMUP_N);
  }
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [label, key, make] of sides) {
      log(`round ${round}/${ROUNDS} ${label}: throughput, ${N} tasks`);
      tpAll.get(key)!.push(await throughputRun(make, `${key}-tp${round}`, N));
    }
    for (const [label, key, make] of sides) {
      log(`round ${round}/${ROUNDS} ${label}: drain of ${N} queued tasks`);
      drainAll.get(key)!.push(await drainRun(make, `${key}-drain${round}`, N));
    }
  }
  const median = <T extends { perS: number }>(rs: T[]): T =>
    [...rs].sort((x, y) => x.perS - y.perS)[Math.floor((rs.length - 1) / 2)]!;
  const tp = new Map([...tpAll].map(([k, rs]) => [k, median(rs)]));
  const drain = new Map([...drainAll].map(([k, rs]) => [k, median(rs)]));
  for (const [label, key, make] of sides) {
    log(`${label}: latency, ${LAT_N} tasks at ~${LAT_RATE}/s`);
    lat.set(key, await latencyRun(make, `${key}-lat`, LAT_N, LAT_RATE));
  }

  const { version: bullVersion } = (await import('bullmq/package.json', { with: { type: 'json' } })).default as {
    version: string;
  };
  const out: string[] = [''];
  out.push(`Dispatch benchmark: trivial tasks, queue mechanics only (no MySQL on either side)`);
  out.push(
    `Node ${process.version}, ${os.availableParallelism()} CPUs (${os.cpus()[0]?.model ?? 'unknown'}), ${os.platform()}; Redis ${version} at ${redisUrl}; BullMQ ${bullVersion}`,
  );
  out.push(
    `Concurrency ${settings.LANE_CONCURRENCY} (LANE_CONCURRENCY) on every side; producer and consumer in this process on separate connections.`,
  );
  out.push('');
  out.push(
    `Throughput: ${N} tasks enqueued in chunks of ${CHUNK} while the consumer runs (first enqueue → last completion);`,
  );
  out.push(
    `drain: consumer side alone, the same N queued before the consumer starts. Median of ${ROUNDS} interleaved round(s); all rounds in brackets.`,
  );
  const all = (rs: Array<{ perS: number }>) => rs.map((r) => fmt(r.perS, 0)).join(' ');
  out.push(
    ...table(
      ['side', 'tasks/s', 'enqueue ms', 'total ms', 'drain tasks/s', 'rounds tasks/s', 'rounds drain'],
      sides.map(([label, key]) => {
        const r = tp.get(key)!;
        return [
          label,
          fmt(r.perS, 0),
          fmt(r.enqueueMs, 0),
          fmt(r.totalMs, 0),
          fmt(drain.get(key)!.perS, 0),
          `[${all(tpAll.get(key)!)}]`,
          `[${all(drainAll.get(key)!)}]`,
        ];
      }),
    ),
  );
  out.push('');
  out.push(
    `Accept→start latency: ${LAT_N} tasks enqueued one at a time at ~${LAT_RATE}/s (enqueue call → handler start)`,
  );
  out.push(
    ...table(
      ['side', 'rate/s', 'p50 ms', 'p99 ms', 'max ms'],
      sides.map(([label, key]) => {
        const r = lat.get(key)!;
        return [label, fmt(r.rate, 0), fmt(r.p50), fmt(r.p99), fmt(r.max)];
      }),
    ),
  );
  out.push('');
  const b = tp.get('b')!.perS;
  const ratioA = tp.get('a')!.perS / b;
  const ratioAp = tp.get('ap')!.perS / b;
  out.push(`ratio (a)/(b)  = ${fmt(ratioA)}   (drain only: ${fmt(drain.get('a')!.perS / drain.get('b')!.perS)})`);
  out.push(
    `ratio (a+)/(b) = ${fmt(ratioAp)}  (information: (a) plus the marker SET and the result notice production writes)`,
  );
  out.push('');
  const check = (label: string, ok: boolean, detail: string) =>
    out.push(`${ok ? 'PASS' : 'MISS'}  ${label}: ${detail}`);
  check(`(a) throughput >= ${TARGET_RATIO}x BullMQ`, ratioA >= TARGET_RATIO, `${fmt(ratioA)}x`);
  check(
    `(a) accept→start p50 <= ${TARGET_P50_MS} ms`,
    lat.get('a')!.p50 <= TARGET_P50_MS,
    `${fmt(lat.get('a')!.p50)} ms`,
  );
  out.push('');
  process.stdout.write(`${out.join('\n')}\n`);
} catch (e) {
  log(e instanceof Error ? (e.stack ?? e.message) : String(e));
  exitCode = 1;
} finally {
  await cleanup();
}
process.exit(exitCode);
