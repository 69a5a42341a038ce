// Workspaces, applications, keys and approved scopes: the writes behind the admin CLI (and the
// test fixtures, which use the same functions so they exercise the real path).
import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { generateApiKey, hashApiKey } from './api-key.ts';
import { SCOPES, type Scope } from './principal.ts';
import { publicId } from '../contract/ids.ts';
import { rateOverridesSchema, parseOverrides, type RateOverrides } from '../ratelimit/policies.ts';
import type { SpecialUsePolicy } from '../net/special-use.ts';
import { approvableScope, type ScopeProof } from './approved-scopes.ts';
import { askProof, challengeName, newChallengeToken, type ProofCheck, type ProofDns } from './scope-proof.ts';
import { proofStanding } from './scope-reproof.ts';

export { InvalidScopeError } from './approved-scopes.ts';

export class NotFoundError extends Error {}

/** `scope approve --verify` found no proof: nothing was approved. */
export class ScopeProofError extends Error {
  readonly check: ProofCheck | null;
  constructor(message: string, check: ProofCheck | null) {
    super(message);
    this.check = check;
  }
}

/** No special-use suffix allowed: what a production deployment has (ALLOW_SPECIAL_USE_DOMAINS empty). */
const NO_SPECIAL_USE: SpecialUsePolicy = { allowSuffixes: [], allowCidrs: [] };

export interface CreateWorkspaceInput {
  name: string;
  active?: boolean;
  /** Approved by the operator without proof of control (operator_override), each checked like `scope approve`. */
  approveScopes?: string[];
  /** Which special-use suffixes a scope may name (ALLOW_SPECIAL_USE_DOMAINS); default none. */
  scopePolicy?: SpecialUsePolicy;
  /** The responsible-use policy version accepted at creation, if any. */
  acceptResponsibleUse?: string | null;
}

export async function createWorkspace(db: Db, input: CreateWorkspaceInput) {
  // Every scope is checked before anything is written: a refused one creates no workspace.
  const scopes = (input.approveScopes ?? []).map((d) => normalizeSuffix(d, input.scopePolicy));
  return db.transaction().execute(async (trx) => {
    const wsPublic = publicId('ws');
    const ws = await trx
      .insertInto('workspaces')
      .values({
        public_id: wsPublic,
        name: input.name,
        active_capability: input.active ? 1 : 0,
        responsible_use_version: input.acceptResponsibleUse ?? null,
        responsible_use_accepted_at: input.acceptResponsibleUse ? new Date() : null,
      })
      .executeTakeFirstOrThrow();
    const workspaceId = Number(ws.insertId);
    const appPublic = publicId('app');
    await trx
      .insertInto('applications')
      .values({ public_id: appPublic, workspace_id: workspaceId, name: 'default', rate_limits: null })
      .execute();
    for (const suffix of new Set(scopes)) {
      await trx
        .insertInto('workspace_target_scopes')
        .values({ workspace_id: workspaceId, suffix, proof: 'operator_override', verified_at: null })
        .execute();
    }
    return { workspaceId: wsPublic, applicationId: appPublic };
  });
}

/**
 * An approved scope as stored: lower case A-labels, no `*.` or trailing dot. Refused (with the
 * reason): a name that is not LDH, numeric (an IP address or its tail), a public suffix of either
 * section of the list (co.uk, github.io) or a TLD, under arpa, or special-use (cluster.local,
 * corp.internal…) unless `policy` allows it (src/auth/approved-scopes.ts).
 */
export function normalizeSuffix(suffix: string, policy: SpecialUsePolicy = NO_SPECIAL_USE): string {
  return approvableScope(suffix, policy);
}

export async function workspaceInternalId(db: Db, wsPublic: string): Promise<number> {
  return (await workspaceRow(db, wsPublic)).id;
}

async function workspaceRow(db: Db, wsPublic: string) {
  const row = await db.selectFrom('workspaces').selectAll().where('public_id', '=', wsPublic).executeTakeFirst();
  if (!row) throw new NotFoundError(`no workspace ${wsPublic}`);
  return row;
}

async function applicationRow(db: Db, workspaceId: number, appPublic?: string) {
  let q = db.selectFrom('applications').selectAll().where('workspace_id', '=', workspaceId);
  q = appPublic ? q.where('public_id', '=', appPublic) : q.orderBy('id', 'asc');
  const row = await q.executeTakeFirst();
  if (!row)
    throw new NotFoundError(
      appPublic ? `no application ${appPublic} in this workspace` : 'workspace has no application',
    );
  return row;
}

export interface CreateKeyInput {
  workspace: string;
  application?: string;
  scopes?: Scope[];
  monthlyCreditLimit?: number | null;
}

export async function createKey(db: Db, pepper: string, input: CreateKeyInput) {
  const ws = await workspaceRow(db, input.workspace);
  const app = await applicationRow(db, ws.id, input.application);
  const scopes = input.scopes ?? [...SCOPES];
  for (const s of scopes) if (!(SCOPES as readonly string[]).includes(s)) throw new Error(`unknown scope ${s}`);
  const { key, hint } = generateApiKey();
  const keyPublic = publicId('key');
  await db
    .insertInto('api_keys')
    .values({
      public_id: keyPublic,
      application_id: app.id,
      workspace_id: ws.id,
      key_hash: hashApiKey(key, pepper),
      hint,
      scopes: scopes.join(','),
      monthly_credit_limit: input.monthlyCreditLimit ?? null,
      revoked_at: null,
    })
    .execute();
  return { keyId: keyPublic, key, hint, scopes, applicationId: app.public_id, workspaceId: ws.public_id };
}

export async function revokeKey(db: Db, keyPublic: string) {
  const res = await db
    .updateTable('api_keys')
    .set({ revoked_at: sql`NOW(3)` as unknown as Date })
    .where('public_id', '=', keyPublic)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) === 0) {
    const exists = await db.selectFrom('api_keys').select('id').where('public_id', '=', keyPublic).executeTakeFirst();
    if (!exists) throw new NotFoundError(`no key ${keyPublic}`);
    return { keyId: keyPublic, revoked: true, alreadyRevoked: true };
  }
  return { keyId: keyPublic, revoked: true, alreadyRevoked: false };
}

export interface ApproveScopeOptions {
  policy?: SpecialUsePolicy;
  /**
   * `--verify`: approve only when the TXT record _lss-challenge.<domain> holds the workspace's
   * challenge token, asked of the zone's own servers (found through this resolver, reached through
   * this guard); the scope is then `verified`.
   */
  verifyWith?: ProofDns;
}

/**
 * Approves a scope (upsert): `verified` with proof, else `operator_override`. Approving again
 * without --verify turns a verified scope into an operator's override (no more DNS re-checks).
 */
export async function approveScope(db: Db, wsPublic: string, suffix: string, opts: ApproveScopeOptions = {}) {
  const ws = await workspaceRow(db, wsPublic);
  const s = normalizeSuffix(suffix, opts.policy);
  let proof: ScopeProof = 'operator_override';
  if (opts.verifyWith) {
    const challenge = await db
      .selectFrom('scope_challenges')
      .select('token')
      .where('workspace_id', '=', ws.id)
      .where('suffix', '=', s)
      .executeTakeFirst();
    if (!challenge)
      throw new ScopeProofError(
        `no challenge for ${s} in this workspace: run \`scope challenge --workspace ${wsPublic} --domain ${s}\` and publish its TXT record first`,
        null,
      );
    const check = await askProof(opts.verifyWith, s, challenge.token);
    if (check.state !== 'present')
      throw new ScopeProofError(
        check.state === 'missing'
          ? `not approved: ${check.detail}; publish TXT ${challengeName(s)} "${challenge.token}" and try again`
          : `not approved: ${check.detail} (nothing is known: try again once the zone's servers answer)`,
        check,
      );
    proof = 'verified';
  }
  const verifiedAt = proof === 'verified' ? new Date() : null;
  // Approving again starts the proof's record afresh: proven now (a suspension lifted), or an
  // operator's override that is never re-proven.
  const standing = {
    proof,
    verified_at: verifiedAt,
    last_proven_at: verifiedAt,
    proof_checked_at: verifiedAt,
    proof_outcome: verifiedAt ? ('present' as const) : null,
    proof_detail: null,
    suspended_at: null,
  };
  await db
    .insertInto('workspace_target_scopes')
    .values({ workspace_id: ws.id, suffix: s, ...standing })
    .onDuplicateKeyUpdate(standing)
    .execute();
  return { workspaceId: wsPublic, approved: s, proof };
}

/**
 * The TXT record that proves control of `suffix` for this workspace: the token already issued for
 * it (so a record published earlier stays valid), or a new one. Approves nothing.
 */
export async function challengeScope(db: Db, wsPublic: string, suffix: string, policy?: SpecialUsePolicy) {
  const ws = await workspaceRow(db, wsPublic);
  const s = normalizeSuffix(suffix, policy);
  await sql`INSERT IGNORE INTO scope_challenges (workspace_id, suffix, token) VALUES (${ws.id}, ${s}, ${newChallengeToken()})`.execute(
    db,
  );
  const row = await db
    .selectFrom('scope_challenges')
    .select('token')
    .where('workspace_id', '=', ws.id)
    .where('suffix', '=', s)
    .executeTakeFirstOrThrow();
  return { name: challengeName(s), value: row.token };
}

/** Removes an approval and its challenge token (a later challenge issues a new one). */
export async function revokeScope(db: Db, wsPublic: string, suffix: string) {
  const ws = await workspaceRow(db, wsPublic);
  // The name as stored, without the approval rule: a row the rule refuses today can still be revoked.
  const s = suffix.trim().toLowerCase().replace(/^\*\./, '').replace(/\.$/, '');
  const res = await db
    .deleteFrom('workspace_target_scopes')
    .where('workspace_id', '=', ws.id)
    .where('suffix', '=', s)
    .executeTakeFirst();
  await db.deleteFrom('scope_challenges').where('workspace_id', '=', ws.id).where('suffix', '=', s).execute();
  if (Number(res.numDeletedRows) === 0) throw new NotFoundError(`no approved scope ${s} in workspace ${wsPublic}`);
  return { workspaceId: wsPublic, revoked: s };
}

/** Every approved scope of the workspace with how it was approved. */
export async function listScopes(db: Db, wsPublic: string) {
  const ws = await workspaceRow(db, wsPublic);
  return { workspaceId: wsPublic, scopes: await scopeRows(db, ws.id) };
}

async function scopeRows(db: Db, workspaceId: number) {
  const rows = await db
    .selectFrom('workspace_target_scopes')
    .select([
      'suffix',
      'proof',
      'verified_at',
      'created_at',
      'last_proven_at',
      'proof_checked_at',
      'proof_outcome',
      'proof_detail',
      'suspended_at',
    ])
    .where('workspace_id', '=', workspaceId)
    .orderBy('suffix')
    .execute();
  // The re-proof's record (docs/api.md, "Approval means control"): null for an operator's override.
  return rows.map((r) => ({
    domain: r.suffix,
    proof: r.proof,
    approvedAt: r.created_at,
    verifiedAt: r.verified_at,
    proofState: proofStanding(r),
    lastProvenAt: r.last_proven_at,
    lastProofAt: r.proof_checked_at,
    lastProofOutcome: r.proof_outcome,
    lastProofDetail: r.proof_detail,
    suspendedAt: r.suspended_at,
  }));
}

export async function setWorkspaceFlags(
  db: Db,
  wsPublic: string,
  flags: { active?: boolean; acceptResponsibleUse?: string },
) {
  const ws = await workspaceRow(db, wsPublic);
  const set: Record<string, unknown> = {};
  if (flags.active !== undefined) set.active_capability = flags.active ? 1 : 0;
  if (flags.acceptResponsibleUse) {
    set.responsible_use_version = flags.acceptResponsibleUse;
    set.responsible_use_accepted_at = new Date();
  }
  if (Object.keys(set).length > 0) await db.updateTable('workspaces').set(set).where('id', '=', ws.id).execute();
}

export async function setLimits(db: Db, wsPublic: string, appPublic: string | undefined, patch: RateOverrides) {
  const ws = await workspaceRow(db, wsPublic);
  const app = await applicationRow(db, ws.id, appPublic);
  const current = parseOverrides(app.rate_limits);
  const merged = rateOverridesSchema.parse({
    app: { ...current.app, ...patch.app },
    products: {
      ...current.products,
      ...Object.fromEntries(
        Object.entries(patch.products ?? {}).map(([k, v]) => [k, { ...current.products?.[k], ...v }]),
      ),
    },
  });
  await db
    .updateTable('applications')
    .set({ rate_limits: JSON.stringify(merged) })
    .where('id', '=', app.id)
    .execute();
  return { workspaceId: wsPublic, applicationId: app.public_id, rateLimits: merged };
}

export async function showWorkspace(db: Db, wsPublic: string) {
  const ws = await workspaceRow(db, wsPublic);
  const [apps, keys, scopes] = await Promise.all([
    db
      .selectFrom('applications')
      .select(['public_id', 'name', 'rate_limits'])
      .where('workspace_id', '=', ws.id)
      .execute(),
    db
      .selectFrom('api_keys as k')
      .innerJoin('applications as a', 'a.id', 'k.application_id')
      .select([
        'k.public_id',
        'k.hint',
        'k.scopes',
        'k.monthly_credit_limit',
        'k.revoked_at',
        'k.created_at',
        'a.public_id as app',
      ])
      .where('k.workspace_id', '=', ws.id)
      .execute(),
    scopeRows(db, ws.id),
  ]);
  return {
    workspaceId: ws.public_id,
    name: ws.name,
    activeCapability: ws.active_capability === 1,
    responsibleUse: { version: ws.responsible_use_version, acceptedAt: ws.responsible_use_accepted_at },
    // Each with its proof: `verified` (TXT record) or `operator_override` (approved without proof),
    // and how the scheduled re-proof left it (proofState, lastProvenAt…: scope-reproof.ts).
    approvedScopes: scopes,
    applications: apps.map((a) => ({
      applicationId: a.public_id,
      name: a.name,
      rateLimits: parseOverrides(a.rate_limits),
    })),
    keys: keys.map((k) => ({
      keyId: k.public_id,
      hint: `lsk_${k.hint}…`,
      scopes: k.scopes.split(','),
      applicationId: k.app,
      monthlyCreditLimit: k.monthly_credit_limit,
      revokedAt: k.revoked_at,
      createdAt: k.created_at,
    })),
  };
}
