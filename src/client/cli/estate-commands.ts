// `lss suppress add|list|show|delete` (CONTRACT §15) and `lss inventory [findings]` (§16): a finding
// accepted on purpose, and the estate the workspace's jobs have seen.
import { InvalidArgumentError, Option, type Command } from 'commander';
import Table from 'cli-table3';
import type {
  InventoryFinding,
  InventoryItem,
  InventoryOptions,
  Severity,
  Suppression,
  SuppressionRequest,
} from '../types.ts';
import { SEVERITIES } from '../../contract/tasks.ts';
import type { Action, Context } from './context.ts';
import type { Report } from './report.ts';
import type { Colors } from './terminal.ts';

const REASONS = ['accepted_risk', 'false_positive', 'compensating_control'] as const;
const STATES = ['present', 'gone', 'unconfirmed'] as const;
const DAY_MS = 86_400_000;

/** "30d" / "2026-12-31T00:00:00Z" / "never" (false_positive only) → expiresAt. */
function expiry(v: string): string | null {
  if (v === 'never') return null;
  const days = /^(\d{1,3})d$/.exec(v.trim());
  if (days) return new Date(Date.now() + Number(days[1]) * DAY_MS).toISOString();
  const at = new Date(v);
  if (Number.isNaN(at.getTime())) throw new InvalidArgumentError('a number of days (30d), an RFC 3339 time or never');
  return at.toISOString();
}

function table(head: string[], rows: string[][], c: Colors): string {
  const t = new Table({ style: { head: [], border: [] }, head: head.map((h) => c.bold(h)) });
  t.push(...rows);
  return t.toString();
}

function renderSuppressions(items: Suppression[], c: Colors): string {
  if (items.length === 0) return 'no suppressions';
  return table(
    ['suppression', 'code', 'key', 'product', 'reason', 'expires', 'state', 'note'],
    items.map((s) => [
      s.suppressionId,
      s.code,
      s.key,
      s.product ?? 'any',
      s.reason,
      s.expiresAt ?? 'never',
      s.active ? c.green('active') : c.yellow(s.revokedAt ? 'revoked' : 'expired'),
      s.note,
    ]),
    c,
  );
}

function renderSuppression(s: Suppression, c: Colors): string {
  const history = table(
    ['at', 'action', 'by'],
    s.history.map((h) => [h.at, h.action, h.by]),
    c,
  );
  return `${renderSuppressions([s], c)}\n${history}`;
}

function open(r: InventoryItem): string {
  const parts = (['critical', 'high', 'medium', 'low', 'info'] as const)
    .filter((k) => r.openFindings[k] > 0)
    .map((k) => `${r.openFindings[k]} ${k}`);
  return parts.length > 0 ? parts.join(', ') : '—';
}

function renderInventory(items: InventoryItem[], c: Colors): string {
  if (items.length === 0) return 'nothing in the inventory matches';
  const state = (s: InventoryItem['state']) => (s === 'present' ? c.green(s) : s === 'gone' ? c.red(s) : c.yellow(s));
  return table(
    ['type', 'key', 'state', 'last seen', 'last checked', 'open findings', 'last job'],
    items.map((r) => [r.type, r.key, state(r.state), r.lastSeenAt, r.lastCheckedAt ?? '—', open(r), r.lastJobRef]),
    c,
  );
}

function renderInventoryFindings(items: InventoryFinding[], c: Colors): string {
  if (items.length === 0) return 'no open findings';
  return table(
    ['severity', 'code', 'object', 'last seen', 'job', 'suppressed'],
    items.map((f) => [
      f.severity,
      f.code,
      `${f.objectType} ${f.objectKey}`,
      f.lastSeenAt,
      f.jobRef,
      f.suppressed ? `${f.suppressed.reason} (${f.suppressed.suppressionId})` : '',
    ]),
    c,
  );
}

function suppressionReport(ctx: Context, suppression: Suppression): Report {
  return {
    outcome: 'complete',
    data: { suppression },
    human: () => renderSuppression(suppression, ctx.term.colors),
  };
}

interface AddFlags {
  key: string;
  reason: (typeof REASONS)[number];
  expires: string | null;
  product?: string;
  note?: string;
}

export function registerEstateCommands(program: Command, action: Action): void {
  const suppress = program
    .command('suppress')
    .description('suppressions: a finding accepted on purpose, marked (never hidden) on the jobs that end after it');

  suppress
    .command('add')
    .argument('<code>', 'a finding code (docs/findings.md)')
    .requiredOption('--key <key>', 'an object key (www.example.com, https://…/, an address) or *.example.com')
    .addOption(new Option('--reason <reason>', 'why').choices([...REASONS]).makeOptionMandatory())
    .requiredOption(
      '--expires <when>',
      'in days (30d, at most 365d), an RFC 3339 time, or never (false_positive)',
      expiry,
    )
    .option('--product <id>', 'only for this product (default: any)')
    .option('--note <text>', 'a note (at most 500 characters)')
    .description('suppress a finding code on a key; applies from the next job that ends')
    .action(
      action(async (ctx, code: string, o: AddFlags) => {
        const body: SuppressionRequest = {
          code,
          key: o.key,
          product: o.product ?? null,
          reason: o.reason,
          note: o.note ?? '',
          expiresAt: o.expires,
        };
        const made = await ctx.client.createSuppression(body, { idempotencyKey: ctx.idempotencyKey });
        return suppressionReport(ctx, made.suppression);
      }),
    );

  suppress
    .command('list')
    .option('--active', 'only the active ones')
    .option('--inactive', 'only the revoked and expired ones')
    .description("the workspace's suppressions, revoked ones included")
    .action(
      action(async (ctx, o: { active?: boolean; inactive?: boolean }) => {
        const items: Suppression[] = [];
        const active = o.active ? true : o.inactive ? false : undefined;
        for await (const s of ctx.client.suppressions({ active })) items.push(s);
        return {
          outcome: 'complete',
          data: { suppressions: items },
          human: () => renderSuppressions(items, ctx.term.colors),
        };
      }),
    );

  suppress
    .command('show')
    .argument('<suppression_id>')
    .description('one suppression with its history')
    .action(action(async (ctx, id: string) => suppressionReport(ctx, await ctx.client.getSuppression(id))));

  suppress
    .command('delete')
    .argument('<suppression_id>')
    .description('revoke: kept and listed, applied to no job that ends after it')
    .action(
      action(async (ctx, id: string) => {
        await ctx.client.deleteSuppression(id);
        return { outcome: 'complete', data: { revoked: id }, human: () => `revoked ${id}` };
      }),
    );

  const inventory = program
    .command('inventory')
    .description("the estate: every object the workspace's jobs have seen, and its state")
    .option('--type <type>', 'object type (host, domain, url, ip_address…)')
    .option('--q <name>', 'a name: it and every key below it (URLs by host)')
    .addOption(new Option('--min-severity <severity>', 'with an open finding at or above').choices([...SEVERITIES]))
    .addOption(new Option('--state <state>', 'present, gone or unconfirmed').choices([...STATES]))
    .action(
      action(async (ctx, o: { type?: string; q?: string; minSeverity?: Severity; state?: (typeof STATES)[number] }) => {
        const items: InventoryItem[] = [];
        for await (const r of ctx.client.inventory({
          // The service judges the type (invalid_request for an unknown one).
          type: o.type as InventoryOptions['type'],
          q: o.q,
          minSeverity: o.minSeverity,
          state: o.state,
        }))
          items.push(r);
        return {
          outcome: 'complete',
          data: { inventory: items },
          human: () => renderInventory(items, ctx.term.colors),
        };
      }),
    );

  inventory
    .command('findings')
    .description('open findings across the estate, one per finding identity')
    .addOption(new Option('--severity <severity>', 'at or above').choices([...SEVERITIES]))
    .option('--code <code>', 'one finding code')
    .option('--q <name>', 'findings on a name and every key below it')
    .addOption(new Option('--suppressed <which>', 'include, exclude or only').choices(['include', 'exclude', 'only']))
    .action(
      action(
        async (
          ctx,
          o: { severity?: Severity; code?: string; q?: string; suppressed?: 'include' | 'exclude' | 'only' },
        ) => {
          const items: InventoryFinding[] = [];
          for await (const f of ctx.client.inventoryFindings(o)) items.push(f);
          return {
            outcome: 'complete',
            data: { findings: items },
            human: () => renderInventoryFindings(items, ctx.term.colors),
          };
        },
      ),
    );
}
