// Politeness per target address: a scanner that runs hundreds of checks at once must never land on
// one server as a flood. Every connection the outbound guard opens (each HTTP hop, each TLS or TCP
// connection) first takes one of `connections` slots of the address it goes to, held until the
// connection is over, and connections to one address start at least `intervalMs` apart. Waiters
// are served in arrival order. Per process, in memory: no Redis round trip per connection (a
// deployment of N lane processes may hold N × `connections` to one address; docs/operations.md).
import { setTimeout as sleep } from 'node:timers/promises';

export interface PolitenessOptions {
  /** Connections open at once to one address (OUTBOUND_CONNECTIONS_PER_ADDRESS). */
  connections: number;
  /** Least time between two connections opened to one address (OUTBOUND_ADDRESS_INTERVAL_MS). */
  intervalMs: number;
}

interface AddressState {
  open: number;
  waiters: Array<() => void>;
  /** When the next connection to the address may start (performance.now() ms). */
  nextAt: number;
}

/** Idle addresses kept for their pacing before the map is swept. */
const SWEEP_AT = 10_000;

export class AddressSlots {
  readonly connections: number;
  readonly intervalMs: number;
  readonly #addresses = new Map<string, AddressState>();

  constructor(o: PolitenessOptions) {
    this.connections = Math.max(1, o.connections);
    this.intervalMs = Math.max(0, o.intervalMs);
  }

  /** Connections open (or paced) to the address now (tests, metrics). */
  openTo(address: string): number {
    return this.#addresses.get(address)?.open ?? 0;
  }

  /**
   * A slot for one connection to `address`, after its pacing; the returned function gives it back
   * (once; later calls do nothing). Rejects with the signal's reason when it aborts the wait.
   */
  async acquire(address: string, signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    let s = this.#addresses.get(address);
    if (!s) {
      if (this.#addresses.size >= SWEEP_AT) this.#sweep();
      s = { open: 0, waiters: [], nextAt: 0 };
      this.#addresses.set(address, s);
    }
    const state = s;
    if (state.open >= this.connections) await this.#queue(state, signal);
    else state.open++;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const next = state.waiters.shift();
      if (next)
        next(); // the slot passes on: open stays counted
      else state.open--;
    };
    try {
      const now = performance.now();
      const at = Math.max(now, state.nextAt);
      state.nextAt = at + this.intervalMs;
      if (at > now) await sleep(at - now, undefined, signal ? { signal } : {});
    } catch (err) {
      release();
      throw signal?.reason ?? err;
    }
    return release;
  }

  #queue(state: AddressState, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const i = state.waiters.indexOf(grant);
        if (i >= 0) state.waiters.splice(i, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      state.waiters.push(grant);
    });
  }

  /** Forgets addresses with nothing open whose pacing has passed. */
  #sweep(): void {
    const now = performance.now();
    for (const [address, s] of this.#addresses)
      if (s.open === 0 && s.waiters.length === 0 && s.nextAt <= now) this.#addresses.delete(address);
  }
}
