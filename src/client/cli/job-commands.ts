// `lss job show|results|findings|changes|object|cancel`: retained jobs. Pages are read by following the
// service's cursors to the end; a page set read while the job runs is reported as partial (exit 2),
// since more may come.
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { Severity } from '../types.ts';
import { SEVERITIES } from '../../contract/tasks.ts';
import {
  jobReport,
  lowestSeverity,
  readChanges,
  readFindings,
  stateOutcome,
  waitWithProgress,
  withFailOn,
  withFailOnNew,
  withFailOnOpen,
} from './job-flow.ts';
import { renderChanges, renderFindings, renderObject, renderResults } from './render.ts';
import { failOnNewOption, failOnOpenOption, failOnOption, integerArg, type Action, type Context } from './context.ts';
import { CHANGE_KINDS, CHANGE_MARKS, type ChangeKind, type ChangeMark } from '../../contract/changes.ts';
import type { Report } from './report.ts';

interface WaitFlags {
  wait?: boolean;
  failOn?: Severity;
  failOnNew?: Severity;
  failOnOpen?: Severity;
}

async function show(ctx: Context, ref: string, o: WaitFlags): Promise<Report> {
  let job = await ctx.client.getJob(ref);
  if (o.wait || o.failOn || o.failOnNew || o.failOnOpen) job = await waitWithProgress(ctx.client, ctx.term, job);
  // The findings every gate needs, read once down to the lowest severity asked (--fail-on-new
  // without a baseline judges the job's findings: all of them are new).
  const gate = lowestSeverity(o.failOn, o.failOnOpen, o.failOnNew && job.baseline === null ? o.failOnNew : undefined);
  const findings = gate ? await readFindings(ctx.client, ctx.term, ref, gate) : null;
  const changes = o.wait || o.failOnNew ? await readChanges(ctx.client, ctx.term, job, o.failOnNew) : null;
  return jobReport(ctx.term, job, findings, o.failOn, {
    changes,
    failOnNew: o.failOnNew,
    failOnOpen: o.failOnOpen,
  });
}

interface ChangeFlags {
  limit?: number;
  change?: string;
  kind?: ChangeKind;
  wait?: boolean;
  failOnNew?: Severity;
}

async function changes(ctx: Context, ref: string, o: ChangeFlags): Promise<Report> {
  const marks = o.change?.split(',').map((m) => m.trim()) as ChangeMark[] | undefined;
  const p = await ctx.client.collectChanges(ref, {
    limit: o.limit,
    change: marks,
    kind: o.kind,
    wait: o.wait || o.failOnNew !== undefined,
  });
  const job = o.failOnNew ? await ctx.client.getJob(ref) : null;
  const findings =
    job && job.baseline === null && o.failOnNew ? await readFindings(ctx.client, ctx.term, ref, o.failOnNew) : null;
  const base = p.terminal ? 'complete' : 'partial';
  return {
    outcome: job ? withFailOnNew(base, job, p, findings, o.failOnNew) : base,
    data: { changes: p },
    human: () => renderChanges(p, ctx.term.colors),
  };
}

export function registerJobCommands(program: Command, action: Action): void {
  const job = program.command('job').description('retained jobs: status, results, findings, objects, cancel');
  const limit = () => new Option('--limit <n>', 'items per page (1-500; all pages are read)').argParser(integerArg(1));

  job
    .command('show')
    .argument('<job_ref>')
    .description('job status: progress, lanes, coverage, credits')
    .option('--wait', 'poll until the job is terminal, with a progress bar on a terminal')
    .addOption(failOnOption())
    .addOption(failOnNewOption())
    .addOption(failOnOpenOption())
    .action(action((ctx, ref: string, o: WaitFlags) => show(ctx, ref, o)));

  job
    .command('changes')
    .argument('<job_ref>')
    .description('what is new, changed, gone or resolved since the baseline (every mark but unchanged by default)')
    .addOption(limit())
    .addOption(
      new Option('--change <list>', `comma list of ${CHANGE_MARKS.join(', ')}`).argParser((v) => {
        if (!v.split(',').every((m) => (CHANGE_MARKS as readonly string[]).includes(m.trim())))
          throw new InvalidArgumentError(`a comma list of ${CHANGE_MARKS.join(', ')} is needed`);
        return v;
      }),
    )
    .addOption(new Option('--kind <kind>', 'objects or findings only').choices([...CHANGE_KINDS]))
    .option('--wait', 'keep reading until the job is terminal (the comparison is made when it ends)')
    .addOption(failOnNewOption())
    .action(action((ctx, ref: string, o: ChangeFlags) => changes(ctx, ref, o)));

  job
    .command('results')
    .argument('<job_ref>')
    .description('every retained object of the job, following the page cursors')
    .addOption(limit())
    .option('--wait', 'keep reading until the job is terminal')
    .action(
      action(async (ctx, ref: string, o: { limit?: number; wait?: boolean }) => {
        const p = await ctx.client.collectResults(ref, { limit: o.limit, wait: o.wait });
        return {
          outcome: stateOutcome(p.jobStatus, p.terminal, p.coverage.complete, 'partial'),
          data: { results: p },
          human: () => renderResults(p, ctx.term.colors),
        };
      }),
    );

  job
    .command('findings')
    .argument('<job_ref>')
    .description("the job's findings (needs the finding:read scope)")
    .addOption(limit())
    .addOption(new Option('--severity <severity>', 'only findings at or above this severity').choices([...SEVERITIES]))
    .option('--wait', 'keep reading until the job is terminal')
    .addOption(failOnOption())
    .addOption(failOnOpenOption())
    .action(
      action(
        async (
          ctx,
          ref: string,
          o: { limit?: number; severity?: Severity; wait?: boolean; failOn?: Severity; failOnOpen?: Severity },
        ) => {
          const p = await ctx.client.collectFindings(ref, {
            limit: o.limit,
            severity: o.severity,
            wait: o.wait || o.failOn !== undefined || o.failOnOpen !== undefined,
          });
          const state = stateOutcome(p.jobStatus, p.terminal, p.coverage.complete, 'partial');
          return {
            outcome: withFailOnOpen(withFailOn(state, p, o.failOn), p, o.failOnOpen),
            data: { findings: p },
            human: () => renderFindings(p, ctx.term.colors),
          };
        },
      ),
    );

  job
    .command('object')
    .argument('<job_ref>')
    .argument('<object_id>')
    .description('one retained object with its relations, evidence references and finding ids')
    .action(
      action(async (ctx, ref: string, objectId: string) => {
        const object = await ctx.client.getObject(ref, objectId);
        return { outcome: 'complete', data: { object }, human: () => renderObject(object, ctx.term.colors) };
      }),
    );

  job
    .command('cancel')
    .argument('<job_ref>')
    .description('ask the service to cancel the job (idempotent; a terminal job stays as it is)')
    .option('--reason <text>', 'why (at most 200 characters)')
    .option('--wait', 'wait until the job is terminal')
    .action(
      action(async (ctx, ref: string, o: { reason?: string; wait?: boolean }) => {
        let status = await ctx.client.cancelJob(ref, { reason: o.reason, idempotencyKey: ctx.idempotencyKey });
        if (o.wait) status = await waitWithProgress(ctx.client, ctx.term, status);
        const report = jobReport(ctx.term, status, null, undefined);
        return status.terminal ? report : { ...report, outcome: 'accepted' };
      }),
    );
}
