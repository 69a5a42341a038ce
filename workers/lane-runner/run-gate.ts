// The lane process's capacity (checks running at once; lag-limit.ts sets it, LANE_CONCURRENCY at
// most) shared max-min fairly between the workspaces that have checks waiting for it:
//   - work conserving: a workspace alone with work may use the whole capacity;
//   - every slot that frees goes to the waiting workspace with the fewest checks running (ties to
//     the one admitted longest ago: a workspace that began to wait while another's check ran goes
//     before that other's next check, as in the parse pool's FairQueue; by queue order alone, the
//     workspace just served was first again with a capacity of one), so workspaces with backlogs converge on equal shares and one that needs
//     less than its share gets all it needs;
//   - a workspace that arrives has no check running, so it takes the next slot that frees, and
//     each following one until it holds as many as the others: its share within one check's time,
//     not after another's backlog (nothing is pre-empted: a running check finishes).
// Across lane processes: every process reads every job's stream (src/queue/lane-streams-consumer.ts)
// and shares its own capacity this way, so a workspace's share of the lane is its share of each
// process, summed. No Redis round trip per check (the redis-semaphore permits this replaces polled
// Redis per check and capped a workspace at a fixed 8 however idle the lane was).
// Light workspaces first (issue 32, the lookup during two scans; LANE_HEAVY_LIMIT, 0 = off, the
// default): a workspace with at most LIGHT_CHECKS checks running or waiting in the process (a
// lookup, a monitor's run, a scan's last few) is light; the others are heavy. While a light
// workspace has a check here, heavy workspaces together start no new check while they hold
// `heavyLimit` or more, and light ones may start LIGHT_CHECKS checks over the limit (shared by all
// of them). Why: max-min already gives a light workspace every slot it asks for, but each step of
// its check (a DNS answer, a connect, a parse) then waits its turn in an event loop crowded by the
// heavy workspaces' checks. A workspace that sends many checks at once is heavy, so no workspace
// keeps the others throttled by flooding. Off by default: the gain measured beside two scans on 2
// cores was small (docs/operations.md, "Light workspaces first"), and steady light traffic would
// hold scans at the cap. With it on, each grant looks at every workspace present (a short list).
// A check waits here without a deadline: it holds no task row and no slot while it waits; a
// shutdown aborts the wait (the entry stays pending for another runner).

export type GateEntry = 'admitted' | 'aborted';

/** At most this many checks running or waiting in the process make a workspace light. */
export const LIGHT_CHECKS = 4;

export interface RunGateOptions {
  /** While a light workspace has a check here, the most checks heavy workspaces hold (0 = no cap). */
  heavyLimit?: number;
}

interface Waiter {
  grant(): void;
}

export class RunGate {
  #limit: number;
  #running = 0;
  #waiting = 0;
  /** Per workspace: its checks past the gate. */
  readonly #tenants = new Map<string, number>();
  /** Workspaces with checks waiting; map order breaks ties between workspaces never admitted. */
  readonly #queues = new Map<string, Waiter[]>();
  /** The turn at which each workspace with checks waiting or running was last admitted. */
  readonly #admittedAt = new Map<string, number>();
  #turn = 0;
  /** Whether the limit held a check back since the last look. */
  #held = false;

  readonly #heavyLimit: number;

  constructor(limit: number, o: RunGateOptions = {}) {
    this.#limit = Math.max(1, limit);
    this.#heavyLimit = Math.max(0, o.heavyLimit ?? 0);
  }

  get limit(): number {
    return this.#limit;
  }

  get running(): number {
    return this.#running;
  }

  get waiting(): number {
    return this.#waiting;
  }

  runningFor(tenant: string): number {
    return this.#tenants.get(tenant) ?? 0;
  }

  /** Whether a workspace asks for little here (see the header): nothing at all counts as light. */
  isLight(tenant: string): boolean {
    return this.runningFor(tenant) + this.waitingFor(tenant) <= LIGHT_CHECKS;
  }

  /**
   * With the heavy cap on and a light workspace present: the checks heavy workspaces hold now.
   * Otherwise null (heavy workspaces are not held back).
   */
  #heavyRunning(): number | null {
    if (this.#heavyLimit === 0) return null;
    let light = false;
    let heavy = 0;
    for (const [tenant, n] of this.#tenants) {
      if (this.isLight(tenant)) light = true;
      else heavy += n;
    }
    if (!light) for (const tenant of this.#queues.keys()) if (this.isLight(tenant)) light = true;
    return light ? heavy : null;
  }

  waitingFor(tenant: string): number {
    return this.#queues.get(tenant)?.length ?? 0;
  }

  /** A new limit; a raised one lets waiters in at once, a lowered one lets running checks finish. */
  setLimit(limit: number): void {
    this.#limit = Math.max(1, limit);
    this.#grant();
  }

  /** Whether the limit held a check back since the last call (the lag controller's "limited"). */
  takeHeld(): boolean {
    const held = this.#held || (this.#waiting > 0 && this.#running >= this.#limit);
    this.#held = false;
    return held;
  }

  /** A slot for a check of `tenant`; `aborted` when `signal` ends the wait first. */
  acquire(tenant: string, signal: AbortSignal): Promise<GateEntry> {
    if (signal.aborted) return Promise.resolve('aborted');
    // Without the heavy cap, waiters exist only while the capacity is in use, so a free slot is
    // this check's. With it, #grant decides (a heavy check may be held back beside a light one).
    if (this.#running < this.#limit && this.#waiting === 0 && this.#heavyLimit === 0) {
      this.#admit(tenant);
      return Promise.resolve('admitted');
    }
    // The lag controller's "limited": the capacity, not the heavy cap, kept it waiting.
    if (this.#running >= this.#limit) this.#held = true;
    return new Promise<GateEntry>((resolve) => {
      const onAbort = () => {
        const q = this.#queues.get(tenant);
        const i = q ? q.indexOf(waiter) : -1;
        if (i < 0) return; // admitted already: the caller releases it
        q!.splice(i, 1);
        if (q!.length === 0) {
          this.#queues.delete(tenant);
          this.#forget(tenant);
        }
        this.#waiting--;
        resolve('aborted');
      };
      const waiter: Waiter = {
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          resolve('admitted');
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const q = this.#queues.get(tenant);
      if (q) q.push(waiter);
      else this.#queues.set(tenant, [waiter]);
      this.#waiting++;
      this.#grant();
    });
  }

  release(tenant: string): void {
    this.#running--;
    const n = this.runningFor(tenant) - 1;
    if (n > 0) this.#tenants.set(tenant, n);
    else {
      this.#tenants.delete(tenant);
      this.#forget(tenant);
    }
    this.#grant();
  }

  #admit(tenant: string): void {
    this.#running++;
    this.#tenants.set(tenant, this.runningFor(tenant) + 1);
    this.#admittedAt.set(tenant, ++this.#turn);
  }

  /** A workspace with nothing waiting and nothing running leaves the round (the table stays bounded). */
  #forget(tenant: string): void {
    if (!this.#queues.has(tenant) && !this.#tenants.has(tenant)) this.#admittedAt.delete(tenant);
  }

  #grant(): void {
    // With the heavy cap on, light workspaces also have LIGHT_CHECKS slots over the limit (shared):
    // a lookup that arrives while the capacity is full starts at once instead of waiting for a
    // running check to end. Bounded: only light workspaces use them.
    const reserve = this.#heavyLimit > 0 ? LIGHT_CHECKS : 0;
    while (this.#running < this.#limit + reserve && this.#waiting > 0) {
      // Beside a light workspace, a heavy one is passed over once heavy ones hold their cap; and
      // the slots over the limit are for light ones only.
      const heavyRunning = this.#heavyRunning();
      const heavyHeld = this.#running >= this.#limit || (heavyRunning !== null && heavyRunning >= this.#heavyLimit);
      let chosen: string | undefined;
      let fewest = Number.POSITIVE_INFINITY;
      let oldest = Number.POSITIVE_INFINITY;
      for (const tenant of this.#queues.keys()) {
        if (heavyHeld && !this.isLight(tenant)) continue;
        const n = this.runningFor(tenant);
        const at = this.#admittedAt.get(tenant) ?? -1;
        if (n < fewest || (n === fewest && at < oldest)) {
          fewest = n;
          oldest = at;
          chosen = tenant;
        }
      }
      if (chosen === undefined) return; // only heavy workspaces wait, and they are held back
      const q = this.#queues.get(chosen)!;
      const waiter = q.shift()!;
      if (q.length === 0) this.#queues.delete(chosen);
      this.#waiting--;
      this.#admit(chosen);
      waiter.grant();
    }
  }
}
