// Where a batch of results locks the workspace's credit row (issue 31 item 3). Applying a batch
// captures the cost of its tasks, which updates the workspace's `credit_accounts` row; an
// admission of that workspace (a reservation) updates the same row, so it waits for whatever
// transaction holds it. The capture used to come near the start of the batch, before its outputs,
// gate releases and expansion: a reservation waited 4.1 s behind a 1,000-task cancel. It is now
// the last statement before the commit.
//
// Shown without timing: the batch is held inside its outputs (a row it must lock is held by this
// test), and at that point the workspace's credit row must be free: a locking read with NOWAIT
// gets it, and a real admission of the same workspace commits while the batch is still held.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { createConnection, type Connection } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Authenticator } from '../../src/auth/authenticator.ts';
import type { Principal } from '../../src/auth/principal.ts';
import { createKey, createWorkspace } from '../../src/auth/tenancy-repo.ts';
import { parseConfig, type Config } from '../../src/config/config.ts';
import type { CheckOutput } from '../../src/contract/tasks.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { createDb, type DbHandle } from '../../src/db/database.ts';
import type { Trx } from '../../src/db/transaction.ts';
import { acceptJob } from '../../src/jobs/jobs-repo.ts';
import { applyTaskResults } from '../../src/jobs/orchestration/apply-result.ts';
import { recountTaskCounters } from '../../src/jobs/tasks/task-counters.ts';
import type { RedisClient } from '../../src/redis/client.ts';
import { backlogContext } from '../helpers/backlog-product.ts';
import { expectSettledJob } from '../helpers/ledger.ts';
import { testPrefix, testRedis } from '../helpers/redis.ts';

let config: Config;
let dbh: DbHandle;
let redis: RedisClient;
let principal: Principal;
const connections: Connection[] = [];

beforeAll(async () => {
  config = parseConfig({ ...process.env, LOG_LEVEL: 'silent' });
  dbh = createDb(config.DATABASE_URL);
  redis = await testRedis(testPrefix('lock-order'));
  const ws = await createWorkspace(dbh.db, { name: `lock-order-${randomBytes(3).toString('hex')}` });
  const key = await createKey(dbh.db, config.KEY_PEPPER, { workspace: ws.workspaceId });
  principal = (await new Authenticator(dbh.db, config.KEY_PEPPER, 0).verify(key.key))!;
  await grantCredits(dbh.db, principal.workspaceId, 1000, `grant:${ws.workspaceId}`);
});

afterAll(async () => {
  for (const c of connections) await c.end().catch(() => c.destroy());
  await redis.quit().catch(() => {});
  await dbh.close();
});

async function connection(): Promise<Connection> {
  const c = await createConnection({ uri: config.DATABASE_URL });
  connections.push(c);
  return c;
}

/** A host found under the target domain: both objects and the relation between them. */
function output(key: string): CheckOutput {
  return {
    status: 'completed',
    projection: { [key]: true },
    objects: [{ type: 'host', key, projection: { name: key }, evidence: [{ summary: `probed ${key}` }] }],
    relations: [
      { from: { type: 'host', key }, relation: 'discovered_from', to: { type: 'domain', key: 'example.test' } },
    ],
    findings: [],
    limitations: [],
    sources: [{ source: 'test_probe' }],
  };
}

/** The InnoDB transaction id of the connection's open transaction. */
async function trxId(c: Connection): Promise<string> {
  const [rows] = await c.query(
    'SELECT trx_id AS id FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = CONNECTION_ID()',
  );
  const id = (rows as Array<{ id: string }>)[0]?.id;
  if (id === undefined) throw new Error('no open transaction on this connection');
  return String(id);
}

/**
 * Whether some transaction waits for a lock that transaction `holder` holds. MariaDB serves these
 * tables from a cache refreshed at most every 100 ms of quiet: poll slower than that.
 */
async function waitsOn(probe: Connection, holder: string): Promise<boolean> {
  try {
    const [rows] = await probe.query('SELECT 1 FROM information_schema.INNODB_LOCK_WAITS WHERE blocking_trx_id = ?', [
      holder,
    ]);
    return (rows as unknown[]).length > 0;
  } catch {
    // MySQL 8 moved lock waits to performance_schema.
    const [rows] = await probe.query(
      'SELECT 1 FROM performance_schema.data_lock_waits WHERE BLOCKING_ENGINE_TRANSACTION_ID = ?',
      [holder],
    );
    return (rows as unknown[]).length > 0;
  }
}

describe('the workspace credit row during a batch of results', () => {
  it('is not locked before the batch commits: an admission of the same workspace does not wait behind it', async () => {
    const productId = `test.lockorder.${randomBytes(3).toString('hex')}`;
    const ctx = backlogContext({ db: dbh.db, redis, config, productId });
    const admit = (price: number) =>
      acceptJob(dbh.db, {
        principal,
        product: productId,
        target: { type: 'domain_name', value: 'example.test' },
        profile: null,
        input: {},
        price,
        deadlineMs: 600_000,
        requestId: `req_${randomBytes(8).toString('hex')}`,
        claim: undefined,
        objectCap: null,
      });
    const { jobId } = await admit(10);
    await sql`UPDATE jobs SET status = 'running', started_at = NOW(3) WHERE id = ${jobId}`.execute(dbh.db);
    for (const key of ['h0.example.test', 'h1.example.test', 'h2.example.test']) {
      await sql`INSERT INTO tasks (job_id, workspace_id, object_key, check_name, lane, product_lane, unit_cost, status,
          output, finished_at) VALUES (${jobId}, ${principal.workspaceId}, ${key}, 'test.probe', 'dns', 'probe', 2,
          'completed', ${JSON.stringify(output(key))}, NOW(3))`.execute(dbh.db);
    }
    await recountTaskCounters(dbh.db as unknown as Trx, jobId);
    const ids = (
      await sql<{ id: number }>`SELECT id FROM tasks WHERE job_id = ${jobId} ORDER BY id`.execute(dbh.db)
    ).rows.map((r) => Number(r.id));
    // The first batch writes the domain object that the next batch's outputs relate to.
    await applyTaskResults(ctx, jobId, [ids[0]!]);

    // Hold the domain object's row, so the next batch stops inside its outputs.
    const holder = await connection();
    await holder.query('START TRANSACTION');
    await holder.query("SELECT id FROM objects WHERE job_id = ? AND type = 'domain' FOR UPDATE", [jobId]);
    const held = await trxId(holder);
    let batchDone = false;
    let batchError: unknown = null;
    const batch = applyTaskResults(ctx, jobId, [ids[1]!]).then(
      () => {
        batchDone = true;
      },
      (err: unknown) => {
        batchDone = true;
        batchError = err;
      },
    );
    try {
      const probe = await connection();
      const end = Date.now() + 30_000;
      while (!(await waitsOn(probe, held))) {
        if (batchDone || Date.now() > end)
          throw new Error(`the batch never waited for the held object row (${String(batchError)})`);
        await new Promise((r) => setTimeout(r, 250));
      }
      // The batch has settled its task and is writing its outputs: the credit row must be free.
      await probe.query('START TRANSACTION');
      const locked = await probe
        .query('SELECT granted FROM credit_accounts WHERE workspace_id = ? FOR UPDATE NOWAIT', [principal.workspaceId])
        .then(
          () => null,
          (err: Error) => err.message,
        );
      await probe.query('ROLLBACK');
      expect(locked, 'the batch holds the workspace credit row before its commit').toBeNull();
      // And a real admission of the same workspace commits while the batch is still held.
      const second = await admit(4);
      expect(second.jobRef).toMatch(/^job_/);
      expect(batchDone).toBe(false);
    } finally {
      await holder.query('ROLLBACK');
    }
    await batch;
    expect(batchError).toBeNull();
    await applyTaskResults(ctx, jobId, [ids[2]!]);
    const job = await dbh.db.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirstOrThrow();
    expect(job.status).toBe('completed');
    expect(await expectSettledJob(dbh.db, jobId)).toEqual({ captured: 6, released: 4 });
  });
});
