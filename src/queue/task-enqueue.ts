// Putting tasks on their lane streams. MySQL is the truth (tasks.status = pending); a stream entry
// is only a wake-up. Each enqueue records the entry id in a marker key, so the reconciler and a
// redelivered plan can tell "still queued" from "lost" (Redis flushed, stream deleted) and
// re-enqueue only what was lost: blind re-enqueueing of a backlog would feed on itself.
//
// A task goes on its job's stream of the lane (streams.laneJob), and the job joins the lane's set
// of job streams (queueKeys.laneJobs) that the runners read. The group is created with the
// stream (at id 0: a runner reads every entry whatever came first). A lane's streams, set and
// markers share the lane's hash tag, so tasks are pipelined lane by lane: on Redis Cluster an
// explicit pipeline must stay on one node.
import type { RedisClient } from '../redis/client.ts';
import { CARRIED_FIELD, encodeCarried, type CarriedTask } from './carried-task.ts';
import { TASK_MESSAGE_TTL_MS, groups, isLaneName, queueKeys, streams, type LaneName } from './streams.ts';

export interface TaskRef {
  id: number;
  jobId: number;
  lane: string;
  /** The task's fields for its runner (carried-task.ts); absent, the runner reads the row. */
  carried?: CarriedTask;
}

const CHUNK = 500;
/** Entries a lane's wake stream keeps (a runner only needs the newest id). */
const WAKE_MAXLEN = 32;

/** Tasks grouped by lane, in chunks of at most CHUNK. */
function laneChunks(tasks: readonly TaskRef[]): Array<{ lane: LaneName; chunk: TaskRef[] }> {
  const byLane = new Map<LaneName, TaskRef[]>();
  for (const t of tasks) {
    if (!isLaneName(t.lane)) throw new Error(`task on unknown lane ${t.lane}`);
    const list = byLane.get(t.lane) ?? [];
    list.push(t);
    byLane.set(t.lane, list);
  }
  const out: Array<{ lane: LaneName; chunk: TaskRef[] }> = [];
  for (const [lane, list] of byLane) {
    for (let i = 0; i < list.length; i += CHUNK) out.push({ lane, chunk: list.slice(i, i + CHUNK) });
  }
  return out;
}

/** The replies of a pipeline, in order; the first error is thrown. */
async function replies(p: ReturnType<RedisClient['pipeline']>): Promise<unknown[]> {
  return ((await p.exec()) ?? []).map(([err, value]) => {
    if (err) throw err;
    return value;
  });
}

/** XADD every task and record its entry id. */
export async function enqueueTasks(redis: RedisClient, tasks: readonly TaskRef[]): Promise<void> {
  for (const { lane, chunk } of laneChunks(tasks)) {
    const jobs = [...new Set(chunk.map((t) => t.jobId))];
    // One round trip: each job's stream and group (BUSYGROUP: already there, which is what was
    // asked), the entries, and the jobs' places in the lane's set.
    const adds = redis.pipeline();
    for (const jobId of jobs) adds.xgroup('CREATE', streams.laneJob(lane, jobId), groups.lane(lane), '0', 'MKSTREAM');
    for (const t of chunk)
      if (t.carried)
        adds.xadd(
          streams.laneJob(lane, t.jobId),
          '*',
          'task',
          String(t.id),
          'job',
          String(t.jobId),
          CARRIED_FIELD,
          encodeCarried(t.carried),
        );
      else adds.xadd(streams.laneJob(lane, t.jobId), '*', 'task', String(t.id), 'job', String(t.jobId));
    const now = Date.now();
    adds.zadd(queueKeys.laneJobs(lane), ...jobs.flatMap((j) => [String(now), String(j)]));
    // Last (the entry ids above are read by position): wakes the lane's idle runners at once.
    adds.xadd(queueKeys.laneWake(lane), 'MAXLEN', '~', String(WAKE_MAXLEN), '*', 'n', String(chunk.length));
    const results = (await adds.exec()) ?? [];
    results.forEach(([err], n) => {
      if (err && !(n < jobs.length && /BUSYGROUP/.test(err.message))) throw err;
    });
    const ids = results.slice(jobs.length, jobs.length + chunk.length).map(([, id]) => id);
    const marks = redis.pipeline();
    chunk.forEach((t, n) => {
      marks.set(queueKeys.taskMessage(lane, t.id), String(ids[n]), 'PX', TASK_MESSAGE_TTL_MS);
    });
    await replies(marks);
  }
}

/**
 * Re-enqueues the tasks whose entry is gone (no marker, or the marked entry no longer exists).
 * `tasks` were read from MySQL before Redis is asked, and a runner that claims, finishes and
 * acknowledges a task in between also deletes its marker: such a task reads as lost. `stillOpen`,
 * asked after Redis, keeps only those MySQL still has pending (a finished task re-enqueued would
 * be dropped by its runner, but costs a delivery and read as an entry lost).
 */
export async function ensureTasksEnqueued(
  redis: RedisClient,
  tasks: readonly TaskRef[],
  stillOpen: (lost: TaskRef[]) => Promise<TaskRef[]>,
): Promise<number> {
  const lost: TaskRef[] = [];
  for (const { lane, chunk } of laneChunks(tasks)) {
    const gets = redis.pipeline();
    for (const t of chunk) gets.get(queueKeys.taskMessage(lane, t.id));
    const marks = await replies(gets);
    const probe = redis.pipeline();
    const probed: TaskRef[] = [];
    chunk.forEach((t, n) => {
      const id = marks[n];
      if (typeof id !== 'string') {
        lost.push(t);
      } else {
        probe.xrange(streams.laneJob(lane, t.jobId), id, id);
        probed.push(t);
      }
    });
    if (probed.length > 0) {
      const found = await replies(probe);
      probed.forEach((t, n) => {
        if ((found[n] as unknown[]).length === 0) lost.push(t);
      });
    }
  }
  const requeue = lost.length > 0 ? await stillOpen(lost) : lost;
  await enqueueTasks(redis, requeue);
  return requeue.length;
}
