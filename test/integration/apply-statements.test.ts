// The statements a batch of results costs under the job row lock (issue 32). The orchestrator
// applies a running scan's results in batches, each one transaction holding the job's row lock;
// at internet latency the whole scan waits on those batches, and every statement is a round
// trip plus a socket write on both sides (the CPU profiles put each at about 0.25 ms of the
// orchestrator's CPU). The job row's counters, page positions and credits are read once, with the
// lock (src/jobs/locked-job-row.ts); the task rows once, FOR UPDATE; a job without a change
// comparison run is not asked to reset one. Counted with kysely's query log on a real MariaDB,
// with what the batch must still do checked alongside: every task settled and captured once,
// objects, relations and findings written, the counters right.
import { randomBytes } from 'node:crypto';
import { Kysely, MysqlDialect, sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Authenticator } from '../../src/auth/authenticator.ts';
import type { Principal } from '../../src/auth/principal.ts';
import { createKey, createWorkspace } from '../../src/auth/tenancy-repo.ts';
import { parseConfig, type Config } from '../../src/config/config.ts';
import type { CheckOutput } from '../../src/contract/tasks.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { createDb, type DbHandle } from '../../src/db/database.ts';
import type { Database } from '../../src/db/schema.ts';
import type { Trx } from '../../src/db/transaction.ts';
import { acceptJob } from '../../src/jobs/jobs-repo.ts';
import { applyTaskResults } from '../../src/jobs/orchestration/apply-result.ts';
import type { OrchestrationContext } from '../../src/jobs/orchestration/context.ts';
import { productCatalog } from '../../src/jobs/orchestration/product-catalog.ts';
import { recountTaskCounters } from '../../src/jobs/tasks/task-counters.ts';
import { parseQueueSettings } from '../../src/queue/queue-settings.ts';
import type { RedisClient } from '../../src/redis/client.ts';
import { backlogProduct } from '../helpers/backlog-product.ts';
import { testPrefix, testRedis } from '../helpers/redis.ts';

let config: Config;
let dbh: DbHandle;
let redis: RedisClient;
let principal: Principal;

beforeAll(async () => {
  config = parseConfig({ ...process.env, LOG_LEVEL: 'silent' });
  dbh = createDb(config.DATABASE_URL);
  redis = await testRedis(testPrefix('apply-statements'));
  const ws = await createWorkspace(dbh.db, { name: `apply-statements-${randomBytes(3).toString('hex')}` });
  const key = await createKey(dbh.db, config.KEY_PEPPER, { workspace: ws.workspaceId });
  principal = (await new Authenticator(dbh.db, config.KEY_PEPPER, 0).verify(key.key))!;
  await grantCredits(dbh.db, principal.workspaceId, 1000, `grant:${ws.workspaceId}`);
});

afterAll(async () => {
  await redis.quit().catch(() => {});
  await dbh.close();
});

/** A host found under the target domain, related to it, with one finding and one limitation. */
function output(key: string): CheckOutput {
  return {
    status: 'completed',
    projection: { [key]: true },
    objects: [{ type: 'host', key, projection: { name: key }, evidence: [{ summary: `probed ${key}` }] }],
    relations: [
      { from: { type: 'host', key }, relation: 'discovered_from', to: { type: 'domain', key: 'example.test' } },
    ],
    findings: [
      {
        code: 'test_finding',
        severity: 'low',
        confidence: 'firm',
        title: 'A test finding',
        summary: `seen on ${key}`,
        object: { type: 'host', key },
        evidence: [],
      },
    ],
    limitations: [{ code: 'test_note', message: 'a note every task carries' }],
    sources: [{ source: 'test_probe' }],
  };
}

describe('a batch of results of a running job', () => {
  it('reads the job row once and its task rows once, and writes everything it must', async () => {
    const productId = `test.statements.${randomBytes(3).toString('hex')}`;
    const statements: string[] = [];
    const counted = new Kysely<Database>({
      dialect: new MysqlDialect({ pool: dbh.pool }),
      log: (e) => {
        if (e.level === 'query') statements.push(e.query.sql.replace(/\s+/g, ' ').trim());
      },
    });
    const ctx: OrchestrationContext = {
      db: counted,
      redis,
      log: pino({ level: 'silent' }),
      config,
      settings: parseQueueSettings(process.env),
      catalog: productCatalog([backlogProduct(productId)]),
      checkTimeoutMs: () => 30_000,
    };
    const { jobId } = await acceptJob(dbh.db, {
      principal,
      product: productId,
      target: { type: 'domain_name', value: 'example.test' },
      profile: null,
      input: {},
      price: 40,
      deadlineMs: 600_000,
      requestId: `req_${randomBytes(8).toString('hex')}`,
      claim: undefined,
      objectCap: 10_000,
    });
    await sql`UPDATE jobs SET status = 'running', started_at = NOW(3) WHERE id = ${jobId}`.execute(dbh.db);
    const keys = Array.from({ length: 8 }, (_, i) => `h${i}.example.test`);
    for (const key of keys) {
      await sql`INSERT INTO tasks (job_id, workspace_id, object_key, check_name, lane, product_lane, unit_cost, status,
          output, finished_at) VALUES (${jobId}, ${principal.workspaceId}, ${key}, 'test.probe', 'dns', 'probe', 2,
          'completed', ${JSON.stringify(output(key))}, NOW(3))`.execute(dbh.db);
    }
    // One task still running: the job is not done after the batch (the usual batch of a scan).
    await sql`INSERT INTO tasks (job_id, workspace_id, object_key, check_name, lane, product_lane, unit_cost, status)
      VALUES (${jobId}, ${principal.workspaceId}, 'later.example.test', 'test.probe', 'dns', 'probe', 2, 'running')`.execute(
      dbh.db,
    );
    await recountTaskCounters(dbh.db as unknown as Trx, jobId);
    const ids = (
      await sql<{
        id: number;
      }>`SELECT id FROM tasks WHERE job_id = ${jobId} AND status = 'completed' ORDER BY id`.execute(dbh.db)
    ).rows.map((r) => Number(r.id));

    await applyTaskResults(ctx, jobId, ids);

    const reads = (table: string) =>
      statements.filter((s) => new RegExp(`^select\\b.*\\bfrom ${table}\\b`, 'i').test(s)).length;
    const jobStatements = statements.filter((s) => /\b(from|update) jobs\b/i.test(s));
    // The job row is read once, with its lock (before: 4 times: the lock, the object cap's room,
    // the counters, the capture's own lock).
    expect(reads('jobs'), jobStatements.join('\n')).toBe(1);
    // The task rows once, FOR UPDATE (before: again in the settling), besides the gated tasks' lookup.
    expect(
      statements.filter((s) => /^select .* from tasks where job_id = \? and id in/i.test(s)).length,
      statements.join('\n'),
    ).toBe(1);
    expect(statements.filter((s) => /^select id from tasks where id in/i.test(s))).toEqual([]);
    // No change comparison run exists: nothing to reset.
    expect(statements.filter((s) => /change_runs/.test(s) && /^update/i.test(s))).toEqual([]);
    // In all, begin and commit included (before: 25 for this batch).
    expect(statements.length, statements.join('\n')).toBeLessThanOrEqual(20);

    // What the batch must still have done.
    const job = await dbh.db.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirstOrThrow();
    expect(job.status).toBe('running');
    expect(Number(job.tasks_unapplied)).toBe(1);
    expect(Number(job.credits_captured)).toBe(16);
    expect(Number(job.object_seq)).toBe(9); // eight hosts and the domain
    expect(Number(job.finding_seq)).toBe(8);
    const applied = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM tasks WHERE job_id = ${jobId}
      AND applied_at IS NOT NULL`.execute(dbh.db);
    expect(Number(applied.rows[0]!.n)).toBe(8);
    const captures = await sql<{ n: number; total: number }>`SELECT COUNT(*) AS n, SUM(amount) AS total
      FROM credit_entries WHERE job_id = ${jobId} AND kind = 'capture'`.execute(dbh.db);
    expect(Number(captures.rows[0]!.n)).toBe(8);
    expect(Number(captures.rows[0]!.total)).toBe(16);
    const relations = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM relations WHERE job_id = ${jobId}`.execute(
      dbh.db,
    );
    expect(Number(relations.rows[0]!.n)).toBe(8);
    const notes = await sql<{ occurrences: number }>`SELECT occurrences FROM job_limitations WHERE job_id = ${jobId}
      AND code = 'test_note'`.execute(dbh.db);
    expect(Number(notes.rows[0]!.occurrences)).toBe(8);

    // The same batch again (a redelivered notice): nothing changes, nothing is captured twice.
    await applyTaskResults(ctx, jobId, ids);
    const again = await dbh.db.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirstOrThrow();
    expect(Number(again.credits_captured)).toBe(16);
    expect(Number(again.tasks_unapplied)).toBe(1);
    expect(Number(again.object_seq)).toBe(9);
  });
});
