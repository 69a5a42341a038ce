// `npm run bench:lane-streams` = `node test/bench/lane-streams.ts`: what one stream per job costs
// Redis when many jobs are on one lane at once (issue 32: 1,000 monitors due at once make 1,000
// small jobs). A lane runner's consumer (src/queue/lane-streams-consumer.ts) names every job
// stream it wants entries of in each XREADGROUP and reads the lane's set of job streams (ZRANGE)
// every refresh; this measures that on a private redis-server (nobody else's commands in its
// figures), with the same total work at each job count: BENCH_LANE_TASKS (4,000) tasks spread
// over K jobs (BENCH_LANE_JOBS, default 10,100,1000), enqueued at once by the project's
// enqueueTasks, drained by one consumer that holds up to 256 checks of BENCH_LANE_CHECK_MS (50) ms
// each (a check waiting on the network) and at most 32 waiting entries per job stream, as the lane
// runner does. Printed per K: the drain wall, Redis CPU (INFO cpu, user + sys) in all and per task,
// the most entries the consumer held at once (it may hold 2 × capacity), XREADGROUP calls and
// Redis's own µs per call (INFO commandstats: Redis runs one command at a time, so this is also
// how long one read holds every other client up), ZRANGE calls and µs per call (the whole list of
// job streams) and ZRANGEBYSCORE's (the look for newly enqueued jobs between them).
// BENCH_LANE_MIX=1: half the tasks on one job (a scan's backlog), half spread over K more.
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { Redis } from 'ioredis';
import { createRedis, redisReady, type RedisClient } from '../../src/redis/client.ts';
import { enqueueTasks } from '../../src/queue/task-enqueue.ts';
import { LaneStreamsConsumer } from '../../src/queue/lane-streams-consumer.ts';
import { ACK } from '../../src/queue/stream-consumer.ts';
import { freePort } from '../helpers/processes.ts';

const TASKS = Number(process.env.BENCH_LANE_TASKS ?? 4000);
const JOBS = (process.env.BENCH_LANE_JOBS ?? '10,100,1000').split(',').map(Number);
const CHECK_MS = Number(process.env.BENCH_LANE_CHECK_MS ?? 50);
const CAPACITY = 256;
/** BENCH_LANE_MIX=1: half the tasks on one job (a scan), the other half spread over the other K - 1. */
const MIX = process.env.BENCH_LANE_MIX === '1';
/** The runner's read-ahead per job stream (workers/lane-runner/runner.ts: capacity / 8, at least 4). */
const READ_AHEAD = Math.max(4, Math.ceil(CAPACITY / 8));
const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);

function info(text: string, field: string): number {
  return Number(new RegExp(`^${field}:([0-9.]+)`, 'm').exec(text)?.[1] ?? Number.NaN);
}

function commandStats(text: string, cmd: string): { calls: number; usec: number } {
  const m = new RegExp(`^cmdstat_${cmd}:calls=(\\d+),usec=(\\d+)`, 'm').exec(text);
  return { calls: Number(m?.[1] ?? 0), usec: Number(m?.[2] ?? 0) };
}

interface Row {
  jobs: number;
  wallS: number;
  cpuS: number;
  reads: { calls: number; usec: number };
  zranges: { calls: number; usec: number };
  /** The look for newly enqueued jobs between whole refreshes (ZRANGEBYSCORE). */
  discovers: { calls: number; usec: number };
  /** Most entries read and not yet finished at once (the consumer's maxInFlight is 2 × capacity). */
  held: number;
}

async function round(redis: RedisClient, admin: Redis, jobs: number): Promise<Row> {
  // MIX: one job holds half the tasks (a scan's backlog), the other half is spread over the rest.
  const refs: Array<{ id: number; jobId: number; lane: string }> = [];
  let id = 1;
  const counts = MIX
    ? [TASKS / 2, ...Array.from({ length: jobs - 1 }, () => TASKS / 2 / (jobs - 1))]
    : Array.from({ length: jobs }, () => TASKS / jobs);
  counts.forEach((c, j) => {
    for (let t = 0; t < Math.max(1, Math.round(c)); t++)
      refs.push({ id: id++, jobId: 100_000 * jobs + j, lane: 'web' });
  });
  await admin.config('RESETSTAT');
  const cpu0 = await admin.info('cpu');
  const t0 = performance.now();
  await enqueueTasks(redis, refs);
  // The runner's accounting: entries read and waiting for a slot, per stream and in all; a slot
  // of the capacity per running check (a plain semaphore here: one workspace).
  const waitingBy = new Map<string, number>();
  let waitingAll = 0;
  let running = 0;
  const slotWaiters: Array<() => void> = [];
  let done = 0;
  let held = 0;
  const consumer = new LaneStreamsConsumer({
    redis,
    lane: 'web',
    consumer: 'bench',
    log: pino({ level: 'silent' }),
    maxInFlight: 2 * CAPACITY,
    wants: (stream) => {
      return waitingAll >= CAPACITY ? 0 : Math.max(0, READ_AHEAD - (waitingBy.get(stream) ?? 0));
    },
    visibilityMs: 60_000,
    maxDeliveries: 5,
    handle: async (d) => {
      waitingAll++;
      held = Math.max(held, waitingAll + running);
      waitingBy.set(d.stream, (waitingBy.get(d.stream) ?? 0) + 1);
      if (running >= CAPACITY) await new Promise<void>((r) => slotWaiters.push(r));
      running++;
      waitingAll--;
      waitingBy.set(d.stream, (waitingBy.get(d.stream) ?? 1) - 1);
      consumer.wake();
      await sleep(CHECK_MS);
      running--;
      slotWaiters.shift()?.();
      done++;
      return ACK;
    },
    deadLetter: async () => ACK,
  });
  await consumer.start();
  while (done < refs.length) await sleep(5);
  const wallS = (performance.now() - t0) / 1000;
  await consumer.close();
  const cpu1 = await admin.info('cpu');
  const stats = await admin.info('commandstats');
  const used = (t: string) => info(t, 'used_cpu_user') + info(t, 'used_cpu_sys');
  const reads = commandStats(stats, 'xreadgroup');
  return {
    jobs,
    wallS,
    cpuS: used(cpu1) - used(cpu0),
    reads,
    zranges: commandStats(stats, 'zrange'),
    discovers: commandStats(stats, 'zrangebyscore'),
    held,
  };
}

async function main(): Promise<void> {
  const port = await freePort();
  const server = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  try {
    for (let i = 0; ; i++) {
      const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null });
      probe.on('error', () => {});
      const up = await probe.connect().then(
        () => true,
        () => false,
      );
      probe.disconnect();
      if (up) break;
      if (i > 50) throw new Error('redis-server did not start');
      await sleep(100);
    }
    const admin = new Redis({ port, host: '127.0.0.1' });
    const rows: Row[] = [];
    for (const k of JOBS) {
      await admin.flushall();
      const redis = createRedis({ url: `redis://127.0.0.1:${port}` }, 'bench:');
      await redisReady(redis);
      rows.push(await round(redis, admin, MIX ? k + 1 : k));
      redis.disconnect();
      const r = rows.at(-1)!;
      log(`${k} jobs: ${r.wallS.toFixed(2)} s`);
    }
    console.log(
      `One lane consumer draining ${TASKS} tasks (checks of ${CHECK_MS} ms, ${CAPACITY} at once, ${READ_AHEAD} read ahead per job; floor ${((TASKS * CHECK_MS) / CAPACITY / 1000).toFixed(2)} s) ${MIX ? 'half on one job, half spread over K more' : 'spread over K jobs'}, private redis-server`,
    );
    console.log(
      '  jobs   wall s   Redis CPU s   CPU µs/task   held at most   XREADGROUP calls   µs/call   ZRANGE calls   µs/call   ZRANGEBYSCORE calls   µs/call',
    );
    for (const r of rows)
      console.log(
        `  ${String(r.jobs).padStart(4)}   ${r.wallS.toFixed(2).padStart(6)}   ${r.cpuS.toFixed(2).padStart(11)}   ${((r.cpuS * 1e6) / TASKS).toFixed(0).padStart(11)}   ${String(r.held).padStart(13)}   ${String(r.reads.calls).padStart(16)}   ${(r.reads.usec / Math.max(1, r.reads.calls)).toFixed(0).padStart(7)}   ${String(r.zranges.calls).padStart(12)}   ${(r.zranges.usec / Math.max(1, r.zranges.calls)).toFixed(0).padStart(7)}   ${String(r.discovers.calls).padStart(19)}   ${(r.discovers.usec / Math.max(1, r.discovers.calls)).toFixed(0).padStart(7)}`,
      );
    admin.disconnect();
  } finally {
    server.kill('SIGTERM');
  }
}

await main();
process.exit(0);
