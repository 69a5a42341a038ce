// Politeness per target address: a scanner that runs hundreds of checks at once must never land on
// one server as a flood. Every connection the outbound guard opens (each HTTP hop, each TLS or TCP
// connection) first takes one of `connections` slots of the address it goes to, held until the
// connection is over, and connections to one address start at least `intervalMs` apart. Per
// process, in memory: no Redis round trip per connection (a deployment of N lane processes may
// hold N × `connections` to one address; docs/operations.md).
//
// Politeness must not become shared fate (issue 32): the slots of one address are shared max-min
// between the tenants (workspaces) that wait for it, as the lane's capacity is (run-gate.ts). A
// freed slot goes to the waiting tenant with the fewest connections open to that address (ties:
// the one whose first waiter came first), and each tenant's own waiters are served in arrival
// order. So one tenant's scan of thousands of hosts behind one CDN address holds at most its share
// of that address while another tenant waits, and the other tenant's connection waits for one
// freed slot, not for the backlog. `forTenant` gives the view a lane runner's job-scoped guard
// uses (src/net/outbound-guard.ts over); a view without a tenant counts as one tenant of its own.
import { setTimeout as sleep } from 'node:timers/promises';

export interface PolitenessOptions {
  /** Connections open at once to one address (OUTBOUND_CONNECTIONS_PER_ADDRESS). */
  connections: number;
  /** Least time between two connections opened to one address (OUTBOUND_ADDRESS_INTERVAL_MS). */
  intervalMs: number;
}

interface Waiter {
  tenant: string;
  /** Arrival order across tenants: breaks ties between tenants with as many open. */
  seq: number;
  grant: () => void;
}

interface AddressState {
  open: number;
  /** Connections open (or paced) per tenant. */
  openBy: Map<string, number>;
  /** Waiters per tenant, each list in arrival order. */
  waiting: Map<string, Waiter[]>;
  /** When the next connection to the address may start (performance.now() ms). */
  nextAt: number;
}

/** Idle addresses kept for their pacing before the map is swept. */
const SWEEP_AT = 10_000;

interface Shared {
  addresses: Map<string, AddressState>;
  seq: number;
}

export class AddressSlots {
  readonly connections: number;
  readonly intervalMs: number;
  /** Whose connections this view takes ('' : no tenant named). */
  readonly tenant: string;
  readonly #shared: Shared;

  constructor(o: PolitenessOptions, shared?: { tenant: string; from: AddressSlots }) {
    this.connections = Math.max(1, o.connections);
    this.intervalMs = Math.max(0, o.intervalMs);
    this.tenant = shared?.tenant ?? '';
    this.#shared = shared ? shared.from.#shared : { addresses: new Map(), seq: 0 };
  }

  /** The same slots (same counts, same pacing) taken on behalf of `tenant`. */
  forTenant(tenant: string): AddressSlots {
    return tenant === this.tenant ? this : new AddressSlots(this, { tenant, from: this });
  }

  /** Connections open (or paced) to the address now, by anyone or by one tenant (tests, metrics). */
  openTo(address: string, tenant?: string): number {
    const s = this.#shared.addresses.get(address);
    if (!s) return 0;
    return tenant === undefined ? s.open : (s.openBy.get(tenant) ?? 0);
  }

  /** Connections waiting for a slot of the address, by anyone or by one tenant (tests, metrics). */
  waitingFor(address: string, tenant?: string): number {
    const s = this.#shared.addresses.get(address);
    if (!s) return 0;
    if (tenant !== undefined) return s.waiting.get(tenant)?.length ?? 0;
    let n = 0;
    for (const list of s.waiting.values()) n += list.length;
    return n;
  }

  /**
   * A slot for one connection to `address`, after its pacing; the returned function gives it back
   * (once; later calls do nothing). Rejects with the signal's reason when it aborts the wait.
   */
  async acquire(address: string, signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    const addresses = this.#shared.addresses;
    let s = addresses.get(address);
    if (!s) {
      if (addresses.size >= SWEEP_AT) this.#sweep();
      s = { open: 0, openBy: new Map(), waiting: new Map(), nextAt: 0 };
      addresses.set(address, s);
    }
    const state = s;
    const tenant = this.tenant;
    if (state.open >= this.connections) await this.#queue(state, signal);
    else {
      state.open++;
      state.openBy.set(tenant, (state.openBy.get(tenant) ?? 0) + 1);
    }
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const left = (state.openBy.get(tenant) ?? 1) - 1;
      if (left > 0) state.openBy.set(tenant, left);
      else state.openBy.delete(tenant);
      const next = nextWaiter(state);
      if (next) {
        // The slot passes on: open stays counted, now for the waiter's tenant.
        state.openBy.set(next.tenant, (state.openBy.get(next.tenant) ?? 0) + 1);
        next.grant();
      } else state.open--;
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
    const tenant = this.tenant;
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        tenant,
        seq: this.#shared.seq++,
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        const list = state.waiting.get(tenant);
        const i = list?.indexOf(waiter) ?? -1;
        if (list && i >= 0) {
          list.splice(i, 1);
          if (list.length === 0) state.waiting.delete(tenant);
        }
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const list = state.waiting.get(tenant);
      if (list) list.push(waiter);
      else state.waiting.set(tenant, [waiter]);
    });
  }

  /** Forgets addresses with nothing open whose pacing has passed. */
  #sweep(): void {
    const now = performance.now();
    for (const [address, s] of this.#shared.addresses)
      if (s.open === 0 && s.waiting.size === 0 && s.nextAt <= now) this.#shared.addresses.delete(address);
  }
}

/** The next waiter of the tenant with the fewest open to the address (ties: whose waiter came first), taken off its list. */
function nextWaiter(state: AddressState): Waiter | undefined {
  let best: Waiter[] | undefined;
  let bestTenant = '';
  let bestOpen = Number.POSITIVE_INFINITY;
  for (const [tenant, list] of state.waiting) {
    const open = state.openBy.get(tenant) ?? 0;
    if (open < bestOpen || (open === bestOpen && list[0]!.seq < best![0]!.seq)) {
      best = list;
      bestTenant = tenant;
      bestOpen = open;
    }
  }
  if (!best) return undefined;
  const next = best.shift()!;
  if (best.length === 0) state.waiting.delete(bestTenant);
  return next;
}
