// pino JSON logs. Secrets are redacted at the logger so no call site can leak a key by accident.
import { pino, type Logger } from 'pino';

export function createLogger(level: string, base: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: { pid: process.pid, ...base },
    redact: {
      paths: ['authorization', 'headers.authorization', 'req.headers.authorization', '*.authorization', 'key', 'apiKey'],
      censor: '[redacted]',
    },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
