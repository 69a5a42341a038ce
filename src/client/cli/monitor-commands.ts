// `lss monitor create|list|show|pause|resume|delete|deliveries` (CONTRACT §14): the same domain,
// mail or web lookup or scan, again every interval, its result posted signed to a webhook.
// `create` prints the webhook secret once (stderr says to keep it); nothing else ever shows it.
import { InvalidArgumentError, Option, type Command } from 'commander';
import Table from 'cli-table3';
import type { Delivery, Monitor, MonitorRequest, ScanProfile } from '../types.ts';
import { integerArg, type Action, type Context } from './context.ts';
import { statusColor } from './render.ts';
import type { Report } from './report.ts';
import type { Colors } from './terminal.ts';

const KINDS = ['domain', 'mail', 'web', 'scan'] as const;
type Kind = (typeof KINDS)[number];
const PRODUCTS: Record<Kind, MonitorRequest['product']> = {
  domain: 'lookup.domain.v1',
  mail: 'lookup.mail.v1',
  web: 'lookup.web.v1',
  scan: 'scan.recursive.v1',
};
const PROFILES: ScanProfile[] = ['quick', 'balanced', 'deep', 'advanced'];
const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** "3600", "90s", "15m", "1h", "7d" → seconds. */
function interval(v: string): number {
  const m = /^(\d{1,7})([smhd]?)$/.exec(v.trim());
  if (!m) throw new InvalidArgumentError('an interval such as 3600, 15m, 1h or 1d is needed');
  return Number(m[1]) * UNITS[m[2] || 's']!;
}

interface CreateFlags {
  every: number;
  webhook?: string;
  paused?: boolean;
  profile?: ScanProfile;
  maxCredits?: number;
  active?: boolean;
  authorized?: boolean;
}

function requestOf(kind: Kind, target: string, o: CreateFlags): Record<string, unknown> {
  switch (kind) {
    case 'web':
      return { url: target, ...(o.authorized ? { authorized: true } : {}) };
    case 'scan':
      if (!o.profile || o.maxCredits === undefined)
        throw new InvalidArgumentError('a scan monitor needs --profile and --max-credits');
      return {
        profile: o.profile,
        target: { type: 'domain_name', value: target },
        options: { active: o.active === true, maxCredits: o.maxCredits },
      };
    default:
      return { value: target };
  }
}

function keyValues(rows: Array<[string, string]>, c: Colors): string {
  const t = new Table({ style: { head: [], border: [] } });
  for (const [k, v] of rows) t.push({ [c.bold(k)]: v });
  return t.toString();
}

function table(head: string[], rows: string[][], c: Colors): string {
  const t = new Table({ style: { head: [], border: [] }, head: head.map((h) => c.bold(h)) });
  t.push(...rows);
  return t.toString();
}

function target(m: Monitor): string {
  const r = m.request as { value?: string; url?: string; target?: { value?: string } };
  return r.value ?? r.url ?? r.target?.value ?? JSON.stringify(m.request);
}

function webhookText(m: Monitor, c: Colors): string {
  if (!m.webhook) return '—';
  const w = m.webhook;
  const state = w.status === 'active' ? c.green('active') : c.red(w.disabled ? `disabled (${w.disabled})` : w.status);
  return `${w.url} ${state}`;
}

/** `true (key_revoked)` when the service paused it: resuming it binds it to the resuming key. */
function pausedText(m: Monitor, c: Colors): string {
  return m.pausedReason ? c.yellow(`true (${m.pausedReason})`) : String(m.paused);
}

export function renderMonitor(m: Monitor, c: Colors): string {
  const rows: Array<[string, string]> = [
    ['monitor', m.monitorId],
    ['product', m.product],
    ['target', target(m)],
    ['every', `${m.schedule.intervalSeconds} s`],
    ['paused', pausedText(m, c)],
    ['next run', m.nextRunAt ?? '—'],
    ['webhook', webhookText(m, c)],
  ];
  let out = keyValues(rows, c);
  if (m.lastRuns?.length) {
    out += `\n${table(
      ['run at', 'outcome', 'job', 'code'],
      m.lastRuns.map((r) => [
        r.runAt,
        r.outcome === 'started' ? c.green(r.outcome) : c.yellow(r.outcome),
        r.jobRef ?? '—',
        r.code ?? '',
      ]),
      c,
    )}`;
  }
  return out;
}

function renderMonitors(items: Monitor[], c: Colors): string {
  if (items.length === 0) return 'no monitors';
  return table(
    ['monitor', 'product', 'target', 'every', 'paused', 'next run', 'webhook'],
    items.map((m) => [
      m.monitorId,
      m.product,
      target(m),
      `${m.schedule.intervalSeconds} s`,
      pausedText(m, c),
      m.nextRunAt ?? '—',
      webhookText(m, c),
    ]),
    c,
  );
}

function renderDeliveries(items: Delivery[], c: Colors): string {
  if (items.length === 0) return 'no deliveries';
  return table(
    ['event', 'type', 'job', 'status', 'attempts', 'last attempt', 'last status', 'last error', 'next attempt'],
    items.map((d) => [
      d.eventId,
      d.type,
      d.jobRef ?? '—',
      statusColor(d.status === 'delivered' ? 'completed' : d.status, c),
      String(d.attempts),
      d.lastAttemptAt ?? '—',
      d.lastStatusCode === null ? '—' : String(d.lastStatusCode),
      d.lastError ?? '',
      d.nextAttemptAt ?? '—',
    ]),
    c,
  );
}

function monitorReport(ctx: Context, monitor: Monitor): Report {
  return { outcome: 'complete', data: { monitor }, human: () => renderMonitor(monitor, ctx.term.colors) };
}

export function registerMonitorCommands(program: Command, action: Action): void {
  const monitor = program
    .command('monitor')
    .description('monitors: a lookup or scan run again on a schedule, its result posted signed to a webhook');

  monitor
    .command('create')
    .argument('<kind>', `what to run: ${KINDS.join(', ')}`)
    .argument('<target>', 'a domain (domain, mail, scan) or a URL (web)')
    .requiredOption('--every <interval>', 'how often: seconds, or 15m, 1h, 1d (at least the service minimum)', interval)
    .option('--webhook <url>', 'https URL that receives a signed event after each run')
    .option('--paused', 'create it paused (no run until resumed)')
    .addOption(new Option('--profile <profile>', 'scan profile').choices(PROFILES))
    .option('--max-credits <n>', 'scan credit budget per run', integerArg(0))
    .option('--active', 'scan: active work (profile advanced only)')
    .option('--authorized', 'web: authorized active checks')
    .description('create a monitor; its first run is due at once (unless --paused)')
    .action(
      action(async (ctx, kind: string, tgt: string, o: CreateFlags) => {
        if (!(KINDS as readonly string[]).includes(kind))
          throw new InvalidArgumentError(`kind must be one of ${KINDS.join(', ')}`);
        const created = await ctx.client.createMonitor(
          {
            product: PRODUCTS[kind as Kind],
            request: requestOf(kind as Kind, tgt, o),
            schedule: { intervalSeconds: o.every },
            webhook: o.webhook ? { url: o.webhook } : null,
            paused: o.paused === true,
          },
          { idempotencyKey: ctx.idempotencyKey },
        );
        if (created.secret && !ctx.term.json) {
          ctx.term.err(`lss: webhook secret (shown once; verify each event with it): ${created.secret}`);
        }
        return monitorReport(ctx, created.monitor);
      }),
    );

  monitor
    .command('list')
    .description("the workspace's monitors")
    .action(
      action(async (ctx) => {
        const items: Monitor[] = [];
        for await (const m of ctx.client.monitors()) items.push(m);
        return { outcome: 'complete', data: { monitors: items }, human: () => renderMonitors(items, ctx.term.colors) };
      }),
    );

  monitor
    .command('show')
    .argument('<monitor_id>')
    .description('one monitor with its last runs')
    .action(action(async (ctx, id: string) => monitorReport(ctx, await ctx.client.getMonitor(id))));

  monitor
    .command('pause')
    .argument('<monitor_id>')
    .description('no run until resumed')
    .action(action(async (ctx, id: string) => monitorReport(ctx, await ctx.client.pauseMonitor(id))));

  monitor
    .command('resume')
    .argument('<monitor_id>')
    .description('resume; the next run is due at once')
    .action(action(async (ctx, id: string) => monitorReport(ctx, await ctx.client.resumeMonitor(id))));

  monitor
    .command('delete')
    .argument('<monitor_id>')
    .description('delete: no run starts after it, no event is sent for it')
    .action(
      action(async (ctx, id: string) => {
        await ctx.client.deleteMonitor(id);
        return { outcome: 'complete', data: { deleted: id }, human: () => `deleted ${id}` };
      }),
    );

  monitor
    .command('deliveries')
    .argument('<monitor_id>')
    .description("the monitor's events and their delivery, newest first")
    .option('--redeliver <event_id>', 'send this event again first')
    .action(
      action(async (ctx, id: string, o: { redeliver?: string }) => {
        if (o.redeliver) await ctx.client.redeliver(id, o.redeliver, { idempotencyKey: ctx.idempotencyKey });
        const items: Delivery[] = [];
        for await (const d of ctx.client.deliveries(id)) items.push(d);
        return {
          outcome: 'complete',
          data: { deliveries: items },
          human: () => renderDeliveries(items, ctx.term.colors),
        };
      }),
    );
}
