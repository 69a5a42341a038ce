// Politeness and congestion control per target address: a scanner that runs hundreds of checks at
// once must never land on one server as a flood, and must slow down to what a server sustains.
// Every connection the outbound guard opens (each HTTP hop, each TLS or TCP connection) first takes
// a place in the address's window (./address-window.ts: AIMD, from a modest start up to
// `connections`, OUTBOUND_CONNECTIONS_PER_ADDRESS), held until the connection is over, and
// connections to one address start at least `intervalMs` apart. Per process, in memory: no Redis
// round trip per connection (a deployment of N lane processes may hold N × `connections` to one
// address; docs/operations.md).
//
// Congestion is ours, silence is the target's (DESIGN.md, issue 48):
//   - A connection that waits for a place waits here, in our process, and its deadline starts when
//     it is attempted (the permit's `startedAt`; guarded-fetch.ts pauses the exchange's budget while
//     it waits). One that could not be attempted within `queueWaitMs` (OUTBOUND_QUEUE_WAIT_MS) is
//     given up unattempted: SlotWaitExpired, which the guard turns into `congested`, a local failure
//     (./local-failures.ts: the lane gives the task back), never the target's timeout.
//   - A connection dropped before its answer (connect timeout, reset, closed) asks dropVerdict():
//     `rate_limited` when the address answered another connection on the same port since this one
//     started (or does while those in flight with it end, within a second): it answers some and
//     drops others, so the window is cut and the guard attempts the connection again behind it
//     (DROP_RETRIES); `unreachable` when none answered: the target's fact, reported as before.
//
// Politeness must not become shared fate (issue 32): the places of one address are shared max-min
// between the tenants (workspaces) that wait for it, as the lane's capacity is (run-gate.ts). A
// freed place goes to the waiting tenant with the fewest connections open to that address (ties:
// the one whose first waiter came first), and each tenant's own waiters are served in arrival
// order. So one tenant's scan of thousands of hosts behind one CDN address holds at most its share
// of that address while another tenant waits, and the other tenant's connection waits for one
// freed place, not for the backlog. `forTenant` gives the view a lane runner's job-scoped guard
// uses (src/net/outbound-guard.ts over); a view without a tenant counts as one tenant of its own.
import { setTimeout as sleep } from 'node:timers/promises';
import { AddressWindow, type ConnectionEnd } from './address-window.ts';
import { enterLocalWait } from './local-failures.ts';

export type { ConnectionEnd } from './address-window.ts';

export interface PolitenessOptions {
  /** Connections open at once to one address at most: the window's cap (OUTBOUND_CONNECTIONS_PER_ADDRESS). */
  connections: number;
  /** Least time between two connections opened to one address (OUTBOUND_ADDRESS_INTERVAL_MS). */
  intervalMs: number;
  /** The window an address starts with (default 2, at most `connections`). */
  initialWindow?: number;
  /** How long a connection may wait for a place before it is given up unattempted (OUTBOUND_QUEUE_WAIT_MS; default 10 s). */
  queueWaitMs?: number;
}

/** Times a connection dropped by an address that answers others is attempted again. */
export const DROP_RETRIES = 2;

/** A connection that waited `queueWaitMs` for a place of its address and was never attempted. */
export class SlotWaitExpired extends Error {
  readonly address: string;
  constructor(address: string, waitedMs: number) {
    super(`not attempted: waited ${waitedMs} ms in our own queue for a connection to ${address}`);
    this.name = 'SlotWaitExpired';
    this.address = address;
  }
}

/** A place in an address's window for one connection. */
export interface SlotPermit {
  /** Gives the place back (once; later calls do nothing), with what the connection's end says. */
  release(end?: ConnectionEnd): void;
  /** When the connection was attempted (performance.now() ms): its deadline starts here. */
  readonly startedAt: number;
  /** The connection got its answer (a response head, a finished handshake, a TCP connect). */
  answered(): void;
  /**
   * The connection was dropped before its answer: `rate_limited` when the address answered another
   * connection on its port since this one started, or does while those in flight now end (within
   * a second); `unreachable` when none did; `other` when `signal` ended the wait.
   */
  dropVerdict(signal?: AbortSignal): Promise<'rate_limited' | 'unreachable' | 'other'>;
}

interface Waiter {
  tenant: string;
  /** Arrival order across tenants: breaks ties between tenants with as many open. */
  seq: number;
  grant: () => void;
}

/** A connection in flight, as the drop verdicts of its neighbours see it. */
interface Live {
  port: number;
  startedAt: number;
  /** Released, or dropped and waiting for its own verdict: nobody waits for its answer. */
  settled: boolean;
}

interface AddressState {
  open: number;
  /** Connections open (or paced) per tenant. */
  openBy: Map<string, number>;
  /** Waiters per tenant, each list in arrival order. */
  waiting: Map<string, Waiter[]>;
  waitingCount: number;
  /** When the next connection to the address may start (performance.now() ms). */
  nextAt: number;
  window: AddressWindow;
  /** When each port of the address last gave a connection its answer. */
  answeredAt: Map<number, number>;
  live: Set<Live>;
  /** Drop verdicts waiting for news of the address. */
  watchers: Set<() => void>;
}

/** How long a drop's verdict waits for the connections in flight with it to answer. */
const VERDICT_WAIT_MS = 1000;
/** Idle addresses kept for their pacing and window before the map is swept. */
const SWEEP_AT = 10_000;
/** A window cut within this long is kept through a sweep (the address is still being slowed down). */
const KEEP_CUT_MS = 60_000;

interface Shared {
  addresses: Map<string, AddressState>;
  seq: number;
  initialWindow: number;
  queueWaitMs: number;
  expired: number;
  retried: number;
  cuts: { drop: number; throttle: number };
}

export interface AddressSlotsStats {
  /** Addresses tracked, and how many have a window below the cap. */
  addresses: number;
  limited: number;
  /** The smallest window of an address with connections open or waiting (the cap when none). */
  smallestWindow: number;
  open: number;
  waiting: number;
  /** Connections given up unattempted (their wait for a place ran out), since the start. */
  expired: number;
  /** Connections attempted again after a drop by an address that answers others. */
  retried: number;
  /** Window cuts since the start: drops by an address that answers, and 429/503 bursts. */
  cuts: { drop: number; throttle: number };
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
    this.#shared = shared
      ? shared.from.#shared
      : {
          addresses: new Map(),
          seq: 0,
          initialWindow: Math.max(1, Math.floor(o.initialWindow ?? 2)),
          queueWaitMs: Math.max(1, o.queueWaitMs ?? 10_000),
          expired: 0,
          retried: 0,
          cuts: { drop: 0, throttle: 0 },
        };
  }

  /** The same slots (same windows, same pacing) taken on behalf of `tenant`. */
  forTenant(tenant: string): AddressSlots {
    return tenant === this.tenant ? this : new AddressSlots(this, { tenant, from: this });
  }

  /** Connections open (or paced) to the address now, by anyone or by one tenant (tests, metrics). */
  openTo(address: string, tenant?: string): number {
    const s = this.#shared.addresses.get(address);
    if (!s) return 0;
    return tenant === undefined ? s.open : (s.openBy.get(tenant) ?? 0);
  }

  /** Connections waiting for a place at the address, by anyone or by one tenant (tests, metrics). */
  waitingFor(address: string, tenant?: string): number {
    const s = this.#shared.addresses.get(address);
    if (!s) return 0;
    return tenant === undefined ? s.waitingCount : (s.waiting.get(tenant)?.length ?? 0);
  }

  /** The address's window now (its first one when untracked): tests, metrics. */
  windowOf(address: string): number {
    return this.#shared.addresses.get(address)?.window.size ?? Math.min(this.#shared.initialWindow, this.connections);
  }

  /** A connection attempted again after a drop (counted for the metrics). */
  noteRetry(): void {
    this.#shared.retried++;
  }

  stats(): AddressSlotsStats {
    let limited = 0;
    let smallest = this.connections;
    let open = 0;
    let waiting = 0;
    for (const s of this.#shared.addresses.values()) {
      if (s.window.size < s.window.max) limited++;
      if ((s.open > 0 || s.waitingCount > 0) && s.window.size < smallest) smallest = s.window.size;
      open += s.open;
      waiting += s.waitingCount;
    }
    const { addresses, expired, retried, cuts } = this.#shared;
    return {
      addresses: addresses.size,
      limited,
      smallestWindow: smallest,
      open,
      waiting,
      expired,
      retried,
      cuts: { ...cuts },
    };
  }

  /**
   * A place for one connection to `address` (on `port`, whose answers the drop verdicts read),
   * after its pacing. Rejects with SlotWaitExpired when none came within the queue wait, with the
   * signal's reason when it aborts the wait.
   */
  async acquire(address: string, signal?: AbortSignal, port = 0): Promise<SlotPermit> {
    signal?.throwIfAborted();
    const state = this.#state(address);
    const tenant = this.tenant;
    if (state.waitingCount === 0 && state.open < state.window.size) take(state, tenant);
    else await this.#queue(address, state, signal);
    const permit = new Permit(state, tenant, port, this.#shared.cuts);
    try {
      const now = performance.now();
      const at = Math.max(now, state.nextAt);
      state.nextAt = at + this.intervalMs;
      if (at > now) await sleep(at - now, undefined, signal ? { signal } : {});
    } catch (err) {
      permit.release();
      throw signal?.reason ?? err;
    }
    permit.startedAt = performance.now();
    state.live.add(permit);
    return permit;
  }

  #state(address: string): AddressState {
    const addresses = this.#shared.addresses;
    let s = addresses.get(address);
    if (!s) {
      if (addresses.size >= SWEEP_AT) this.#sweep();
      s = {
        open: 0,
        openBy: new Map(),
        waiting: new Map(),
        waitingCount: 0,
        nextAt: 0,
        window: new AddressWindow(Math.min(this.#shared.initialWindow, this.connections), this.connections),
        answeredAt: new Map(),
        live: new Set(),
        watchers: new Set(),
      };
      addresses.set(address, s);
    }
    return s;
  }

  #queue(address: string, state: AddressState, signal: AbortSignal | undefined): Promise<void> {
    const tenant = this.tenant;
    const waitMs = this.#shared.queueWaitMs;
    // Counted in the check's ledger while it waits: a check timeout meanwhile is ours (execute-check.ts).
    const endWait = enterLocalWait();
    return new Promise<void>((resolve, reject) => {
      const leave = () => {
        endWait();
        const list = state.waiting.get(tenant);
        const i = list?.indexOf(waiter) ?? -1;
        if (!list || i < 0) return false;
        list.splice(i, 1);
        if (list.length === 0) state.waiting.delete(tenant);
        state.waitingCount--;
        return true;
      };
      const onAbort = () => {
        clearTimeout(timer);
        if (leave()) reject(signal!.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        if (!leave()) return;
        this.#shared.expired++;
        reject(new SlotWaitExpired(address, waitMs));
      }, waitMs);
      timer.unref?.();
      const waiter: Waiter = {
        tenant,
        seq: this.#shared.seq++,
        grant: () => {
          endWait();
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const list = state.waiting.get(tenant);
      if (list) list.push(waiter);
      else state.waiting.set(tenant, [waiter]);
      state.waitingCount++;
    });
  }

  /** Forgets addresses with nothing open whose pacing has passed, keeping those being slowed down. */
  #sweep(): void {
    const now = performance.now();
    for (const [address, s] of this.#shared.addresses)
      if (s.open === 0 && s.waitingCount === 0 && s.nextAt <= now && now - s.window.lastCutAt > KEEP_CUT_MS)
        this.#shared.addresses.delete(address);
  }
}

/** A permit is also what its neighbours' drop verdicts see of it (Live). */
class Permit implements SlotPermit, Live {
  startedAt = 0;
  settled = false;
  #released = false;
  readonly state: AddressState;
  readonly tenant: string;
  readonly port: number;
  readonly cuts: { drop: number; throttle: number };
  constructor(state: AddressState, tenant: string, port: number, cuts: { drop: number; throttle: number }) {
    this.state = state;
    this.tenant = tenant;
    this.port = port;
    this.cuts = cuts;
  }

  release(end: ConnectionEnd = 'other'): void {
    if (this.#released) return;
    this.#released = true;
    this.settled = true;
    const state = this.state;
    state.live.delete(this);
    const left = (state.openBy.get(this.tenant) ?? 1) - 1;
    if (left > 0) state.openBy.set(this.tenant, left);
    else state.openBy.delete(this.tenant);
    state.open--;
    if (this.startedAt > 0 && end !== 'other') {
      const did = state.window.end(end, this.startedAt, performance.now());
      if (did === 'cut') this.cuts[end === 'throttled' ? 'throttle' : 'drop']++;
    }
    notify(state);
    grantWaiting(state);
  }

  answered(): void {
    this.state.answeredAt.set(this.port, performance.now());
    notify(this.state);
  }

  dropVerdict(signal?: AbortSignal): Promise<'rate_limited' | 'unreachable' | 'other'> {
    return dropVerdict(this.state, this, signal);
  }
}

function take(state: AddressState, tenant: string): void {
  state.open++;
  state.openBy.set(tenant, (state.openBy.get(tenant) ?? 0) + 1);
}

/** Lets waiters in while the window has room: the tenant with the fewest open first. */
function grantWaiting(state: AddressState): void {
  while (state.waitingCount > 0 && state.open < state.window.size) {
    const next = nextWaiter(state);
    if (!next) return;
    take(state, next.tenant);
    next.grant();
  }
}

function notify(state: AddressState): void {
  if (state.watchers.size === 0) return;
  for (const w of [...state.watchers]) w();
}

function dropVerdict(
  state: AddressState,
  live: Live,
  signal: AbortSignal | undefined,
): Promise<'rate_limited' | 'unreachable' | 'other'> {
  const answeredSince = () => (state.answeredAt.get(live.port) ?? Number.NEGATIVE_INFINITY) >= live.startedAt;
  if (answeredSince()) return Promise.resolve('rate_limited');
  // Dropped: the neighbours' verdicts no longer wait for this one's answer.
  live.settled = true;
  notify(state);
  const peers = [...state.live].filter((p) => p !== live && p.port === live.port && !p.settled);
  if (peers.length === 0) return Promise.resolve('unreachable');
  return new Promise((resolve) => {
    // Bounded: a neighbour that is slow to answer must not turn this drop into the exchange's
    // timeout; without news within VERDICT_WAIT_MS the drop is read as before (unreachable).
    const timer = setTimeout(() => done('unreachable'), VERDICT_WAIT_MS);
    timer.unref?.();
    const done = (v: 'rate_limited' | 'unreachable' | 'other') => {
      clearTimeout(timer);
      state.watchers.delete(check);
      signal?.removeEventListener('abort', onAbort);
      resolve(v);
    };
    const check = () => {
      if (answeredSince()) done('rate_limited');
      else if (peers.every((p) => p.settled)) done('unreachable');
    };
    const onAbort = () => done('other');
    if (signal?.aborted) return done('other');
    state.watchers.add(check);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
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
  state.waitingCount--;
  return next;
}
