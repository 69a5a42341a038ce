// The one way product checks reach the internet (developer guide, security rule): HTTP(S) fetches,
// raw TCP connections (SMTP) and TLS handshakes all go through here. Every host is resolved with
// the project's resolver, ALL of its addresses are vetted against the address policy, and the
// connection goes to a vetted address — Node's own lookup is replaced by one that returns what was
// checked, so a DNS rebind between check and connect cannot reach anything else. TLS keeps
// verifying the certificate against the host name (SNI = the name, never the IP). Redirects are
// followed by hand, each hop checked again; the body and the total time are capped.
//
// createOutboundGuard() binds the policy (ALLOW_PRIVATE_TARGETS), the resolver and the lab port
// map once per process; product code receives that object (runtime.services.outbound) and never
// opens a socket of its own.
import http from 'node:http';
import https from 'node:https';
import net, { isIP, type LookupFunction } from 'node:net';
import tls from 'node:tls';
import type { Resolver } from '../dns/types.ts';
import { classifyAddress, isAllowedTarget } from './address-policy.ts';
import { stubHostResolver, type HostResolver } from './host-resolver.ts';
import { OutboundFetchError, OutboundRefusedError, errorText } from './outbound-errors.ts';
import { NO_PORT_MAP, mapPort, type PortMap } from './port-map.ts';

export { classifyAddress, isAllowedTarget } from './address-policy.ts';
export { OutboundFetchError, OutboundRefusedError, type FetchFailure, type RefusalReason } from './outbound-errors.ts';
export { stubHostResolver, type HostResolver } from './host-resolver.ts';

export interface GuardedFetchOptions {
  /** CIDRs that may be reached although not public (ALLOW_PRIVATE_TARGETS). */
  allow: readonly string[];
  /** Host → vetted-to-be addresses: the project's resolver (stubHostResolver). */
  resolver: HostResolver;
  maxRedirects?: number;
  /** Budget for the whole exchange, every hop included. */
  timeoutMs?: number;
  signal?: AbortSignal;
  maxBytes?: number;
  headers?: Record<string, string>;
  portMap?: PortMap;
}

export interface GuardedResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The URL that produced this response (after redirects). */
  url: string;
  redirects: number;
  body: Buffer;
}

export const DEFAULT_MAX_BYTES = 1024 * 1024;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export async function guardedFetch(url: string | URL, opts: GuardedFetchOptions): Promise<GuardedResponse> {
  const maxRedirects = opts.maxRedirects ?? 5;
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  const deadline = AbortSignal.timeout(opts.timeoutMs ?? 10_000);
  const signal = opts.signal ? AbortSignal.any([opts.signal, deadline]) : deadline;
  const failure = (err: unknown): unknown => {
    if (err instanceof OutboundRefusedError || err instanceof OutboundFetchError) return err;
    if (opts.signal?.aborted) return new OutboundFetchError('aborted', 'outbound request aborted by the caller', { cause: err });
    if (deadline.aborted) return new OutboundFetchError('timeout', 'outbound request timed out', { cause: err });
    return new OutboundFetchError('connection_failed', errorText(err), { cause: err });
  };

  let current: URL;
  try {
    current = new URL(url);
  } catch (err) {
    throw new OutboundFetchError('bad_redirect', 'not a URL', { cause: err });
  }
  try {
    for (let hop = 0; ; hop++) {
      signal.throwIfAborted();
      checkScheme(current);
      const addresses = await resolveVetted(bareHost(current), opts.allow, opts.resolver, signal);
      const res = await exchange(current, addresses, opts.headers ?? {}, signal, maxBytes, opts.portMap ?? NO_PORT_MAP);
      const location = res.headers.location;
      if (REDIRECTS.has(res.status) && typeof location === 'string' && location.length > 0) {
        if (hop >= maxRedirects) throw new OutboundFetchError('too_many_redirects', `more than ${maxRedirects} redirects`);
        try {
          current = new URL(location, current);
        } catch (err) {
          throw new OutboundFetchError('bad_redirect', 'unparseable Location header', { cause: err });
        }
        continue;
      }
      return { status: res.status, headers: res.headers, url: current.href, redirects: hop, body: res.body };
    }
  } catch (err) {
    throw failure(err);
  }
}

function bareHost(u: URL): string {
  return u.hostname.replace(/^\[(.*)\]$/, '$1');
}

function checkScheme(u: URL): void {
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new OutboundRefusedError('scheme_not_allowed', u.hostname);
  if (u.username || u.password) throw new OutboundRefusedError('credentials_not_allowed', u.hostname);
}

/** Throws OutboundRefusedError unless the address may be connected to. */
export function vetAddress(address: string, allow: readonly string[], host: string = address): void {
  if (!isAllowedTarget(address, allow)) {
    const range = classifyAddress(address);
    throw new OutboundRefusedError('target_not_allowed', host, range === 'public' ? null : range);
  }
}

/**
 * A host (name or literal) → every one of its addresses, each vetted. ANY refused address refuses
 * the host: connecting to "the allowed one" would let a round-robin or rebinding answer choose.
 */
export async function resolveVetted(host: string, allow: readonly string[], resolver: HostResolver, signal?: AbortSignal): Promise<string[]> {
  let addresses: string[];
  if (isIP(host)) {
    addresses = [host];
  } else {
    try {
      addresses = await abortable(resolver(host, signal), signal);
    } catch (err) {
      if (signal?.aborted) throw err;
      if (err instanceof OutboundFetchError) throw err;
      throw new OutboundFetchError('dns_failure', `could not resolve the host: ${errorText(err)}`, { cause: err });
    }
    if (addresses.length === 0) throw new OutboundFetchError('host_not_found', 'the host has no addresses');
  }
  for (const a of addresses) vetAddress(a, allow, host);
  return addresses;
}

interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** A lookup that can only answer with the vetted addresses (Node asks for all with autoSelectFamily). */
function pinnedLookup(addresses: readonly string[]): LookupFunction {
  const pinned = addresses.map((address) => ({ address, family: isIP(address) }));
  return (_name, options, callback) => {
    if (options.all) callback(null, pinned);
    else callback(null, pinned[0]!.address, pinned[0]!.family);
  };
}

function exchange(u: URL, addresses: string[], headers: Record<string, string>, signal: AbortSignal, maxBytes: number, portMap: PortMap): Promise<RawResponse> {
  const host = bareHost(u);
  const logicalPort = Number(u.port) || (u.protocol === 'https:' ? 443 : 80);
  const mod = u.protocol === 'https:' ? https : http;
  return new Promise<RawResponse>((resolve, reject) => {
    const req = mod.request(
      {
        protocol: u.protocol,
        hostname: host,
        port: mapPort(portMap, logicalPort),
        path: `${u.pathname}${u.search}`,
        method: 'GET',
        // The Host header names the URL's own authority, whatever port the lab map chose.
        headers: { 'user-agent': 'LSS/2 (+lookup and scan service)', host: u.host, ...headers },
        agent: false, // no pooled socket from another request, vetted against another list
        lookup: pinnedLookup(addresses),
        ...(u.protocol === 'https:' && !isIP(host) ? { servername: host } : {}),
        signal,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        if (REDIRECTS.has(status)) {
          res.resume();
          resolve({ status, headers: res.headers, body: Buffer.alloc(0) });
          return;
        }
        const declared = Number(res.headers['content-length']);
        if (Number.isFinite(declared) && declared > maxBytes) {
          res.destroy();
          reject(new OutboundFetchError('response_too_large', `response larger than ${maxBytes} bytes`));
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) {
            res.destroy();
            reject(new OutboundFetchError('response_too_large', `response larger than ${maxBytes} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => resolve({ status, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
        // A connection cut mid-body (or destroyed by the deadline) ends without 'end'.
        res.on('close', () => {
          if (!res.complete) reject(signal.aborted ? signal.reason : new OutboundFetchError('connection_failed', 'response cut short'));
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

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
  if (err instanceof OutboundFetchError) return err;
  if (signal?.aborted) return new OutboundFetchError('aborted', 'connection aborted by the caller', { cause: err });
  if (timedOut) return new OutboundFetchError('timeout', 'connection timed out', { cause: err });
  return new OutboundFetchError('connection_failed', errorText(err), { cause: err });
}

/** A TCP connection to a vetted address. The caller owns the socket (and must destroy it). */
export async function connectTcp(target: TcpTarget, allow: readonly string[], portMap: PortMap, opts: ConnectOptions = {}): Promise<net.Socket> {
  vetAddress(target.address, allow, target.host ?? target.address);
  return settleConnect(
    net.connect({ host: target.address, port: mapPort(portMap, target.port), family: isIP(target.address) }),
    'connect', opts,
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
export async function connectTls(target: TlsTarget, allow: readonly string[], portMap: PortMap, opts: ConnectOptions & { tls?: tls.ConnectionOptions } = {}): Promise<tls.TLSSocket> {
  vetAddress(target.address, allow, target.host ?? target.address);
  const socket = tls.connect({
    ...opts.tls,
    host: target.address,
    port: mapPort(portMap, target.port),
    ...(target.servername && !isIP(target.servername) ? { servername: target.servername } : {}),
  });
  watchOcsp(socket, opts.tls);
  return settleConnect(socket, 'secureConnect', opts);
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

/** Upgrades an open connection (STARTTLS): no new connection, so nothing to vet. */
export function upgradeTls(socket: net.Socket, servername: string | undefined, opts: ConnectOptions & { tls?: tls.ConnectionOptions } = {}): Promise<tls.TLSSocket> {
  const secure = tls.connect({ ...opts.tls, socket, ...(servername && !isIP(servername) ? { servername } : {}) });
  watchOcsp(secure, opts.tls);
  return settleConnect(secure, 'secureConnect', opts);
}

function settleConnect<S extends net.Socket>(socket: S, ready: 'connect' | 'secureConnect', opts: ConnectOptions): Promise<S> {
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
  fetch(url: string | URL, opts?: Omit<GuardedFetchOptions, 'allow' | 'resolver' | 'portMap'>): Promise<GuardedResponse>;
  connectTcp(target: TcpTarget, opts?: ConnectOptions): Promise<net.Socket>;
  connectTls(target: TlsTarget, opts?: ConnectOptions & { tls?: tls.ConnectionOptions }): Promise<tls.TLSSocket>;
}

export interface OutboundGuardOptions {
  allow: readonly string[];
  /** The project's resolver, or a HostResolver (tests). */
  resolver: Resolver | HostResolver;
  portMap?: PortMap;
}

export function createOutboundGuard(o: OutboundGuardOptions): OutboundGuard {
  const resolver: HostResolver = typeof o.resolver === 'function' ? o.resolver : stubHostResolver(o.resolver);
  const portMap = o.portMap ?? NO_PORT_MAP;
  const allow = o.allow;
  return {
    allow,
    resolve: (host, signal) => resolveVetted(host, allow, resolver, signal),
    vet: (address, host) => vetAddress(address, allow, host),
    fetch: (url, opts = {}) => guardedFetch(url, { ...opts, allow, resolver, portMap }),
    connectTcp: (target, opts) => connectTcp(target, allow, portMap, opts),
    connectTls: (target, opts) => connectTls(target, allow, portMap, opts),
  };
}

function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
