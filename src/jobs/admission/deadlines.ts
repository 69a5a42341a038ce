// Deadlines of inline executions kept by one interval rather than a timer per request: arming and
// clearing a setTimeout (and a 'close' closure) for every admitted lookup showed in the admission
// profile, and nearly every lookup ends long before its deadline. All deadlines of one instance
// have the same length, so the Map's insertion order is their order of expiry and a sweep stops at
// the first that is still running. An execution is aborted between its deadline and one sweep
// period after it.
export class Deadlines {
  readonly #ms: number;
  readonly #periodMs: number;
  readonly #running = new Map<AbortController, number>();
  #timer: NodeJS.Timeout | undefined;

  constructor(ms: number, periodMs = Math.max(10, Math.min(1000, ms / 10))) {
    this.#ms = ms;
    this.#periodMs = periodMs;
  }

  /** A controller whose signal aborts with `reason` once the deadline passes, unless end()ed first. */
  start(): AbortController {
    const ac = new AbortController();
    this.#running.set(ac, performance.now() + this.#ms);
    this.#timer ??= setInterval(() => this.#sweep(), this.#periodMs).unref();
    return ac;
  }

  end(ac: AbortController): void {
    this.#running.delete(ac);
  }

  #sweep(): void {
    const now = performance.now();
    for (const [ac, due] of this.#running) {
      if (due > now) break;
      this.#running.delete(ac);
      ac.abort(new Error('deadline'));
    }
    if (this.#running.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }
}
