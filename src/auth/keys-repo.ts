// Queries behind authentication: one indexed read by key hash.
import type { Db } from '../db/database.ts';
import { SCOPES, type Principal, type Scope } from './principal.ts';
import { parseOverrides } from '../ratelimit/policies.ts';
import type { ApprovedScope } from './approved-scopes.ts';

export async function findPrincipalByKeyHash(db: Db, keyHash: Buffer): Promise<Principal | null> {
  return findPrincipal(db, 'k.key_hash', keyHash);
}

/**
 * The principal of a key by its id: a monitor's runs are admitted as the key that created the
 * monitor (CONTRACT §14), with that key's scopes, limits and workspace grants as they are now.
 * Null when the key is revoked or gone.
 */
export async function findPrincipalByKeyId(db: Db, keyId: number): Promise<Principal | null> {
  return findPrincipal(db, 'k.id', keyId);
}

async function findPrincipal(db: Db, by: 'k.key_hash' | 'k.id', value: Buffer | number): Promise<Principal | null> {
  const row = await db
    .selectFrom('api_keys as k')
    .innerJoin('applications as a', 'a.id', 'k.application_id')
    .innerJoin('workspaces as w', 'w.id', 'k.workspace_id')
    .select([
      'k.id as keyId',
      'k.scopes',
      'k.monthly_credit_limit',
      'k.revoked_at',
      'a.id as applicationId',
      'a.public_id as applicationPublicId',
      'a.rate_limits',
      'w.id as workspaceId',
      'w.active_capability',
      'w.responsible_use_version',
    ])
    .where(by, '=', value as never)
    .executeTakeFirst();
  if (!row || row.revoked_at) return null;
  // A second indexed read rather than GROUP_CONCAT, which MySQL silently truncates at 1 KiB.
  const approved = await approvedScopesOf(db, Number(row.workspaceId));
  const scopes = new Set(row.scopes.split(',').filter((s): s is Scope => (SCOPES as readonly string[]).includes(s)));
  return {
    keyId: Number(row.keyId),
    applicationId: Number(row.applicationId),
    applicationPublicId: row.applicationPublicId,
    workspaceId: Number(row.workspaceId),
    scopes,
    monthlyCreditLimit: row.monthly_credit_limit == null ? null : Number(row.monthly_credit_limit),
    activeCapability: row.active_capability === 1,
    responsibleUseVersion: row.responsible_use_version,
    approvedScopes: approved,
    rateOverrides: parseOverrides(row.rate_limits),
  };
}

/**
 * A workspace's approved scopes with their proof and, for verified ones, the token the TXT record
 * must hold; a scope suspended by a failed re-proof is left out (it approves nothing). `db` may
 * be a transaction (the orchestrator reads them under the job row lock).
 */
export async function approvedScopesOf(db: Db, workspaceId: number): Promise<ApprovedScope[]> {
  const rows = await db
    .selectFrom('workspace_target_scopes as s')
    .leftJoin('scope_challenges as c', (j) =>
      j.onRef('c.workspace_id', '=', 's.workspace_id').onRef('c.suffix', '=', 's.suffix'),
    )
    .select(['s.suffix', 's.proof', 'c.token'])
    .where('s.workspace_id', '=', workspaceId)
    // A scope suspended by a failed re-proof approves nothing (scope-reproof.ts).
    .where('s.suspended_at', 'is', null)
    .execute();
  return rows.map((r) => ({
    domain: r.suffix,
    proof: r.proof,
    token: r.proof === 'verified' ? (r.token ?? null) : null,
  }));
}

/**
 * Whether a workspace may still run active work under `scope` now (issue 45: revoking stops work
 * in flight): the active capability, the current responsible-use acceptance and, when named, the
 * approved scope (verified or an operator's override alike) must all still hold. Null when they
 * do; otherwise what was withdrawn, in words. One indexed read of each.
 */
export async function activeAuthorizationGone(
  db: Db,
  workspaceId: number,
  scope: string | null,
  policyVersion: string,
): Promise<string | null> {
  const ws = await db
    .selectFrom('workspaces')
    .select(['active_capability', 'responsible_use_version'])
    .where('id', '=', workspaceId)
    .executeTakeFirst();
  if (!ws) return 'the workspace is gone';
  if (ws.active_capability !== 1) return 'the workspace no longer has the active capability';
  if (ws.responsible_use_version !== policyVersion)
    return `the responsible-use policy ${policyVersion} has not been accepted`;
  if (scope === null) return null;
  const row = await db
    .selectFrom('workspace_target_scopes')
    .select(['suffix', 'suspended_at', 'proof_detail'])
    .where('workspace_id', '=', workspaceId)
    .where('suffix', '=', scope)
    .executeTakeFirst();
  if (!row) return `the approved scope ${scope} was revoked`;
  if (row.suspended_at !== null)
    return `the approved scope ${scope} is suspended: its scheduled re-proof of control failed (${row.proof_detail ?? 'no detail'})`;
  return null;
}
