// Congestion control of the stub resolver (DESIGN.md "Congestion is ours, silence is the
// target's"): questions in flight are bounded per upstream server and per zone by AIMD windows, as
// TCP and massdns bound theirs, so a scan slows down to what a zone answers instead of flooding
// it, reading its rate limiting (NSD/BIND RRL drop what exceeds ~200 replies a second) as
// silence, and backing it off as dead (issue 48).
//
//   - A window starts at `initialWindow` and grows by one per answer up to its first loss (slow
//     start), by 1/window per answer after it (additive increase), never beyond its cap.
//   - A loss halves it (multiplicative decrease, floor 1), once per round: a loss of a question
//     sent before the last cut does not cut again, so a burst of drops is one signal. A zone's
//     losses are its questions that timed out, that were answered only after their retransmission,
//     or that came back SERVFAIL. A server's losses are only timeouts during which the server sent
//     nothing at all, and it grows back by one per answer after them: one zone's drops must never
//     shrink everyone's upstream.
//   - A question beyond either window waits here, in our process. Its deadline starts when it is
//     sent (the stub resolver starts its timer after acquire()), so time queued here is never a
//     target's timeout. A waiter that cannot be sent within `queueWaitMs` is given back unasked
//     (acquire() resolves null): a local outcome, retryable, never the target's.
//   - Waiters are shared max-min fair between tenants (workspaces), as the lane's run gate and the
//     politeness slots per address are (workers/lane-runner/run-gate.ts, src/net/address-slots.ts):
//     a freed place goes to the tenant with the fewest questions in flight whose waiter can be
//     sent (its zone has room); within a tenant, its zones take turns, each zone's waiters in
//     arrival order. So one tenant's burst, or its thousands of questions into a dead zone (whose
//     window is down to 1), never hold another tenant's questions to a healthy zone behind them.
//   - Each zone remembers when it last answered: a timeout of a question sent before that is a
//     drop by a zone that answers (rate limiting), not evidence that the zone is dead; the stub
//     resolver feeds only the other timeouts to the zone backoff (./zone-backoff.ts).
// Per process, in memory: N lane processes hold N windows on a zone (docs/operations.md). Zones
// with nothing in flight and no waiter are forgotten first (least recently used); at most `maxZones`
// are tracked.
import { AimdWindow } from '../resilience/aimd-window.ts';

export interface CongestionOptions {
  /** Questions in flight to one zone at most (DNS_ZONE_WINDOW_MAX). */
  zoneWindowMax: number;
  /** Questions in flight to one upstream server at most (DNS_SERVER_WINDOW_MAX). */
  serverWindowMax: number;
  /** How long a question may wait for room before it is given back unasked (DNS_QUEUE_WAIT_MS). */
  queueWaitMs: number;
  /** The window a zone or server starts with (default 16, at most its cap). */
  initialWindow?: number;
  /** Zones tracked at once (default 10,000). */
  maxZones?: number;
  /** Tests only: the clock (ms). */
  now?: () => number;
}

/** How a sent question ended, as a congestion signal. */
export type QuestionEnd =
  /** A reply (any rcode but SERVFAIL) to its first transmission. */
  | 'answer'
  /** A reply, but only after the question was retransmitted: one transmission was lost. */
  | 'answer_after_loss'
  | 'servfail'
  /** No reply before the deadline; `serverSilent` when the server sent nothing at all meanwhile. */
  | 'timeout'
  | 'silent_timeout'
  /** Aborted, failed at the socket: says nothing about congestion. */
  | 'other';

export interface Permit {
  /** When the question was let through (its deadline starts here). */
  readonly sentAt: number;
  /** Whether the question's zone answered anything since this question was sent. */
  zoneAnsweredSince(): boolean;
  /** Whether the question's zone gave a real answer (any rcode but SERVFAIL) within the last `ms`. */
  zoneAnsweredWithin(ms: number): boolean;
  /** Gives the place back with what the question's end says about congestion (once). */
  release(end: QuestionEnd): void;
}

/** A zone's or a server's window (the AIMD arithmetic: src/resilience/aimd-window.ts), with its questions in flight. */
class Window extends AimdWindow {
  inFlight = 0;
  lastReplyAt = Number.NEGATIVE_INFINITY;
  /** The last reply that was no SERVFAIL: the zone itself works (a SERVFAIL may be a resolver's). */
  lastAnswerAt = Number.NEGATIVE_INFINITY;
  /** A server's window (`regrowFast`): after a cut it grows back by one per answer (it was silent, not slow). */
  constructor(initial: number, max: number, regrowFast = false) {
    super(initial, max, { regrowFast });
  }
  hasRoom(): boolean {
    return this.inFlight < this.size;
  }
  answered(now: number): void {
    this.lastReplyAt = now;
    this.lastAnswerAt = now;
    this.grow();
  }
  /** A loss of a question sent at `sentAt`; true when it cut the window. */
  lost(sentAt: number, now: number): boolean {
    return this.cut(sentAt, now);
  }
}

interface Waiter {
  tenant: string;
  zone: string;
  server: number;
  grant: () => void;
}

interface TenantState {
  inFlight: number;
  /** Turn at which a waiter of this tenant was last granted (ties between tenants). */
  servedAt: number;
  /** Waiters by zone ('' : no zone), each list in arrival order; map order is the zones' turn. */
  waiting: Map<string, Waiter[]>;
}

export interface CongestionStats {
  /** Window size per server index. */
  serverWindows: number[];
  /** Zones tracked, and how many of them have a window below the cap. */
  zones: number;
  zonesLimited: number;
  /** The smallest window of a zone with questions in flight or waiting (the cap when none). */
  smallestZoneWindow: number;
  inFlight: number;
  waiting: number;
  /** Waiters given back unasked (queue wait over), and window cuts, since the start. */
  givenBack: number;
  cuts: { zone: number; server: number };
}

/** Every live instance of the process, for its metrics (./congestion-metrics.ts). */
const live = new Set<DnsCongestion>();

/** The process's congestion controllers (one per stub resolver) that are not closed. */
export function liveCongestion(): ReadonlySet<DnsCongestion> {
  return live;
}

export class DnsCongestion {
  readonly #o: Required<CongestionOptions>;
  readonly #servers: Window[] = [];
  /** Zone → window; map order is recency (touched zones move to the end). */
  readonly #zones = new Map<string, Window>();
  readonly #tenants = new Map<string, TenantState>();
  #waiting = 0;
  #inFlight = 0;
  #turn = 0;
  #givenBack = 0;
  readonly #cuts = { zone: 0, server: 0 };

  constructor(o: CongestionOptions) {
    const zoneMax = Math.max(1, Math.floor(o.zoneWindowMax));
    const serverMax = Math.max(1, Math.floor(o.serverWindowMax));
    this.#o = {
      zoneWindowMax: zoneMax,
      serverWindowMax: serverMax,
      queueWaitMs: Math.max(1, o.queueWaitMs),
      initialWindow: Math.max(1, Math.floor(o.initialWindow ?? 16)),
      maxZones: Math.max(16, o.maxZones ?? 10_000),
      now: o.now ?? (() => performance.now()),
    };
    live.add(this);
  }

  /** Leaves the metrics (its resolver closed); questions still work. */
  close(): void {
    live.delete(this);
  }

  /** The window of a zone now (its initial one when untracked): tests, metrics. */
  zoneWindow(zone: string): number {
    return this.#zones.get(zone)?.size ?? Math.min(this.#o.initialWindow, this.#o.zoneWindowMax);
  }

  serverWindow(server: number): number {
    return this.#server(server).size;
  }

  /** Questions waiting, by anyone or by one tenant (tests, metrics). */
  waitingFor(tenant?: string): number {
    if (tenant === undefined) return this.#waiting;
    let n = 0;
    for (const list of this.#tenants.get(tenant)?.waiting.values() ?? []) n += list.length;
    return n;
  }

  inFlightFor(tenant?: string): number {
    return tenant === undefined ? this.#inFlight : (this.#tenants.get(tenant)?.inFlight ?? 0);
  }

  stats(): CongestionStats {
    let limited = 0;
    let smallest = this.#o.zoneWindowMax;
    for (const w of this.#zones.values()) {
      if (w.size < w.max) limited++;
      if (w.inFlight > 0 && w.size < smallest) smallest = w.size;
    }
    for (const t of this.#tenants.values())
      for (const zone of t.waiting.keys()) {
        const w = this.#zones.get(zone);
        if (w && w.size < smallest) smallest = w.size;
      }
    return {
      serverWindows: this.#servers.map((w) => w.size),
      zones: this.#zones.size,
      zonesLimited: limited,
      smallestZoneWindow: smallest,
      inFlight: this.#inFlight,
      waiting: this.#waiting,
      givenBack: this.#givenBack,
      cuts: { ...this.#cuts },
    };
  }

  /**
   * A place for one question of `tenant` about a name in `zone` ('' for none: a public suffix, the
   * root), to be sent to server `server`. Resolves with the permit once the question may be sent,
   * with null when it could not be within the queue wait (never asked), with 'aborted' when
   * `signal` ended the wait.
   */
  acquire(tenant: string, zone: string, server: number, signal?: AbortSignal): Promise<Permit | null | 'aborted'> {
    if (signal?.aborted) return Promise.resolve('aborted');
    const t = this.#tenant(tenant);
    const zw = zone ? this.#zone(zone) : null;
    const sw = this.#server(server);
    // Nobody waits: the question goes now if both windows have room.
    if (this.#waiting === 0 && sw.hasRoom() && (!zw || zw.hasRoom()))
      return Promise.resolve(this.#permit(t, tenant, zone, server));
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const leave = (): boolean => {
        const list = t.waiting.get(zone);
        const i = list ? list.indexOf(waiter) : -1;
        if (i < 0) return false;
        list!.splice(i, 1);
        if (list!.length === 0) t.waiting.delete(zone);
        this.#waiting--;
        this.#forget(tenant, t);
        return true;
      };
      const onAbort = () => {
        clearTimeout(timer);
        if (leave()) resolve('aborted');
      };
      const waiter: Waiter = {
        tenant,
        zone,
        server,
        grant: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(this.#permit(t, tenant, zone, server));
        },
      };
      timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        if (leave()) {
          this.#givenBack++;
          resolve(null);
        }
      }, this.#o.queueWaitMs);
      timer.unref?.();
      signal?.addEventListener('abort', onAbort, { once: true });
      const list = t.waiting.get(zone);
      if (list) list.push(waiter);
      else t.waiting.set(zone, [waiter]);
      this.#waiting++;
      this.#grant();
    });
  }

  #permit(t: TenantState, tenant: string, zone: string, server: number): Permit {
    const zw = zone ? this.#zone(zone) : null;
    const sw = this.#server(server);
    t.inFlight++;
    sw.inFlight++;
    if (zw) zw.inFlight++;
    this.#inFlight++;
    const sentAt = this.#o.now();
    let released = false;
    return {
      sentAt,
      zoneAnsweredSince: () => (zw ? zw.lastReplyAt >= sentAt : false),
      zoneAnsweredWithin: (ms) => (zw ? this.#o.now() - zw.lastAnswerAt <= ms : false),
      release: (end) => {
        if (released) return;
        released = true;
        t.inFlight--;
        sw.inFlight--;
        if (zw) zw.inFlight--;
        this.#inFlight--;
        const now = this.#o.now();
        if (end === 'answer' || end === 'answer_after_loss' || end === 'servfail') sw.answered(now);
        if (zw) {
          if (end === 'answer') zw.answered(now);
          else if (end === 'answer_after_loss') {
            if (zw.lost(sentAt, now)) this.#cuts.zone++;
            zw.lastReplyAt = now;
            zw.lastAnswerAt = now;
          } else if (end === 'servfail') {
            if (zw.lost(sentAt, now)) this.#cuts.zone++;
            zw.lastReplyAt = now;
          } else if (end === 'timeout' || end === 'silent_timeout') {
            if (zw.lost(sentAt, now)) this.#cuts.zone++;
          }
        }
        if (end === 'silent_timeout' && sw.lost(sentAt, now)) this.#cuts.server++;
        this.#forget(tenant, t);
        this.#grant();
      },
    };
  }

  /** Lets waiters go while windows have room: the tenant with the fewest in flight first. */
  #grant(): void {
    while (this.#waiting > 0) {
      let chosen: { t: TenantState; zone: string; list: Waiter[] } | null = null;
      let fewest = Number.POSITIVE_INFINITY;
      let oldest = Number.POSITIVE_INFINITY;
      for (const t of this.#tenants.values()) {
        if (t.waiting.size === 0) continue;
        if (t.inFlight > fewest || (t.inFlight === fewest && t.servedAt >= oldest)) continue;
        for (const [zone, list] of t.waiting) {
          const head = list[0]!;
          if (!this.#server(head.server).hasRoom()) continue;
          if (zone && !this.#zone(zone).hasRoom()) continue;
          chosen = { t, zone, list };
          fewest = t.inFlight;
          oldest = t.servedAt;
          break;
        }
      }
      if (!chosen) return;
      const { t, zone, list } = chosen;
      const waiter = list.shift()!;
      // The zone's turn is over: it goes to the back of the tenant's zones.
      t.waiting.delete(zone);
      if (list.length > 0) t.waiting.set(zone, list);
      this.#waiting--;
      t.servedAt = ++this.#turn;
      waiter.grant();
    }
  }

  #tenant(tenant: string): TenantState {
    let t = this.#tenants.get(tenant);
    if (!t) {
      t = { inFlight: 0, servedAt: 0, waiting: new Map() };
      this.#tenants.set(tenant, t);
    }
    return t;
  }

  /** A tenant with nothing in flight and nothing waiting leaves the table (bounded). */
  #forget(tenant: string, t: TenantState): void {
    if (t.inFlight === 0 && t.waiting.size === 0) this.#tenants.delete(tenant);
  }

  #server(i: number): Window {
    let w = this.#servers[i];
    if (!w) {
      // A server starts at its cap (a zone's window is what a zone's rate limiting meets first), and
      // after a cut (a round in which it sent nothing at all) grows back by one per answer: a
      // quiet process asking only a dead zone may see that, and must not hold the next tenant's
      // questions at a window of 1 for thousands of answers.
      w = new Window(this.#o.serverWindowMax, this.#o.serverWindowMax, true);
      this.#servers[i] = w;
    }
    return w;
  }

  #zone(zone: string): Window {
    let w = this.#zones.get(zone);
    if (w) {
      this.#zones.delete(zone); // re-inserted last: the most recently used
      this.#zones.set(zone, w);
      return w;
    }
    w = new Window(Math.min(this.#o.initialWindow, this.#o.zoneWindowMax), this.#o.zoneWindowMax);
    this.#zones.set(zone, w);
    if (this.#zones.size > this.#o.maxZones) this.#sweep();
    return w;
  }

  /** Forgets the least recently used zones with nothing in flight (their window starts over). */
  #sweep(): void {
    for (const [zone, w] of this.#zones) {
      if (this.#zones.size <= this.#o.maxZones) return;
      if (w.inFlight > 0 || this.#hasWaiters(zone)) continue;
      this.#zones.delete(zone);
    }
  }

  #hasWaiters(zone: string): boolean {
    for (const t of this.#tenants.values()) if (t.waiting.has(zone)) return true;
    return false;
  }
}
