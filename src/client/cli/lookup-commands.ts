// `lss lookup mac|phone|ip|dns <value>` (inline, 200) and `lss lookup domain|mail|web …` (a job,
// waited for by default with a progress bar, then its envelope and findings).
import type { Command } from 'commander';
import type { LookupResult } from '../client.ts';
import type { AsyncKind, Envelope, Requests, Severity, SyncKind } from '../types.ts';
import { jobReport, lowestSeverity, readChanges, readFindings, waitWithProgress } from './job-flow.ts';
import { renderEnvelope } from './render.ts';
import type { Report } from './report.ts';
import { failOnNewOption, failOnOpenOption, failOnOption, type Action, type Context } from './context.ts';

function syncReport(ctx: Context, res: LookupResult<unknown>): Report {
  return {
    outcome: res.complete ? 'complete' : 'partial',
    data: { envelope: res.envelope },
    human: () => renderEnvelope(res.envelope as Envelope, ctx.term.colors),
  };
}

async function syncLookup<K extends SyncKind>(ctx: Context, kind: K, body: Requests[K]): Promise<Report> {
  return syncReport(ctx, await ctx.client.lookup(kind, body, { idempotencyKey: ctx.idempotencyKey }));
}

interface AsyncFlags {
  wait: boolean;
  failOn?: Severity;
  failOnNew?: Severity;
  failOnOpen?: Severity;
}

async function asyncLookup<K extends AsyncKind>(
  ctx: Context,
  kind: K,
  body: Requests[K],
  flags: AsyncFlags,
): Promise<Report> {
  const accepted = await ctx.client.submit(kind, body, { idempotencyKey: ctx.idempotencyKey });
  if (!flags.wait && !flags.failOn && !flags.failOnNew && !flags.failOnOpen) {
    ctx.term.err(`lss: accepted; follow it with: lss job show ${accepted.jobRef} --wait`);
    return { ...jobReport(ctx.term, accepted.job, null, undefined), outcome: 'accepted' };
  }
  const job = await waitWithProgress(ctx.client, ctx.term, accepted.job);
  const findings = await readFindings(
    ctx.client,
    ctx.term,
    job.jobRef,
    lowestSeverity(flags.failOn, flags.failOnNew, flags.failOnOpen),
  );
  const changes = await readChanges(ctx.client, ctx.term, job, flags.failOnNew);
  const envelope = job.result as Envelope | null;
  return jobReport(ctx.term, job, findings, flags.failOn, {
    human: () => (envelope ? renderEnvelope(envelope, ctx.term.colors) : ''),
    changes,
    failOnNew: flags.failOnNew,
    failOnOpen: flags.failOnOpen,
  });
}

export function registerLookupCommands(program: Command, action: Action): void {
  const lookup = program
    .command('lookup')
    .description('run a lookup product (mac, phone, ip, dns inline; domain, mail, web as a job)');

  lookup
    .command('mac')
    .argument('<value>', 'MAC address, 12 hex digits with :, -, . or none')
    .description('MAC / OUI lookup (lookup.mac.v1)')
    .action(action((ctx, value: string) => syncLookup(ctx, 'mac', { value })));

  lookup
    .command('phone')
    .argument('<value>', 'phone number, E.164 (+…) or national with --region')
    .option('--region <code>', 'ISO 3166-1 alpha-2 region for a number without +')
    .description('phone format and region lookup (lookup.phone.v1)')
    .action(
      action((ctx, value: string, o: { region?: string }) =>
        syncLookup(ctx, 'phone', { value, ...(o.region ? { defaultRegion: o.region } : {}) }),
      ),
    );

  lookup
    .command('ip')
    .argument('<value>', 'IPv4 or IPv6 address')
    .option('--context', 'include ASN / organisation / country context')
    .option('--reverse-dns', 'include PTR names')
    .description('IP context lookup (lookup.ip.v1)')
    .action(
      action((ctx, value: string, o: { context?: boolean; reverseDns?: boolean }) =>
        syncLookup(ctx, 'ip', {
          value,
          ...(o.context ? { includeContext: true } : {}),
          ...(o.reverseDns ? { reverseDns: true } : {}),
        }),
      ),
    );

  lookup
    .command('dns')
    .argument('<name>', 'domain name')
    .description('DNS lookup: A, AAAA, CNAME, MX, NS, TXT, CAA, SOA (lookup.dns.v1)')
    .action(action((ctx, value: string) => syncLookup(ctx, 'dns', { value })));

  const asyncCommand = (name: AsyncKind, arg: string, description: string) =>
    lookup
      .command(name)
      .argument(arg)
      .description(`${description}; waits for the job unless --no-wait`)
      .option('--no-wait', 'print the accepted job and return at once')
      .addOption(failOnOption())
      .addOption(failOnNewOption())
      .addOption(failOnOpenOption());

  asyncCommand('domain', '<name>', 'domain core lookup: delegation, registration, records (lookup.domain.v1)').action(
    action((ctx, value: string, o: AsyncFlags) => asyncLookup(ctx, 'domain', { value }, o)),
  );
  asyncCommand(
    'mail',
    '<domain>',
    'mail security lookup: MX, SPF, DMARC, MTA-STS, DKIM, STARTTLS (lookup.mail.v1)',
  ).action(action((ctx, value: string, o: AsyncFlags) => asyncLookup(ctx, 'mail', { value }, o)));
  asyncCommand('web', '<url>', 'web and TLS posture lookup (lookup.web.v1)')
    .option('--authorized', 'authorized active checks (TLS protocol enumeration); needs approved target scope')
    .action(
      action((ctx, url: string, o: AsyncFlags & { authorized?: boolean }) =>
        asyncLookup(ctx, 'web', { url, ...(o.authorized ? { authorized: true } : {}) }, o),
      ),
    );
}
