// `lss scan <domain> --profile P --max-credits N [--active] [--wait] [--fail-on S] [--fail-on-new S]`:
// a recursive scan; once it is terminal, its findings and what changed since its baseline. The credit budget is the service's to judge (scan_credit_budget_invalid names the bounds):
// the CLI does not keep its own copy of them.
import { Option, type Command } from 'commander';
import type { ScanProfile, Severity } from '../types.ts';
import { jobReport, lowestSeverity, readChanges, readFindings, waitWithProgress } from './job-flow.ts';
import { failOnNewOption, failOnOpenOption, failOnOption, integerArg, type Action } from './context.ts';

const PROFILES: ScanProfile[] = ['quick', 'balanced', 'deep', 'advanced'];

interface ScanFlags {
  profile: ScanProfile;
  maxCredits: number;
  active?: boolean;
  wait?: boolean;
  failOn?: Severity;
  failOnNew?: Severity;
  failOnOpen?: Severity;
}

export function registerScanCommand(program: Command, action: Action): void {
  program
    .command('scan')
    .argument('<domain>', 'target domain name')
    .description('start a recursive scan of a domain (scan.recursive.v1)')
    .addOption(new Option('--profile <profile>', 'scan profile').choices(PROFILES).makeOptionMandatory())
    .requiredOption('--max-credits <n>', 'credit budget reserved for the scan (bounded per profile)', integerArg(0))
    .option('--active', 'active work (profile advanced only): needs workspace permission and approved target scope')
    .option('--wait', 'wait for the scan to finish, with a progress bar on a terminal')
    .addOption(failOnOption())
    .addOption(failOnNewOption())
    .addOption(failOnOpenOption())
    .action(
      action(async (ctx, domain: string, o: ScanFlags) => {
        const body = {
          profile: o.profile,
          target: { type: 'domain_name' as const, value: domain },
          options: { active: o.active === true, maxCredits: o.maxCredits },
        };
        const accepted = await ctx.client.submit('scan', body, { idempotencyKey: ctx.idempotencyKey });
        if (!o.wait && !o.failOn && !o.failOnNew && !o.failOnOpen) {
          ctx.term.err(`lss: scan accepted; follow it with: lss job show ${accepted.jobRef} --wait`);
          return { ...jobReport(ctx.term, accepted.job, null, undefined), outcome: 'accepted' };
        }
        const job = await waitWithProgress(ctx.client, ctx.term, accepted.job, o.maxCredits);
        const gate = lowestSeverity(o.failOn, o.failOnNew, o.failOnOpen);
        const findings = await readFindings(ctx.client, ctx.term, job.jobRef, gate);
        const changes = await readChanges(ctx.client, ctx.term, job, o.failOnNew);
        return jobReport(ctx.term, job, findings, o.failOn, {
          changes,
          failOnNew: o.failOnNew,
          failOnOpen: o.failOnOpen,
        });
      }),
    );
}
