// One circuit breaker for every dependency whose readiness can go `down` (the resolver, RDAP
// servers, the IP context dataset, MySQL and Redis for /readyz, the lane-liveness view).
//
// Why a breaker and not a counter: a counter that only real traffic can reset sticks once the
// readiness it drives refuses that traffic (issue 23: a 1.5 s DNS outage turned into minutes of
// 503 because nothing was left to send the query that would have reset it). Here, while open,
// the breaker probes the dependency itself on its own schedule — every `probeEveryMs` (default
// 1 s) with ±`jitter` so that many processes do not probe in step, one probe at a time, each
// bounded by `probeTimeoutMs` — whatever the traffic does. A probe that succeeds closes it, so
// readiness returns within about one probe interval of the dependency's return (≤ 2 s with the
// defaults). A real success in any state closes it too (lane processes keep asking).
//
// States: closed (counting consecutive failures) → open (at `failuresToOpen`; the probe timer
// runs) → half_open (a probe in flight) → closed on success, else open with the next probe
// scheduled. The interval stays constant (no exponential growth): the cost is one probe per
// interval per process while the dependency is down, and the target is a prompt return.
//
// verify() is the same probe run at once while closed, for a caller that has a doubt but no
// proof (the resolver: questions time out and its servers have sent nothing at all meanwhile): a
// failed verification opens it, a good one changes nothing. So a dependency that blackholes
// everything is still caught, while failures that may be the caller's target's own (a zone that
// never answers) are never counted as the dependency's.
//
// retryAfterMs() says, while refusing, when the condition may change (the next probe): the
// Retry-After of a 503 that the breaker caused (CONTRACT §3).
//
// Timers are unref'd and only run while open; stop() clears them for good. The clock is
// injectable so unit tests drive time by hand.

export type BreakerState = 'closed' | 'open' | 'half_open';

/**
 * A breaker's move between states, for the operator's view (breaker-observer.ts logs and counts
 * them). `downMs` is set on the return to closed: how long the dependency was refused.
 */
export interface BreakerTransition {
  name: string;
  from: BreakerState;
  to: BreakerState;
  downMs?: number;
}

type TransitionListener = (t: BreakerTransition) => void;
const listeners = new Set<TransitionListener>();

/**
 * Every breaker of this process reports its transitions here (breakers are created deep inside
 * the resolver, the RDAP client, the health route…, where no logger or registry is at hand).
 * Returns the unsubscribe.
 */
export function onBreakerTransition(fn: TransitionListener): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export interface BreakerClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** In [0, 1): the jitter's source. */
  random(): number;
}

export const systemClock: BreakerClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
  random: () => Math.random(),
};

export interface BreakerOptions {
  /** For diagnostics (e.g. `resolver`, `rdap`, `mysql`). */
  name: string;
  /** Consecutive failures that open it (≥ 1). */
  failuresToOpen: number;
  /** Asks the dependency directly; true = it answers. A throw or a timeout counts as false. */
  probe: (signal: AbortSignal) => Promise<boolean>;
  /** Bound of one probe (default 1000 ms). */
  probeTimeoutMs?: number;
  /** Mean interval between probes while open (default 1000 ms). */
  probeEveryMs?: number;
  /** Relative spread of the interval, 0–1 (default 0.2: 800–1200 ms). */
  jitter?: number;
  clock?: BreakerClock;
  onChange?: (from: BreakerState, to: BreakerState) => void;
}

/** `ms` spread by ±`jitter` (e.g. 1000 ± 20 %): many processes then never act in step. */
export function jittered(ms: number, jitter = 0.2, random: () => number = Math.random): number {
  return Math.max(0, Math.round(ms * (1 + jitter * (2 * random() - 1))));
}

export class Breaker {
  readonly name: string;
  readonly #o: Required<Omit<BreakerOptions, 'onChange' | 'name'>> & Pick<BreakerOptions, 'onChange'>;
  #state: BreakerState = 'closed';
  #failures = 0;
  #timer: unknown;
  /** Bumped whenever a probe's result no longer matters (closed by traffic, stopped). */
  #generation = 0;
  #stopped = false;
  #probes = 0;
  /** When it last left closed (the clock's time), for the transition's downMs. */
  #openedAt = 0;
  /** While open: when the scheduled probe starts; while half-open: when the running one gives up. */
  #decidesAt = 0;
  /** The verification in flight (verify()), shared by concurrent callers. */
  #verifying: Promise<boolean> | undefined;
  #verifications = 0;

  constructor(opts: BreakerOptions) {
    if (!(opts.failuresToOpen >= 1)) throw new Error('failuresToOpen must be at least 1');
    this.name = opts.name;
    this.#o = {
      failuresToOpen: opts.failuresToOpen,
      probe: opts.probe,
      probeTimeoutMs: opts.probeTimeoutMs ?? 1000,
      probeEveryMs: opts.probeEveryMs ?? 1000,
      jitter: Math.min(1, Math.max(0, opts.jitter ?? 0.2)),
      clock: opts.clock ?? systemClock,
      onChange: opts.onChange,
    };
  }

  get state(): BreakerState {
    return this.#state;
  }

  /** Probes started so far (tests, diagnostics). */
  get probes(): number {
    return this.#probes;
  }

  /** Verifications started so far (tests, diagnostics). */
  get verifications(): number {
    return this.#verifications;
  }

  /**
   * While open or half-open, ms until a probe may have closed it (the next probe's start, or the
   * running probe's bound); null while closed. The Retry-After of a refusal it caused.
   */
  retryAfterMs(): number | null {
    if (this.#state === 'closed') return null;
    return Math.max(0, this.#decidesAt - this.#o.clock.now());
  }

  /** ready while closed; down while open or half-open (a probe decides). */
  readiness(): 'ready' | 'down' {
    return this.#state === 'closed' ? 'ready' : 'down';
  }

  isOpen(): boolean {
    return this.#state !== 'closed';
  }

  /** A real success: closed, counter reset, any probe schedule dropped. */
  success(): void {
    this.#failures = 0;
    if (this.#state !== 'closed') this.#close();
  }

  /** A real failure: counted while closed; while open the probes alone decide. */
  failure(): void {
    if (this.#state !== 'closed' || this.#stopped) return;
    this.#failures++;
    if (this.#failures >= this.#o.failuresToOpen) this.#open();
  }

  /**
   * Runs the probe now, while closed, for a caller that doubts the dependency without proof of a
   * failure: a failed verification opens the breaker at once (the probes then take over); a good
   * one resets the failure count. One at a time: concurrent callers share the one in flight.
   * While open or half-open, or stopped, it asks nothing and says what the state says.
   */
  verify(): Promise<boolean> {
    if (this.#state !== 'closed' || this.#stopped) return Promise.resolve(this.#state === 'closed');
    this.#verifying ??= this.#verify().finally(() => {
      this.#verifying = undefined;
    });
    return this.#verifying;
  }

  async #verify(): Promise<boolean> {
    const generation = this.#generation;
    this.#verifications++;
    const ok = await this.#ask();
    // Stopped meanwhile, or opened and closed again by others: this answer is old news.
    if (generation !== this.#generation || this.#stopped || this.#state !== 'closed') return ok;
    if (ok) this.#failures = 0;
    else this.#open();
    return ok;
  }

  /** Clears every timer; no probe runs after this. The state is kept as it was. */
  stop(): void {
    this.#stopped = true;
    this.#generation++;
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #set(to: BreakerState): void {
    const from = this.#state;
    if (from === to) return;
    this.#state = to;
    this.#o.onChange?.(from, to);
    if (from === 'closed') this.#openedAt = this.#o.clock.now();
    const t: BreakerTransition = { name: this.name, from, to };
    if (to === 'closed') t.downMs = Math.max(0, this.#o.clock.now() - this.#openedAt);
    for (const fn of listeners) {
      try {
        fn(t);
      } catch {
        // An observer's bug must not change what the breaker decides.
      }
    }
  }

  #open(): void {
    this.#set('open');
    this.#schedule();
  }

  #close(): void {
    this.#generation++;
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#failures = 0;
    this.#set('closed');
  }

  #schedule(): void {
    if (this.#stopped) return;
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer);
    const clock = this.#o.clock;
    const delay = jittered(this.#o.probeEveryMs, this.#o.jitter, () => clock.random());
    this.#decidesAt = clock.now() + delay;
    this.#timer = this.#o.clock.setTimeout(() => {
      this.#timer = undefined;
      void this.#probe();
    }, delay);
  }

  async #probe(): Promise<void> {
    if (this.#stopped || this.#state !== 'open') return;
    const generation = this.#generation;
    this.#decidesAt = this.#o.clock.now() + this.#o.probeTimeoutMs;
    this.#set('half_open');
    this.#probes++;
    const ok = await this.#ask();
    // Closed by real traffic meanwhile, or stopped: this probe's answer is old news.
    if (generation !== this.#generation || this.#stopped) return;
    if (ok) this.#close();
    else this.#open();
  }

  /** One probe, bounded by probeTimeoutMs; a throw or the bound is false, and the probe is aborted. */
  async #ask(): Promise<boolean> {
    const ac = new AbortController();
    let timeout: unknown;
    let ok = false;
    try {
      ok = await Promise.race([
        this.#o.probe(ac.signal).then(
          (v) => v === true,
          () => false,
        ),
        new Promise<boolean>((resolve) => {
          timeout = this.#o.clock.setTimeout(() => resolve(false), this.#o.probeTimeoutMs);
        }),
      ]);
    } finally {
      this.#o.clock.clearTimeout(timeout);
      ac.abort();
    }
    return ok;
  }
}
