// The one way product checks reach the internet (developer guide, security rule): HTTP(S) fetches,
// raw TCP connections (SMTP) and TLS handshakes all go through here. Every host is resolved with
// the project's resolver, ALL of its addresses are vetted against the address policy, and the
// connection goes to a vetted address — the socket libraries get a lookup that returns only what
// was checked (./vetting.ts), so a DNS rebind between check and connect cannot reach anything
// else. TLS keeps verifying the certificate against the host name (SNI = the name, never the IP).
// HTTP(S) runs on undici (./guarded-fetch.ts): odd URL forms refused (./url-policy.ts), redirects
// followed by hand and each hop checked again, header bytes, body bytes and time per phase capped,
// every hop on the passive ports unless the caller does active work (./passive-ports.ts).
//
// createOutboundGuard() binds the policy (ALLOW_PRIVATE_TARGETS), the resolver and the lab port
// map once per process; product code receives that object (runtime.services.outbound) and never
// opens a socket of its own.
import net, { isIP } from 'node:net';
import tls from 'node:tls';
import type { Duplex } from 'node:stream';
import { keepPeerChain } from './peer-certificate.ts';
import { withSharedSecureContext } from './secure-contexts.ts';
import type { Resolver } from '../dns/types.ts';
import type { GuardedFetchOptions, GuardedResponse, SharedHops } from './guarded-fetch.ts';
import { hostResolverOver, type HostResolver } from './host-resolver.ts';
import { OutboundFetchError, errorText } from './outbound-errors.ts';
import { noteIfLocal } from './local-failures.ts';
import type { PortMap } from '../config/port-map.ts';
import { NO_PORT_MAP, mapPort } from './port-map.ts';
import { PASSIVE_PORTS } from './passive-ports.ts';
import { resolveVetted, vetAddress } from './vetting.ts';
import { AddressSlots, DROP_RETRIES, type PolitenessOptions, type SlotPermit } from './address-slots.ts';
import { slotFailure } from './slot-failure.ts';
import { ConnectGate, sharedRefusal } from './connect-gate.ts';
import { abortable } from './vetting.ts';

export { classifyAddress, isAllowedTarget } from './address-policy.ts';
export {
  OutboundFetchError,
  OutboundRefusedError,
  type FetchFailure,
  type FetchPhase,
  type HopRecord,
  type RefusalReason,
} from './outbound-errors.ts';
export { hostResolverOver, type HostResolver } from './host-resolver.ts';
// guarded-fetch.ts (undici) is imported at the first fetch, not here: every role builds a guard,
// few fetch (the orchestrator and the dns lane never do).
export type { GuardedFetchOptions, GuardedResponse } from './guarded-fetch.ts';
export { resolveVetted, vetAddress } from './vetting.ts';
export { checkUrl, MAX_URL_LENGTH } from './url-policy.ts';
export { AddressSlots, type PolitenessOptions } from './address-slots.ts';
export { PASSIVE_PORTS } from './passive-ports.ts';

// ---- Raw connections (SMTP, TLS handshakes) ----------------------------------------------------

export interface ConnectOptions {
  signal?: AbortSignal;
  /** Time to establish the connection (and, for TLS, to finish the handshake). */
  timeoutMs?: number;
}

export interface TcpTarget {
  /** The vetted address to connect to (from resolve(), or a literal). */
  address: string;
  /** The protocol's port (25, 443…); the lab port map decides where it really goes. */
  port: number;
  /** The name the address belongs to, for refusals and messages. */
  host?: string;
}

function connectFailure(err: unknown, signal: AbortSignal | undefined, timedOut: boolean): OutboundFetchError {
  noteIfLocal(err); // this process's shortage, not the target's fact (./local-failures.ts)
  if (err instanceof OutboundFetchError) return err;
  if (signal?.aborted) return new OutboundFetchError('aborted', 'connection aborted by the caller', { cause: err });
  if (timedOut) return new OutboundFetchError('timeout', 'connection timed out', { cause: err });
  return new OutboundFetchError('connection_failed', errorText(err), { cause: err });
}

/**
 * A place in the address's window (slots.acquire) for the connection `open` makes, given back when
 * the socket closes or the connection fails. The connect timer starts when `open` runs, after the
 * wait: time queued in our process is never the target's timeout, and a wait past
 * OUTBOUND_QUEUE_WAIT_MS is `congested` (./slot-failure.ts). A connect dropped (timed out, reset)
 * by an address that answers others on the port is attempted again behind the cut window, at most
 * DROP_RETRIES times; one dropped by an address that answers none fails as before.
 */
async function politely<S extends net.Socket>(
  slots: AddressSlots | undefined,
  address: string,
  port: number,
  signal: AbortSignal | undefined,
  open: () => Promise<S>,
): Promise<S> {
  if (!slots) return open();
  for (let attempt = 0; ; attempt++) {
    let permit: SlotPermit;
    try {
      permit = await slots.acquire(address, signal, port);
    } catch (err) {
      const failure = slotFailure(err);
      throw failure instanceof OutboundFetchError ? failure : connectFailure(err, signal, false);
    }
    try {
      const socket = await open();
      permit.answered();
      const release = () => permit.release('answer');
      socket.once('close', release);
      if (socket.destroyed) release();
      return socket;
    } catch (err) {
      if (signal?.aborted || !droppedConnect(err)) {
        permit.release('other');
        throw err;
      }
      const verdict = await permit.dropVerdict(signal);
      permit.release(verdict);
      if (verdict !== 'rate_limited' || attempt >= DROP_RETRIES || signal?.aborted) throw err;
      slots.noteRetry();
    }
  }
}

/** A connect that timed out or was reset before it was ready (not refused: a closed port answers). */
function droppedConnect(err: unknown): boolean {
  if (!(err instanceof OutboundFetchError)) return false;
  if (err.kind === 'timeout') return true;
  const code = (err.cause as { code?: unknown } | undefined)?.code;
  return err.kind === 'connection_failed' && (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNABORTED');
}

/** A TCP connection to a vetted address. The caller owns the socket (and must destroy it). */
export async function connectTcp(
  target: TcpTarget,
  allow: readonly string[],
  portMap: PortMap,
  opts: ConnectOptions = {},
  slots?: AddressSlots,
  deny: readonly string[] = [],
  gate?: ConnectGate,
): Promise<net.Socket> {
  vetAddress(target.address, allow, target.host ?? target.address, deny);
  return politely(slots, target.address, target.port, opts.signal, () =>
    gatedOpen(
      gate,
      target,
      opts.signal,
      () => net.connect({ host: target.address, port: mapPort(portMap, target.port), family: isIP(target.address) }),
      (socket) => settleConnect(socket, 'connect', opts),
    ),
  );
}

export interface TlsTarget extends TcpTarget {
  /** SNI and the name the certificate is checked against; omit for an address-only handshake. */
  servername?: string;
}

/**
 * A TLS handshake with a vetted address. With `rejectUnauthorized: false` in `tls`, the socket is
 * returned whatever the certificate, and the caller reads `authorized`/`authorizationError` (the
 * web and mail lanes report trust as a fact instead of failing on it): Node folds the host-name
 * check into them too (ERR_TLS_CERT_ALTNAME_INVALID).
 */
export async function connectTls(
  target: TlsTarget,
  allow: readonly string[],
  portMap: PortMap,
  opts: ConnectOptions & { tls?: tls.ConnectionOptions } = {},
  slots?: AddressSlots,
  deny: readonly string[] = [],
  gate?: ConnectGate,
): Promise<tls.TLSSocket> {
  vetAddress(target.address, allow, target.host ?? target.address, deny);
  return politely(slots, target.address, target.port, opts.signal, () =>
    gatedOpen(
      gate,
      target,
      opts.signal,
      () => {
        const socket = tls.connect({
          ...withSharedSecureContext(opts.tls ?? {}),
          host: target.address,
          port: mapPort(portMap, target.port),
          ...(target.servername && !isIP(target.servername) ? { servername: target.servername } : {}),
        });
        keepPeerChain(socket); // Node's host-name check and handshakeFacts share one conversion
        watchOcsp(socket, opts.tls);
        return socket;
      },
      (socket) => settleConnect(socket, 'secureConnect', opts),
    ),
  );
}

/**
 * `make` a socket and `settle` it, unless an attempt of the same check to the same address and
 * port is under way or was made (./connect-gate.ts): then wait for its TCP connect first, and
 * fail as it did when it was refused; otherwise connect as before.
 */
async function gatedOpen<S extends net.Socket>(
  gate: ConnectGate | undefined,
  target: TcpTarget,
  signal: AbortSignal | undefined,
  make: () => S,
  settle: (socket: S) => Promise<S>,
): Promise<S> {
  if (!gate) return settle(make());
  const claim = gate.claim(target.address, target.port);
  if ('first' in claim) {
    if (await abortable(claim.first, signal))
      throw connectFailure(sharedRefusal(target.address, target.port), signal, false);
    return settle(make());
  }
  let socket: S;
  try {
    socket = make();
  } catch (err) {
    claim.watch(null);
    throw err;
  }
  claim.watch(socket);
  return settle(socket);
}

const stapled = new WeakMap<tls.TLSSocket, boolean>();

/** The response arrives during the handshake: listen before it starts. */
function watchOcsp(socket: tls.TLSSocket, options: tls.ConnectionOptions | undefined): void {
  if (!options?.requestOCSP) return;
  stapled.set(socket, false);
  // Node emits null when the server stapled nothing.
  socket.once('OCSPResponse', (response: Buffer | null) => stapled.set(socket, !!response && response.length > 0));
}

/** Whether the server stapled an OCSP response; null when the handshake did not ask (requestOCSP). */
export function ocspStapled(socket: tls.TLSSocket): boolean | null {
  return stapled.get(socket) ?? null;
}

/**
 * Upgrades an open connection (STARTTLS): no new connection, so nothing to vet. `socket` is the
 * guarded socket or a stream over it (SMTP's gate that keeps plain text out of the handshake).
 */
export function upgradeTls(
  socket: net.Socket | Duplex,
  servername: string | undefined,
  opts: ConnectOptions & { tls?: tls.ConnectionOptions } = {},
): Promise<tls.TLSSocket> {
  const secure = tls.connect({
    ...withSharedSecureContext(opts.tls ?? {}),
    socket,
    ...(servername && !isIP(servername) ? { servername } : {}),
  });
  keepPeerChain(secure);
  watchOcsp(secure, opts.tls);
  return settleConnect(secure, 'secureConnect', opts);
}

function settleConnect<S extends net.Socket>(
  socket: S,
  ready: 'connect' | 'secureConnect',
  opts: ConnectOptions,
): Promise<S> {
  return new Promise<S>((resolve, reject) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      socket.destroy(new Error('timeout'));
    }, opts.timeoutMs ?? 10_000);
    const onAbort = () => socket.destroy(new Error('aborted'));
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      socket.off('error', onError);
      socket.off(ready, onReady);
    };
    const onError = (err: Error) => {
      done();
      socket.destroy();
      reject(connectFailure(err, opts.signal, timedOut));
    };
    const onReady = () => {
      done();
      resolve(socket);
    };
    if (opts.signal?.aborted) return onError(new Error('aborted'));
    socket.once('error', onError);
    socket.once(ready, onReady);
  });
}

// ---- The guard object ---------------------------------------------------------------------------

export interface OutboundGuard {
  readonly allow: readonly string[];
  /** The host's addresses, every one vetted (OutboundRefusedError / OutboundFetchError otherwise). */
  resolve(host: string, signal?: AbortSignal): Promise<string[]>;
  /** Throws OutboundRefusedError when the address may not be reached. */
  vet(address: string, host?: string): void;
  /**
   * HTTP(S) through the guard. Every hop, redirects included, stays on the passive ports
   * (./passive-ports.ts: 80, 443, 8080, 8443) and another is refused before anything is resolved
   * or connected (port_not_allowed), unless `ports: 'any'`: only for active work the request
   * authorized. `ports: 'configured'`: a server the operator configured (RDAP) on any port, and
   * redirects back to its own origin; a redirect elsewhere stays on the passive ports.
   */
  fetch(
    url: string | URL,
    opts?: FetchOptions & { ports?: 'passive' | 'any' | 'configured' },
  ): Promise<GuardedResponse>;
  /**
   * A fetch of a URL the target's own data names (a BIMI logo or mark certificate, an MTA-STS
   * policy): always the passive ports, and every failure to get an answer from a hop is one kind,
   * `unreachable` (guarded-fetch.ts reachFailures), so what comes back does not tell an open port
   * from a closed or a filtered one.
   */
  fetchReferenced(url: string | URL, opts?: FetchOptions): Promise<GuardedResponse>;
  connectTcp(target: TcpTarget, opts?: ConnectOptions): Promise<net.Socket>;
  connectTls(target: TlsTarget, opts?: ConnectOptions & { tls?: tls.ConnectionOptions }): Promise<tls.TLSSocket>;
  /**
   * The same guard for one check (`signal`: the check's): a host is asked of DNS once for as long
   * as the check holds it (its chains, their redirects and its preflight share the answer, a
   * failure included), and the answer is still vetted at every use; a fetch hop that repeats a
   * request the check already made reads its response (guarded-fetch.ts, sharedHops). Sharing is also stricter: a rebinding answer cannot change
   * the addresses between two hops of one check. A connection refused (ECONNREFUSED) to an
   * address and port is the answer of the check's other connections there too (./connect-gate.ts):
   * they wait for the first one's TCP connect and read its refusal instead of asking again.
   * forCheck() of a check's guard stays in that check (its hops and connections shared): a
   * composite check (a scan's web check) hands one check guard to its parts.
   */
  forCheck(signal?: AbortSignal): OutboundGuard;
  /**
   * The same guard (policy, port map, politeness slots) asking another resolver: the lane runner's
   * job-scoped DNS cache (src/dns/answer-cache.ts).
   */
  over(resolver: Resolver): OutboundGuard;
  /**
   * The same guard answering `host` (that name only) with `addresses` until `until` (epoch ms)
   * instead of asking its resolver: a scan's web task carries what its host's dns task resolved a
   * moment before (the answers' TTL bounds `until`). The addresses are vetted at every use like any
   * answer; another name, or the same one after `until`, is asked as before.
   */
  knowing(host: string, addresses: readonly string[], until: number): OutboundGuard;
  /**
   * The same guard taking its politeness slots on behalf of `tenant` (a workspace): the slots of
   * an address are shared max-min between the tenants waiting for it (address-slots.ts), so one
   * tenant's backlog on an address never stands in front of another tenant's connection.
   */
  forTenant(tenant: string): OutboundGuard;
  /** The politeness slots every connection of this guard takes (null: none). */
  readonly slots: AddressSlots | null;
}

/** What a caller of OutboundGuard.fetch chooses (the guard binds the rest, ports included). */
export type FetchOptions = Omit<
  GuardedFetchOptions,
  | 'allow'
  | 'deny'
  | 'resolver'
  | 'portMap'
  | 'sharedHops'
  | 'gate'
  | 'allowedPorts'
  | 'firstOriginAnyPort'
  | 'reachFailures'
  | 'slots'
>;

export interface OutboundGuardOptions {
  allow: readonly string[];
  /**
   * Refused whatever `allow` says: ACTIVE_DENY_CIDRS, on the guard active work uses
   * (runtime.services.activeOutbound).
   */
  deny?: readonly string[];
  /** The project's resolver, or a HostResolver (tests). */
  resolver: Resolver | HostResolver;
  portMap?: PortMap;
  /** Politeness per target address (OUTBOUND_CONNECTIONS_PER_ADDRESS, OUTBOUND_ADDRESS_INTERVAL_MS); none if absent. */
  politeness?: PolitenessOptions;
  /** Another guard's politeness slots, shared (the active guard shares the process guard's). */
  slots?: AddressSlots;
}

export function createOutboundGuard(o: OutboundGuardOptions): OutboundGuard {
  const resolver: HostResolver = typeof o.resolver === 'function' ? o.resolver : hostResolverOver(o.resolver);
  return guardOver(resolver, o, o.slots ?? (o.politeness ? new AddressSlots(o.politeness) : undefined));
}

/**
 * A resolver that asks once per host: later and concurrent askers share the first question. The
 * question runs under the check's signal, not under the first asker's: one chain's deadline must
 * not fail its sibling's lookup. Each asker's own signal still bounds its wait (resolveVetted).
 */
export function memoHostResolver(resolver: HostResolver, signal?: AbortSignal): HostResolver {
  const answers = new Map<string, Promise<string[]>>();
  return (host) => {
    const key = host.toLowerCase();
    let answer = answers.get(key);
    if (!answer) {
      answer = resolver(host, signal);
      answer.catch(() => {}); // an asker that gave up no longer listens; the next one reads it
      answers.set(key, answer);
    }
    return answer;
  };
}

/** `resolver`, except that `host` answers `addresses` until `until` (OutboundGuard.knowing). */
function knownHost(resolver: HostResolver, host: string, addresses: readonly string[], until: number): HostResolver {
  const known = host.toLowerCase().replace(/\.$/, '');
  return (h, signal) =>
    addresses.length > 0 && Date.now() < until && h.toLowerCase().replace(/\.$/, '') === known
      ? Promise.resolve([...addresses])
      : resolver(h, signal);
}

/**
 * guarded-fetch.ts, imported once: an import() of a loaded module still walks the loader (resolve,
 * module job) on every call, three times a web check (its two chains and the preflight).
 */
let guardedFetchModule: Promise<typeof import('./guarded-fetch.ts')> | undefined;
const loadGuardedFetch = () => (guardedFetchModule ??= import('./guarded-fetch.ts'));

function guardOver(
  resolver: HostResolver,
  o: OutboundGuardOptions,
  slots: AddressSlots | undefined,
  sharedHops?: SharedHops,
  gate?: ConnectGate,
): OutboundGuard {
  const portMap = o.portMap ?? NO_PORT_MAP;
  const allow = o.allow;
  const deny = o.deny ?? [];
  return {
    allow,
    slots: slots ?? null,
    resolve: (host, signal) => resolveVetted(host, allow, resolver, signal, deny),
    vet: (address, host) => vetAddress(address, allow, host, deny),
    fetch: async (url, opts = {}) => {
      const { ports = 'passive', ...rest } = opts;
      const { guardedFetch } = await loadGuardedFetch();
      return guardedFetch(url, {
        ...rest,
        ...(ports === 'passive' ? { allowedPorts: PASSIVE_PORTS } : {}),
        ...(ports === 'configured' ? { allowedPorts: PASSIVE_PORTS, firstOriginAnyPort: true } : {}),
        allow,
        deny,
        resolver,
        portMap,
        ...(sharedHops ? { sharedHops } : {}),
        ...(gate ? { gate } : {}),
        ...(slots ? { slots } : {}),
      });
    },
    fetchReferenced: async (url, opts = {}) => {
      const { guardedFetch } = await loadGuardedFetch();
      return guardedFetch(url, {
        ...opts,
        allowedPorts: PASSIVE_PORTS,
        reachFailures: 'unreachable',
        allow,
        deny,
        resolver,
        portMap,
        ...(sharedHops ? { sharedHops } : {}),
        ...(gate ? { gate } : {}),
        ...(slots ? { slots } : {}),
      });
    },
    connectTcp: (target, opts) => connectTcp(target, allow, portMap, opts, slots, deny, gate),
    connectTls: (target, opts) => connectTls(target, allow, portMap, opts, slots, deny, gate),
    forCheck: (signal) =>
      guardOver(memoHostResolver(resolver, signal), o, slots, sharedHops ?? new Map(), gate ?? new ConnectGate()),
    over: (r) => guardOver(hostResolverOver(r), o, slots),
    knowing: (host, addresses, until) =>
      guardOver(knownHost(resolver, host, addresses, until), o, slots, sharedHops, gate),
    forTenant: (tenant) => guardOver(resolver, o, slots?.forTenant(tenant), sharedHops, gate),
  };
}
