// HTTP(S) through the outbound guard, on undici. Each hop of a redirect chain is its own request
// with its own undici Client (one origin, one connection) whose connector can only reach the addresses vetted for that hop: the
// connector is undici's own (TLS, SNI, ALPN) with a `lookup` that answers from the vetted list and
// never asks DNS, and the port passes through OUTBOUND_PORT_MAP after vetting. No pooled socket is
// shared between hops or requests (the client is destroyed with its hop), so a connection vetted for
// one host can never carry another's request. Redirects are followed here, by hand: every Location
// is checked as text (src/net/url-policy.ts), resolved, and its host resolved and vetted again.
//
// Caps: URL length and form, header bytes (maxHeaderSize), body bytes, redirects (5), and time per
// phase — connect, headers, idle body — inside a deadline for the whole exchange. Every response
// of the chain is kept as a HopRecord (status, Location, scheme or host change, HSTS, headers) so
// lanes can report the chain itself; a failure carries the hops received before it.
import type http from 'node:http';
import net, { isIP } from 'node:net';
import tls from 'node:tls';
import { Client, buildConnector, request } from 'undici';
import { leafForIdentityCheck } from './peer-certificate.ts';
import { withSharedSecureContext } from './secure-contexts.ts';
import type { HostResolver } from './host-resolver.ts';
import {
  OutboundFetchError,
  OutboundRefusedError,
  errorText,
  type FetchPhase,
  type HopRecord,
} from './outbound-errors.ts';
import { noteIfLocal } from './local-failures.ts';
import type { PortMap } from '../config/port-map.ts';
import { NO_PORT_MAP, mapPort } from './port-map.ts';
import { urlPort } from './passive-ports.ts';
import { checkUrl, type UrlProblem } from './url-policy.ts';
import { abortable, pinnedLookup, resolveVetted } from './vetting.ts';
import { sharedRefusal, type ConnectGate } from './connect-gate.ts';
import { DROP_RETRIES, type AddressSlots, type SlotPermit } from './address-slots.ts';
import { slotFailure } from './slot-failure.ts';
import { inAllowList } from './address-policy.ts';

export interface GuardedFetchOptions {
  /** CIDRs that may be reached although not public (ALLOW_PRIVATE_TARGETS). */
  allow: readonly string[];
  /** CIDRs never reached whatever `allow` says (an active guard's ACTIVE_DENY_CIDRS). */
  deny?: readonly string[];
  /** Host → vetted-to-be addresses: the project's resolver (hostResolverOver). */
  resolver: HostResolver;
  maxRedirects?: number;
  /** Budget for the whole exchange, every hop included. */
  timeoutMs?: number;
  signal?: AbortSignal;
  maxBytes?: number;
  /** Past maxBytes: fail with response_too_large (default) or keep the first maxBytes (truncated: true). */
  bodyOverflow?: 'error' | 'truncate';
  headers?: Record<string, string>;
  portMap?: PortMap;
  method?: 'GET' | 'HEAD' | 'OPTIONS' | 'POST';
  /** The request body (a webhook's POST). */
  body?: string;
  /**
   * 'follow' (default): redirects are followed by hand, each hop checked again. 'return': a
   * redirect response is the answer (a webhook delivery never follows one: CONTRACT §14).
   */
  redirects?: 'follow' | 'return';
  /**
   * 'allowed' (default): http and https alike. 'allow-listed-only': plain http only when every
   * address of the host is inside `allow` (ALLOW_PRIVATE_TARGETS): a webhook goes over https
   * to anything else. Judged on the addresses the connection is pinned to, so a rebinding answer
   * cannot turn it into plaintext to a public address.
   */
  plainHttp?: 'allowed' | 'allow-listed-only';
  /**
   * Verify certificates (default true). With false the exchange proceeds whatever the certificate
   * and each https hop records tlsVerified: false — the web lane reads headers of a site whose
   * certificate is broken and reports the certificate as a fact, like the Observatory does.
   */
  verifyTls?: boolean;
  /** Cap on the response head (status line + headers), bytes. */
  maxHeaderBytes?: number;
  /** Time to connect (and finish TLS) per hop. */
  connectTimeoutMs?: number;
  /** Time from the request to the end of the response head, per hop. */
  headersTimeoutMs?: number;
  /** Longest silence between two body chunks. */
  bodyIdleTimeoutMs?: number;
  /**
   * Ports (as written in each URL, before OUTBOUND_PORT_MAP) a hop may connect to; any other is
   * refused with port_not_allowed before it is resolved. A passive web lookup passes the web's own
   * ports, so a redirect cannot turn it into a probe of another port. Default: any port.
   */
  allowedPorts?: readonly number[];
  /**
   * Active work's scope: a hop (the first included) whose host this refuses is refused with
   * out_of_scope before it is resolved or connected, so an authorized lookup's redirect cannot
   * carry it to another owner's host. Absent: every host (passive work; its ports are bounded).
   */
  inScope?: (host: string) => boolean;
  /**
   * With allowedPorts: the first URL's origin (a server the operator configured, such as RDAP)
   * may use any port, and so may a redirect back to that same origin; every other hop stays on
   * allowedPorts (a registry's redirect names someone else's server).
   */
  firstOriginAnyPort?: boolean;
  /**
   * 'unreachable': every failure to get a response head from a hop (connection refused or reset,
   * a connect or headers timeout, a TLS handshake that failed for another reason than the
   * certificate) is one kind, `unreachable` (OutboundGuard.fetchReferenced). Default 'detailed'.
   */
  reachFailures?: 'detailed' | 'unreachable';
  /**
   * One check's exchanges (OutboundGuard.forCheck): a hop whose request is the same as one already
   * made or in flight in this check (method, URL, verification, headers, body cap) reads that
   * exchange's response instead of opening another connection. Both chains of a web check end on
   * the same https URL; without this, each made its own handshake for it.
   */
  sharedHops?: SharedHops;
  /**
   * One check's connection attempts (OutboundGuard.forCheck, ./connect-gate.ts): a hop to a single
   * address waits for an attempt of the same check to the same address and port that is under
   * way, and reads its refusal (ECONNREFUSED) instead of connecting again.
   */
  gate?: ConnectGate;
  /** Politeness per target address (./address-slots.ts): each hop holds a slot of its address. */
  slots?: AddressSlots;
}

/** Exchanges of one check by request; each entry is the exchange and the signal it runs under. */
export type SharedHops = Map<string, { response: Promise<RawResponse>; signal: AbortSignal }>;

export interface GuardedResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The URL that produced this response (after redirects). */
  url: string;
  redirects: number;
  body: Buffer;
  /** The body was cut at maxBytes (bodyOverflow: 'truncate'). */
  truncated: boolean;
  /** Every response of the chain, this one last. */
  hops: HopRecord[];
  /** Whether this response's certificate was verified; null over http. */
  tlsVerified: boolean | null;
}

export const DEFAULT_MAX_BYTES = 1024 * 1024;
export const DEFAULT_MAX_HEADER_BYTES = 64 * 1024;
export const DEFAULT_MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const USER_AGENT = 'LSS/2 (+lookup and scan service)';

const REFUSAL_OF: Partial<Record<UrlProblem, 'scheme_not_allowed' | 'credentials_not_allowed'>> = {
  scheme_not_allowed: 'scheme_not_allowed',
  credentials_not_allowed: 'credentials_not_allowed',
};

/** The URL as given, or the refusal its form earns (nothing is resolved or connected). */
function acceptUrl(text: string, from?: string): URL {
  const v = checkUrl(text);
  let host = from ?? text.slice(0, 100);
  try {
    host = new URL(text).hostname || host;
  } catch {
    // keep what we have
  }
  if (v.ok) return v.url;
  if (v.problem === 'not_a_url' || v.problem === 'missing_host')
    throw new OutboundFetchError('bad_redirect', `not a usable URL (${v.problem})`);
  throw new OutboundRefusedError(REFUSAL_OF[v.problem] ?? 'url_not_allowed', host, null, v.problem);
}

/** Where a Location points, judged on its text when it names a host (absolute or scheme-relative). */
function nextUrl(location: string, current: URL): URL {
  if (/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(location)) return acceptUrl(location);
  if (/^[\\/]{2}/.test(location)) return acceptUrl(`${current.protocol}${location}`);
  let resolved: URL;
  try {
    resolved = new URL(location, current);
  } catch (err) {
    throw new OutboundFetchError('bad_redirect', 'unparseable Location header', { cause: err });
  }
  return acceptUrl(resolved.href);
}

function bareHost(u: URL): string {
  return u.hostname.replace(/^\[(.*)\]$/, '$1');
}

function firstHeader(headers: Record<string, string | string[] | undefined>, name: string): string | null {
  const v = headers[name];
  if (v === undefined) return null;
  return Array.isArray(v) ? (v[0] ?? null) : v;
}

function hopRecord(
  u: URL,
  status: number,
  headers: Record<string, string | string[]>,
  verified: boolean | null,
): HopRecord {
  const location = REDIRECTS.has(status) ? firstHeader(headers, 'location') : null;
  let next: URL | null = null;
  if (location) {
    try {
      next = new URL(location, u);
    } catch {
      next = null;
    }
  }
  const schemeChange =
    next && next.protocol !== u.protocol
      ? next.protocol === 'https:'
        ? ('http_to_https' as const)
        : u.protocol === 'https:' && next.protocol === 'http:'
          ? ('https_to_http' as const)
          : null
      : null;
  return {
    url: u.href,
    status,
    location,
    next: next?.href ?? null,
    schemeChange,
    hostChange: next !== null && next.hostname !== u.hostname,
    hsts: firstHeader(headers, 'strict-transport-security'),
    tlsVerified: verified,
    headers,
  };
}

const TLS_CODE = /CERT|ALTNAME|SELF_SIGNED|UNABLE_TO_(GET|VERIFY|DECRYPT)|KEY_TOO_SMALL|TOO_WEAK|^ERR_SSL_|^ERR_TLS_/;

/** How far the current hop got: the phase a deadline interrupts is the one it is reported in. */
interface Progress {
  phase: FetchPhase;
  /** The exchange's budget, paused while a hop waits for a place at its address. */
  budget?: Budget;
}

function classify(
  err: unknown,
  callerSignal: AbortSignal | undefined,
  deadline: AbortSignal,
  progress: Progress,
): OutboundRefusedError | OutboundFetchError {
  noteIfLocal(err); // this process's shortage, not the target's fact (./local-failures.ts)
  if (err instanceof OutboundRefusedError || err instanceof OutboundFetchError) return err;
  if (callerSignal?.aborted)
    return new OutboundFetchError('aborted', 'outbound request aborted by the caller', { cause: err });
  // The whole exchange's budget ran out: say where it was (connected and waiting for the head is
  // a peer that accepted and stalled, not one that could not be reached).
  if (deadline.aborted)
    return new OutboundFetchError('timeout', `outbound request ran out of its total time (${progress.phase})`, {
      cause: err,
      phase: progress.phase,
    });
  const code = errCode(err);
  const timeout: Record<string, FetchPhase> = {
    UND_ERR_CONNECT_TIMEOUT: 'connect',
    UND_ERR_HEADERS_TIMEOUT: 'headers',
    UND_ERR_BODY_TIMEOUT: 'body',
  };
  if (code && timeout[code])
    return new OutboundFetchError('timeout', `outbound request timed out (${timeout[code]})`, {
      cause: err,
      phase: timeout[code],
    });
  if (code === 'UND_ERR_HEADERS_OVERFLOW')
    return new OutboundFetchError('headers_too_large', 'response headers larger than the cap', { cause: err });
  // OpenSSL 3 reports some verification failures as code UNSPECIFIED with the reason as message
  // ("EE certificate key too weak"): the reason, upper-snake-cased, stands in for the code.
  const message = err instanceof Error ? err.message : '';
  const tlsCode =
    code === 'UNSPECIFIED' && /certificate|signature|key too|digest/i.test(message)
      ? message.toUpperCase().replace(/\W+/g, '_')
      : code;
  if (tlsCode && TLS_CODE.test(tlsCode))
    return new OutboundFetchError('tls_failed', `TLS failed: ${tlsCode}`, { cause: err, code: tlsCode });
  return new OutboundFetchError('connection_failed', errorText(err), { cause: err, ...(code ? { code } : {}) });
}

function errCode(err: unknown): string | null {
  for (let e: unknown = err, i = 0; e && typeof e === 'object' && i < 4; e = (e as { cause?: unknown }).cause, i++) {
    if ('code' in e && typeof e.code === 'string' && e.code !== 'UND_ERR_SOCKET') return e.code;
  }
  return null;
}

export async function guardedFetch(url: string | URL, opts: GuardedFetchOptions): Promise<GuardedResponse> {
  const maxRedirects = opts.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  // The exchange's budget runs while it is the target's turn: waits for a place at an address (our
  // own queue, ./address-slots.ts) pause it, so time queued here is never the target's timeout.
  const budget = new Budget(opts.timeoutMs ?? 10_000);
  const deadline = budget.signal;
  const signal = opts.signal ? AbortSignal.any([opts.signal, deadline]) : deadline;
  const hops: HopRecord[] = [];
  const progress: Progress = { phase: 'total', budget };
  try {
    let current = acceptUrl(typeof url === 'string' ? url : url.href);
    const firstOrigin = current.origin;
    for (let hop = 0; ; hop++) {
      signal.throwIfAborted();
      if (opts.inScope && !opts.inScope(bareHost(current)))
        throw new OutboundRefusedError('out_of_scope', bareHost(current), null, 'outside the authorized scope');
      if (
        opts.allowedPorts &&
        !opts.allowedPorts.includes(urlPort(current)) &&
        !(opts.firstOriginAnyPort && current.origin === firstOrigin)
      )
        throw new OutboundRefusedError('port_not_allowed', bareHost(current), null, `port ${urlPort(current)}`);
      progress.phase = 'dns';
      const addresses = await resolveVetted(bareHost(current), opts.allow, opts.resolver, signal, opts.deny);
      if (
        opts.plainHttp === 'allow-listed-only' &&
        current.protocol === 'http:' &&
        !addresses.every((a) => inAllowList(a, opts.allow))
      )
        throw new OutboundRefusedError('scheme_not_allowed', bareHost(current), null, 'http outside the allow-list');
      progress.phase = 'connect';
      const res = await sharedExchange(current, addresses, opts, signal, progress);
      const record = hopRecord(
        current,
        res.status,
        res.headers,
        current.protocol === 'https:' ? opts.verifyTls !== false : null,
      );
      hops.push(record);
      if (record.location !== null && record.location.length > 0 && opts.redirects !== 'return') {
        if (hop >= maxRedirects)
          throw new OutboundFetchError('too_many_redirects', `more than ${maxRedirects} redirects`);
        current = nextUrl(record.location, current);
        continue;
      }
      return {
        status: res.status,
        headers: res.headers as http.IncomingHttpHeaders,
        url: current.href,
        redirects: hop,
        body: res.body,
        truncated: res.truncated,
        hops,
        tlsVerified: record.tlsVerified,
      };
    }
  } catch (err) {
    const classified = classify(err, opts.signal, deadline, progress);
    const e = opts.reachFailures === 'unreachable' ? asUnreachable(classified) : classified;
    e.hops = hops;
    throw e;
  } finally {
    budget.clear();
  }
}

/**
 * A deadline that can be paused: AbortSignal.timeout() counts every millisecond from its creation,
 * including those a hop spends waiting for a place at its address in our process.
 */
class Budget {
  readonly #ac = new AbortController();
  #remaining: number;
  #since = 0;
  #timer: NodeJS.Timeout | undefined;
  /** Nested pauses (hops of one exchange never overlap, but sharedHops' joins may). */
  #paused = 0;
  constructor(ms: number) {
    this.#remaining = ms;
    this.#run();
  }
  get signal(): AbortSignal {
    return this.#ac.signal;
  }
  pause(): void {
    if (this.#paused++ > 0 || this.#ac.signal.aborted) return;
    clearTimeout(this.#timer);
    this.#remaining -= performance.now() - this.#since;
  }
  resume(): void {
    if (--this.#paused > 0 || this.#ac.signal.aborted) return;
    this.#run();
  }
  clear(): void {
    clearTimeout(this.#timer);
  }
  #run(): void {
    this.#since = performance.now();
    this.#timer = setTimeout(
      () => this.#ac.abort(new DOMException('The exchange ran out of its time', 'TimeoutError')),
      Math.max(0, this.#remaining),
    );
    this.#timer.unref?.();
  }
}

/** Certificate verdicts (facts about a web server that answered TLS), not handshake failures. */
const CERT_PROBLEM = /CERT|ALTNAME|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|KEY_TOO_SMALL|TOO_WEAK/;

/**
 * A failure that leaves the hop's port state readable (refused: closed; timed out connecting:
 * filtered; a handshake or a head that never came: open to something else) becomes `unreachable`.
 * A certificate verdict, a DNS failure and everything after the response head stay what they are.
 */
function asUnreachable(e: OutboundRefusedError | OutboundFetchError): OutboundRefusedError | OutboundFetchError {
  if (!(e instanceof OutboundFetchError)) return e;
  const reach =
    e.kind === 'connection_failed' ||
    (e.kind === 'timeout' && (e.phase === 'connect' || e.phase === 'headers')) ||
    (e.kind === 'tls_failed' && !CERT_PROBLEM.test(e.code ?? ''));
  if (!reach) return e;
  return new OutboundFetchError(
    'unreachable',
    'no HTTP answer from the host on this port (refused, reset, timed out or not TLS: which one is not said)',
  );
}

/** Stops reading a body; undici reports the stop as an AbortError, which nobody needs. */
function discard(body: NodeJS.ReadableStream & { destroy(): void }): void {
  body.on('error', () => {});
  body.destroy();
}

/**
 * exchange(), or the same request's response already made in this check. An exchange that failed
 * because the signal it ran under gave up (another chain's deadline) is not this hop's answer: the
 * hop makes its own. Any other outcome, a failure included, is the request's answer for both.
 */
async function sharedExchange(
  u: URL,
  addresses: string[],
  opts: GuardedFetchOptions,
  signal: AbortSignal,
  progress: Progress,
): Promise<RawResponse> {
  const shared = opts.sharedHops;
  if (!shared) return exchange(u, addresses, opts, signal, progress);
  const key = JSON.stringify([
    opts.method ?? 'GET',
    opts.body ?? '',
    u.href,
    addresses,
    opts.verifyTls !== false,
    opts.headers ?? {},
    opts.maxBytes ?? DEFAULT_MAX_BYTES,
    opts.bodyOverflow ?? 'error',
  ]);
  const earlier = shared.get(key);
  if (earlier) {
    try {
      const res = await abortable(earlier.response, signal);
      progress.phase = 'body';
      return res;
    } catch (err) {
      if (signal.aborted || !earlier.signal.aborted) throw err;
    }
  }
  const response = exchange(u, addresses, opts, signal, progress);
  response.catch(() => {}); // a later hop that joins it reads the outcome
  shared.set(key, { response, signal });
  return response;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer;
  truncated: boolean;
}

/**
 * What a hop's client is destroyed with once the hop is over (its response read, or the hop
 * failed: whatever is thrown has been decided by then, and nothing reads this). Without it undici
 * builds a ClientDestroyedError, and Node formats its stack when the socket closes, on every hop.
 */
const HOP_OVER = new Error('hop over');

/**
 * One request on a client that can only reach `addresses`; the client dies with the hop. The hop's
 * connection goes to the first vetted address (pinnedLookup): it waits for a place in that
 * address's window (the exchange's budget paused meanwhile), holds it until the hop is over, and
 * tells the window how it ended. A hop dropped before its response head by an address that answers
 * others (rate limiting: ./address-slots.ts dropVerdict) is attempted again behind the cut window,
 * at most DROP_RETRIES times, within the exchange's budget; one dropped by an address that answers
 * none fails as before.
 */
async function exchange(
  u: URL,
  addresses: string[],
  opts: GuardedFetchOptions,
  signal: AbortSignal,
  progress: Progress,
): Promise<RawResponse> {
  const slots = opts.slots;
  if (!slots) return exchangeOn(u, addresses, opts, signal, progress, null);
  for (let attempt = 0; ; attempt++) {
    progress.phase = 'connect';
    progress.budget?.pause();
    let permit: SlotPermit;
    try {
      permit = await slots.acquire(addresses[0]!, signal, urlPort(u));
    } catch (err) {
      throw slotFailure(err);
    } finally {
      progress.budget?.resume();
    }
    const head: { status: number | null } = { status: null };
    try {
      const res = await exchangeOn(u, addresses, opts, signal, progress, (status) => {
        head.status = status;
        permit.answered();
      });
      permit.release(THROTTLES.has(res.status) ? 'throttled' : 'answer');
      return res;
    } catch (err) {
      if (head.status !== null) {
        permit.release(THROTTLES.has(head.status) ? 'throttled' : 'answer');
        throw err;
      }
      if (signal.aborted || !isDrop(err)) {
        permit.release('other');
        throw err;
      }
      const verdict = await permit.dropVerdict(signal);
      permit.release(verdict);
      if (verdict !== 'rate_limited' || attempt >= DROP_RETRIES || signal.aborted) throw err;
      slots.noteRetry();
    }
  }
}

/** The socket events undici reads a response in (client-h1.js: readable, end, close). */
const PARSER_EVENTS = new Set<string | symbol>(['readable', 'end', 'close']);

/**
 * The errors undici builds while it reads a hop's response are built without a stack trace. A hop
 * asks with `connection: close` (one request per connection: see the client below), so after
 * every response undici destroys the socket with an InformationalError('reset') built then, and
 * Node's stream code formats that error's stack on destroy: ~8 % of lane-web's main thread on the
 * generated zone (two responses a web check), for an error nobody reads (undici's code
 * UND_ERR_INFO, never a request's outcome). Error.stackTraceLimit is 0 only while undici handles
 * those events of this socket, synchronously; a failure it reports is classified (classify()) by
 * its code and message as before, only without the frames of undici's parser.
 */
function withoutParserStacks(socket: net.Socket): void {
  const emit = socket.emit as (this: net.Socket, event: string | symbol, ...args: unknown[]) => boolean;
  socket.emit = function (this: net.Socket, event: string | symbol, ...args: unknown[]): boolean {
    if (!PARSER_EVENTS.has(event)) return emit.call(this, event, ...args);
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      return emit.call(this, event, ...args);
    } finally {
      Error.stackTraceLimit = limit;
    }
  } as typeof socket.emit;
}

/** Answers that may say "slow down": a run of them cuts the address's window (./address-window.ts). */
const THROTTLES = new Set([429, 503]);

/** Errors of a connection dropped before its answer: a connect timeout, a reset, a close. */
const DROPS = new Set(['UND_ERR_CONNECT_TIMEOUT', 'ECONNRESET', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET']);

function isDrop(err: unknown): boolean {
  for (let e: unknown = err, i = 0; e && typeof e === 'object' && i < 4; e = (e as { cause?: unknown }).cause, i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && DROPS.has(code)) return true;
  }
  return false;
}

async function exchangeOn(
  u: URL,
  addresses: string[],
  opts: GuardedFetchOptions,
  signal: AbortSignal,
  progress: Progress,
  onHead: ((status: number) => void) | null,
): Promise<RawResponse> {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  const portMap = opts.portMap ?? NO_PORT_MAP;
  const host = bareHost(u);
  const connect = buildConnector(
    withSharedSecureContext({
      lookup: pinnedLookup(addresses),
      timeout: opts.connectTimeoutMs ?? 5000,
      rejectUnauthorized: opts.verifyTls !== false,
      allowH2: false,
      maxCachedSessions: 0, // a TLS session resumed across hosts would skip their handshake facts
    }),
  );
  // A Client, not an Agent over one: an Agent closes its client itself when the connection ends
  // (undici builds a ClientDestroyedError, with its stack, for every hop) and adds a layer per
  // request; the hop needs one origin and one connection.
  const client = new Client(u.origin, {
    // The logical port (443, 80, or the URL's) goes to the lab's port only here, after vetting;
    // a literal IPv6 host arrives bracketed and is connected to bare.
    connect: (o, cb) => {
      const port = Number(o.port) || (o.protocol === 'https:' ? 443 : 80);
      const open = (): unknown => {
        // undici's connector returns the socket it made (its types say void), before the handshake.
        const socket: unknown = connect(
          { ...o, hostname: isIP(host) ? host : o.hostname, port: String(mapPort(portMap, port)) },
          (...args: Parameters<typeof cb>) => {
            if (args[0] === null) progress.phase = 'headers'; // connected (and, for https, handshaken)
            cb(...args);
          },
        );
        // Nobody reads a fetch's peer chain: Node's host-name check gets the leaf it needs.
        if (socket instanceof tls.TLSSocket) leafForIdentityCheck(socket);
        if (socket instanceof net.Socket) withoutParserStacks(socket);
        return socket;
      };
      // With several addresses the connection may try each (autoSelectFamily): not one address's answer.
      const gate = addresses.length === 1 ? opts.gate : undefined;
      if (!gate) return void open();
      const claim = gate.claim(addresses[0]!, port);
      if ('first' in claim) {
        abortable(claim.first, signal).then(
          (refused) => (refused ? cb(sharedRefusal(addresses[0]!, port), null) : void open()),
          (err: Error) => cb(err, null),
        );
        return;
      }
      try {
        const socket = open();
        claim.watch(socket instanceof net.Socket ? socket : null);
      } catch (err) {
        claim.watch(null);
        throw err;
      }
    },
    pipelining: 0,
    maxHeaderSize: opts.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES,
    headersTimeout: opts.headersTimeoutMs ?? 10_000,
    bodyTimeout: opts.bodyIdleTimeoutMs ?? 10_000,
  });
  try {
    const res = await request(u, {
      dispatcher: client,
      method: opts.method ?? 'GET',
      headers: { 'user-agent': USER_AGENT, ...opts.headers },
      ...(opts.body !== undefined ? { body: opts.body } : {}),
      signal,
    });
    progress.phase = 'body';
    onHead?.(res.statusCode);
    const headers = res.headers as Record<string, string | string[]>;
    if (REDIRECTS.has(res.statusCode) || opts.method === 'HEAD') {
      discard(res.body);
      return { status: res.statusCode, headers, body: Buffer.alloc(0), truncated: false };
    }
    const truncate = opts.bodyOverflow === 'truncate';
    const declared = Number(firstHeader(headers, 'content-length'));
    if (!truncate && Number.isFinite(declared) && declared > maxBytes) {
      discard(res.body);
      throw new OutboundFetchError('response_too_large', `response larger than ${maxBytes} bytes`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      const buf = chunk as Buffer;
      if (size + buf.length > maxBytes) {
        discard(res.body);
        if (!truncate) throw new OutboundFetchError('response_too_large', `response larger than ${maxBytes} bytes`);
        chunks.push(buf.subarray(0, maxBytes - size));
        return { status: res.statusCode, headers, body: Buffer.concat(chunks), truncated: true };
      }
      size += buf.length;
      chunks.push(buf);
    }
    return { status: res.statusCode, headers, body: Buffer.concat(chunks), truncated: false };
  } finally {
    await client.destroy(HOP_OVER).catch(() => {});
  }
}
