// What every MySQL session of the service assumes (src/db/database.ts, transaction.ts): write
// transactions run READ COMMITTED (the session's default since issue 32, instead of a statement
// per transaction), on every connection of the pool; and page positions (src/jobs/page-seq.ts)
// read LAST_INSERT_ID(expr) from the UPDATE's own reply: consecutive, never repeated, under
// concurrent takers of one job row.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/config.ts';
import { createDb, type DbHandle } from '../../src/db/database.ts';
import { inTransaction } from '../../src/db/transaction.ts';
import { createKey, createWorkspace } from '../../src/auth/tenancy-repo.ts';
import { Authenticator } from '../../src/auth/authenticator.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { acceptJob } from '../../src/jobs/jobs-repo.ts';
import { takeSeq } from '../../src/jobs/page-seq.ts';
import { lockJob } from '../../src/jobs/tasks/task-rows.ts';

let dbh: DbHandle;

beforeAll(() => {
  if (!process.env.DATABASE_URL) throw new Error('needs DATABASE_URL: run with `npm test`');
  dbh = createDb(process.env.DATABASE_URL, { connectionLimit: 4 });
});
afterAll(async () => {
  await dbh?.close();
});

describe('MySQL sessions', () => {
  it('every transaction, on every connection of the pool, runs READ COMMITTED', async () => {
    const levels = await Promise.all(
      Array.from({ length: 8 }, () =>
        inTransaction(dbh.db, async (trx) => {
          const r = await sql<{ level: string }>`SELECT @@tx_isolation AS level`.execute(trx);
          await sql`SELECT SLEEP(0.05)`.execute(trx); // hold the connection: the 8 use all 4
          return r.rows[0]!.level;
        }),
      ),
    );
    expect(new Set(levels)).toEqual(new Set(['READ-COMMITTED']));
  });

  it('page positions taken concurrently under the job row lock are consecutive and never repeat', async () => {
    const config = parseConfig({ ...process.env, LOG_LEVEL: 'silent' });
    const ws = await createWorkspace(dbh.db, { name: `seq-${randomBytes(3).toString('hex')}` });
    const key = await createKey(dbh.db, config.KEY_PEPPER, { workspace: ws.workspaceId });
    const principal = (await new Authenticator(dbh.db, config.KEY_PEPPER, 0).verify(key.key))!;
    await grantCredits(dbh.db, principal.workspaceId, 10, `grant:${ws.workspaceId}`);
    const { jobId } = await acceptJob(dbh.db, {
      principal,
      product: 'lookup.web.v1',
      target: { type: 'url', value: 'http://example.test/' },
      profile: null,
      input: { url: 'http://example.test/' },
      price: 1,
      deadlineMs: 60_000,
      requestId: `req_${randomBytes(8).toString('hex')}`,
      claim: undefined,
      objectCap: null,
    });
    const taken = await Promise.all(
      [3, 1, 5, 2, 4].map((n) =>
        inTransaction(dbh.db, async (trx) => {
          await lockJob(trx, jobId);
          const first = await takeSeq(trx, jobId, 'object_seq', n);
          return Array.from({ length: n }, (_, i) => first + i);
        }),
      ),
    );
    const all = taken.flat().sort((a, b) => a - b);
    expect(all).toEqual(Array.from({ length: 15 }, (_, i) => i + 1));
  });
});
