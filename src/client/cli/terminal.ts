// Where output goes: data on stdout, progress and messages on stderr. Colour only on a terminal,
// never with --json, never when NO_COLOR is set (https://no-color.org) or TERM=dumb; FORCE_COLOR
// forces it. picocolors' own detection also turns colour on whenever CI is set, even into a pipe,
// so the decision is made here and passed to createColors.
import pc from 'picocolors';

export type Colors = ReturnType<typeof pc.createColors>;

export interface Terminal {
  readonly json: boolean;
  readonly colors: Colors;
  /** stderr is a terminal and output is for people: progress bars may be drawn. */
  readonly interactive: boolean;
  out(text: string): void;
  err(text: string): void;
}

export function colorEnabled(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv, flag: boolean | undefined): boolean {
  if (flag === false || (env.NO_COLOR !== undefined && env.NO_COLOR !== '')) return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0') return true;
  return stream.isTTY === true && env.TERM !== 'dumb';
}

export function createTerminal(
  opts: { json: boolean; color?: boolean | undefined },
  env: NodeJS.ProcessEnv = process.env,
): Terminal {
  const color = !opts.json && colorEnabled(process.stdout, env, opts.color);
  return {
    json: opts.json,
    colors: pc.createColors(color),
    interactive: !opts.json && process.stderr.isTTY === true && env.TERM !== 'dumb',
    out: (text) => void process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
    err: (text) => void process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
  };
}
