// The congestion window of one target address (issue 48, DESIGN.md "Congestion is ours, silence
// is the target's"): how many connections the outbound guard may have in flight to it, found by
// AIMD as TCP finds its window, capped by politeness (OUTBOUND_CONNECTIONS_PER_ADDRESS). A server
// that accepts only so many connections at once and resets or drops the rest, or answers 429/503
// beyond a rate, is slowed down to: its drops are read as its limit, never as its death.
//
//   - The window starts modest (`initial`, 2 by default) and grows by one per connection that got
//     its answer (a response head, a finished handshake, a TCP connect) up to its first cut (slow
//     start), by 1/window per answer after it, never beyond its cap.
//   - A cut halves it (floor 1), once per round: a loss of a connection started before the last cut
//     does not cut again, so a burst of resets is one signal. The losses are drops by an address
//     that answers (see ./address-slots.ts dropVerdict: it answered other connections on the same
//     port since the dropped one started) and bursts of 429/503: each one adds 1 to a score that
//     every other answer lowers by 1/window, and the window is cut when the score reaches
//     `THROTTLE_BURST` (more than about one in a window's worth of answers, again and again). One
//     503 of a site that is down, behind an address that serves many, says nothing of its rate.
//   - A drop by an address that answers none is its unreachability, the target's fact as before
//     issue 48: it does not shrink the window, and it restores a window cut earlier to its cap, so
//     a dead address never holds the checks waiting for it at one connection (they would wait out
//     the local bound and come back as our congestion instead of the target's silence).
// Per process, in memory, no clock read but the one the caller passes. The AIMD arithmetic itself
// is shared with the DNS client's windows: src/resilience/aimd-window.ts.
import { AimdWindow } from '../resilience/aimd-window.ts';

/** The throttle score (429s and 503s, less 1/window per other answer) that cuts an address's window. */
export const THROTTLE_BURST = 2;

/** What a connection's end says about the address's capacity. */
export type ConnectionEnd =
  /** It got its answer (any status but 429/503). */
  | 'answer'
  /** Answered 429 or 503: the address answers, and may be asking us to slow down. */
  | 'throttled'
  /** Dropped (connect timeout, reset or closed before its answer) by an address that answers others. */
  | 'rate_limited'
  /** Dropped by an address that answered none of the connections in flight with it. */
  | 'unreachable'
  /** Anything else (refused, a certificate, the caller gave up): says nothing about capacity. */
  | 'other';

export class AddressWindow extends AimdWindow {
  /** 429/503 answers, less 1/window per other answer (never below 0). */
  throttleScore = 0;

  /**
   * Applies a connection's end (`startedAt`: when it was attempted; `now`: its end). Returns what
   * it did to the window: 'grew', 'cut' (a loss halved it), 'restored' (an unreachable address back
   * at its cap) or null.
   */
  end(e: ConnectionEnd, startedAt: number, now: number): 'grew' | 'cut' | 'restored' | null {
    switch (e) {
      case 'answer': {
        this.throttleScore = Math.max(0, this.throttleScore - 1 / this.size);
        const before = this.size;
        this.grow();
        return this.size > before ? 'grew' : null;
      }
      case 'throttled':
        if (++this.throttleScore < THROTTLE_BURST) return null;
        this.throttleScore = 0;
        return this.cut(startedAt, now) ? 'cut' : null;
      case 'rate_limited':
        return this.cut(startedAt, now) ? 'cut' : null;
      case 'unreachable':
        return this.restore() ? 'restored' : null;
      default:
        return null;
    }
  }
}
