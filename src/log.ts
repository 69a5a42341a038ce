// pino JSON logs. Secrets are redacted at the logger so no call site can leak a key by accident.
//
// The destination is asynchronous and buffered: lines accumulate up to 16 KiB and go out in one
// write, at the latest a second later. A synchronous destination costs one write syscall per line,
// that is per request (the access line), which the admission benchmark showed to be a sizeable
// share of a request's cost; and each asynchronous write's dispatch still cost about as much as
// formatting twenty lines, so 4 KiB batches were still 3-4 % of an admitted request. The batch is
// gathered here (batched below) and handed to sonic-boom whole. pino flushes it synchronously on
// process exit (also after SIGTERM's drain and on an uncaught exception); what a SIGKILL
// interrupts — at most the last second or 16 KiB of lines — is lost (docs/operations.md).
import { pino, type DestinationStream, type Logger } from 'pino';

export interface LoggerOptions {
  /** A file path or descriptor (default 1, stdout). */
  destination?: string | number;
  /** One write per line (tests that read a child's output line by line may want it). */
  sync?: boolean;
}

const BUFFER_BYTES = 16 * 1024;
/** sonic-boom joins batches up to this size while a write is out (one batch is never split). */
const MAX_WRITE_BYTES = 32 * 1024;
const FLUSH_EVERY_MS = 1000;

export function createLogger(level: string, base: Record<string, unknown> = {}, opts: LoggerOptions = {}): Logger {
  const sync = opts.sync ?? false;
  const boom = pino.destination({
    dest: opts.destination ?? 1,
    sync,
    minLength: 0,
    maxWrite: MAX_WRITE_BYTES,
  });
  const dest = sync ? boom : batched(boom);
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

/** The fields of the access line (src/app.ts), one per request. */
export interface AccessFields {
  requestId: string;
  method: string;
  route: string;
  status: number;
  ms: number;
}

/**
 * The access line, written straight to `log`'s destination in pino's own default format (what
 * `log.info(fields, 'request')` writes: level, time, the logger's bindings, the fields, msg), without
 * pino's generic serializer. Its fields are fixed by the code and carry no secret (an id that passed
 * request-id's check, the method, the matched route pattern, numbers), so it skips the redaction
 * every other line gets. For a logger made by createLogger (no formatters, mixins or hooks, which
 * this would not apply); 5xx lines are warnings ("request failed").
 */
export function accessLogger(log: Logger): (fields: AccessFields) => void {
  const bindings = (log as unknown as Record<symbol, string>)[pino.symbols.chindingsSym] ?? '';
  const stream = (log as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym]!;
  // The time string of the current millisecond, built once for every line within it.
  let lastMs = -1;
  let time = '';
  return (f) => {
    const failed = f.status >= 500;
    if (!log.isLevelEnabled(failed ? 'warn' : 'info')) return;
    const now = Date.now();
    if (now !== lastMs) {
      lastMs = now;
      time = new Date(now).toISOString();
    }
    stream.write(
      `{"level":${failed ? 40 : 30},"time":"${time}"${bindings},"requestId":${JSON.stringify(f.requestId)},` +
        `"method":${JSON.stringify(f.method)},"route":${JSON.stringify(f.route)},"status":${f.status},` +
        `"ms":${f.ms},"msg":"${failed ? 'request failed' : 'request'}"}\n`,
    );
  };
}

type Boom = ReturnType<typeof pino.destination>;

/**
 * Lines gathered in front of sonic-boom and handed to it BUFFER_BYTES at a time, as one string.
 * sonic-boom's own buffering (minLength) measures, at every line, the UTF-8 length of the whole
 * string buffered so far (a rope of every line since the last write, which V8 flattens to measure
 * it): quadratic in the lines per write, about 2 % of an admitted request in the admission profile.
 * Here a line costs an array push; sonic-boom measures one flat string per batch and writes it at
 * once (minLength 0). Its flush and flushSync drain this batch first, so pino's own exit handling
 * (registered on the sonic-boom: a synchronous flush at exit) and an explicit flush lose nothing.
 */
function batched(boom: Boom): DestinationStream & { flush: (cb?: (err?: Error) => void) => void } {
  let lines: string[] = [];
  // UTF-16 units: at most the bytes, which is all a threshold needs.
  let units = 0;
  const drain = () => {
    if (lines.length === 0) return;
    const text = lines.length === 1 ? lines[0]! : lines.join('');
    lines = [];
    units = 0;
    boom.write(text);
  };
  const flush = boom.flush.bind(boom);
  const flushSync = boom.flushSync.bind(boom);
  const end = boom.end.bind(boom);
  boom.flush = ((cb?: (err?: Error) => void) => {
    drain();
    flush(cb);
  }) as Boom['flush'];
  boom.flushSync = () => {
    drain();
    flushSync();
  };
  boom.end = (() => {
    drain();
    end();
  }) as Boom['end'];
  return {
    write(line: string) {
      lines.push(line);
      units += line.length;
      if (units >= BUFFER_BYTES) drain();
      return true;
    },
    flush: (cb?: (err?: Error) => void) => boom.flush(cb),
  };
}

function flushQuietly(dest: DestinationStream & { flush?: () => void }): void {
  try {
    dest.flush?.();
  } catch {
    // a destroyed destination (the process is ending): nothing left to flush
  }
}
