// The `lss` command tree (commander). Global options apply to every command; exit codes and the
// --json shape are in exit-codes.ts, report.ts and docs/client.md.
import { Command, Option } from 'commander';
import { integerArg, type Action } from './context.ts';
import { registerJobCommands } from './job-commands.ts';
import { registerLookupCommands } from './lookup-commands.ts';
import { renderProducts } from './render.ts';
import { registerScanCommand } from './scan-command.ts';
import { registerMonitorCommands } from './monitor-commands.ts';
import { registerExportCommands } from './export-commands.ts';
import { registerEstateCommands } from './estate-commands.ts';

const EPILOG = `
Environment:
  LSS_API_KEY    workspace application key (required; never printed)
  LSS_BASE_URL   service address (default http://localhost:8080)
  NO_COLOR       no colour (colour is also off with --json and when not on a terminal)

Exit codes:
  0   complete (or accepted / still running, when not waiting)
  1   --fail-on: a finding at or above the severity (--fail-on-new: a new or resurfaced one,
      --fail-on-open: an unsuppressed one)
  2   partial: coverage incomplete, a partial or cancelled job, a page set of a running job
  3   refused by the service (4xx error)
  4   service error: 5xx, no reply, a failed or unavailable job
  64  usage error`;

export function buildProgram(action: Action): Command {
  const program = new Command('lss')
    .description('LSS client: lookups, scans, retained jobs and monitors (public API v2)')
    .option('--json', 'one JSON document on stdout: { outcome, exitCode, … } (docs/client.md)')
    .option('--no-color', 'no colour (NO_COLOR works too)')
    .addOption(
      new Option(
        '--retries <n>',
        'retries of a failed request: connection errors, 409 in progress, 429, retryable 503',
      ).argParser(integerArg(0)),
    )
    .option(
      '--idempotency-key <key>',
      'your own Idempotency-Key for the write (default: generated once, reused on every retry)',
    )
    .addHelpText('after', EPILOG)
    .showHelpAfterError('(lss --help for usage)')
    .exitOverride()
    .configureOutput({ writeOut: (s) => process.stdout.write(s), writeErr: (s) => process.stderr.write(s) });

  registerLookupCommands(program, action);
  registerScanCommand(program, action);
  registerJobCommands(program, action);
  registerExportCommands(program.commands.find((c) => c.name() === 'job')!, action);
  registerMonitorCommands(program, action);
  registerEstateCommands(program, action);
  program
    .command('products')
    .description('the products and their readiness right now')
    .action(
      action(async (ctx) => {
        const list = await ctx.client.products();
        return {
          outcome: 'complete',
          data: { products: list.products },
          human: () => renderProducts(list, ctx.term.colors),
        };
      }),
    );
  return program;
}
