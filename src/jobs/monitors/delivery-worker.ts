// One delivery worker per orchestrator (CONTRACT §14; STYLE.md: a dead endpoint never blocks a
// live one). Each round it lists the monitors that have events due, shares its free slots among
// them (round-robin, one slot each in turn; the next round starts after the last monitor served,
// so with more monitors than slots each gets its turn), and claims that
// many due events per monitor in one transaction (FOR UPDATE SKIP LOCKED: workers of other
// orchestrators take other rows). Attempts run concurrently: at most WEBHOOK_CONCURRENCY in all and
// WEBHOOK_ENDPOINT_CONCURRENCY per endpoint, the webhook URL's host and port, whatever monitors
// share it (100 monitors posting to one hanging receiver hold its few slots, not 100 of the
// worker's). An endpoint starts at a few slots and doubles with each delivered attempt up to that
// (so an endpoint nobody has heard from yet cannot take dozens of slots for 10 s each), and drops
// to 1 while its last attempt failed: an endpoint that hangs holds one slot for its 10 s, not the
// worker. A live endpoint's events are claimed in the same round as a dead one's, whatever the
// dead one's backlog. What the worker remembers of an endpoint is dropped once it has been idle a
// minute (ten while failing): its map holds the endpoints in use, and an endpoint between two
// bursts of a backlog keeps the slots its deliveries earned (forgotten at each idle moment, a busy
// endpoint whose attempts all ended together fell back to 4 slots: bench:monitors (B)).
import type { Logger } from 'pino';
import type { Config } from '../../config/config.ts';
import type { Db } from '../../db/database.ts';
import type { OutboundGuard } from '../../net/outbound-guard.ts';
import { deliverOnce, type AttemptOutcome } from './deliver-attempt.ts';
import {
  abandonEvent,
  claimEvents,
  deliveryTargets,
  disableGone,
  monitorsWithDueEvents,
  recordAttempt,
  webhookUrls,
  type ClaimedEvent,
  type DeliveryTarget,
} from './deliveries-repo.ts';
import type { MonitorMetrics } from './monitor-metrics.ts';
import { nextAttemptAt, retryScheduleOf, type RetrySchedule } from './retry-schedule.ts';
import type { SecretBox } from './webhook-secrets.ts';

export interface DeliveryWorkerDeps {
  db: Db;
  log: Logger;
  config: Config;
  /** The process's outbound guard: every attempt goes through it. */
  guard: OutboundGuard;
  secrets: SecretBox;
  metrics?: MonitorMetrics;
}

export interface DeliveryWorkerOptions {
  /** Pause between rounds when nothing is due. */
  idleMs?: number;
  /** Shortest pause between two rounds while there is work (completions are claimed for in batches). */
  busyMs?: number;
  /** A healthy endpoint idle this long is forgotten (a failing one after ten times as long). */
  endpointIdleMs?: number;
}

interface EndpointState {
  inFlight: number;
  /** The monitor's last attempt here failed: one attempt at a time until one is delivered. */
  failing: boolean;
  /** Slots it may hold now: INITIAL_SLOTS, doubled by each delivery up to the endpoint limit. */
  slots: number;
  /** When its last attempt ended (performance.now()): an endpoint idle long is forgotten. */
  lastUsed: number;
}

/** A healthy endpoint with nothing in flight is forgotten after this; a failing one after ten times as long. */
const ENDPOINT_IDLE_MS = 60_000;

/**
 * The endpoint a monitor delivers to: its URL's host and port. A monitor without a usable URL is
 * its own endpoint (its events are abandoned, not sent).
 */
export function endpointOf(monitorId: number, url: string | null | undefined): string {
  if (url) {
    try {
      return new URL(url).host.toLowerCase();
    } catch {
      // Stored URLs passed the guard; an unparsable one is still delivered (and refused) alone.
    }
  }
  return `monitor:${monitorId}`;
}

/** The deliveries log's last_error of an attempt whose secret no configured key opens. */
export const SECRET_UNREADABLE = 'secret_unreadable';

/** Monitors considered per round (each a branch of the claim statement). */
const MONITORS_PER_ROUND = 500;

/** Slots of a monitor whose endpoint this worker has not delivered to yet (or lately). */
const INITIAL_SLOTS = 4;

export class DeliveryWorker {
  readonly #deps: DeliveryWorkerDeps;
  readonly #schedule: RetrySchedule;
  readonly #idleMs: number;
  readonly #busyMs: number;
  readonly #limit: number;
  readonly #perEndpoint: number;
  readonly #endpointIdleMs: number;
  readonly #endpoints = new Map<string, EndpointState>();
  readonly #stop = new AbortController();
  readonly #running = new Set<Promise<void>>();
  #inFlight = 0;
  /** Where the next round's list of monitors starts (keyset): every monitor gets its turn first. */
  #after = 0;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  constructor(deps: DeliveryWorkerDeps, opts: DeliveryWorkerOptions = {}) {
    this.#deps = deps;
    this.#schedule = retryScheduleOf(deps.config);
    this.#idleMs = opts.idleMs ?? 500;
    this.#busyMs = opts.busyMs ?? 50;
    this.#endpointIdleMs = opts.endpointIdleMs ?? ENDPOINT_IDLE_MS;
    this.#limit = deps.config.WEBHOOK_CONCURRENCY;
    this.#perEndpoint = deps.config.WEBHOOK_ENDPOINT_CONCURRENCY;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Stops claiming, waits for the attempts in flight (bounded by their 10 s), then returns. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#stop.abort();
      this.#wake?.();
      await this.#loop;
      await Promise.allSettled([...this.#running]);
    })();
    return this.#closing;
  }

  async #run(): Promise<void> {
    while (!this.#stop.signal.aborted) {
      let claimed = 0;
      try {
        claimed = await this.round();
      } catch (err) {
        this.#deps.log.warn({ err: { message: (err as Error).message } }, 'webhook delivery round failed');
      }
      // Busy: come back soon (completions free slots); idle or full: wait to be woken or for the next round.
      const wait = claimed > 0 && this.#inFlight < this.#limit ? this.#busyMs : this.#idleMs;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
  }

  /** One round: share the free slots among the monitors with due events and start their attempts. */
  async round(): Promise<number> {
    const free = this.#limit - this.#inFlight;
    if (free <= 0) return 0;
    const db = this.#deps.db;
    let order = await monitorsWithDueEvents(db, this.#after, MONITORS_PER_ROUND);
    // Past the last monitor with events due: wrap round to the first ones.
    if (order.length < MONITORS_PER_ROUND && this.#after > 0) {
      const seen = new Set(order);
      const head = await monitorsWithDueEvents(db, 0, MONITORS_PER_ROUND - order.length);
      order = [...order, ...head.filter((m) => !seen.has(m))];
    }
    this.#forgetIdle();
    if (order.length === 0) return 0;
    const urls = await webhookUrls(db, order);
    const endpointOfMonitor = new Map(order.map((m) => [m, endpointOf(m, urls.get(m))]));
    // Room per endpoint, shared by the monitors that post to it.
    const endpointRoom = new Map<string, number>();
    for (const e of new Set(endpointOfMonitor.values())) {
      const s = this.#endpoints.get(e);
      const cap = s?.failing ? 1 : Math.min(this.#perEndpoint, s?.slots ?? INITIAL_SLOTS);
      const r = cap - (s?.inFlight ?? 0);
      if (r > 0) endpointRoom.set(e, r);
    }
    const room = new Set(order.filter((m) => endpointRoom.has(endpointOfMonitor.get(m)!)));
    const want = new Map<number, number>();
    let left = free;
    while (left > 0 && room.size > 0) {
      for (const m of room) {
        if (left === 0) break;
        const e = endpointOfMonitor.get(m)!;
        const r = endpointRoom.get(e) ?? 0;
        if (r === 0) {
          room.delete(m);
          continue;
        }
        want.set(m, (want.get(m) ?? 0) + 1);
        left--;
        endpointRoom.set(e, r - 1);
      }
    }
    // The next round starts after the last monitor given a slot in this one.
    // (From the start again once every monitor listed got one and none was left out of the list.)
    const served = [...want.keys()];
    const more = served.length < order.length || order.length === MONITORS_PER_ROUND;
    this.#after = more ? (served.at(-1) ?? 0) : 0;
    const events = await claimEvents(this.#deps.db, [...want]);
    if (events.length === 0) return 0;
    const targets = await deliveryTargets(
      this.#deps.db,
      events.map((e) => e.monitorId),
    );
    // The endpoint its slot was counted against (a URL changed since is attempted at the new one
    // this once, counted where it was reserved).
    for (const ev of events) this.#start(ev, targets.get(ev.monitorId), endpointOfMonitor.get(ev.monitorId)!);
    return events.length;
  }

  /** Endpoints idle for endpointIdleMs are forgotten (failing ones after ten times as long). */
  #forgetIdle(): void {
    const now = performance.now();
    for (const [e, s] of this.#endpoints) {
      const idleMs = s.failing ? this.#endpointIdleMs * 10 : this.#endpointIdleMs;
      if (s.inFlight === 0 && now - s.lastUsed >= idleMs) this.#endpoints.delete(e);
    }
  }

  /** Endpoints this worker remembers, idle ones forgotten first (tests). */
  get endpointsRemembered(): number {
    this.#forgetIdle();
    return this.#endpoints.size;
  }

  #start(ev: ClaimedEvent, target: DeliveryTarget | undefined, endpoint: string): void {
    let s = this.#endpoints.get(endpoint);
    if (!s) {
      s = { inFlight: 0, failing: false, slots: INITIAL_SLOTS, lastUsed: performance.now() };
      this.#endpoints.set(endpoint, s);
    }
    s.inFlight++;
    this.#inFlight++;
    this.#deps.metrics?.lag.observe(Math.max(0, (Date.now() - ev.dueAt.getTime()) / 1000));
    const p = this.#attempt(ev, target, s)
      .catch((err: unknown) => {
        // The claim's lease runs out and another round attempts it again.
        this.#deps.log.warn(
          { err: { message: (err as Error).message }, event: ev.publicId },
          'webhook attempt not recorded',
        );
      })
      .finally(() => {
        s.inFlight--;
        s.lastUsed = performance.now();
        this.#inFlight--;
        this.#running.delete(p);
        this.#wake?.();
      });
    this.#running.add(p);
  }

  async #attempt(ev: ClaimedEvent, target: DeliveryTarget | undefined, s: EndpointState): Promise<void> {
    const { db, guard, secrets, metrics } = this.#deps;
    if (!target || target.deleted || !target.url || target.disabled || !target.secret) {
      const why =
        !target || target.deleted ? 'monitor deleted' : target.disabled ? 'webhook disabled' : 'webhook removed';
      await abandonEvent(db, ev, why);
      metrics?.deliveries.inc({ status: 'failed' });
      return;
    }
    const keys = [secrets.open(target.secret, target.ref)];
    if (target.prevSecret && target.prevSecretUntil && target.prevSecretUntil.getTime() > Date.now()) {
      keys.push(secrets.open(target.prevSecret, target.ref));
    }
    const usable = keys.filter((k): k is string => k !== null);
    if (usable.length === 0) {
      // Sealed under a WEBHOOK_SECRET_KEY this process does not hold (an operator retired a key
      // before `webhooks rekey` re-sealed it), or for another monitor (a row copied): a failed
      // attempt on the retry schedule, so the event fails when its 24 h window closes instead of
      // being claimed again every lease for ever.
      this.#deps.log.error(
        { event: ev.publicId, monitor: target.ref },
        'webhook secret cannot be opened with WEBHOOK_SECRET_KEY(_PREVIOUS)',
      );
      await this.#record(
        ev,
        { kind: 'failed', statusCode: null, error: SECRET_UNREADABLE },
        s,
        target.failingSince,
        true,
      );
      return;
    }
    const outcome = await deliverOnce(guard, {
      url: target.url,
      webhookId: ev.publicId,
      body: ev.body,
      secrets: usable,
      signal: this.#stop.signal,
    });
    await this.#record(ev, outcome, s, target.failingSince);
  }

  async #record(
    ev: ClaimedEvent,
    outcome: AttemptOutcome,
    s: EndpointState,
    failingSince: Date | null,
    sentNothing = false,
  ): Promise<void> {
    const { db, metrics } = this.#deps;
    if (outcome.kind === 'delivered') {
      s.failing = false;
      s.slots = Math.min(this.#perEndpoint, s.slots * 2);
      if (
        await recordAttempt(
          db,
          ev,
          { statusCode: outcome.statusCode, error: null, nextAttemptAt: null, final: 'delivered' },
          failingSince,
        )
      )
        metrics?.deliveries.inc({ status: 'delivered' });
      return;
    }
    if (this.#stop.signal.aborted && outcome.kind === 'failed' && outcome.statusCode === null && !sentNothing) {
      // Shutdown cut the attempt short (not the endpoint's failure): the lease runs out and
      // another worker attempts it.
      return;
    }
    if (!sentNothing) {
      // The endpoint failed. (A secret that does not open is the monitor's, not the endpoint's:
      // the other monitors posting there keep their slots.)
      s.failing = true;
      s.slots = INITIAL_SLOTS;
    }
    if (outcome.kind === 'gone') {
      if (
        await recordAttempt(
          db,
          ev,
          {
            statusCode: 410,
            error: 'the receiver answered 410 Gone: webhook disabled',
            nextAttemptAt: null,
            final: 'failed',
          },
          failingSince,
        )
      ) {
        await disableGone(db, ev);
        metrics?.deliveries.inc({ status: 'gone' });
      }
      return;
    }
    const next = nextAttemptAt(
      this.#schedule,
      ev.attempts + 1,
      Date.now(),
      ev.windowStartedAt.getTime(),
      outcome.retryAfterSeconds,
    );
    const recorded = await recordAttempt(
      db,
      ev,
      {
        statusCode: outcome.statusCode,
        error: outcome.error,
        nextAttemptAt: next === null ? null : new Date(next),
        final: next === null ? 'failed' : null,
      },
      failingSince,
    );
    if (recorded) metrics?.deliveries.inc({ status: next === null ? 'failed' : 'retrying' });
  }
}
