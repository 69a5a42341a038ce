// The ledger's guarantees as assertions, for suites that run jobs through real processes: a
// settled job captured each task at most once (and only a task that did work), released its
// remainder exactly once, and its workspace's balances equal the sums of its entries with the
// invariant granted = available + reserved + captured.
import { sql } from 'kysely';
import { expect } from 'vitest';
import { balance } from '../../src/credits/ledger.ts';
import type { Db } from '../../src/db/database.ts';

const OPEN = ['pending', 'running'];

/** One settled job: each task row once and closed, captures unique, the remainder released once. */
export async function expectSettledJob(db: Db, jobId: number): Promise<{ captured: number; released: number }> {
  const job = await db.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirstOrThrow();
  const tasks = await db
    .selectFrom('tasks')
    .select(['id', 'check_name', 'object_key', 'status'])
    .where('job_id', '=', jobId)
    .execute();
  expect(new Set(tasks.map((t) => `${t.check_name}\n${t.object_key}`)).size).toBe(tasks.length);
  for (const t of tasks) expect(OPEN).not.toContain(t.status);
  const entries = await db
    .selectFrom('credit_entries')
    .select(['kind', 'amount', 'dedupe_key'])
    .where('job_id', '=', jobId)
    .execute();
  const captures = entries.filter((e) => e.kind === 'capture');
  const releases = entries.filter((e) => e.kind === 'release');
  // Captures are keyed cap:<job>:<task>.
  const capturedTasks = captures.map((c) => Number(c.dedupe_key.split(':').pop()));
  expect(new Set(capturedTasks).size).toBe(capturedTasks.length);
  for (const id of capturedTasks)
    expect(['completed', 'partial']).toContain(tasks.find((t) => Number(t.id) === id)?.status);
  const captured = captures.reduce((s, c) => s + Number(c.amount), 0);
  expect(captured).toBe(Number(job.credits_captured));
  const remainder = Number(job.credits_reserved) - captured;
  expect(releases).toHaveLength(remainder > 0 ? 1 : 0);
  if (remainder > 0) expect(Number(releases[0]!.amount)).toBe(remainder);
  expect(Number(job.credits_released)).toBe(remainder);
  expect(job.settled_at).not.toBeNull();
  return { captured, released: remainder };
}

/** A workspace with nothing open: nothing reserved, balances equal to the sums of the entries. */
export async function expectBalancedWorkspace(db: Db, wsId: number): Promise<void> {
  const b = await balance(db, wsId);
  expect(b.granted).toBe(b.available + b.reserved + b.captured);
  expect(b.reserved).toBe(0);
  const sums = await sql<{ kind: string; total: number }>`
    SELECT kind, SUM(amount) AS total FROM credit_entries WHERE workspace_id = ${wsId} GROUP BY kind`.execute(db);
  const sum = (k: string) => Number(sums.rows.find((r) => r.kind === k)?.total ?? 0);
  expect(b.granted).toBe(sum('grant'));
  expect(b.captured).toBe(sum('capture'));
  expect(b.reserved).toBe(sum('reserve') - sum('capture') - sum('release'));
}
