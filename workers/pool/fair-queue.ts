// The order in which a lane's parse pool serves its workspaces: one FIFO per workspace, served
// round-robin, and a task is handed to piscina only when a thread is free (so piscina's own FIFO,
// shared by every workspace, stays empty). The round is by the turn each workspace was last
// served, not by when its queue appeared: a workspace that starts waiting while another's task
// runs goes before that other workspace's next task (with one thread, the order of the queues'
// creation put the workspace just served first again, so a newcomer waited two tasks: two
// deadlines behind a workspace whose tasks are stuck). While another workspace waits, a
// workspace holds at most slots - 1 threads (all of them when it is alone, one when there is one):
// a workspace with many tasks in flight cannot keep another waiting behind all of them. The
// per-workspace redis-semaphore permits (LANE_TENANT_CONCURRENCY) bound the lane's slots across
// processes; this bounds the pool's threads inside one process. Pure bookkeeping: no timers, no I/O.

interface Entry<T> {
  item: T;
  queued: boolean;
}

export class FairQueue<T> {
  readonly slots: number;
  /** Threads with nothing to do. */
  #free: number;
  /** Waiting items per workspace; Map order breaks ties between workspaces never served. */
  readonly #queues = new Map<string, Array<Entry<T>>>();
  readonly #running = new Map<string, number>();
  /** The turn at which each workspace with items waiting or running was last served. */
  readonly #servedAt = new Map<string, number>();
  #turn = 0;
  #queued = 0;

  constructor(slots: number) {
    if (!Number.isInteger(slots) || slots < 1) throw new RangeError('a fair queue needs at least one slot');
    this.slots = slots;
    this.#free = slots;
  }

  /** Tasks waiting for a thread, all workspaces together. */
  get queued(): number {
    return this.#queued;
  }

  /** Threads with nothing to do. */
  get free(): number {
    return this.#free;
  }

  running(tenant: string): number {
    return this.#running.get(tenant) ?? 0;
  }

  /** Queues an item; the returned function takes it out again (true when it was still waiting). */
  enqueue(tenant: string, item: T): () => boolean {
    const entry: Entry<T> = { item, queued: true };
    const q = this.#queues.get(tenant);
    if (q) q.push(entry);
    else this.#queues.set(tenant, [entry]);
    this.#queued++;
    return () => {
      if (!entry.queued) return false;
      entry.queued = false;
      this.#queued--;
      const list = this.#queues.get(tenant);
      if (list) {
        list.splice(list.indexOf(entry), 1);
        if (list.length === 0) {
          this.#queues.delete(tenant);
          this.#forget(tenant);
        }
      }
      return true;
    };
  }

  /** The items to start now, in order; each has taken a thread and counts as running for its workspace. */
  take(): Array<{ tenant: string; item: T }> {
    const out: Array<{ tenant: string; item: T }> = [];
    while (this.#free > 0 && this.#queued > 0) {
      const cap = this.#queues.size > 1 ? Math.max(1, this.slots - 1) : this.slots;
      // The waiting workspace under its share that was served longest ago (never: first of all).
      let chosen: string | undefined;
      let chosenAt = Number.POSITIVE_INFINITY;
      for (const tenant of this.#queues.keys()) {
        const at = this.#servedAt.get(tenant) ?? -1;
        if (at < chosenAt && this.running(tenant) < cap) {
          chosen = tenant;
          chosenAt = at;
        }
      }
      if (chosen === undefined) break; // every waiting workspace holds its share: wait for one to finish
      const q = this.#queues.get(chosen)!;
      const entry = q.shift()!;
      entry.queued = false;
      this.#queued--;
      if (q.length === 0) this.#queues.delete(chosen);
      this.#servedAt.set(chosen, ++this.#turn);
      this.#running.set(chosen, this.running(chosen) + 1);
      this.#free--;
      out.push({ tenant: chosen, item: entry.item });
    }
    return out;
  }

  /**
   * A started item is over and its thread free: at once, or as soon as piscina has replaced a
   * thread it stopped (the next item then waits in piscina for the new thread, not here).
   */
  finish(tenant: string): void {
    const n = this.running(tenant) - 1;
    if (n > 0) this.#running.set(tenant, n);
    else {
      this.#running.delete(tenant);
      this.#forget(tenant);
    }
    this.#free = Math.min(this.slots, this.#free + 1);
  }

  /** A workspace with nothing waiting and nothing running leaves the round (the table stays bounded). */
  #forget(tenant: string): void {
    if (!this.#queues.has(tenant) && !this.#running.has(tenant)) this.#servedAt.delete(tenant);
  }

  /** Takes every waiting item out of the queue (shutdown). */
  clear(): T[] {
    const out: T[] = [];
    for (const q of this.#queues.values())
      for (const entry of q) {
        entry.queued = false;
        out.push(entry.item);
      }
    this.#queues.clear();
    for (const tenant of [...this.#servedAt.keys()]) this.#forget(tenant);
    this.#queued = 0;
    return out;
  }
}
