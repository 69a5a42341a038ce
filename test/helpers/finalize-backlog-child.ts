// Runs the `cancel` op of one job, as an orchestrator does, in a process of its own started with
// the orchestrator role's Node options from the Procfile (the 128 MB old space among them), and
// reports on stdout the peak of its JS heap while it ran. test/integration/finalize-backlog.test.ts
// starts it; an out-of-memory crash is its exit code.
//
// Environment: DATABASE_URL, BACKLOG_JOB_ID, BACKLOG_PRODUCT (the test product's id), and what
// parseConfig needs (the test run's). The cancel op and finalize use MySQL only: no Redis here.
import { parseConfig } from '../../src/config/config.ts';
import { createDb } from '../../src/db/database.ts';
import { cancelJob } from '../../src/jobs/orchestration/cancel-job.ts';
import type { RedisClient } from '../../src/redis/client.ts';
import { backlogContext } from './backlog-product.ts';

const jobId = Number(process.env.BACKLOG_JOB_ID);
const config = parseConfig({ ...process.env, LOG_LEVEL: 'silent' });
const dbh = createDb(config.DATABASE_URL, { connectionLimit: 2 });
let peak = 0;
const sample = () => {
  peak = Math.max(peak, process.memoryUsage().heapUsed);
};
const timer = setInterval(sample, 5);
const ctx = backlogContext({
  db: dbh.db,
  redis: undefined as unknown as RedisClient,
  config,
  productId: String(process.env.BACKLOG_PRODUCT),
});
await cancelJob(ctx, jobId);
sample();
clearInterval(timer);
await dbh.close();
process.stdout.write(`${JSON.stringify({ peakHeapMb: Math.round(peak / 1048576) })}\n`);
