// The ledger under concurrency: no oversubscription, the invariant at every sample, one capture
// per task and one release per job.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, createTenant, type Harness } from '../helpers/harness.ts';
import { Authenticator } from '../../src/auth/authenticator.ts';
import { acceptJob } from '../../src/jobs/jobs-repo.ts';
import { balance, captureTask, grantCredits, releaseRemainder } from '../../src/credits/ledger.ts';
import { createKey, workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { ApiError } from '../../src/contract/errors.ts';
import type { Principal } from '../../src/auth/principal.ts';

async function principalFor(h: Harness, key: string): Promise<Principal> {
  const p = await new Authenticator(h.deps.db, h.config.KEY_PEPPER, 0).verify(key);
  if (!p) throw new Error('key did not verify');
  return p;
}

/** Reads the balance and the entries in ONE consistent snapshot (a read-only repeatable-read trx). */
async function invariant(h: Harness, workspaceId: number) {
  const { b, sums } = await h.deps.db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      await sql`SELECT 1 FROM credit_accounts WHERE workspace_id = ${workspaceId}`.execute(trx); // opens the snapshot
      const bal = await balance(trx, workspaceId);
      const s = await sql<{
        kind: string;
        total: string;
      }>`SELECT kind, SUM(amount) AS total FROM credit_entries WHERE workspace_id = ${workspaceId} GROUP BY kind`.execute(
        trx,
      );
      return { b: bal, sums: s };
    });
  const s = Object.fromEntries(sums.rows.map((r) => [r.kind, Number(r.total)]));
  const grant = s.grant ?? 0;
  const reserveOpen = (s.reserve ?? 0) - (s.capture ?? 0) - (s.release ?? 0);
  return { b, grant, reserveOpen, captured: s.capture ?? 0 };
}

function accept(h: Harness, p: Principal, price: number, i: number) {
  return acceptJob(h.deps.db, {
    principal: p,
    product: 'test.product.v1',
    target: { type: 'domain_name', value: `t${i}.example` },
    profile: null,
    input: { i },
    price,
    deadlineMs: 60_000,
    requestId: `req_test_${i}`,
    claim: undefined,
    ttlHours: 24,
  });
}

describe('credit ledger', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());

  it('200 concurrent reservations on a balance for 50 accept exactly 50, and the invariant holds at every sample', async () => {
    const t = await createTenant(h);
    const wsId = await workspaceInternalId(h.deps.db, t.workspaceId);
    await grantCredits(h.deps.db, wsId, 50, `grant:test:${t.workspaceId}`);
    const p = await principalFor(h, t.key);

    let sampling = true;
    const violations: unknown[] = [];
    let samples = 0;
    const sampler = (async () => {
      while (sampling) {
        const v = await invariant(h, wsId);
        samples++;
        if (
          v.b.granted !== v.b.available + v.b.reserved + v.b.captured ||
          v.b.available < 0 ||
          v.grant !== v.b.granted ||
          v.reserveOpen !== v.b.reserved ||
          v.captured !== v.b.captured
        )
          violations.push(v);
      }
    })();
    const results = await Promise.allSettled(Array.from({ length: 200 }, (_, i) => accept(h, p, 1, i)));
    sampling = false;
    await sampler;

    const ok = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(ok).toHaveLength(50);
    expect(refused.every((r) => r.reason instanceof ApiError && r.reason.code === 'insufficient_credits')).toBe(true);
    expect(violations).toEqual([]);
    expect(samples).toBeGreaterThan(0);
    const end = await invariant(h, wsId);
    expect(end.b).toEqual({ granted: 50, reserved: 50, captured: 0, available: 0 });
    const jobs = await h.deps.db
      .selectFrom('jobs')
      .select(sql<number>`COUNT(*)`.as('n'))
      .where('workspace_id', '=', wsId)
      .executeTakeFirstOrThrow();
    expect(Number(jobs.n)).toBe(50);
  });

  it('captures once per task, never beyond the reservation, and releases the remainder exactly once', async () => {
    const t = await createTenant(h);
    const wsId = await workspaceInternalId(h.deps.db, t.workspaceId);
    await grantCredits(h.deps.db, wsId, 100, `grant:test:${t.workspaceId}`);
    const p = await principalFor(h, t.key);
    const job = await accept(h, p, 10, 1);

    const cap = (taskId: number, amount: number) =>
      h.deps.db
        .transaction()
        .execute((trx) => captureTask(trx, { workspaceId: wsId, jobId: job.jobId, taskId, amount }));
    expect(await cap(1, 3)).toBe(3);
    expect(await cap(1, 3)).toBe(0); // redelivered result: no second capture
    const parallel = await Promise.all([cap(2, 4), cap(2, 4), cap(2, 4)]);
    expect(parallel.reduce((a, b) => a + b, 0)).toBe(4);
    expect(await cap(3, 50)).toBe(3); // clamped to what remains of the reservation

    const releases = await Promise.all(
      [1, 2, 3].map(() => h.deps.db.transaction().execute((trx) => releaseRemainder(trx, job.jobId))),
    );
    expect(releases.filter(Boolean)).toEqual([{ reserved: 10, captured: 10, released: 0 }]);
    const b = await balance(h.deps.db, wsId);
    expect(b).toEqual({ granted: 100, reserved: 0, captured: 10, available: 90 });
    expect(await cap(4, 1)).toBe(0); // a settled job captures nothing more
  });

  it('releases the unused part of a reservation once and restores the monthly allowance', async () => {
    const t = await createTenant(h);
    const wsId = await workspaceInternalId(h.deps.db, t.workspaceId);
    await grantCredits(h.deps.db, wsId, 100, `grant:test:${t.workspaceId}`);
    const limited = await createKey(h.deps.db, h.config.KEY_PEPPER, {
      workspace: t.workspaceId,
      monthlyCreditLimit: 10,
    });
    const p = await principalFor(h, limited.key);

    const a = await accept(h, p, 4, 1);
    await accept(h, p, 4, 2);
    await expect(accept(h, p, 4, 3)).rejects.toMatchObject({ code: 'monthly_credit_limit_exceeded' });
    await h.deps.db
      .transaction()
      .execute((trx) => captureTask(trx, { workspaceId: wsId, jobId: a.jobId, taskId: 1, amount: 1 }));
    await h.deps.db.transaction().execute((trx) => releaseRemainder(trx, a.jobId));
    // 3 credits of job a came back to the key's month: 1 + 4 used, so a 4-credit job fits again.
    await expect(accept(h, p, 4, 4)).resolves.toMatchObject({ status: 202 });
    const entries = await sql<{
      n: number;
    }>`SELECT COUNT(*) AS n FROM credit_entries WHERE job_id = ${a.jobId} AND kind = 'release'`.execute(h.deps.db);
    expect(Number(entries.rows[0]!.n)).toBe(1);
  });

  it('checks the monthly ceiling before the balance, and a refusal leaves no job or entry behind', async () => {
    const t = await createTenant(h);
    const wsId = await workspaceInternalId(h.deps.db, t.workspaceId);
    const limited = await createKey(h.deps.db, h.config.KEY_PEPPER, {
      workspace: t.workspaceId,
      monthlyCreditLimit: 2,
    });
    const p = await principalFor(h, limited.key);
    await expect(accept(h, p, 5, 1)).rejects.toMatchObject({ code: 'monthly_credit_limit_exceeded' });
    const p2 = await principalFor(h, t.key);
    await expect(accept(h, p2, 5, 2)).rejects.toMatchObject({ code: 'insufficient_credits' });
    const jobs = await h.deps.db.selectFrom('jobs').select('id').where('workspace_id', '=', wsId).execute();
    expect(jobs).toEqual([]);
    const entries = await h.deps.db
      .selectFrom('credit_entries')
      .select('id')
      .where('workspace_id', '=', wsId)
      .execute();
    expect(entries).toEqual([]);
  });
});
