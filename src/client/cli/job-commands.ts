// `lss job show|results|findings|object|cancel`: retained jobs. Pages are read by following the
// service's cursors to the end; a page set read while the job runs is reported as partial (exit 2),
// since more may come.
import { Option, type Command } from 'commander';
import type { Severity } from '../types.ts';
import { SEVERITIES } from '../../contract/tasks.ts';
import { jobReport, readFindings, stateOutcome, waitWithProgress, withFailOn } from './job-flow.ts';
import { renderFindings, renderObject, renderResults } from './render.ts';
import { failOnOption, integerArg, type Action, type Context } from './context.ts';
import type { Report } from './report.ts';

interface WaitFlags {
  wait?: boolean;
  failOn?: Severity;
}

async function show(ctx: Context, ref: string, o: WaitFlags): Promise<Report> {
  let job = await ctx.client.getJob(ref);
  if (o.wait || o.failOn) job = await waitWithProgress(ctx.client, ctx.term, job);
  const findings = o.failOn ? await readFindings(ctx.client, ctx.term, ref, o.failOn) : null;
  return jobReport(ctx.term, job, findings, o.failOn);
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
    .action(action((ctx, ref: string, o: WaitFlags) => show(ctx, ref, o)));

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
    .action(
      action(
        async (ctx, ref: string, o: { limit?: number; severity?: Severity; wait?: boolean; failOn?: Severity }) => {
          const p = await ctx.client.collectFindings(ref, {
            limit: o.limit,
            severity: o.severity,
            wait: o.wait || o.failOn !== undefined,
          });
          return {
            outcome: withFailOn(stateOutcome(p.jobStatus, p.terminal, p.coverage.complete, 'partial'), p, o.failOn),
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
