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
import { randomInt } from 'node:crypto';
import type { Config } from '../config/config.ts';
import type { QueryOutcome, QueryResult, RecordType, Resolver, ResolverHealth } from './types.ts';
import type { DnsServer } from '../config/dns-servers.ts';
import { Breaker, type BreakerClock } from '../resilience/breaker.ts';
import { resolveServers } from './system-servers.ts';
import { tcpExchange, udpExchange, type Exchange } from './transport.ts';
import { ZoneBackoff, type ZoneBackoffOptions } from './zone-backoff.ts';
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
  | { kind: 'reply'; reply: Reply; transport: 'udp' | 'tcp'; server: number }
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

  constructor(opts: StubResolverOptions) {
    this.servers = [...opts.servers];
    this.timeoutMs = opts.timeoutMs;
    this.minAttempts = opts.minAttempts ?? 2;
    this.silenceMs = opts.silenceMs ?? 1000;
    this.backoff = opts.zoneBackoff === false ? null : new ZoneBackoff(opts.zoneBackoff ?? {});
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
  }

  /** The breaker's probe: the root's NS through the usual attempt schedule; any reply will do. */
  private async probe(budget: number, signal: AbortSignal): Promise<boolean> {
    const end = await this.race('.', 'NS', budget, signal);
    if (end.kind !== 'reply') return false;
    this.preferred = end.server;
    return true;
  }

  async query(
    name: string,
    type: RecordType,
    opts: { signal?: AbortSignal; timeoutMs?: number } = {},
  ): Promise<QueryResult> {
    const started = performance.now();
    const qname = name.length > 1 && name.endsWith('.') ? name.slice(0, -1) : name; // "." is the root
    opts.signal?.throwIfAborted();
    // Local problems (no servers, a name that cannot be encoded) never touch the network and do
    // not count against the servers' reachability.
    if (this.servers.length === 0 || !encodableName(qname)) return empty(qname, type, 'error', started);
    // A name or zone that kept timing out is not asked for a while: indeterminate at once.
    const backedOff = this.backoff?.check(qname);
    if (backedOff) return { ...empty(qname, type, 'timeout', started), zoneBackoff: backedOff };

    const budget = Math.max(1, opts.timeoutMs ?? this.timeoutMs);
    const stop = new AbortController();
    const deadline = setTimeout(() => stop.abort(QUERY_OVER), budget);
    const onCallerAbort = () => stop.abort(QUERY_OVER);
    opts.signal?.addEventListener('abort', onCallerAbort, { once: true });
    let end: RaceEnd;
    try {
      end = await this.race(qname, type, budget, stop.signal);
    } finally {
      clearTimeout(deadline);
      opts.signal?.removeEventListener('abort', onCallerAbort);
      stop.abort(QUERY_OVER); // releases the sockets of attempts still listening
    }
    // The caller gave up: no outcome is true for it, and it says nothing about the servers.
    opts.signal?.throwIfAborted();

    if (end.kind === 'timeout') {
      // The target's fact, not the resolver's: it feeds the zone's backoff, never the breaker's
      // count. Only total silence from the servers makes the breaker ask them its own question.
      // A shorter budget than the usual one says less about the zone: it does not count.
      if (this.breaker.state === 'closed' && budget >= this.timeoutMs) this.backoff?.timedOut(qname);
      const now = performance.now();
      if (this.lastHeardAt <= started && now - this.lastHeardAt >= this.silenceMs) void this.breaker.verify();
      return empty(qname, type, 'timeout', started);
    }
    if (end.kind === 'error') {
      if (end.unreachable) this.breaker.failure();
      return empty(qname, type, 'error', started);
    }
    this.breaker.success();
    this.backoff?.replied(qname);
    this.preferred = end.server;
    const { reply } = end;
    const rcode = replyRcode(reply);
    const answers = answerRecords(reply, qname, type);
    return {
      name: qname,
      type,
      outcome: outcomeOf(rcode, answers),
      rcode: rcodeName(rcode),
      answers,
      flags: { aa: reply.flag_aa, ad: reply.flag_ad, tc: reply.flag_tc, ra: reply.flag_ra },
      transport: end.transport,
      durationMs: elapsed(started),
    };
  }

  /** Runs the attempt schedule until a reply, the deadline (timeout) or every attempt failing (error). */
  private race(qname: string, type: RecordType, budget: number, signal: AbortSignal): Promise<RaceEnd> {
    const n = this.servers.length;
    const attempts = Math.max(this.minAttempts, n);
    const slotMs = budget / attempts;
    const first = this.preferred % n;
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
          if (a.kind === 'reply') finish(a);
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

function elapsed(started: number): number {
  return Math.round((performance.now() - started) * 1000) / 1000;
}

export function createResolver(config: Config): StubResolver {
  return new StubResolver({
    servers: resolveServers(config.DNS_SERVERS),
    timeoutMs: config.DNS_TIMEOUT_MS,
    zoneBackoff: config.DNS_ZONE_BACKOFF_MS > 0 ? { backoffMs: config.DNS_ZONE_BACKOFF_MS } : false,
  });
}
