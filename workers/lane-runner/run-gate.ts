// The lane process's limit on checks running at once (lag-limit.ts sets it). A check passes the gate
// before it takes its workspace's tenant permit, so a check held back by the limit holds no permit
// (another lane process may use it) and no task row. Waiters queue per workspace and a freed slot
// goes to the workspaces in turn (round-robin, by the turn each was last admitted: a workspace that
// starts waiting while another's check runs goes before that other's next check, as in the parse
// pool's FairQueue); a workspace never holds more slots than its permits
// (`perTenant`, LANE_TENANT_CONCURRENCY), so its surplus waits here without taking a slot from
// another. A waiting check waits for at most one start per other waiting workspace before its own
// (CONTRACT §5's fairness, as the tenant permits and the parse pool's FairQueue keep it). A wait is
// bounded (`waitMs`): past it the runner re-queues the entry, as it does when no permit comes free.

export type GateEntry = 'admitted' | 'timeout' | 'aborted';

interface Waiter {
  grant(): void;
}

export class RunGate {
  readonly perTenant: number;
  #limit: number;
  #running = 0;
  #waiting = 0;
  /** Per workspace: its checks past the gate. */
  readonly #tenants = new Map<string, number>();
  /** Waiters per workspace; Map order breaks ties between workspaces never admitted. */
  readonly #queues = new Map<string, Waiter[]>();
  /** The turn at which each workspace with checks waiting or running was last admitted. */
  readonly #admittedAt = new Map<string, number>();
  #turn = 0;
  /** Whether the limit (not a workspace's share) held a check back since the last look. */
  #held = false;

  constructor(limit: number, perTenant: number = Number.POSITIVE_INFINITY) {
    this.#limit = Math.max(1, limit);
    this.perTenant = Math.max(1, perTenant);
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

  /** A new limit; a raised one lets waiters in at once, a lowered one lets running checks finish. */
  setLimit(limit: number): void {
    this.#limit = Math.max(1, limit);
    this.#grant();
  }

  /** Whether the limit held a check back since the last call (the lag controller's "limited"). */
  takeHeld(): boolean {
    let held = this.#held;
    this.#held = false;
    if (!held && this.#running >= this.#limit)
      for (const tenant of this.#queues.keys()) if (this.runningFor(tenant) < this.perTenant) held = true;
    return held;
  }

  /** A slot for a check of `tenant`, within `waitMs`; `aborted` when `signal` ends the wait. */
  acquire(tenant: string, signal: AbortSignal, waitMs: number): Promise<GateEntry> {
    if (signal.aborted) return Promise.resolve('aborted');
    if (this.#running < this.#limit && this.runningFor(tenant) < this.perTenant) {
      this.#admit(tenant);
      return Promise.resolve('admitted');
    }
    if (this.#running >= this.#limit) this.#held = true;
    return new Promise<GateEntry>((resolve) => {
      const leave = (outcome: GateEntry) => {
        const q = this.#queues.get(tenant);
        const i = q ? q.indexOf(waiter) : -1;
        if (i < 0) return; // admitted already: the caller releases it
        q!.splice(i, 1);
        if (q!.length === 0) {
          this.#queues.delete(tenant);
          this.#forget(tenant);
        }
        this.#waiting--;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        resolve(outcome);
      };
      const onAbort = () => leave('aborted');
      const timer = setTimeout(() => leave('timeout'), waitMs);
      const waiter: Waiter = {
        grant: () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          resolve('admitted');
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const q = this.#queues.get(tenant);
      if (q) q.push(waiter);
      else this.#queues.set(tenant, [waiter]);
      this.#waiting++;
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
      // The waiting workspace under its share admitted longest ago (never: first of all).
      let chosen: string | undefined;
      let chosenAt = Number.POSITIVE_INFINITY;
      for (const tenant of this.#queues.keys()) {
        const at = this.#admittedAt.get(tenant) ?? -1;
        if (at < chosenAt && this.runningFor(tenant) < this.perTenant) {
          chosen = tenant;
          chosenAt = at;
        }
      }
      if (chosen === undefined) return; // every waiting workspace holds its share
      const q = this.#queues.get(chosen)!;
      const waiter = q.shift()!;
      if (q.length === 0) this.#queues.delete(chosen);
      this.#waiting--;
      this.#admit(chosen);
      waiter.grant();
    }
  }
}
