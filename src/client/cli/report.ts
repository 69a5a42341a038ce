// What a command produced, and how it is printed. One shape for every command's --json output:
// `{ outcome, exitCode, …data }`, where the data keys are documented in docs/client.md
// (envelope, job, findings, results, object, products, error). Human output goes to stdout as
// tables; errors go to stderr.
import { LssError } from '../errors.ts';
import { exitCodes, type Outcome } from './exit-codes.ts';
import type { Terminal } from './terminal.ts';

export interface Report {
  outcome: Outcome;
  data: Record<string, unknown>;
  human(): string;
}

export class UsageError extends Error {}

export function print(term: Terminal, report: Report): number {
  const exitCode = exitCodes[report.outcome];
  if (term.json) term.out(JSON.stringify({ outcome: report.outcome, exitCode, ...report.data }, null, 2));
  else {
    const text = report.human();
    if (text) term.out(text);
  }
  return exitCode;
}

/** An SDK error as a report: a 4xx envelope is a refusal, everything else a service error. */
export function errorReport(err: LssError, term: Terminal): Report {
  const outcome: Outcome = err.status >= 400 && err.status < 500 ? 'refused' : 'service_error';
  const error = {
    code: err.code,
    message: err.message,
    status: err.status,
    retryable: err.retryable,
    ...(err.requestId ? { requestId: err.requestId } : {}),
    ...(err.details ? { details: err.details } : {}),
    ...(err.retryAfterMs !== undefined ? { retryAfterMs: err.retryAfterMs } : {}),
    attempts: err.attempts,
  };
  const c = term.colors;
  const what = outcome === 'refused' ? 'refused' : 'service error';
  const line =
    `lss: ${c.red(what)}: ${c.bold(err.code)}${err.status ? ` (HTTP ${err.status})` : ''}: ${err.message}` +
    (err.details ? `\n  details: ${JSON.stringify(err.details)}` : '') +
    (err.requestId ? `\n  request id: ${err.requestId}` : '') +
    (err.attempts > 1 ? `\n  after ${err.attempts} attempts` : '');
  term.err(line);
  return { outcome, data: { error }, human: () => '' };
}

export function usageReport(message: string, term: Terminal): Report {
  term.err(`lss: ${message}`);
  return { outcome: 'usage', data: { error: { code: 'usage', message } }, human: () => '' };
}

export function isLssError(err: unknown): err is LssError {
  return err instanceof LssError;
}
