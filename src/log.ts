// pino JSON logs. Secrets are redacted at the logger so no call site can leak a key by accident.
//
// The destination is asynchronous and buffered: lines accumulate up to 16 KiB and go out in one
// write, at the latest a second later. A synchronous destination costs one write syscall per line,
// that is per request (the access line), which the admission benchmark showed to be a sizeable
// share of a request's cost; and each asynchronous write's dispatch still cost about as much as
// formatting twenty lines, so 4 KiB batches were still 3-4 % of an admitted request. pino flushes the buffer synchronously on process exit (also after
// SIGTERM's drain and on an uncaught exception); what a SIGKILL interrupts — at most the last
// second or 16 KiB of lines — is lost (docs/operations.md).
import { pino, type DestinationStream, type Logger } from 'pino';

export interface LoggerOptions {
  /** A file path or descriptor (default 1, stdout). */
  destination?: string | number;
  /** One write per line (tests that read a child's output line by line may want it). */
  sync?: boolean;
}

const BUFFER_BYTES = 16 * 1024;
/** sonic-boom wants a write's cap above the buffer's threshold; lines pile up to it only while a write is out. */
const MAX_WRITE_BYTES = 32 * 1024;
const FLUSH_EVERY_MS = 1000;

export function createLogger(level: string, base: Record<string, unknown> = {}, opts: LoggerOptions = {}): Logger {
  const sync = opts.sync ?? false;
  const dest = pino.destination({
    dest: opts.destination ?? 1,
    sync,
    minLength: sync ? 0 : BUFFER_BYTES,
    maxWrite: MAX_WRITE_BYTES,
  });
  if (!sync) setInterval(() => flushQuietly(dest), FLUSH_EVERY_MS).unref();
  return pino(
    {
      level,
      base: { pid: process.pid, ...base },
      redact: {
        paths: [
          'authorization',
          'headers.authorization',
          'req.headers.authorization',
          '*.authorization',
          'key',
          'apiKey',
        ],
        censor: '[redacted]',
      },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    dest,
  );
}

/**
 * A child of `log` without redaction, for lines whose fields are fixed by the code and hold no
 * secret (the access line). Every other line keeps the redaction of createLogger.
 */
export function accessLogger(log: Logger): Logger {
  return log.child({}, { redact: [] });
}

function flushQuietly(dest: DestinationStream & { flush?: () => void }): void {
  try {
    dest.flush?.();
  } catch {
    // a destroyed destination (the process is ending): nothing left to flush
  }
}
