// `lss` entry point (bin shim: src/client/bin/lss; or `npm run lss -- …`). Runs one command,
// prints its report (tables, or --json) and exits with the documented code.
import { CommanderError } from 'commander';
import { exitCodes } from './exit-codes.ts';
import { actionRunner, terminalFor } from './context.ts';
import { buildProgram } from './program.ts';
import { errorReport, isLssError, print, usageReport, UsageError, type Report } from './report.ts';

export async function runCli(argv: string[]): Promise<number> {
  const sink: { report?: Report } = {};
  const program = buildProgram(actionRunner(sink));
  // Before parsing, --json is all that can be known: enough to print a usage error as JSON.
  const term = terminalFor({ json: argv.includes('--json'), color: argv.includes('--no-color') ? false : undefined });
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with exit code 0; commander has printed them.
      if (err.exitCode === 0) return 0;
      // A bare `lss` or `lss job` shows help, which is a usage error as well.
      return print(term, usageReport(err.message.replace(/^error: /, ''), { ...term, err: () => {} }));
    }
    if (err instanceof UsageError) return print(term, usageReport(err.message, term));
    if (isLssError(err)) return print(term, errorReport(err, term));
    throw err;
  }
  if (!sink.report) return exitCodes.usage;
  return print(term, sink.report);
}

if (import.meta.main) {
  // `lss … | head` closes the pipe early: that is the reader's choice, not a failure.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
  process.exitCode = await runCli(process.argv.slice(2));
}
