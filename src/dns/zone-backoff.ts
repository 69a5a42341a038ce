// Per-zone backoff of the stub resolver: one tenant's dead zone must not hold everyone's sockets
// and time. A question that times out is the target's fact (its zone's servers did not answer the
// recursive resolver in time), never the resolver's: it is indeterminate, and it never counts
// against the resolver's breaker. But a zone whose servers are dead makes every question about it
// wait the whole DNS_TIMEOUT_MS, and a tenant asking 50 such lookups a second holds hundreds of
// sockets and timers that everyone's questions share. So, per process:
//
//   - a name whose questions timed out `stallsToBackOff` times in a row, none answered since, is
//     backed off on its own (only that name);
//   - a zone — the name's parent domain, at most up to its registrable domain under the Public
//     Suffix List (src/contract/public-suffix.ts) — is backed off when `stallsToBackOff` questions about at
//     least `namesToBackOffZone` different names under it timed out and none about any name under
//     it was answered since. One dead name in a healthy zone (a CNAME into someone else's dead
//     zone) backs off that name, never its zone: the zone's other names keep answering, and each
//     answer clears the zone's count.
//
// While backed off (`backoffMs`, short), a question about the name or zone is not sent: it answers
// `timeout` at once (indeterminate, `zoneBackoff` naming what is backed off), so no reader can take
// it for an absence. When the backoff ends, the next question goes out as a trial and the others
// keep answering at once until the trial is over: a reply clears the entry (the zone answers
// again), a timeout backs it off again. Nothing here ever touches another name or zone: a key is
// the name itself or its own registrable domain. A name that is a public suffix itself has no zone
// (only its own entry). Counts older than `windowMs` are forgotten, and the table holds at most
// `maxEntries` keys (the least recently touched go first), so a tenant cycling through random
// zones costs bounded memory. When the resolver's breaker opens (the resolver itself is down),
// the table is cleared and timeouts are not counted until it closes: they said nothing of zones.
//
// A zone that answers some questions and drops others is rate limiting, not dead (issue 48: NSD's
// default RRL drops what exceeds ~200 replies a second, and the drops were read as a dead zone):
// a timeout of a question sent before the zone's last answer (./congestion.ts remembers it) counts
// for its name only, never for its zone, so a zone that keeps answering some is slowed down by its
// window, never backed off; only a zone that answers none of a run of questions is (and one dead
// name in a busy zone still backs off that name).
import { suffixParts } from '../contract/public-suffix.ts';

export interface ZoneBackoffOptions {
  /** Timeouts in a row, none answered since, that back off a name or a zone (default 8). */
  stallsToBackOff?: number;
  /** Different names under a zone among those timeouts before the zone itself backs off (default 3). */
  namesToBackOffZone?: number;
  /** How long a backed-off name or zone answers `timeout` without asking (default 10 s). */
  backoffMs?: number;
  /** Timeouts older than this are forgotten (default 60 s). */
  windowMs?: number;
  /** Names and zones tracked at once (default 10,000). */
  maxEntries?: number;
  /** Tests only: the clock (ms). */
  now?: () => number;
}

interface Entry {
  stalls: number;
  /** Zones only: different names that timed out (at most namesToBackOffZone are kept). */
  names: Set<string> | null;
  /** When the last timeout was counted. */
  touched: number;
  /** Backed off until then (0: not backed off). */
  until: number;
}

const lower = (name: string) => name.toLowerCase().replace(/\.$/, '');

export class ZoneBackoff {
  readonly #stalls: number;
  readonly #names: number;
  readonly #backoffMs: number;
  readonly #windowMs: number;
  readonly #max: number;
  readonly #now: () => number;
  /** `n:<name>` and `z:<zone>` → entry; insertion order is recency (touched entries move to the end). */
  readonly #entries = new Map<string, Entry>();

  constructor(opts: ZoneBackoffOptions = {}) {
    this.#stalls = Math.max(1, opts.stallsToBackOff ?? 8);
    this.#names = Math.max(1, opts.namesToBackOffZone ?? 3);
    this.#backoffMs = Math.max(1, opts.backoffMs ?? 10_000);
    this.#windowMs = Math.max(this.#backoffMs, opts.windowMs ?? 60_000);
    this.#max = Math.max(2, opts.maxEntries ?? 10_000);
    this.#now = opts.now ?? (() => performance.now());
  }

  /** Keys tracked (tests, diagnostics). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Before a question is sent: the backed-off name or zone it falls under (the question must not be
   * sent), or null. A backoff that has ended lets this question through as its trial.
   */
  check(name: string): string | null {
    const c = this.checkUntil(name);
    return c && !c.trial ? c.label : null;
  }

  /**
   * check(), saying also how long the backoff still lasts (a retry's wait), or that this question
   * is the trial of a backoff that has just ended (it must be sent, whatever it waits for first).
   */
  checkUntil(name: string): { trial: false; label: string; remainingMs: number } | { trial: true } | null {
    if (this.#entries.size === 0) return null; // the usual case: no parsing at all
    const now = this.#now();
    const n = lower(name);
    let trial = false;
    for (const [key, label] of keysOf(n)) {
      const e = this.#live(key, now);
      if (!e || e.until === 0) continue;
      if (now < e.until) return { trial: false, label, remainingMs: e.until - now };
      // Over: this question is the trial; the others wait for its outcome.
      e.until = now + this.#backoffMs;
      trial = true;
    }
    return trial ? { trial: true } : null;
  }

  /** A reply of any rcode about `name`: the name and its zone answer. */
  replied(name: string): void {
    if (this.#entries.size === 0) return;
    for (const [key] of keysOf(lower(name))) this.#entries.delete(key);
  }

  /**
   * The entry, unless it is stale: counts last touched, or a backoff that ended, more than the
   * window ago say nothing about now (the entry is dropped).
   */
  #live(key: string, now: number): Entry | undefined {
    const e = this.#entries.get(key);
    if (!e) return undefined;
    if (now - (e.until === 0 ? e.touched : e.until) <= this.#windowMs) return e;
    this.#entries.delete(key);
    return undefined;
  }

  /** Forgets everything: the resolver itself was down, so the timeouts said nothing about zones. */
  clear(): void {
    this.#entries.clear();
  }

  /**
   * A question about `name` was sent and got no reply before its deadline. With `zoneAnswered`
   * (its zone answered other questions since it was sent: a zone that rate-limits, not a dead one)
   * it counts for the name alone, never for its zone.
   */
  timedOut(name: string, o: { zoneAnswered?: boolean } = {}): void {
    const now = this.#now();
    const n = lower(name);
    for (const [key, , isZone] of keysOf(n)) {
      if (isZone && o.zoneAnswered) continue;
      let e = this.#live(key, now);
      if (!e) e = { stalls: 0, names: isZone ? new Set() : null, touched: now, until: 0 };
      e.stalls++;
      e.touched = now;
      if (e.names && e.names.size < this.#names) e.names.add(n);
      if (e.stalls >= this.#stalls && (e.names === null || e.names.size >= this.#names))
        e.until = now + this.#backoffMs;
      this.#entries.delete(key); // re-inserted last: the most recently touched
      this.#entries.set(key, e);
    }
    while (this.#entries.size > this.#max) {
      const oldest = this.#entries.keys().next().value as string;
      this.#entries.delete(oldest);
    }
  }
}

/**
 * The zone of a name as the backoff and the congestion windows see it: its parent (the name itself
 * when it is a registrable domain), never above its registrable domain; '' for a public suffix.
 */
export function zoneOf(name: string): string {
  const n = lower(name);
  const registrable = suffixParts(n).registrable;
  if (!registrable) return '';
  return n === registrable ? registrable : n.slice(n.indexOf('.') + 1);
}

/**
 * The name's own key, then its zone's: the name's parent (its registrable domain when it is that
 * domain itself), never above the registrable domain, and none when the name is a public suffix
 * (nobody's zone). The parent, not the registrable domain: a tenant asking random names under a
 * dead subzone (`*.dead.victim.example`) backs off that subzone only, never another tenant's
 * questions about `www.victim.example`.
 */
function keysOf(name: string): Array<[key: string, label: string, isZone: boolean]> {
  const keys: Array<[string, string, boolean]> = [[`n:${name}`, name, false]];
  const registrable = suffixParts(name).registrable;
  if (registrable) {
    const zone = name === registrable ? registrable : name.slice(name.indexOf('.') + 1);
    keys.push([`z:${zone}`, zone, true]);
  }
  return keys;
}
