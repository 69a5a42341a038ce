// Job admission and cancellation. Acceptance is one MySQL transaction: idempotency record
// completed with the 202 body + credit reservation + job row + outbox row. Publishing to the jobs
// stream happens after commit; the outbox relay covers a crash in between.
import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { Principal } from '../auth/principal.ts';
import type { IdempotencyClaim } from '../idempotency/lease.ts';
import { monthOf, reserveCredits } from '../credits/ledger.ts';
import { publicId } from '../contract/ids.ts';
import { commitClaimReply } from '../idempotency/idempotency-repo.ts';
import { inTransaction, type Trx } from '../db/transaction.ts';
import { findJob, jobView, isTerminal, type JobRow } from './job-view.ts';

export interface AcceptInput {
  principal: Principal;
  product: string;
  target: { type: string; value: string };
  profile: string | null;
  input: unknown;
  price: number;
  deadlineMs: number;
  requestId: string;
  claim: IdempotencyClaim | undefined;
  /** Retention of the idempotency record (IDEMPOTENCY_TTL_HOURS); only used with a claim. */
  ttlHours?: number;
  /** At most this many objects for the job (a scan profile's cap). */
  objectCap?: number | null;
  /** Active work: the approved scope it was admitted under and its proof (coverage.activeScope). */
  activeScope?: { domain: string; proof: 'verified' | 'operator_override' } | null;
  /**
   * Runs inside the job's transaction once the job row exists (a monitor's run records its job
   * here, so the run and its job commit together or not at all); a throw rolls the job back.
   */
  within?: (trx: Trx, job: { jobId: number; jobRef: string }) => Promise<void>;
  /** No reply is sent (a monitor's run): the 202 body, a read of the job and its tallies, is not built. */
  noReply?: boolean;
}

/** Another request committed this Idempotency-Key first; this transaction was rolled back. */
export class CommittedElsewhere extends Error {}

export interface Accepted {
  jobId: number;
  jobRef: string;
  status: number;
  /** The 202 body; null with `noReply`. */
  body: Awaited<ReturnType<typeof jobView>> | null;
}

export async function acceptJob(db: Db, a: AcceptInput): Promise<Accepted> {
  const jobRef = publicId('job');
  const now = new Date();
  return inTransaction(db, async (trx) => {
    await reserveCredits(trx, {
      workspaceId: a.principal.workspaceId,
      apiKeyId: a.principal.keyId,
      monthlyLimit: a.principal.monthlyCreditLimit,
      amount: a.price,
      month: monthOf(now),
      dedupeKey: `res:${jobRef}`,
    });
    const ins = await trx
      .insertInto('jobs')
      .values({
        public_id: jobRef,
        workspace_id: a.principal.workspaceId,
        api_key_id: a.principal.keyId,
        product: a.product,
        status: 'queued',
        profile: a.profile,
        target_type: a.target.type,
        target_value: a.target.value,
        input: JSON.stringify(a.input),
        request_id: a.requestId,
        credits_reserved: a.price,
        credits_released: null,
        settled_at: null,
        result: null,
        coverage: null,
        month: monthOf(now),
        started_at: null,
        completed_at: null,
        cancel_requested_at: null,
        deadline_at: new Date(now.getTime() + a.deadlineMs),
        object_cap: a.objectCap ?? null,
        active_scope: a.activeScope ? JSON.stringify(a.activeScope) : null,
      })
      .executeTakeFirstOrThrow();
    const jobId = Number(ins.insertId);
    await trx.insertInto('outbox').values({ job_id: jobId, topic: 'plan', published_at: null }).execute();
    if (a.within) await a.within(trx, { jobId, jobRef });
    if (a.noReply && !a.claim) return { jobId, jobRef, status: 202, body: null };
    const job = (await trx
      .selectFrom('jobs')
      .selectAll()
      .where('id', '=', jobId)
      .executeTakeFirstOrThrow()) as unknown as JobRow;
    const body = await jobView(trx as unknown as Db, job);
    if (a.claim) {
      // In the job's transaction: the unique key makes a second job for this key impossible,
      // even if the Redis lease that normally keeps the twin out was lost.
      const stored = await commitClaimReply(
        trx as unknown as Db,
        a.claim,
        { status: 202, body: JSON.stringify(body) },
        a.ttlHours ?? 24,
      );
      if (stored === 'duplicate') throw new CommittedElsewhere();
    }
    return { jobId, jobRef, status: 202, body };
  });
}

export async function markOutboxPublished(db: Db, jobId: number, topic: string): Promise<void> {
  await db
    .updateTable('outbox')
    .set({ published_at: sql`NOW(3)` as unknown as Date })
    .where('job_id', '=', jobId)
    .where('topic', '=', topic)
    .where('published_at', 'is', null)
    .execute();
}

/**
 * Cancel (CONTRACT §9): a non-terminal job moves to `cancelling` (compare-and-set, so a terminal
 * job is never touched) and an outbox row asks the orchestrator to stop scheduling. Idempotent:
 * a second cancel finds `cancelling` and changes nothing.
 */
export async function requestCancel(
  db: Db,
  workspaceId: number,
  jobRef: string,
): Promise<{ job: JobRow; changed: boolean } | null> {
  return inTransaction(db, async (trx) => {
    const job = await findJob(trx as unknown as Db, workspaceId, jobRef);
    if (!job) return null;
    if (isTerminal(job.status) || job.status === 'cancelling') return { job, changed: false };
    const upd = await trx
      .updateTable('jobs')
      .set({ status: 'cancelling', cancel_requested_at: sql`NOW(3)` as unknown as Date })
      .where('id', '=', job.id)
      .where('status', 'in', ['queued', 'running'])
      .executeTakeFirst();
    if (Number(upd.numUpdatedRows) !== 1)
      return { job: (await findJob(trx as unknown as Db, workspaceId, jobRef))!, changed: false };
    await trx.insertInto('outbox').values({ job_id: job.id, topic: 'cancel', published_at: null }).execute();
    return { job: (await findJob(trx as unknown as Db, workspaceId, jobRef))!, changed: true };
  });
}
