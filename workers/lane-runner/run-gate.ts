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
// A check waits here without a deadline: it holds no task row and no slot while it waits; a
// shutdown aborts the wait (the entry stays pending for another runner).

export type GateEntry = 'admitted' | 'aborted';

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

  constructor(limit: number) {
    this.#limit = Math.max(1, limit);
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
    // Waiters exist only while the capacity is in use, so a free slot is this check's.
    if (this.#running < this.#limit && this.#waiting === 0) {
      this.#admit(tenant);
      return Promise.resolve('admitted');
    }
    this.#held = true;
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
    while (this.#running < this.#limit && this.#waiting > 0) {
      let chosen: string | undefined;
      let fewest = Number.POSITIVE_INFINITY;
      let oldest = Number.POSITIVE_INFINITY;
      for (const tenant of this.#queues.keys()) {
        const n = this.runningFor(tenant);
        const at = this.#admittedAt.get(tenant) ?? -1;
        if (n < fewest || (n === fewest && at < oldest)) {
          fewest = n;
          oldest = at;
          chosen = tenant;
        }
      }
      const q = this.#queues.get(chosen!)!;
      const waiter = q.shift()!;
      if (q.length === 0) this.#queues.delete(chosen!);
      this.#waiting--;
      this.#admit(chosen!);
      waiter.grant();
    }
  }
}
