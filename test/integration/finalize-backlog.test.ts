// A cancel of a big job whose finished results were not applied yet (issue 31 item 2): the
// terminal transition settles that backlog (captures, outputs) before the terminal compare-and-set.
// It used to load and write the whole backlog in one transaction: with 1,500 tasks of 19 KB the
// orchestrator ran out of its 128 MB heap, and every retry path (cancel, sweeper, reconciler)
// repeated it. Here 5,000 such tasks are cancelled by the `cancel` op in a process started with
// the orchestrator's Procfile options, and must settle in bounded chunks: every task captured and
// written once, the remainder released once, the heap never near its bound.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readProcfile } from '../../ops/procfile.ts';
import { Authenticator } from '../../src/auth/authenticator.ts';
import type { Principal } from '../../src/auth/principal.ts';
import { createKey, createWorkspace } from '../../src/auth/tenancy-repo.ts';
import { parseConfig } from '../../src/config/config.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { createDb, type DbHandle } from '../../src/db/database.ts';
import type { Trx } from '../../src/db/transaction.ts';
import { acceptJob, requestCancel } from '../../src/jobs/jobs-repo.ts';
import { recountTaskCounters } from '../../src/jobs/tasks/task-counters.ts';
import { bigOutput } from '../helpers/backlog-product.ts';
import { expectBalancedWorkspace, expectSettledJob } from '../helpers/ledger.ts';
import { ProcessGroup, root } from '../helpers/processes.ts';

const TASKS = 5000;
let dbh: DbHandle;
let principal: Principal;
const group = new ProcessGroup();

beforeAll(async () => {
  const config = parseConfig({ ...process.env, LOG_LEVEL: 'silent' });
  dbh = createDb(config.DATABASE_URL);
  const ws = await createWorkspace(dbh.db, { name: `backlog-${randomBytes(3).toString('hex')}` });
  const key = await createKey(dbh.db, config.KEY_PEPPER, { workspace: ws.workspaceId });
  principal = (await new Authenticator(dbh.db, config.KEY_PEPPER, 0).verify(key.key))!;
  await grantCredits(dbh.db, principal.workspaceId, 100_000, `grant:${ws.workspaceId}`);
});

afterAll(async () => {
  await group.killAll();
  await dbh.close();
});

/** The orchestrator role's Node options, as the Procfile starts it (the heap bound among them). */
function orchestratorNodeOptions(): string[] {
  const role = readProcfile(root).find((r) => r.name === 'orchestrator');
  if (!role?.script) throw new Error('the Procfile has no node orchestrator role');
  return role.args.slice(0, role.args.indexOf(role.script));
}

describe('a cancel of a job with a large backlog of finished, unapplied tasks', () => {
  it(`settles ${TASKS} tasks of ~19 KB each under the orchestrator's heap bound: each captured and written once`, async () => {
    const productId = `test.backlog.${randomBytes(3).toString('hex')}`;
    const accepted = await acceptJob(dbh.db, {
      principal,
      product: productId,
      target: { type: 'domain_name', value: 'example.test' },
      profile: null,
      input: {},
      price: TASKS + 1000,
      deadlineMs: 600_000,
      requestId: `req_${randomBytes(8).toString('hex')}`,
      claim: undefined,
      objectCap: null,
    });
    const jobId = accepted.jobId;
    // The plan ran and every task finished; none of their notices was applied yet.
    await sql`UPDATE jobs SET status = 'running', started_at = NOW(3) WHERE id = ${jobId}`.execute(dbh.db);
    const outputBytes = JSON.stringify(bigOutput('h0.example.test')).length;
    expect(outputBytes).toBeGreaterThan(18_000);
    for (let i = 0; i < TASKS; i += 100) {
      const rows = Array.from({ length: Math.min(100, TASKS - i) }, (_, n) => {
        const key = `h${i + n}.example.test`;
        return sql`(${jobId}, ${principal.workspaceId}, ${key}, 'test.probe', 'dns', 'probe', 0, 1, 'completed',
          ${JSON.stringify(bigOutput(key))}, NOW(3), NOW(3), NOW(3))`;
      });
      await sql`INSERT INTO tasks (job_id, workspace_id, object_key, check_name, lane, product_lane, required, unit_cost,
          status, output, created_at, started_at, finished_at) VALUES ${sql.join(rows)}`.execute(dbh.db);
    }
    await recountTaskCounters(dbh.db as unknown as Trx, jobId);
    const cancelled = await requestCancel(dbh.db, principal.workspaceId, accepted.jobRef);
    expect(cancelled?.changed).toBe(true);

    const child = group.node(
      'finalize-backlog',
      [...orchestratorNodeOptions(), 'test/helpers/finalize-backlog-child.ts'],
      {
        BACKLOG_JOB_ID: String(jobId),
        BACKLOG_PRODUCT: productId,
      },
    );
    const code = await child.exited;
    expect(code, `the cancel op's process ended with ${code}:\n${child.output().slice(-3000)}`).toBe(0);
    const report = JSON.parse(child.output().trim().split('\n').pop()!) as { peakHeapMb: number };
    // The whole backlog is ~95 MB of JSON text before it is even parsed; chunks of a batch hold a
    // few MB (61–72 MB of heap in use at the peak, garbage included, where the bound is 128 MB).
    expect(report.peakHeapMb).toBeLessThan(100);

    const job = await dbh.db.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirstOrThrow();
    expect(job.status).toBe('cancelled');
    expect(Number(job.tasks_unapplied)).toBe(0);
    const settled = await expectSettledJob(dbh.db, jobId);
    expect(settled).toEqual({ captured: TASKS, released: 1000 });
    const unapplied = await sql<{ n: number }>`
      SELECT COUNT(*) AS n FROM tasks WHERE job_id = ${jobId} AND applied_at IS NULL`.execute(dbh.db);
    expect(Number(unapplied.rows[0]!.n)).toBe(0);
    const hosts = await sql<{ n: number }>`
      SELECT COUNT(*) AS n FROM objects WHERE job_id = ${jobId} AND type = 'host'`.execute(dbh.db);
    expect(Number(hosts.rows[0]!.n)).toBe(TASKS);
    await expectBalancedWorkspace(dbh.db, principal.workspaceId);
  }, 300_000);
});
