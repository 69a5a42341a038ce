// The AIMD arithmetic of a congestion window, as TCP finds its window (RFC 5681's shape), shared by
// the DNS client's windows per zone and per server (src/dns/congestion.ts) and the outbound
// guard's window per target address (src/net/address-window.ts). Each caller decides what an
// answer and a loss are; this says only what they do to the window:
//   - an answer grows it by one below ssthresh (slow start), by 1/window above it, never past
//     `max`;
//   - a loss halves it (floor 1), once per round: a loss of something started before the last cut
//     does not cut again, so a burst of drops is one signal; ssthresh follows the cut unless the
//     window regrows fast (a window that was silent, not slow, gets back at once).
// No clock read but the ones the caller passes.
export class AimdWindow {
  cwnd: number;
  ssthresh: number;
  lastCutAt = Number.NEGATIVE_INFINITY;
  readonly max: number;
  readonly #regrowFast: boolean;

  constructor(initial: number, max: number, o: { regrowFast?: boolean } = {}) {
    this.max = Math.max(1, max);
    this.cwnd = Math.min(this.max, Math.max(1, initial));
    this.ssthresh = this.max;
    this.#regrowFast = o.regrowFast ?? false;
  }

  /** Places the window gives now (at least one). */
  get size(): number {
    return Math.max(1, Math.floor(this.cwnd));
  }

  /** One answer. */
  grow(): void {
    this.cwnd = Math.min(this.max, this.cwnd < this.ssthresh ? this.cwnd + 1 : this.cwnd + 1 / this.cwnd);
  }

  /** A loss of something started at `startedAt`, seen at `now`; true when it cut the window. */
  cut(startedAt: number, now: number): boolean {
    if (startedAt < this.lastCutAt) return false; // the same round's loss: already cut for it
    this.cwnd = Math.max(1, this.cwnd / 2);
    if (!this.#regrowFast) this.ssthresh = this.cwnd;
    this.lastCutAt = now;
    return true;
  }

  /** Back at the cap (a cut that proved wrong); false when it was there already. */
  restore(): boolean {
    if (this.cwnd >= this.max) return false;
    this.cwnd = this.max;
    this.ssthresh = this.max;
    return true;
  }
}
