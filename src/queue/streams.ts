// Redis stream names and the producer side. Keys share the {lss} hash tag so the layout works on
// Redis Cluster (and MULTI over several of them is allowed). Redis holds only queues: MySQL
// (outbox, tasks) can rebuild every stream.
import type { Redis } from 'ioredis';

export const LANES = ['dns', 'mail', 'web', 'domain', 'active'] as const;
export type LaneName = (typeof LANES)[number];

export function isLaneName(s: string): s is LaneName {
  return (LANES as readonly string[]).includes(s);
}

export const streams = {
  jobs: '{lss}:jobs',
  taskResults: '{lss}:task-results',
  deadLetter: '{lss}:dead-letter',
  lane: (lane: LaneName) => `{lss}:lane:${lane}`,
} as const;

export const groups = {
  orchestrator: 'orchestrator',
  lane: (lane: LaneName) => `lane-${lane}`,
} as const;

/** Non-stream keys of the queue layer (all under the same hash tag). */
export const queueKeys = {
  /** Sorted set per lane: consumer → last heartbeat (ms). Lane liveness for readiness. */
  laneAlive: (lane: LaneName | 'orchestrator') => `{lss}:lane-alive:${lane}`,
  /** The stream id under which a task was last enqueued: lets the reconciler tell a lost entry from a queued one. */
  taskMessage: (taskId: number) => `{lss}:task-msg:${taskId}`,
  /** redis-semaphore adds its own `semaphore:` in front; the hash tag still applies. */
  tenantPermits: (lane: LaneName, workspaceId: number) => `{lss}:lane-permits:${lane}:${workspaceId}`,
  tickLock: (name: string) => `{lss}:tick-lock:${name}`,
} as const;

export type JobOp = 'plan' | 'cancel';

export function isJobOp(s: string | undefined): s is JobOp {
  return s === 'plan' || s === 'cancel';
}

/** The dead-letter stream has no consumer group (nothing pending to protect): a plain cap. */
export const DEAD_LETTER_MAXLEN = 10_000;

/** How long the task-message marker lives: far longer than any job's deadline. */
export const TASK_MESSAGE_TTL_MS = 24 * 3600_000;

// Producers never cap a stream with MAXLEN: that drops the oldest entries whether or not a
// consumer group still needs them. Consumers trim instead, never past the oldest pending entry
// (stream-trim.ts).
export async function publishJob(redis: Redis, jobId: number, op: JobOp): Promise<string | null> {
  return redis.xadd(streams.jobs, '*', 'job', String(jobId), 'op', op);
}

export async function publishTaskResult(redis: Redis, taskId: number, jobId: number): Promise<string | null> {
  return redis.xadd(streams.taskResults, '*', 'task', String(taskId), 'job', String(jobId));
}
