// Signal handling for the worker entry points: the first SIGTERM/SIGINT closes the process in
// order (the close function decides the order); a force-exit timer bounds it; a second signal
// exits at once.
import type { Logger } from 'pino';

export function installShutdown(log: Logger, timeoutMs: number, close: () => Promise<void>): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(130);
    }
    stopping = true;
    log.info({ signal }, 'shutting down');
    // Drain gets timeoutMs; the remaining steps (pool, Redis, MySQL) a little more.
    setTimeout(() => {
      log.error('shutdown did not finish in time: forcing exit');
      process.exit(1);
    }, timeoutMs + 5000).unref();
    close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err: { message: (err as Error).message } }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  process.on('unhandledRejection', (err) => {
    log.error({ err: { message: err instanceof Error ? err.message : String(err) } }, 'unhandled rejection');
  });
}
