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
import { finalizeJob } from '../../src/jobs/orchestration/finalize-job.ts';
import type { OrchestrationContext } from '../../src/jobs/orchestration/context.ts';
import { recountTaskCounters } from '../../src/jobs/tasks/task-counters.ts';
import type { RedisClient } from '../../src/redis/client.ts';
import { backlogContext } from '../helpers/backlog-product.ts';
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

/** The orchestration context over a kysely that logs every statement into `statements`. */
function countingContext(productId: string, statements: string[]): OrchestrationContext {
  const counted = new Kysely<Database>({
    dialect: new MysqlDialect({ pool: dbh.pool }),
    log: (e) => {
      if (e.level === 'query') statements.push(e.query.sql.replace(/\s+/g, ' ').trim());
    },
  });
  return backlogContext({ db: counted, redis, config, productId });
}

/** A running job of `productId` with `done` completed tasks (and `running` still running); their ids. */
async function runningJob(
  productId: string,
  done: number,
  running: number,
): Promise<{ jobId: number; completed: number[] }> {
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
  for (let i = 0; i < done; i++) {
    const key = `h${i}.example.test`;
    await sql`INSERT INTO tasks (job_id, workspace_id, object_key, check_name, lane, product_lane, unit_cost, status,
        output, finished_at) VALUES (${jobId}, ${principal.workspaceId}, ${key}, 'test.probe', 'dns', 'probe', 2,
        'completed', ${JSON.stringify(output(key))}, NOW(3))`.execute(dbh.db);
  }
  for (let i = 0; i < running; i++) {
    await sql`INSERT INTO tasks (job_id, workspace_id, object_key, check_name, lane, product_lane, unit_cost, status)
      VALUES (${jobId}, ${principal.workspaceId}, ${`later${i}.example.test`}, 'test.probe', 'dns', 'probe', 2,
        'running')`.execute(dbh.db);
  }
  await recountTaskCounters(dbh.db as unknown as Trx, jobId);
  const completed = (
    await sql<{
      id: number;
    }>`SELECT id FROM tasks WHERE job_id = ${jobId} AND status = 'completed' ORDER BY id`.execute(dbh.db)
  ).rows.map((r) => Number(r.id));
  return { jobId, completed };
}

describe('a batch of results of a running job', () => {
  it('reads the job row once and its task rows once, and writes everything it must', async () => {
    const productId = `test.statements.${randomBytes(3).toString('hex')}`;
    const statements: string[] = [];
    const ctx = countingContext(productId, statements);
    // One task still running: the job is not done after the batch (the usual batch of a scan).
    const { jobId, completed: ids } = await runningJob(productId, 8, 1);

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

describe('the last batch of results of a job', () => {
  it('finalizes the job without settling the backlog again, and settles it exactly', async () => {
    const productId = `test.statements.${randomBytes(3).toString('hex')}`;
    const statements: string[] = [];
    const ctx = countingContext(productId, statements);
    const { jobId, completed: ids } = await runningJob(productId, 8, 0);
    const before = await dbh.db
      .selectFrom('credit_accounts')
      .select(['reserved'])
      .where('workspace_id', '=', principal.workspaceId)
      .executeTakeFirstOrThrow();

    await applyTaskResults(ctx, jobId, ids);

    // The inventory of the job's end is written after the terminal commit (step 4 of
    // finalize-job.ts, CONTRACT §16): its own transaction, off the job row lock, counted apart.
    const drain = statements.findIndex((s) =>
      /^select workspace_id from inventory_pending where job_id = \?$/i.test(s),
    );
    expect(drain, statements.join('\n')).toBeGreaterThan(0);
    const inventory = statements.splice(drain);
    expect(inventory.filter((s) => /^begin$|^start transaction/i.test(s))).toHaveLength(1);
    expect(inventory.filter((s) => /^delete from inventory_pending where id = \?$/i.test(s))).toHaveLength(1);
    expect(inventory.filter((s) => /from jobs where id = \? for update/i.test(s))).toEqual([]);
    expect(await sql`SELECT id FROM inventory_pending WHERE job_id = ${jobId}`.execute(dbh.db)).toMatchObject({
      rows: [],
    });

    const locks = statements.filter((s) => /^select .* from jobs where id = \? for update$/i.test(s));
    const begins = statements.filter((s) => /^begin$|^start transaction/i.test(s));
    const openCounts = statements.filter((s) =>
      /^select count\(\*\).* from tasks where job_id = \? and status in/i.test(s),
    );
    const detail = statements.join('\n');
    // Two transactions: the batch (which found the job done) and the terminal one (before: a third
    // between them, step 1 of finalize-job.ts, finding again that nothing was left to settle).
    expect(begins.length, detail).toBe(2);
    // The job row locked once by each (before: 4, the release in credits/ledger.ts locking it
    // again, and a fifth plain read of credits_captured).
    expect(locks.length, detail).toBe(2);
    expect(
      statements.filter((s) => /^select credits_captured/i.test(s)),
      detail,
    ).toEqual([]);
    // The open tasks counted once by the terminal transaction (before: 4 times over the two).
    expect(openCounts.length, detail).toBe(1);
    // In all, the batch and the job's end, begin and commit included (before: 44; 35 before the
    // estate of CONTRACT §15-16, whose terminal work reads the job's comparison state once and the
    // workspace's suppressions, counts the findings by severity, writes the summary and upserts
    // the inventory and its findings: 8 statements at any job size).
    expect(statements.length, detail).toBeLessThanOrEqual(43);

    // What the job's end must still be: terminal, every task captured once, the rest released once.
    const job = await dbh.db.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirstOrThrow();
    expect(job.status).toBe('completed');
    expect(job.completed_at).not.toBeNull();
    expect(job.settled_at).not.toBeNull();
    expect(Number(job.credits_captured)).toBe(16);
    expect(Number(job.credits_released)).toBe(24);
    const entries = await sql<{
      kind: string;
      n: number;
      total: number;
    }>`SELECT kind, COUNT(*) AS n, SUM(amount) AS total
      FROM credit_entries WHERE job_id = ${jobId} GROUP BY kind ORDER BY kind`.execute(dbh.db);
    expect(entries.rows.map((r) => [r.kind, Number(r.n), Number(r.total)])).toEqual([
      ['capture', 8, 16],
      ['release', 1, 24],
    ]);
    const after = await dbh.db
      .selectFrom('credit_accounts')
      .select(['reserved'])
      .where('workspace_id', '=', principal.workspaceId)
      .executeTakeFirstOrThrow();
    expect(Number(after.reserved)).toBe(Number(before.reserved) - 40);

    // A redelivered last batch, and a finalize from another path (the reconciler's): no change.
    await applyTaskResults(ctx, jobId, ids);
    expect(await finalizeJob(ctx, jobId, 'settle')).toBeNull();
    const again = await dbh.db.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirstOrThrow();
    expect(again.status).toBe('completed');
    expect(Number(again.credits_released)).toBe(24);
    const release = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM credit_entries WHERE job_id = ${jobId}
      AND kind = 'release'`.execute(dbh.db);
    expect(Number(release.rows[0]!.n)).toBe(1);
  });

  it('still settles a result that finished after the batch found the job done', async () => {
    // A caller says nothing is left to settle, but finished tasks are unapplied (written here
    // directly: a result that finished after the batch looked, or a caller that was wrong): the
    // terminal transaction sees them, and step 1 settles them after all, each captured once.
    const productId = `test.statements.${randomBytes(3).toString('hex')}`;
    const ctx = countingContext(productId, []);
    const { jobId } = await runningJob(productId, 2, 0);
    await sql`INSERT INTO tasks (job_id, workspace_id, object_key, check_name, lane, product_lane, unit_cost, status,
        output, finished_at) VALUES (${jobId}, ${principal.workspaceId}, 'late.example.test', 'test.probe', 'dns',
        'probe', 2, 'completed', ${JSON.stringify(output('late.example.test'))}, NOW(3))`.execute(dbh.db);
    await recountTaskCounters(dbh.db as unknown as Trx, jobId);

    expect(await finalizeJob(ctx, jobId, 'settle', { nothingToSettle: true })).toBe('completed');

    const job = await dbh.db.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirstOrThrow();
    expect(Number(job.credits_captured)).toBe(6);
    const unapplied = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM tasks WHERE job_id = ${jobId}
      AND applied_at IS NULL`.execute(dbh.db);
    expect(Number(unapplied.rows[0]!.n)).toBe(0);
  });
});
