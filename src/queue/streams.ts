// Redis key layout of the queues, and the producer side. Redis holds only queues: MySQL (outbox,
// tasks) can rebuild every stream.
//
// Every key carries a hash tag, so on Redis Cluster each script, MULTI and pipeline touches one
// slot while the load spreads over the shards (ARCHITECTURE.md has the table):
//   {lss}              the control plane: the jobs stream (web → orchestrator), its dead letter,
//                      tick locks, heartbeats. Low volume; one slot is its single-writer point.
//   {lss:lane:<lane>}  one lane: its task streams (one per job with work on the lane, and the set
//                      that lists them), the task-results stream its runners publish to (read by
//                      the orchestrator), task markers and dead letter. The runner's ack is one
//                      MULTI over these keys (XACK + XADD results + DEL marker).
//   {lss:rl:<app>}     one application: rate-limit buckets and idempotency leases (src/ratelimit).
import type { RedisClient } from '../redis/client.ts';

export const LANES = ['dns', 'mail', 'web', 'domain', 'active'] as const;
export type LaneName = (typeof LANES)[number];

export function isLaneName(s: string): s is LaneName {
  return (LANES as readonly string[]).includes(s);
}

const CONTROL = '{lss}';
const laneTag = (lane: LaneName) => `{lss:lane:${lane}}`;

/** The hash tag of a key of this layout (`{lss:lane:dns}` of `{lss:lane:dns}:tasks`). */
export function hashTag(key: string): string {
  const m = /^\{[^{}]+\}/.exec(key);
  if (!m) throw new Error(`key without a hash tag: ${key}`);
  return m[0];
}

export const streams = {
  jobs: `${CONTROL}:jobs`,
  /**
   * The name of a lane's task streams as a whole (metrics label, dead-letter records): the prefix
   * of every job's stream on the lane. No entry is ever written to this key itself.
   */
  lane: (lane: LaneName) => `${laneTag(lane)}:tasks`,
  /**
   * One job's tasks on a lane (consumer group lane-<lane>). One stream per job, not one per lane,
   * so that a runner can read every job's next entries at once: a job's backlog never stands in
   * front of another job's first task (the lane's fair share, workers/lane-runner/run-gate.ts).
   */
  laneJob: (lane: LaneName, jobId: number) => `${laneTag(lane)}:tasks:${jobId}`,
  /** Task-result notices of one lane (consumer group orchestrator), in the lane's slot. */
  laneResults: (lane: LaneName) => `${laneTag(lane)}:results`,
  /** Each stream's dead letter shares its slot: it is written in the MULTI that acknowledges. */
  deadLetterOf: (stream: string) => `${hashTag(stream)}:dead-letter`,
} as const;

export const groups = {
  orchestrator: 'orchestrator',
  lane: (lane: LaneName) => `lane-${lane}`,
} as const;

/** Non-stream keys of the queue layer. */
export const queueKeys = {
  /**
   * Sorted set per lane: consumer → last heartbeat (ms). Lane liveness for readiness. All under the
   * control tag: a web process reads every lane's set in one pipeline.
   */
  laneAlive: (lane: LaneName | 'orchestrator') => `${CONTROL}:lane-alive:${lane}`,
  /** The stream id under which a task was last enqueued: lets the reconciler tell a lost entry from a queued one. */
  taskMessage: (lane: LaneName, taskId: number) => `${laneTag(lane)}:task-msg:${taskId}`,
  /**
   * Sorted set per lane: job id → when a task of the job was last enqueued (ms). The job streams a
   * lane's runners read; a drained stream leaves it (queue/lane-job-streams.ts).
   */
  laneJobs: (lane: LaneName) => `${laneTag(lane)}:jobs`,
  /**
   * Stream per lane (capped, a few entries): one entry per enqueue. A runner with no job on its
   * lane blocks on it instead of asking the set every discoverMs (lane-streams-consumer.ts): an
   * idle lane process costs one read a LANE_IDLE_BLOCK_MS, not forty a second.
   */
  laneWake: (lane: LaneName) => `${laneTag(lane)}:wake`,
  tickLock: (name: string) => `${CONTROL}:tick-lock:${name}`,
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
export async function publishJob(redis: RedisClient, jobId: number, op: JobOp): Promise<string | null> {
  return redis.xadd(streams.jobs, '*', 'job', String(jobId), 'op', op);
}

/** The notice that a task of `lane` finished: on the lane's results stream, in the lane's slot. */
export async function publishTaskResult(
  redis: RedisClient,
  lane: LaneName,
  taskId: number,
  jobId: number,
): Promise<string | null> {
  return redis.xadd(streams.laneResults(lane), '*', 'task', String(taskId), 'job', String(jobId));
}
