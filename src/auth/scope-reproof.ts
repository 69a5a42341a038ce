// Verified scopes are proven again on a schedule (issue 45 item 5): a record published once must
// not approve active work forever after its domain changed hands. The orchestrator runs
// reproveDueScopes every minute (one instance per tick, src/queue/tick-lock.ts); each scope's
// re-proof is claimed in MySQL first, so two orchestrators never run the same one.
//
//   due            a verified scope, not suspended, last proven (last_proven_at) at least
//                  SCOPE_REPROVE_HOURS ago; after an indeterminate re-proof, again an hour later
//                  (or a period, if shorter) until one can say
//   present        the zone's servers hold the token (askProof, never the per-process cache):
//                  last_proven_at moves on, the next re-proof is a period later
//   missing        the token is gone or wrong: the scope is suspended at once
//   indeterminate  no authoritative answer: the grant is kept while the last proof is less than
//                  two periods old (one more period after the re-proof that was due), then the
//                  scope is suspended. Never read as proof, never as a removal before that.
// A suspended scope approves no active work (keys-repo.ts: approvedScopesOf leaves it out, so
// admission refuses approved_target_scope_required and the planner plans nothing in it;
// activeAuthorizationGone stops its queued tasks with authorization_revoked, as a revocation
// does). It stays suspended until `scope approve --verify` proves it again.
import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { askProof, type ProofDns, type ProofState } from './scope-proof.ts';

/** Retry of an indeterminate re-proof at most this often (or once a period, if shorter). */
const INDETERMINATE_RETRY_MS = 3_600_000;
/** Scopes claimed per run, and asked at once. */
const BATCH = 100;
const CONCURRENCY = 4;
/** proof_detail's column width. */
const DETAIL_MAX = 600;

export interface ReproofOptions {
  /** SCOPE_REPROVE_HOURS. */
  periodHours: number;
  /** The clock (tests move it forward). */
  now?: Date;
  /** One workspace's scopes only (tests that share a database with others). */
  workspaceId?: number;
}

export interface Reproof {
  workspaceId: number;
  domain: string;
  outcome: ProofState;
  /** What it did to the grant. */
  grant: 'kept' | 'suspended';
  detail: string;
}

interface DueRow {
  workspace_id: number;
  suffix: string;
  last_proven_at: Date | null;
  proof_checked_at: Date | null;
  token: string | null;
}

/** Proves every due verified scope again (at most BATCH a run); see the header. */
export async function reproveDueScopes(db: Db, dns: ProofDns, opts: ReproofOptions): Promise<Reproof[]> {
  const now = opts.now ?? new Date();
  const periodMs = opts.periodHours * 3_600_000;
  const dueBefore = new Date(now.getTime() - periodMs);
  const retryBefore = new Date(now.getTime() - Math.min(periodMs, INDETERMINATE_RETRY_MS));
  const due: DueRow[] = await db
    .selectFrom('workspace_target_scopes as s')
    .leftJoin('scope_challenges as c', (j) =>
      j.onRef('c.workspace_id', '=', 's.workspace_id').onRef('c.suffix', '=', 's.suffix'),
    )
    .select(['s.workspace_id', 's.suffix', 's.last_proven_at', 's.proof_checked_at', 'c.token'])
    .where('s.proof', '=', 'verified')
    .where('s.suspended_at', 'is', null)
    .$if(opts.workspaceId !== undefined, (q) => q.where('s.workspace_id', '=', opts.workspaceId!))
    .where((eb) => eb.or([eb('s.last_proven_at', 'is', null), eb('s.last_proven_at', '<=', dueBefore)]))
    .where((eb) => eb.or([eb('s.proof_checked_at', 'is', null), eb('s.proof_checked_at', '<=', retryBefore)]))
    .orderBy('s.last_proven_at')
    .limit(BATCH)
    .execute();
  const done: Reproof[] = [];
  let next = 0;
  const worker = async () => {
    while (next < due.length) {
      const row = due[next++]!;
      const r = await reproveOne(db, dns, row, now, periodMs);
      if (r) done.push(r);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, due.length) }, worker));
  return done;
}

async function reproveOne(db: Db, dns: ProofDns, row: DueRow, now: Date, periodMs: number): Promise<Reproof | null> {
  // The claim: moving proof_checked_at from the value read makes this re-proof ours; another
  // orchestrator that read the same row moves nothing and leaves it.
  const claimed = await db
    .updateTable('workspace_target_scopes')
    .set({ proof_checked_at: now })
    .where('workspace_id', '=', row.workspace_id)
    .where('suffix', '=', row.suffix)
    .where('proof', '=', 'verified')
    .where('suspended_at', 'is', null)
    .where(sql<boolean>`proof_checked_at <=> ${row.proof_checked_at}`)
    .executeTakeFirst();
  if (Number(claimed.numUpdatedRows) !== 1) return null;
  const check =
    row.token === null
      ? { state: 'missing' as const, detail: 'no challenge token on record for this verified scope' }
      : await askProof(dns, row.suffix, row.token).catch((err: unknown) => ({
          state: 'indeterminate' as const,
          detail: `the re-proof failed here: ${err instanceof Error ? err.message : String(err)}`,
          reason: 'error' as const,
        }));
  const reason = 'reason' in check && check.reason ? ` [${check.reason}]` : '';
  let detail = `${check.detail}${reason}`;
  let grant: Reproof['grant'] = 'kept';
  if (check.state === 'missing') grant = 'suspended';
  if (check.state === 'indeterminate') {
    const provenMs = row.last_proven_at?.getTime() ?? Number.NEGATIVE_INFINITY;
    if (now.getTime() - provenMs >= 2 * periodMs) {
      grant = 'suspended';
      detail = `no re-proof could say for a whole period after the one that was due: ${detail}`;
    }
  }
  await db
    .updateTable('workspace_target_scopes')
    .set({
      proof_outcome: check.state,
      proof_detail: detail.slice(0, DETAIL_MAX),
      ...(check.state === 'present' ? { last_proven_at: now } : {}),
      ...(grant === 'suspended' ? { suspended_at: now } : {}),
    })
    .where('workspace_id', '=', row.workspace_id)
    .where('suffix', '=', row.suffix)
    .where('proof', '=', 'verified')
    .execute();
  return { workspaceId: row.workspace_id, domain: row.suffix, outcome: check.state, grant, detail };
}

/** How a scope's proof stands, for `scope list` and `workspace show` (docs/api.md). */
export type ProofStanding = 'not_required' | 'proven' | 'unconfirmed' | 'suspended';

export function proofStanding(row: {
  proof: string;
  suspended_at: Date | null;
  proof_outcome: string | null;
}): ProofStanding {
  if (row.proof !== 'verified') return 'not_required';
  if (row.suspended_at !== null) return 'suspended';
  return row.proof_outcome === 'indeterminate' ? 'unconfirmed' : 'proven';
}
