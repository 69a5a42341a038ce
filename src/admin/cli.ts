// Admin CLI (CONTRACT §12): `npm run admin -- <noun> <verb> [--flags]`, JSON on stdout.
// A created key is printed once and never again; it is not logged.
import { parseArgs } from 'node:util';
import { loadConfigOrExit } from '../config/config.ts';
import { createDb } from '../db/database.ts';
import type { Scope } from '../auth/principal.ts';
import {
  approveScope,
  challengeScope,
  createKey,
  createWorkspace,
  InvalidScopeError,
  listScopes,
  NotFoundError,
  revokeKey,
  revokeScope,
  ScopeProofError,
  setLimits,
  setWorkspaceFlags,
  showWorkspace,
  workspaceInternalId,
} from '../auth/tenancy-repo.ts';
import { specialUsePolicy } from '../net/special-use.ts';
import { createResolver } from '../dns/stub-resolver.ts';
import { refuseSpecialUse } from '../net/special-use-resolver.ts';
import { createOutboundGuard } from '../net/outbound-guard.ts';
import { balance, grantCredits } from '../credits/ledger.ts';
import { randomUUID } from 'node:crypto';
import { productById } from '../products/registry.ts';
import type { Db } from '../db/database.ts';
import { rekeyWebhookSecrets } from '../jobs/monitors/rekey-secrets.ts';
import { SecretBox } from '../jobs/monitors/webhook-secrets.ts';

async function showWithBalance(db: Db, wsPublic: string) {
  const ws = await showWorkspace(db, wsPublic);
  return { ...ws, credits: await balance(db, await workspaceInternalId(db, wsPublic)) };
}

const USAGE = `usage: npm run admin -- <command> [options]
  workspace create --name N [--credits C] [--active] [--approve-scope D]... [--accept-responsible-use]
  workspace show --workspace W            (or: workspace show W)
  credits grant --workspace W --amount C [--reference R]   (a reference makes the grant idempotent)
  workspace set --workspace W [--active|--no-active] [--accept-responsible-use]
  key create --workspace W [--application A] [--scopes s1,s2] [--monthly-limit C]
  key revoke --key K                      (K = key_… id from key create / workspace show)
  scope challenge --workspace W --domain D   (the TXT record that proves control of D: publish it)
  scope approve --workspace W --domain D [--verify]
                                          (--verify: only if the TXT record holds the token: verified;
                                           without: an operator's approval, marked operator_override)
  scope revoke --workspace W --domain D
  scope list --workspace W
  limits set --workspace W [--application A] [--app-per-minute N] [--app-burst N]
             [--product ID --per-minute N --per-hour N]
  webhooks rekey                          (re-seals every webhook secret under WEBHOOK_SECRET_KEY,
                                           opening old ones with WEBHOOK_SECRET_KEY_PREVIOUS)`;

const options = {
  name: { type: 'string' },
  credits: { type: 'string' },
  active: { type: 'boolean' },
  'no-active': { type: 'boolean' },
  'approve-scope': { type: 'string', multiple: true },
  'accept-responsible-use': { type: 'boolean' },
  workspace: { type: 'string' },
  application: { type: 'string' },
  scopes: { type: 'string' },
  'monthly-limit': { type: 'string' },
  key: { type: 'string' },
  domain: { type: 'string' },
  'app-per-minute': { type: 'string' },
  'app-burst': { type: 'string' },
  product: { type: 'string' },
  'per-minute': { type: 'string' },
  'per-hour': { type: 'string' },
  amount: { type: 'string' },
  reference: { type: 'string' },
  verify: { type: 'boolean' },
  help: { type: 'boolean' },
} as const;

class UsageError extends Error {}

function int(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw new UsageError(`${flag} must be a non-negative integer`);
  return Number(v);
}

function need<T>(v: T | undefined, flag: string): T {
  if (v === undefined) throw new UsageError(`${flag} is required`);
  return v;
}

export async function runAdmin(argv: string[]): Promise<unknown> {
  const { values: o, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  if (o.help || positionals.length < 2) throw new UsageError(USAGE);
  const [noun, verb, arg] = positionals;
  const config = loadConfigOrExit();
  const handle = createDb(config.DATABASE_URL, { connectionLimit: 2 });
  const db = handle.db;
  // Every branch awaits its result: a bare `return promise` would let `finally` close the pool
  // while the promise still needs it.
  try {
    switch (`${noun} ${verb}`) {
      case 'workspace create': {
        const credits = int(o.credits, '--credits');
        const ws = await createWorkspace(db, {
          name: need(o.name, '--name'),
          active: o.active ?? false,
          approveScopes: o['approve-scope'] ?? [],
          scopePolicy: specialUsePolicy(config),
          acceptResponsibleUse: o['accept-responsible-use'] ? config.RESPONSIBLE_USE_VERSION : null,
        });
        if (credits)
          await grantCredits(
            db,
            await workspaceInternalId(db, ws.workspaceId),
            credits,
            `grant:create:${ws.workspaceId}`,
          );
        return {
          ...ws,
          responsibleUseVersion: o['accept-responsible-use'] ? config.RESPONSIBLE_USE_VERSION : null,
          credits: await balance(db, await workspaceInternalId(db, ws.workspaceId)),
        };
      }
      case 'credits grant': {
        const wsPublic = need(o.workspace, '--workspace');
        const amount = need(int(o.amount, '--amount'), '--amount');
        if (amount <= 0) throw new UsageError('--amount must be positive');
        const applied = await grantCredits(
          db,
          await workspaceInternalId(db, wsPublic),
          amount,
          `grant:${o.reference ?? randomUUID()}`,
        );
        return {
          workspaceId: wsPublic,
          granted: applied ? amount : 0,
          duplicateReference: !applied,
          credits: await balance(db, await workspaceInternalId(db, wsPublic)),
        };
      }
      case 'workspace show':
        return await showWithBalance(db, need(o.workspace ?? arg, '--workspace'));
      case 'workspace set':
        await setWorkspaceFlags(db, need(o.workspace, '--workspace'), {
          active: o.active ? true : o['no-active'] ? false : undefined,
          acceptResponsibleUse: o['accept-responsible-use'] ? config.RESPONSIBLE_USE_VERSION : undefined,
        });
        return await showWithBalance(db, o.workspace!);
      case 'key create':
        return await createKey(db, config.KEY_PEPPER, {
          workspace: need(o.workspace, '--workspace'),
          application: o.application,
          scopes: o.scopes ? (o.scopes.split(',').map((s) => s.trim()) as Scope[]) : undefined,
          monthlyCreditLimit: int(o['monthly-limit'], '--monthly-limit') ?? null,
        });
      case 'key revoke':
        return await revokeKey(db, need(o.key ?? arg, '--key'));
      case 'scope approve': {
        const policy = specialUsePolicy(config);
        if (!o.verify)
          return await approveScope(db, need(o.workspace, '--workspace'), need(o.domain ?? arg, '--domain'), {
            policy,
          });
        // The project's resolver (DNS_SERVERS), refusing special-use names as every check does,
        // finds the zone's servers; the outbound guard (ALLOW_PRIVATE_TARGETS) reaches them.
        const stub = createResolver(config);
        const resolver = refuseSpecialUse(stub, policy);
        const servers = createOutboundGuard({
          allow: config.ALLOW_PRIVATE_TARGETS,
          resolver,
          portMap: config.OUTBOUND_PORT_MAP,
        });
        try {
          return await approveScope(db, need(o.workspace, '--workspace'), need(o.domain ?? arg, '--domain'), {
            policy,
            verifyWith: { resolver, servers },
          });
        } finally {
          stub.close?.();
        }
      }
      case 'scope challenge':
        return await challengeScope(
          db,
          need(o.workspace, '--workspace'),
          need(o.domain ?? arg, '--domain'),
          specialUsePolicy(config),
        );
      case 'scope revoke':
        return await revokeScope(db, need(o.workspace, '--workspace'), need(o.domain ?? arg, '--domain'));
      case 'scope list':
        return await listScopes(db, need(o.workspace ?? arg, '--workspace'));
      case 'limits set': {
        const appPerMinute = int(o['app-per-minute'], '--app-per-minute');
        const appBurst = int(o['app-burst'], '--app-burst');
        const perMinute = int(o['per-minute'], '--per-minute');
        const perHour = int(o['per-hour'], '--per-hour');
        if ((perMinute !== undefined || perHour !== undefined) && !o.product)
          throw new UsageError('--per-minute/--per-hour need --product');
        if (o.product && !productById(o.product)) throw new UsageError(`unknown product ${o.product}`);
        return await setLimits(db, need(o.workspace, '--workspace'), o.application, {
          app:
            appPerMinute !== undefined || appBurst !== undefined
              ? {
                  ...(appPerMinute !== undefined ? { perMinute: appPerMinute } : {}),
                  ...(appBurst !== undefined ? { burst: appBurst } : {}),
                }
              : undefined,
          products: o.product
            ? {
                [o.product]: {
                  ...(perMinute !== undefined ? { perMinute } : {}),
                  ...(perHour !== undefined ? { perHour } : {}),
                },
              }
            : undefined,
        });
      }
      case 'webhooks rekey':
        return await rekeyWebhookSecrets(
          db,
          new SecretBox(config.WEBHOOK_SECRET_KEY, config.WEBHOOK_SECRET_KEY_PREVIOUS),
        );
      default:
        throw new UsageError(USAGE);
    }
  } finally {
    await handle.close();
  }
}

if (import.meta.main) {
  try {
    const out = await runAdmin(process.argv.slice(2));
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  } catch (err) {
    const usage = err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    const notFound = err instanceof NotFoundError;
    // A public suffix (or a malformed name) as an approved scope: the operator's data is wrong.
    const badScope = err instanceof InvalidScopeError;
    // --verify found no proof (65: the data is wrong), or could not ask (75: try again later).
    const proof = err instanceof ScopeProofError ? err : null;
    const indeterminate = proof?.check?.state === 'indeterminate';
    const error = usage
      ? 'usage'
      : notFound
        ? 'not_found'
        : badScope
          ? 'invalid_scope'
          : proof
            ? indeterminate
              ? 'proof_indeterminate'
              : 'proof_missing'
            : 'failed';
    process.stdout.write(`${JSON.stringify({ error, message: (err as Error).message })}\n`);
    if (badScope || proof) process.stderr.write(`${(err as Error).message}\n`);
    process.exit(usage ? 64 : notFound ? 66 : badScope ? 65 : proof ? (indeterminate ? 75 : 65) : 1);
  }
}
