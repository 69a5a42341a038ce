// Workspaces, applications, keys and approved scopes: the writes behind the admin CLI (and the
// test fixtures, which use the same functions so they exercise the real path).
import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { generateApiKey, hashApiKey } from './api-key.ts';
import { SCOPES, type Scope } from './principal.ts';
import { publicId } from '../contract/ids.ts';
import { suffixParts } from '../contract/public-suffix.ts';
import { rateOverridesSchema, parseOverrides, type RateOverrides } from '../ratelimit/policies.ts';

export class NotFoundError extends Error {}

/** A suffix that may not be an approved target scope (not a domain name, or a public suffix). */
export class InvalidScopeError extends Error {}

export interface CreateWorkspaceInput {
  name: string;
  active?: boolean;
  approveScopes?: string[];
  /** The responsible-use policy version accepted at creation, if any. */
  acceptResponsibleUse?: string | null;
}

export async function createWorkspace(db: Db, input: CreateWorkspaceInput) {
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
    for (const suffix of input.approveScopes ?? []) {
      await trx
        .insertInto('workspace_target_scopes')
        .values({ workspace_id: workspaceId, suffix: normalizeSuffix(suffix) })
        .execute();
    }
    return { workspaceId: wsPublic, applicationId: appPublic };
  });
}

/**
 * An approved scope as stored: lower case, no `*.` or trailing dot. A public suffix of either
 * section of the list (co.uk, github.io, s3.amazonaws.com) or an unlisted TLD is refused: approving
 * it would approve every owner's names below it (src/contract/public-suffix.ts).
 */
export function normalizeSuffix(suffix: string): string {
  const s = suffix.trim().toLowerCase().replace(/^\*\./, '').replace(/\.$/, '');
  if (!/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(s) || s.length > 253)
    throw new InvalidScopeError(`not a domain suffix: ${suffix}`);
  const p = suffixParts(s);
  if (p.registrable === null)
    throw new InvalidScopeError(
      `not an approvable scope: ${s} is a public suffix (${p.section === 'unlisted' ? 'a top-level domain outside the public suffix list' : `${p.section} section of the public suffix list`}); approve a registrable domain or a name below one`,
    );
  return s;
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

export async function approveScope(db: Db, wsPublic: string, suffix: string) {
  const ws = await workspaceRow(db, wsPublic);
  const s = normalizeSuffix(suffix);
  await sql`INSERT IGNORE INTO workspace_target_scopes (workspace_id, suffix) VALUES (${ws.id}, ${s})`.execute(db);
  return { workspaceId: wsPublic, approved: s };
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
    db.selectFrom('workspace_target_scopes').select('suffix').where('workspace_id', '=', ws.id).execute(),
  ]);
  return {
    workspaceId: ws.public_id,
    name: ws.name,
    activeCapability: ws.active_capability === 1,
    responsibleUse: { version: ws.responsible_use_version, acceptedAt: ws.responsible_use_accepted_at },
    approvedScopes: scopes.map((s) => s.suffix),
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
