// What the web role says when it cannot start: one line, naming the cause and the setting that
// fixes it, for errors no restart can cure (a port someone else holds, a port below 1024 without
// the privilege). The cluster primary prints it once and exits 1 instead of replacing workers
// that would die the same way forever.

/** The message a web worker sends its primary when it fails before it was listening. */
export interface StartupFailure {
  type: 'lss:startup-failed';
  line: string;
  /** The role's exit code (default 1; 78 for a configuration the start found wrong). */
  exitCode?: number;
}

export function isStartupFailure(msg: unknown): msg is StartupFailure {
  return (
    typeof msg === 'object' &&
    msg !== null &&
    (msg as { type?: unknown }).type === 'lss:startup-failed' &&
    typeof (msg as { line?: unknown }).line === 'string'
  );
}

/** One line for an error met while listening on `port` (the value of the variable `setting`). */
export function listenFailureLine(err: unknown, setting: 'PORT' | 'METRICS_PORT', port: number): string {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  const role = setting === 'PORT' ? 'the API' : 'the metrics endpoint';
  switch (code) {
    case 'EADDRINUSE':
      return `web role cannot start: port ${port} for ${role} is already in use (EADDRINUSE); stop what holds it or set ${setting} to a free port.`;
    case 'EACCES':
    case 'EPERM':
      return `web role cannot start: no permission to listen on port ${port} for ${role} (${code}); ports below 1024 need privileges: set ${setting} to 1024 or above.`;
    case 'EADDRNOTAVAIL':
      return `web role cannot start: the address to listen on for ${role} is not available on this machine (EADDRNOTAVAIL); check ${setting} and the machine's interfaces.`;
    default:
      return `web role cannot start: listening on port ${port} for ${role} failed (${code ?? errorText(err)}); check ${setting}.`;
  }
}

/** One line for any other error before a worker was listening (its dependencies, say). */
export function startupFailureLine(err: unknown): string {
  return `web role cannot start: a worker failed before it was listening: ${errorText(err)}`;
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.replace(/\s+/g, ' ').slice(0, 300);
}
