// What every command gets: an SDK client built from the environment (LSS_API_KEY, never an
// argument, so it stays out of shell history and process lists; LSS_BASE_URL) and the terminal.
import { InvalidArgumentError, Option, type Command } from 'commander';
import { DEFAULT_BASE_URL, LssClient } from '../client.ts';
import { SEVERITIES } from '../../contract/tasks.ts';
import { UsageError, type Report } from './report.ts';
import { createTerminal, type Terminal } from './terminal.ts';

export interface GlobalOptions {
  json?: boolean;
  color?: boolean;
  retries?: number;
  idempotencyKey?: string;
}

export interface Context {
  client: LssClient;
  term: Terminal;
  /** --idempotency-key: the caller's key for this command's write. */
  idempotencyKey: string | undefined;
}

// biome-ignore lint/suspicious/noExplicitAny: commander hands each command its own argument types
export type Handler = (ctx: Context, ...args: any[]) => Promise<Report>;
export type Action = (handler: Handler) => (...args: unknown[]) => Promise<void>;

export function terminalFor(global: GlobalOptions): Terminal {
  return createTerminal({ json: global.json === true, color: global.color });
}

export function createContext(global: GlobalOptions, env: NodeJS.ProcessEnv = process.env): Context {
  const term = terminalFor(global);
  const apiKey = env.LSS_API_KEY;
  if (!apiKey)
    throw new UsageError(
      'LSS_API_KEY is not set (export LSS_API_KEY=lsk_…; the key is read from the environment only)',
    );
  const baseUrl = env.LSS_BASE_URL || DEFAULT_BASE_URL;
  try {
    const u = new URL(baseUrl);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http(s)');
  } catch {
    throw new UsageError(`LSS_BASE_URL is not an http(s) URL: ${baseUrl}`);
  }
  const client = new LssClient({
    apiKey,
    baseUrl,
    ...(global.retries !== undefined ? { retry: { maxRetries: global.retries } } : {}),
    onRetry: (e) =>
      term.err(
        `lss: ${e.reason}${e.status ? ` (HTTP ${e.status})` : ''}; retrying in ${(e.delayMs / 1000).toFixed(1)} s with the same Idempotency-Key (attempt ${e.attempt + 1})`,
      ),
  });
  return { client, term, idempotencyKey: global.idempotencyKey };
}

/** Runs a handler with its context; the report is kept for main to print. */
export function actionRunner(sink: { report?: Report }): Action {
  return (handler) =>
    async (...args) => {
      const cmd = args[args.length - 1] as Command;
      sink.report = await handler(createContext(cmd.optsWithGlobals<GlobalOptions>()), ...args.slice(0, -1));
    };
}

export function failOnOption(): Option {
  return new Option(
    '--fail-on <severity>',
    'exit 1 when a finding is at or above this severity (implies waiting)',
  ).choices([...SEVERITIES]);
}

export function failOnNewOption(): Option {
  return new Option(
    '--fail-on-new <severity>',
    'exit 1 when a finding new since the baseline is at or above this severity (implies waiting)',
  ).choices([...SEVERITIES]);
}

export function failOnOpenOption(): Option {
  return new Option(
    '--fail-on-open <severity>',
    'exit 1 when an open (unsuppressed) finding is at or above this severity (implies waiting)',
  ).choices([...SEVERITIES]);
}

/** A commander argument parser: its InvalidArgumentError is reported as a usage error. */
export function integerArg(min: number) {
  return (v: string): number => {
    if (!/^\d+$/.test(v) || Number(v) < min) throw new InvalidArgumentError(`an integer ≥ ${min} is needed`);
    return Number(v);
  };
}
