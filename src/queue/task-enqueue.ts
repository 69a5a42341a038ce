// Putting tasks on their lane streams. MySQL is the truth (tasks.status = pending); a stream entry
// is only a wake-up. Each enqueue records the entry id in a marker key, so the reconciler and a
// redelivered plan can tell "still queued" from "lost" (Redis flushed, stream deleted) and
// re-enqueue only what was lost: blind re-enqueueing of a backlog would feed on itself.
import type { Redis } from 'ioredis';
import { TASK_MESSAGE_TTL_MS, isLaneName, queueKeys, streams } from './streams.ts';

export interface TaskRef {
  id: number;
  jobId: number;
  lane: string;
}

const CHUNK = 500;

function laneStream(lane: string): string {
  if (!isLaneName(lane)) throw new Error(`task on unknown lane ${lane}`);
  return streams.lane(lane);
}

/** XADD every task and record its entry id. */
export async function enqueueTasks(redis: Redis, tasks: readonly TaskRef[]): Promise<void> {
  for (let i = 0; i < tasks.length; i += CHUNK) {
    const chunk = tasks.slice(i, i + CHUNK);
    const adds = redis.pipeline();
    for (const t of chunk) adds.xadd(laneStream(t.lane), '*', 'task', String(t.id), 'job', String(t.jobId));
    const ids = (await adds.exec()) ?? [];
    const marks = redis.pipeline();
    chunk.forEach((t, n) => {
      const [err, id] = ids[n] ?? [new Error('no reply'), null];
      if (err) throw err;
      marks.set(queueKeys.taskMessage(t.id), String(id), 'PX', TASK_MESSAGE_TTL_MS);
    });
    await marks.exec();
  }
}

/** Re-enqueues the tasks whose entry is gone (no marker, or the marked entry no longer exists). */
export async function ensureTasksEnqueued(redis: Redis, tasks: readonly TaskRef[]): Promise<number> {
  const lost: TaskRef[] = [];
  for (let i = 0; i < tasks.length; i += CHUNK) {
    const chunk = tasks.slice(i, i + CHUNK);
    const gets = redis.pipeline();
    for (const t of chunk) gets.get(queueKeys.taskMessage(t.id));
    const marks = (await gets.exec()) ?? [];
    const probe = redis.pipeline();
    const probed: TaskRef[] = [];
    chunk.forEach((t, n) => {
      const [err, id] = marks[n] ?? [null, null];
      if (err) throw err;
      if (typeof id !== 'string') {
        lost.push(t);
      } else {
        probe.xrange(laneStream(t.lane), id, id);
        probed.push(t);
      }
    });
    if (probed.length > 0) {
      const found = (await probe.exec()) ?? [];
      probed.forEach((t, n) => {
        const [err, rows] = found[n] ?? [null, []];
        if (err) throw err;
        if ((rows as unknown[]).length === 0) lost.push(t);
      });
    }
  }
  await enqueueTasks(redis, lost);
  return lost.length;
}

/** The task finished: its marker has no further use. */
export function forgetTaskMessage(redis: Redis, taskId: number): Promise<number> {
  return redis.del(queueKeys.taskMessage(taskId));
}
