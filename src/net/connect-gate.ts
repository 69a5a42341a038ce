// One check's connection attempts per address and port (OutboundGuard.forCheck): when two parts of
// the same check connect to the same address and port at the same moment (a scan's web check: the
// http part's https chain and the tls part's handshake, both to :443 of the host's address), the
// second waits for the first's TCP connect, and when the first was refused (ECONNREFUSED: the
// host answered that nothing listens there) reads that refusal instead of asking again. Whatever
// else the first met (a connection, a timeout, a reset, an abort), the second connects itself:
// only a refusal, the host's own immediate answer, is shared, and only within the check that saw
// it (never across checks: a port may open between two tasks).
import type net from 'node:net';

/** What a refused connect fails with, as Node reports one (code ECONNREFUSED). */
export function sharedRefusal(address: string, port: number): NodeJS.ErrnoException {
  // An outcome, not a fault: no stack trace (as the guard's own errors, ./outbound-errors.ts).
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  const err: NodeJS.ErrnoException = new Error(`connect ECONNREFUSED ${address}:${port} (seen by this check)`);
  Error.stackTraceLimit = limit;
  err.code = 'ECONNREFUSED';
  err.syscall = 'connect';
  return err;
}

export class ConnectGate {
  /** Per "address port": resolves true when the first attempt was refused, false otherwise. */
  readonly #attempts = new Map<string, Promise<boolean>>();

  /**
   * The first attempt to `address`:`port` in this check gets `watch`, to call with its socket the
   * moment it exists (or with null when it will not make one); a later attempt gets the first's
   * outcome to wait for: true, refused.
   */
  claim(address: string, port: number): { watch: (socket: net.Socket | null) => void } | { first: Promise<boolean> } {
    const key = `${address} ${port}`;
    const first = this.#attempts.get(key);
    if (first !== undefined) return { first };
    let settle!: (refused: boolean) => void;
    this.#attempts.set(key, new Promise<boolean>((resolve) => (settle = resolve)));
    return {
      watch: (socket) => {
        if (!socket) return settle(false);
        const onConnect = () => done(false);
        const onError = (err: NodeJS.ErrnoException) => done(err.code === 'ECONNREFUSED');
        const onClose = () => done(false);
        const done = (refused: boolean) => {
          socket.off('connect', onConnect);
          socket.off('error', onError);
          socket.off('close', onClose);
          settle(refused);
        };
        socket.once('connect', onConnect);
        socket.once('error', onError);
        socket.once('close', onClose);
      },
    };
  }
}
