// The one way product checks fetch a URL from the internet (developer guide, security rule):
// every hop's host is resolved, ALL of its addresses are vetted against the address policy, and
// the connection goes to a vetted address — Node's own lookup is replaced by one that returns
// what was checked, so a DNS rebind between check and connect cannot reach anything else. TLS
// keeps verifying the certificate against the host name (SNI = the name, never the IP).
// Redirects are followed by hand, each hop checked again; the body and the total time are capped.
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { classifyAddress, isAllowedTarget, type RefusedRange } from './address-policy.ts';

export { classifyAddress, isAllowedTarget } from './address-policy.ts';

export type RefusalReason = 'target_not_allowed' | 'scheme_not_allowed' | 'credentials_not_allowed';

/** The request was refused by policy before any connection was made to the refused target. */
export class OutboundRefusedError extends Error {
  readonly reason: RefusalReason;
  readonly host: string;
  /** For target_not_allowed: the range of the first refused address. */
  readonly range: RefusedRange | null;
  constructor(reason: RefusalReason, host: string, range: RefusedRange | null = null) {
    super(`outbound request refused (${reason}${range ? `: ${range} address` : ''})`);
    this.name = 'OutboundRefusedError';
    this.reason = reason;
    this.host = host;
    this.range = range;
  }
}

export type FetchFailure =
  | 'timeout' | 'aborted' | 'dns_failure' | 'connection_failed' | 'too_many_redirects' | 'bad_redirect' | 'response_too_large';

/** The request was allowed but did not produce a response. */
export class OutboundFetchError extends Error {
  readonly kind: FetchFailure;
  constructor(kind: FetchFailure, message: string = kind, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'OutboundFetchError';
    this.kind = kind;
  }
}

export type HostResolver = (host: string) => Promise<string[]>;

export interface GuardedFetchOptions {
  /** CIDRs that may be reached although not public (ALLOW_PRIVATE_TARGETS). */
  allow: readonly string[];
  /** Host → addresses; default: the system resolver (dns.lookup, all addresses). */
  resolver?: HostResolver;
  maxRedirects?: number;
  /** Budget for the whole exchange, every hop included. */
  timeoutMs?: number;
  signal?: AbortSignal;
  maxBytes?: number;
  headers?: Record<string, string>;
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

const systemResolver: HostResolver = async (host) => {
  const all = await dns.promises.lookup(host, { all: true, order: 'verbatim' });
  return all.map((a) => a.address);
};

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
      const addresses = await vet(current, opts.allow, opts.resolver ?? systemResolver, signal);
      const res = await exchange(current, addresses, opts.headers ?? {}, signal, maxBytes);
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

/** Resolves the URL's host and checks every address; returns them as the only ones to connect to. */
async function vet(u: URL, allow: readonly string[], resolver: HostResolver, signal: AbortSignal): Promise<string[]> {
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new OutboundRefusedError('scheme_not_allowed', u.hostname);
  if (u.username || u.password) throw new OutboundRefusedError('credentials_not_allowed', u.hostname);
  const host = bareHost(u);
  let addresses: string[];
  if (isIP(host)) {
    addresses = [host];
  } else {
    try {
      addresses = await abortable(resolver(host), signal);
    } catch (err) {
      if (signal.aborted) throw err;
      throw new OutboundFetchError('dns_failure', `could not resolve the host: ${errorText(err)}`, { cause: err });
    }
    if (addresses.length === 0) throw new OutboundFetchError('dns_failure', 'the host has no addresses');
  }
  // ANY refused address refuses the host: connecting to "the allowed one" would let a
  // round-robin or rebinding answer choose for us.
  for (const a of addresses) {
    if (!isAllowedTarget(a, allow)) {
      const range = classifyAddress(a);
      throw new OutboundRefusedError('target_not_allowed', host, range === 'public' ? null : range);
    }
  }
  return addresses;
}

interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function exchange(u: URL, addresses: string[], headers: Record<string, string>, signal: AbortSignal, maxBytes: number): Promise<RawResponse> {
  const host = bareHost(u);
  const pinned = addresses.map((address) => ({ address, family: isIP(address) }));
  // Returns only the vetted addresses; with autoSelectFamily Node asks for all of them.
  const lookup: LookupFunction = (_name, options, callback) => {
    if (options.all) callback(null, pinned);
    else callback(null, pinned[0]!.address, pinned[0]!.family);
  };
  const mod = u.protocol === 'https:' ? https : http;
  return new Promise<RawResponse>((resolve, reject) => {
    const req = mod.request(
      {
        protocol: u.protocol,
        hostname: host,
        port: u.port || undefined,
        path: `${u.pathname}${u.search}`,
        method: 'GET',
        headers: { 'user-agent': 'LSS/2 (+lookup and scan service)', ...headers },
        agent: false, // no pooled socket from another request, vetted against another list
        lookup,
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

function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
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

function errorText(err: unknown): string {
  if (err && typeof err === 'object' && 'code' in err && typeof err.code === 'string') return err.code;
  return err instanceof Error ? err.message : String(err);
}
