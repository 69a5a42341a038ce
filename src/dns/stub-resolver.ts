// The project's stub resolver: it speaks DNS itself (Node's dns module hides rcode, TTL and the
// AA/AD flags) and asks the configured recursive resolvers, never the authoritative servers.
//
// One query() has one deadline (the timeout). Inside it, attempts start on a schedule that splits
// the budget evenly (server 1 at 0, server 2 at budget/n…, with at least two attempts so a single
// server gets one retransmission). An earlier attempt keeps listening after the next one starts:
// a slow reply still wins. An attempt that fails outright (port unreachable, broken TCP reply)
// starts the next one at once instead of waiting for its slot.
//
// Readiness is a circuit breaker (src/resilience/breaker.ts) shared by every question of the
// process, so it opens only on evidence that the resolver itself cannot be reached (issue 31: one
// tenant's dead zone opened it and every tenant got 503):
//   - a question whose every attempt failed at the socket level (ICMP port, host or network
//     unreachable, ECONNREFUSED over UDP or TCP…) is a failure; `downAfter` in a row open it;
//   - a question that timed out is NOT a failure: a recursive resolver that waits on a zone's dead
//     servers answers later than we wait, so a timeout is the target's fact (indeterminate). But
//     when a question times out and the servers sent no reply at all, to anything, since it was
//     sent (and for at least `silenceMs`), the breaker verifies at once with its known-good
//     question (`. NS`, any reply of any rcode counts) and opens only if that fails too — a
//     resolver that blackholes everything is still caught within one timeout and one probe;
//   - any reply closes it and resets the count.
// While open, the resolver asks its servers itself (`. NS`) about once a second, so readiness
// comes back within about a second of the servers' return even when nothing else queries — which
// is the case in a web process whose readiness gate refuses DNS lookups while the resolver is down.
//
// Timeouts feed the per-zone backoff instead (./zone-backoff.ts): a name or zone whose questions
// keep timing out is not asked for a short while; its questions answer `timeout` at once.
//
// Questions in flight are bounded per server and per zone by AIMD windows (./congestion.ts, issue
// 48): a question beyond them waits in our process, shared max-min fair between tenants, and its
// deadline starts when it is sent, so time queued here is never a target's timeout. One that
// cannot be sent within DNS_QUEUE_WAIT_MS is given back unasked (`congested`, retryable). A zone
// that answers some of its questions is rate limiting: its timeouts shrink its window and never
// count towards its backoff (only those of questions sent after its last answer do; a question it
// dropped is sent again, `dropResends` times, behind its cut window), and the silence that makes
// the breaker verify is silence since the question was sent. Through a recursive resolver the
// same rate limiting arrives as SERVFAIL (the resolver's own questions to the zone were dropped,
// and it gave up on them): a SERVFAIL for a name whose zone gave real answers within the last
// SERVFAIL_ZONE_WORKING_MS comes back marked `busyServfail` (it has cut the zone's window); a lane
// waits a pause and asks it again only when the zone's SERVFAILs are a burst (servfailBurst: other
// names of it failed too), within its check's deadline (workers/lane-runner/not-asked-retry.ts).
// A zone whose questions all SERVFAIL is broken, not busy (no mark); a name that SERVFAILs alone
// is broken on its own (no burst). Either way a SERVFAIL that stands is indeterminate, never an
// absence.
import { randomInt } from 'node:crypto';
import type { Config } from '../config/config.ts';
import type { QueryOptions, QueryOutcome, QueryResult, RecordType, Resolver, ResolverHealth } from './types.ts';
import type { DnsServer } from '../config/dns-servers.ts';
import { Breaker, type BreakerClock } from '../resilience/breaker.ts';
import { resolveServers } from './system-servers.ts';
import { tcpExchange, udpExchange, type Exchange } from './transport.ts';
import { ZoneBackoff, zoneOf, type ZoneBackoffOptions } from './zone-backoff.ts';
import { DnsCongestion, type CongestionOptions, type QuestionEnd } from './congestion.ts';
import {
  acceptReply,
  answerRecords,
  buildQuery,
  encodableName,
  outcomeOf,
  rcodeName,
  replyRcode,
  type Reply,
} from './wire.ts';

export interface StubResolverOptions {
  servers: DnsServer[];
  timeoutMs: number;
  /** Consecutive queries that failed at the socket level after which readiness reports 'down' (default 20). */
  downAfter?: number;
  /**
   * A timed-out query makes the breaker verify the servers when nothing was heard from them since
   * it was sent and for at least this long (default 1000 ms).
   */
  silenceMs?: number;
  /** The per-zone backoff's settings (./zone-backoff.ts), or false for none (tests, benches). */
  zoneBackoff?: ZoneBackoffOptions | false;
  /**
   * The congestion windows' settings (./congestion.ts), or false for none: every question is sent
   * at once, as before issue 48 (default: windows of 256 per zone, 1024 per server, a 10 s queue wait).
   */
  congestion?: CongestionOptions | false;
  /**
   * Times a question that a zone dropped while it answered others (rate limiting) is sent again,
   * each time behind the zone's cut window with a deadline of its own (default 2).
   */
  dropResends?: number;
  /** Attempts per query when there are fewer servers than this (default 2). */
  minAttempts?: number;
  /** While down, how often the servers are asked directly (default 1000 ms, ±20 %). */
  probeEveryMs?: number;
  /** Tests only: the breaker's clock. */
  clock?: BreakerClock;
}

type Attempt =
  | { kind: 'reply'; reply: Reply; transport: 'udp' | 'tcp'; server: number }
  | { kind: 'failed'; unreachable: boolean }
  | { kind: 'aborted' };
type RaceEnd =
  /** `retransmitted`: the reply came after a second transmission had started (one was lost or late). */
  | { kind: 'reply'; reply: Reply; transport: 'udp' | 'tcp'; server: number; retransmitted: boolean }
  | { kind: 'timeout' }
  /** Every attempt failed outright; `unreachable` when each failed at the socket level. */
  | { kind: 'error'; unreachable: boolean };

/**
 * Socket errors that say the server cannot be reached from here (ICMP unreachable, a refused or
 * forbidden connection, no route), as opposed to a server that answered badly.
 */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'EPERM',
  'EACCES',
]);

const NO_FLAGS = { aa: false, ad: false, tc: false, ra: false };

/**
 * What a query's own controller is aborted with: at its deadline, on the caller's abort, and when
 * it has its answer (to release attempts still listening). Nothing reads the reason (the
 * exchanges settle as "aborted"), and abort() without one builds a DOMException and its stack
 * trace on every query: about 2 % of the web lane's main thread during a burst of lookups.
 */
const QUERY_OVER = new Error('DNS query over');

/** A zone that gave a real answer this recently is working: its SERVFAIL may be a busy resolver's. */
const SERVFAIL_ZONE_WORKING_MS = 10_000;
/** Distinct names of one zone answered SERVFAIL within that time that make a burst (servfailBurst). */
const SERVFAIL_BURST_NAMES = 3;
const SERVFAIL_ZONES_KEPT = 1000;

export class StubResolver implements Resolver {
  readonly servers: readonly DnsServer[];
  readonly timeoutMs: number;
  private readonly minAttempts: number;
  /** Index of the server that answered last: the next query starts there. */
  private preferred = 0;
  private readonly breaker: Breaker;
  private readonly silenceMs: number;
  /** When a server's reply (any, a truncated one included) was last accepted; performance.now(). */
  private lastHeardAt = Number.NEGATIVE_INFINITY;
  private readonly backoff: ZoneBackoff | null;
  /** The congestion windows and the queue behind them (null: none). */
  readonly congestion: DnsCongestion | null;
  private readonly dropResends: number;
  /** Per zone, the last names answered SERVFAIL and when (servfailBurst). */
  readonly #servfails = new Map<string, Array<{ name: string; at: number }>>();

  constructor(opts: StubResolverOptions) {
    this.servers = [...opts.servers];
    this.timeoutMs = opts.timeoutMs;
    this.minAttempts = opts.minAttempts ?? 2;
    this.silenceMs = opts.silenceMs ?? 1000;
    this.backoff = opts.zoneBackoff === false ? null : new ZoneBackoff(opts.zoneBackoff ?? {});
    this.dropResends = Math.max(0, opts.dropResends ?? 2);
    this.congestion =
      opts.congestion === false
        ? null
        : new DnsCongestion(opts.congestion ?? { zoneWindowMax: 256, serverWindowMax: 1024, queueWaitMs: 10_000 });
    const probeTimeoutMs = Math.min(this.timeoutMs, 1000);
    this.breaker = new Breaker({
      name: 'resolver',
      failuresToOpen: opts.downAfter ?? 20,
      probeEveryMs: opts.probeEveryMs ?? 1000,
      probeTimeoutMs,
      ...(opts.clock ? { clock: opts.clock } : {}),
      probe: (signal) => this.probe(probeTimeoutMs, signal),
      // The resolver itself was unreachable: the timeouts that came before were not the zones'
      // doing, so no zone stays backed off for them once it answers again.
      onChange: (from) => {
        if (from === 'closed') this.backoff?.clear();
      },
    });
  }

  readiness(): ResolverHealth {
    if (this.servers.length === 0) return 'unconfigured';
    return this.breaker.readiness();
  }

  /** While down: ms until the next probe may make it ready (a 503's Retry-After); else null. */
  retryAfterMs(): number | null {
    return this.servers.length === 0 ? null : this.breaker.retryAfterMs();
  }

  /** Verifications of the servers run after silent timeouts (tests, diagnostics). */
  get verifications(): number {
    return this.breaker.verifications;
  }

  /** Stops the probe timer for good (a process shutting down, a test done with it). */
  close(): void {
    this.breaker.stop();
    this.congestion?.close();
  }

  /**
   * The breaker's probe: the root's NS through the usual attempt schedule over UDP for half the
   * budget, then over TCP; any reply will do. TCP because a server that limits its replies to us
   * (NSD's and BIND's response rate limiting, issue 48: a quiet process's probe dropped while the
   * lane processes' questions use up our address's rate) limits only UDP: it answers, so it is
   * not down. A server that answers nothing, or refuses TCP, fails the probe as before.
   */
  private async probe(budget: number, signal: AbortSignal): Promise<boolean> {
    const first = this.preferred % Math.max(1, this.servers.length);
    const udpOver = new AbortController();
    const half = setTimeout(() => udpOver.abort(QUERY_OVER), budget / 2);
    const onAbort = () => udpOver.abort(QUERY_OVER);
    signal.addEventListener('abort', onAbort, { once: true });
    let end: RaceEnd;
    try {
      end = await this.race('.', 'NS', budget / 2, udpOver.signal, first);
    } finally {
      clearTimeout(half);
      signal.removeEventListener('abort', onAbort);
      udpOver.abort(QUERY_OVER);
    }
    if (end.kind === 'reply') {
      this.preferred = end.server;
      return true;
    }
    if (signal.aborted || this.servers.length === 0) return false;
    const id = randomInt(0, 0x10000);
    const tcp = await tcpExchange(
      this.servers[first]!,
      buildQuery(id, '.', 'NS'),
      (buf) => acceptReply(buf, id, '.', 'NS'),
      signal,
    );
    if (tcp.kind !== 'reply') return false;
    this.lastHeardAt = performance.now();
    return true;
  }

  async query(name: string, type: RecordType, opts: QueryOptions = {}): Promise<QueryResult> {
    const started = performance.now();
    const qname = name.length > 1 && name.endsWith('.') ? name.slice(0, -1) : name; // "." is the root
    opts.signal?.throwIfAborted();
    // Local problems (no servers, a name that cannot be encoded) never touch the network and do
    // not count against the servers' reachability.
    if (this.servers.length === 0 || !encodableName(qname)) return empty(qname, type, 'error', started);
    // A name or zone that kept timing out is not asked for a while: indeterminate at once.
    const before = this.backoff?.checkUntil(qname) ?? null;
    if (before && !before.trial) return backedOffResult(qname, type, before, started);

    // A question a zone that rate-limits dropped (it answered others meanwhile) is asked again, as
    // a new question behind the window that has just been cut: its silence says nothing of the name.
    let trial = before?.trial ?? false;
    for (let resends = 0; ; resends++) {
      const asked = await this.#sendOnce(qname, type, opts, started, trial);
      const r = asked.result;
      // A SERVFAIL from a zone that works (through a resolver, the zone's rate limiting): marked,
      // so that a lane asks it again after a pause (not-asked-retry.ts).
      if (asked.zoneWorking) {
        const zone = zoneOf(qname) || qname;
        this.#noteServfail(zone, qname);
        return { ...r, busyServfail: zone };
      }
      if (!r.rateLimited) return r;
      if (resends >= this.dropResends || this.breaker.state !== 'closed') {
        // Dropped every time it was sent: a name that keeps timing out while its zone answers
        // (a CNAME into a dead zone, through a resolver) still backs off, that name alone.
        if (asked.fullBudget) this.backoff?.timedOut(qname, { zoneAnswered: true });
        return r;
      }
      trial = false;
    }
  }

  /** A SERVFAIL of `name` from its working zone (bounded: the last few names per zone, SERVFAIL_ZONES_KEPT zones). */
  #noteServfail(zone: string, name: string): void {
    const now = performance.now();
    const recent = (this.#servfails.get(zone) ?? []).filter(
      (x) => x.name !== name && now - x.at <= SERVFAIL_ZONE_WORKING_MS,
    );
    recent.push({ name, at: now });
    if (recent.length > SERVFAIL_BURST_NAMES) recent.shift();
    this.#servfails.delete(zone);
    this.#servfails.set(zone, recent);
    if (this.#servfails.size > SERVFAIL_ZONES_KEPT) this.#servfails.delete(this.#servfails.keys().next().value!);
  }

  /**
   * Whether the zone's SERVFAILs are a burst: at least SERVFAIL_BURST_NAMES distinct names of it
   * answered SERVFAIL within the last SERVFAIL_ZONE_WORKING_MS. A resolver that a zone rate-limits
   * fails many names of it at once; a name broken on its own (a CNAME into a dead zone, a lame
   * subdomain) fails alone, and its SERVFAIL stands.
   */
  servfailBurst(zone: string): boolean {
    const now = performance.now();
    return (
      (this.#servfails.get(zone) ?? []).filter((x) => now - x.at <= SERVFAIL_ZONE_WORKING_MS).length >=
      SERVFAIL_BURST_NAMES
    );
  }

  /** One sending of the question: a place in the windows, then the attempt schedule from the send. */
  async #sendOnce(
    qname: string,
    type: RecordType,
    opts: QueryOptions,
    started: number,
    trial: boolean,
  ): Promise<{ result: QueryResult; fullBudget: boolean; zoneWorking?: boolean }> {
    // A place in the windows of the question's zone and server; the deadline starts once it is sent.
    const first = this.preferred % this.servers.length;
    const zone = this.congestion ? zoneOf(qname) : '';
    const queuedAt = performance.now();
    const permit = this.congestion ? await this.congestion.acquire(opts.tenant ?? '', zone, first, opts.signal) : null;
    if (permit === 'aborted') opts.signal!.throwIfAborted();
    if (permit === null && this.congestion) {
      return {
        result: { ...empty(qname, type, 'error', started), congested: zone || qname, retryAfterMs: 1000 },
        fullBudget: false,
      };
    }
    const held = permit === 'aborted' ? null : permit;
    // It may have waited while its zone was backed off (unless it is the trial of that backoff).
    if (held && !trial && held.sentAt - queuedAt > 1) {
      const late = this.backoff?.checkUntil(qname) ?? null;
      if (late && !late.trial) {
        held.release('other');
        return { result: backedOffResult(qname, type, late, started), fullBudget: false };
      }
    }
    const sentAt = held?.sentAt ?? performance.now();
    let signalled: QuestionEnd = 'other';
    try {
      const asked = await this.#ask(qname, type, opts, first, started, sentAt, held);
      signalled = asked.signal;
      return {
        result: asked.result,
        fullBudget: Math.max(1, opts.timeoutMs ?? this.timeoutMs) >= this.timeoutMs,
        // Read before this SERVFAIL's own release: whether other questions of its zone were answered.
        zoneWorking: asked.signal === 'servfail' && (held?.zoneAnsweredWithin(SERVFAIL_ZONE_WORKING_MS) ?? false),
      };
    } finally {
      held?.release(signalled);
    }
  }

  async #ask(
    qname: string,
    type: RecordType,
    opts: QueryOptions,
    first: number,
    started: number,
    sentAt: number,
    permit: { zoneAnsweredSince(): boolean } | null,
  ): Promise<{ result: QueryResult; signal: QuestionEnd }> {
    const budget = Math.max(1, opts.timeoutMs ?? this.timeoutMs);
    const stop = new AbortController();
    const deadline = setTimeout(() => stop.abort(QUERY_OVER), budget);
    const onCallerAbort = () => stop.abort(QUERY_OVER);
    opts.signal?.addEventListener('abort', onCallerAbort, { once: true });
    let end: RaceEnd;
    try {
      end = await this.race(qname, type, budget, stop.signal, first);
    } finally {
      clearTimeout(deadline);
      opts.signal?.removeEventListener('abort', onCallerAbort);
      stop.abort(QUERY_OVER); // releases the sockets of attempts still listening
    }
    // The caller gave up: no outcome is true for it, and it says nothing about the servers.
    opts.signal?.throwIfAborted();

    if (end.kind === 'timeout') {
      // The target's fact, not the resolver's: it feeds the zone's window and backoff, never the
      // breaker's count. Only total silence from the servers makes the breaker ask them its own
      // question. A shorter budget than the usual one says less about the zone: it does not count
      // towards the backoff; the timeout of a question sent before the zone's last answer counts
      // for the name only (a zone that answers some and drops others is rate limiting, not dead).
      const silent = this.lastHeardAt <= sentAt;
      const zoneAnswered = permit?.zoneAnsweredSince() ?? false;
      // A drop by a zone that answers (rate limiting) is counted by query(), if it is sent again in vain.
      if (this.breaker.state === 'closed' && budget >= this.timeoutMs && !zoneAnswered) this.backoff?.timedOut(qname);
      const now = performance.now();
      if (silent && now - this.lastHeardAt >= this.silenceMs) void this.breaker.verify();
      const result = empty(qname, type, 'timeout', started);
      // Dropped by a zone that answered other questions meanwhile (rate limiting): query() sends it
      // again behind the window this timeout has just cut.
      return {
        result: zoneAnswered ? { ...result, rateLimited: zoneOf(qname) || qname } : result,
        signal: silent ? 'silent_timeout' : 'timeout',
      };
    }
    if (end.kind === 'error') {
      if (end.unreachable) this.breaker.failure();
      return { result: empty(qname, type, 'error', started), signal: 'other' };
    }
    this.breaker.success();
    this.backoff?.replied(qname);
    this.preferred = end.server;
    const { reply } = end;
    const rcode = replyRcode(reply);
    const answers = answerRecords(reply, qname, type);
    const outcome = outcomeOf(rcode, answers);
    return {
      result: {
        name: qname,
        type,
        outcome,
        rcode: rcodeName(rcode),
        answers,
        flags: { aa: reply.flag_aa, ad: reply.flag_ad, tc: reply.flag_tc, ra: reply.flag_ra },
        transport: end.transport,
        durationMs: elapsed(started),
      },
      signal: outcome === 'servfail' ? 'servfail' : end.retransmitted ? 'answer_after_loss' : 'answer',
    };
  }

  /** Runs the attempt schedule until a reply, the deadline (timeout) or every attempt failing (error). */
  private race(qname: string, type: RecordType, budget: number, signal: AbortSignal, first: number): Promise<RaceEnd> {
    const n = this.servers.length;
    const attempts = Math.max(this.minAttempts, n);
    const slotMs = budget / attempts;
    return new Promise((resolve) => {
      let launched = 0;
      let pending = 0;
      let done = false;
      let unreachable = true;
      let slot: NodeJS.Timeout | undefined;
      const finish = (end: RaceEnd) => {
        if (done) return;
        done = true;
        clearTimeout(slot);
        signal.removeEventListener('abort', onDeadline);
        resolve(end);
      };
      const onDeadline = () => finish({ kind: 'timeout' });
      signal.addEventListener('abort', onDeadline, { once: true });
      const launch = () => {
        clearTimeout(slot);
        if (done) return;
        if (launched >= attempts) {
          if (pending === 0) finish({ kind: 'error', unreachable });
          return;
        }
        const server = (first + launched) % n;
        launched++;
        pending++;
        void this.attempt(server, qname, type, signal).then((a) => {
          pending--;
          if (a.kind === 'reply') finish({ ...a, retransmitted: launched > 1 });
          else if (a.kind === 'failed') {
            unreachable &&= a.unreachable;
            launch();
          }
        });
        if (launched < attempts) slot = setTimeout(launch, slotMs);
      };
      launch();
    });
  }

  /** UDP first; a truncated reply (TC) is asked again over TCP of the same server. */
  private async attempt(server: number, qname: string, type: RecordType, signal: AbortSignal): Promise<Attempt> {
    const target = this.servers[server]!;
    const id = randomInt(0, 0x10000);
    const query = buildQuery(id, qname, type);
    const accept = (buf: Buffer) => acceptReply(buf, id, qname, type);
    const udp = await udpExchange(target, query, accept, signal);
    if (udp.kind === 'reply') this.lastHeardAt = performance.now(); // a truncated reply is still a reply
    if (udp.kind !== 'reply' || !udp.reply.flag_tc) return tagged(udp, 'udp', server);
    const tcp = await tcpExchange(target, query, accept, signal);
    if (tcp.kind === 'reply') this.lastHeardAt = performance.now();
    return tagged(tcp, 'tcp', server);
  }
}

function tagged(x: Exchange, transport: 'udp' | 'tcp', server: number): Attempt {
  if (x.kind === 'reply') return { kind: 'reply', reply: x.reply, transport, server };
  if (x.kind === 'failed') return { kind: 'failed', unreachable: UNREACHABLE.has(x.reason) };
  return { kind: 'aborted' };
}

function empty(name: string, type: RecordType, outcome: QueryOutcome, started: number): QueryResult {
  return {
    name,
    type,
    outcome,
    rcode: null,
    answers: [],
    flags: { ...NO_FLAGS },
    transport: null,
    durationMs: elapsed(started),
  };
}

/** A question not sent because its name or zone is backed off: `timeout` at once, retryable later. */
function backedOffResult(
  name: string,
  type: RecordType,
  b: { label: string; remainingMs: number },
  started: number,
): QueryResult {
  return { ...empty(name, type, 'timeout', started), zoneBackoff: b.label, retryAfterMs: Math.ceil(b.remainingMs) };
}

function elapsed(started: number): number {
  return Math.round((performance.now() - started) * 1000) / 1000;
}

export function createResolver(config: Config): StubResolver {
  return new StubResolver({
    servers: resolveServers(config.DNS_SERVERS),
    timeoutMs: config.DNS_TIMEOUT_MS,
    zoneBackoff: config.DNS_ZONE_BACKOFF_MS > 0 ? { backoffMs: config.DNS_ZONE_BACKOFF_MS } : false,
    congestion: {
      zoneWindowMax: config.DNS_ZONE_WINDOW_MAX,
      serverWindowMax: config.DNS_SERVER_WINDOW_MAX,
      queueWaitMs: config.DNS_QUEUE_WAIT_MS,
    },
  });
}
