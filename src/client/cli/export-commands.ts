// `lss job export JOB --format sarif|csv|jsonl [--what findings|objects]` and `lss job report JOB`:
// the file goes to stdout as the service streams it (`> lss.sarif`, `> report.html`), with
// backpressure all the way (a slow disk or pipe slows the download, nothing piles up in memory).
// The file is the output, so --json does not apply; errors go to stderr with the usual exit codes.
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { Option, type Command } from 'commander';
import {
  EXPORT_FORMATS,
  EXPORT_SUBJECTS,
  type ExportFormat,
  type ExportSubject,
} from '../../contract/export-schemas.ts';
import type { Action, Context } from './context.ts';
import { UsageError, type Report } from './report.ts';

/** Nothing more to print: the body was the output. */
const written: Report = { outcome: 'complete', data: {}, human: () => '' };

function noJson(ctx: Context, what: string): void {
  if (ctx.term.json) throw new UsageError(`${what} writes the file itself to stdout: --json does not apply`);
}

async function toStdout(body: Readable): Promise<void> {
  // stdout is never ended: other output of the process may follow (it is not ours to close).
  await pipeline(body, process.stdout, { end: false });
}

export function registerExportCommands(job: Command, action: Action): void {
  job
    .command('export')
    .argument('<job_ref>')
    .description('a terminal job as SARIF, CSV or JSONL on stdout (findings need the finding:read scope)')
    .addOption(new Option('--format <format>', 'file format').choices([...EXPORT_FORMATS]).makeOptionMandatory())
    .addOption(new Option('--what <what>', 'findings or objects (SARIF: findings only)').choices([...EXPORT_SUBJECTS]))
    .action(
      action(async (ctx: Context, ref: string, o: { format: ExportFormat; what?: ExportSubject }) => {
        noJson(ctx, 'export');
        await toStdout(await ctx.client.exportJob(ref, o.format, { what: o.what }));
        return written;
      }),
    );

  job
    .command('report')
    .argument('<job_ref>')
    .description('a terminal job as one self-contained HTML page on stdout (no script; printable)')
    .action(
      action(async (ctx: Context, ref: string) => {
        noJson(ctx, 'report');
        await toStdout(Readable.from([await ctx.client.jobReport(ref)]));
        return written;
      }),
    );
}
