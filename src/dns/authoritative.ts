// One question put to the zone's own servers, not to a resolver: what a proof of control must
// rest on (issue 45). A recursive resolver answers from its cache (days of TTL, serve-stale after
// the zone changed), so a record its owner has removed can still "prove" control there.
//
//   1. the zone cut: the name, then each name above it down to `floor` (the registrable domain),
//      is asked NS through the project's resolver until one owns NS records itself (a CNAME's
//      target's NS do not count): that name is the zone's apex, those are its servers;
//   2. each server (at most MAX_SERVERS, in name order) is resolved and connected to through the
//      outbound guard (its address vetted like any target's, OUTBOUND_PORT_MAP applied), and asked
//      the question over TCP with RD=0 (./stream-query.ts: no spoofed datagram, no recursion);
//   3. the first reply with AA=1 and a determinate outcome (records, NODATA, NXDOMAIN) is the
//      answer. A reply without AA (a cache, a forwarder, a lame server), SERVFAIL, REFUSED, a
//      timeout or an unreachable server is not: the next server is asked.
// Nothing is cached here, and every failure is `indeterminate` with a reason (documented in
// docs/operations.md, "Approved scopes"): never read as the record's presence nor its absence.
// The resolver's own negative answers on the walk are not a disproof either (they may be cached):
// a name with no zone cut up to `floor` is indeterminate (`zone_unknown`).
import type { Socket } from 'node:net';
import { isIPv6 } from 'node:net';
import { presence } from './presence.ts';
import { queryOverStream } from './stream-query.ts';
import type { QueryResult, RecordType, Resolver } from './types.ts';

/** Servers of one zone asked at most, one after the other (real delegations have 2–4). */
export const MAX_SERVERS = 3;
const CONNECT_MS = 2_000;
const QUERY_MS = 2_000;

/** How the zone's servers are reached: the outbound guard (structurally; dns/ never imports net/). */
export interface ServerDialer {
  resolve(host: string, signal?: AbortSignal): Promise<string[]>;
  connectTcp(
    target: { address: string; port: number; host?: string },
    opts: { timeoutMs?: number; signal?: AbortSignal },
  ): Promise<Socket>;
}

/**
 * Why no authoritative answer came (the proof's `reason`, docs/operations.md):
 *   zone_unknown       the NS walk found no zone cut (or the resolver could not answer it)
 *   no_server_address  no name server of the zone has an address the guard allows
 *   unreachable        no connection to any of its servers
 *   timeout            connected, no reply in time
 *   servfail, refused  the server's rcode (REFUSED: it does not serve the zone)
 *   not_authoritative  a reply without the AA bit: a cache or a forwarder, not the zone's data
 *   error              a malformed or mismatched reply, another rcode
 */
export type AuthoritativeFailure =
  | 'zone_unknown'
  | 'no_server_address'
  | 'unreachable'
  | 'timeout'
  | 'servfail'
  | 'refused'
  | 'not_authoritative'
  | 'error';

export type AuthoritativeAnswer =
  | { kind: 'answer'; result: QueryResult; zone: string; server: string }
  | { kind: 'indeterminate'; reason: AuthoritativeFailure; detail: string };

const normal = (n: unknown) => String(n).toLowerCase().replace(/\.$/, '');

/** The apex at or above `name` (not above `floor`) and its NS names; null with why when unknown. */
export async function zoneCut(
  resolver: Resolver,
  name: string,
  floor: string,
  signal?: AbortSignal,
): Promise<{ zone: string; servers: string[] } | { zone: null; detail: string }> {
  const top = normal(floor);
  for (let candidate = normal(name); ; candidate = candidate.slice(candidate.indexOf('.') + 1)) {
    const r = await resolver.query(candidate, 'NS', signal ? { signal } : {});
    if (presence(r) === 'indeterminate')
      return { zone: null, detail: `NS ${candidate}: ${r.rcode ?? r.outcome} from the resolver` };
    const servers = r.answers.filter((a) => a.type === 'NS' && normal(a.name) === candidate).map((a) => normal(a.data));
    if (servers.length > 0) return { zone: candidate, servers: [...new Set(servers)].sort() };
    if (candidate === top || !candidate.includes('.') || !candidate.endsWith(`.${top}`))
      return { zone: null, detail: `no NS records at or above ${normal(name)} up to ${top}` };
  }
}

/** Asks (name, type) of the zone's own servers; see the header. Never rejects but on the caller's abort. */
export async function askAuthoritative(
  resolver: Resolver,
  dialer: ServerDialer,
  name: string,
  type: RecordType,
  floor: string,
  signal?: AbortSignal,
): Promise<AuthoritativeAnswer> {
  const cut = await zoneCut(resolver, name, floor, signal);
  if (cut.zone === null) return { kind: 'indeterminate', reason: 'zone_unknown', detail: cut.detail };
  const tried: string[] = [];
  let reason: AuthoritativeFailure = 'no_server_address';
  for (const server of cut.servers.slice(0, MAX_SERVERS)) {
    signal?.throwIfAborted();
    const step = await askServer(dialer, server, name, type, signal);
    if (step.kind === 'answer') return { ...step, zone: cut.zone, server };
    // The most telling failure wins: a server that answered badly says more than one not reached.
    if (RANK[step.reason] >= RANK[reason]) reason = step.reason;
    tried.push(`${server}: ${step.detail}`);
  }
  return {
    kind: 'indeterminate',
    reason,
    detail: `no authoritative answer from the servers of ${cut.zone} (${tried.join('; ')})`,
  };
}

const RANK: Record<AuthoritativeFailure, number> = {
  zone_unknown: 0,
  no_server_address: 1,
  unreachable: 2,
  timeout: 3,
  error: 4,
  servfail: 5,
  refused: 6,
  not_authoritative: 7,
};

async function askServer(
  dialer: ServerDialer,
  server: string,
  name: string,
  type: RecordType,
  signal?: AbortSignal,
): Promise<{ kind: 'answer'; result: QueryResult } | { kind: 'failed'; reason: AuthoritativeFailure; detail: string }> {
  let address: string;
  try {
    const addresses = await dialer.resolve(server, signal);
    address = addresses.find((a) => !isIPv6(a)) ?? addresses[0]!;
    if (address === undefined) throw new Error('no address');
  } catch (err) {
    signal?.throwIfAborted();
    return { kind: 'failed', reason: 'no_server_address', detail: `no usable address (${errText(err)})` };
  }
  let socket: Socket;
  try {
    socket = await dialer.connectTcp({ address, port: 53, host: server }, { timeoutMs: CONNECT_MS, ...opt(signal) });
  } catch (err) {
    signal?.throwIfAborted();
    return { kind: 'failed', reason: 'unreachable', detail: `${address}: ${errText(err)}` };
  }
  let r: QueryResult;
  try {
    r = await queryOverStream(socket, name, type, { timeoutMs: QUERY_MS, recursionDesired: false, ...opt(signal) });
  } finally {
    socket.destroy();
  }
  signal?.throwIfAborted();
  if (presence(r) === 'indeterminate') {
    const reason: AuthoritativeFailure =
      r.outcome === 'servfail' || r.outcome === 'refused' || r.outcome === 'timeout' ? r.outcome : 'error';
    return { kind: 'failed', reason, detail: `${address}: ${r.rcode ?? r.outcome}` };
  }
  if (!r.flags.aa)
    return { kind: 'failed', reason: 'not_authoritative', detail: `${address}: answered without the AA bit` };
  return { kind: 'answer', result: r };
}

const opt = (signal?: AbortSignal) => (signal ? { signal } : {});

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
