// Redis stream names and the producer side. Keys share the {lss} hash tag so the layout works on
// Redis Cluster. Redis holds only queues: MySQL (outbox, tasks) can rebuild every stream.
import type { Redis } from 'ioredis';

export const LANES = ['dns', 'mail', 'web', 'domain', 'active'] as const;
export type LaneName = (typeof LANES)[number];

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

export type JobOp = 'plan' | 'cancel';

/** Approximate MAXLEN: trimming only drops entries far behind; see workers/ for pending safety. */
export const STREAM_MAXLEN = 100_000;

export async function publishJob(redis: Redis, jobId: number, op: JobOp): Promise<string | null> {
  return redis.xadd(streams.jobs, 'MAXLEN', '~', STREAM_MAXLEN, '*', 'job', String(jobId), 'op', op);
}
