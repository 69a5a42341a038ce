// How many checks one lane process runs at once, set from the event-loop lag they cause (issue 20):
// a check's main-thread work (handshakes, HTTP parsing, MySQL and Redis round trips, pool hand-offs)
// comes in many short slices, and with enough checks at once the slices of one turn of the loop add
// up to a lag every timer and socket of the process feels. A fixed LANE_CONCURRENCY cannot be right
// on every machine and every load, so the limit follows the lag: additive increase, multiplicative
// decrease (AIMD, as TCP congestion control), over windows of perf_hooks.monitorEventLoopDelay.
//
// - A window whose lag p99 is over the target while the loop was busy (event-loop utilization at
//   least BUSY) : limit × DECREASE (at least one less), never under the floor.
// - A window under the target in which the limit was reached (checks waited for it): limit + 1,
//   never over the ceiling (LANE_CONCURRENCY). A lane with less work than its limit does not grow it.
// - Otherwise the limit holds. In particular a lag over the target with a mostly idle loop is the
//   machine's (other processes hold the cores and the timer fires late): running fewer checks
//   would cost throughput and not shorten it.
// The controller is pure (observe() takes the window's figures), so its test injects them.
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';

/** The share of the limit a window over the target keeps. */
export const DECREASE = 0.75;
/** Event-loop utilization from which a lag over the target is taken as the lane's own doing. */
export const BUSY = 0.5;

export interface LagLimitOptions {
  /** The lowest limit (at least 1): a lane always runs this many checks at once when it has them. */
  floor: number;
  /** The highest limit: LANE_CONCURRENCY. */
  ceiling: number;
  /** Lag p99 of a window, ms, over which the limit shrinks. */
  targetMs: number;
}

export class LagLimit {
  readonly floor: number;
  readonly ceiling: number;
  readonly targetMs: number;
  #limit: number;

  constructor(o: LagLimitOptions) {
    if (!Number.isInteger(o.floor) || o.floor < 1) throw new RangeError('the floor is a whole number ≥ 1');
    // LANE_CONCURRENCY is the operator's cap: a floor above it (the default floor with a small
    // LANE_CONCURRENCY) is brought down to it, never the cap raised to the floor.
    this.ceiling = Math.max(1, o.ceiling);
    this.floor = Math.min(o.floor, this.ceiling);
    this.targetMs = o.targetMs;
    // From the ceiling, as a fixed limit would: the first window over the target brings it down.
    this.#limit = this.ceiling;
  }

  get limit(): number {
    return this.#limit;
  }

  /**
   * One window: its lag p99 (ms), its event-loop utilization (0–1) and whether the limit held
   * checks back during it. Returns the new limit.
   */
  observe(w: { lagP99Ms: number; utilization: number; limited: boolean }): number {
    if (w.lagP99Ms > this.targetMs) {
      if (w.utilization >= BUSY)
        this.#limit = Math.max(this.floor, Math.min(this.#limit - 1, Math.floor(this.#limit * DECREASE)));
    } else if (w.limited) {
      this.#limit = Math.min(this.ceiling, this.#limit + 1);
    }
    return this.#limit;
  }
}

export interface LagWatch {
  stop(): void;
}

/**
 * Calls `onWindow` every `windowMs` with the window's event-loop lag p99 in ms (the histogram is
 * reset per window) and its event-loop utilization. The delay is sampled every 10 ms, as
 * prom-client's nodejs_eventloop_lag_* are, so a window's figure and the scraped one measure the
 * same thing (both include the 10 ms).
 */
export function watchLag(windowMs: number, onWindow: (w: { lagP99Ms: number; utilization: number }) => void): LagWatch {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  let elu = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const { utilization } = performance.eventLoopUtilization(now, elu);
    elu = now;
    // No sample yet (a window shorter than the resolution, or a frozen loop): nothing to say.
    if (h.count > 0) onWindow({ lagP99Ms: h.percentile(99) / 1e6, utilization });
    h.reset();
  }, windowMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      h.disable();
    },
  };
}
