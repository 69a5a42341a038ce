// What the outbound guard answers instead of a connection. A refusal means no connection was made
// to the refused target; a failure means the request was allowed but produced no response. Lanes
// map both to lane statuses and limitations, never to "absent" (except host_not_found, which is
// an authoritative NXDOMAIN/NODATA for the host's addresses).
import type { RefusedRange } from './address-policy.ts';

export type RefusalReason =
  | 'target_not_allowed'
  | 'scheme_not_allowed'
  | 'credentials_not_allowed'
  | 'url_not_allowed'
  /** A hop to a port outside the passive ones (./passive-ports.ts) of a fetch that is not active work. */
  | 'port_not_allowed'
  /**
   * A hop of active work to a host outside the scope it was authorized for (an authorized web
   * lookup's redirect to another owner's name): refused before it is resolved.
   */
  | 'out_of_scope';

/** One response of a redirect chain, as the guard saw it (src/net/outbound-guard.ts). */
export interface HopRecord {
  url: string;
  status: number;
  /** The Location header as sent; null when there was none. */
  location: string | null;
  /** The URL the Location points to (resolved); null when not a redirect or unparseable. */
  next: string | null;
  /** http → https, https → http, or null when the scheme stays. */
  schemeChange: 'http_to_https' | 'https_to_http' | null;
  /** The next URL is on another host. */
  hostChange: boolean;
  /** Strict-Transport-Security as sent on this hop (browsers honour it on https only). */
  hsts: string | null;
  /** Whether the certificate was verified for this hop: null for http. */
  tlsVerified: boolean | null;
  headers: Record<string, string | string[]>;
}

/** Where a request spent the time it ran out of. */
export type FetchPhase = 'dns' | 'connect' | 'headers' | 'body' | 'total';

// The guard's errors are built without a stack trace (Error.stackTraceLimit 0 around super()):
// they are outcomes a check records (a refused port, a timeout), thousands a scan, not faults to
// debug, and the stack V8 captures would be read only by the Node stream code that formats every
// error a socket is destroyed with. A library error underneath stays as `cause`, with its stack.

/** The request was refused by policy before any connection was made to the refused target. */
export class OutboundRefusedError extends Error {
  readonly reason: RefusalReason;
  readonly host: string;
  /** For target_not_allowed: the range of the first refused address. */
  readonly range: RefusedRange | null;
  /** Responses received before the refused hop (a redirect chain), oldest first. */
  hops: HopRecord[] = [];
  constructor(reason: RefusalReason, host: string, range: RefusedRange | null = null, detail?: string) {
    const message = `outbound request refused (${reason}${range ? `: ${range} address` : ''}${detail ? `: ${detail}` : ''})`;
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.name = 'OutboundRefusedError';
    this.reason = reason;
    this.host = host;
    this.range = range;
  }
}

export type FetchFailure =
  | 'timeout'
  | 'aborted'
  /** The host's A and AAAA questions were answered NXDOMAIN or NODATA: it has no address. */
  | 'host_not_found'
  /** The host's addresses are unknown: SERVFAIL, timeout… (indeterminate, never absence). */
  | 'dns_failure'
  | 'connection_failed'
  /**
   * A fetch of a URL the target's data names (OutboundGuard.fetchReferenced) got no HTTP answer from
   * the hop: refused, reset, timed out before the response head, or a TLS handshake that failed
   * for another reason than the certificate. One kind, so that the answer does not tell an open
   * port from a closed or a filtered one.
   */
  | 'unreachable'
  | 'too_many_redirects'
  | 'bad_redirect'
  | 'response_too_large'
  | 'headers_too_large'
  | 'tls_failed'
  /**
   * Never attempted: the connection waited OUTBOUND_QUEUE_WAIT_MS in our own process for a place at
   * its address (./address-slots.ts) and was given up. Our congestion, a local failure
   * (./slot-failure.ts): nothing was sent, it says nothing about the target.
   */
  | 'congested';

/** The request was allowed but did not produce a response. */
export class OutboundFetchError extends Error {
  readonly kind: FetchFailure;
  /** For timeouts: the phase that ran out of time. */
  readonly phase: FetchPhase | null;
  /** For tls_failed: OpenSSL's reason (CERT_HAS_EXPIRED…); for connection_failed: the socket error (ECONNREFUSED…). */
  readonly code: string | null;
  /** Responses received before the failure (a redirect chain), oldest first. */
  hops: HopRecord[] = [];
  constructor(
    kind: FetchFailure,
    message: string = kind,
    options?: { cause?: unknown; phase?: FetchPhase; code?: string },
  ) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    Error.stackTraceLimit = limit;
    this.name = 'OutboundFetchError';
    this.kind = kind;
    this.phase = options?.phase ?? null;
    this.code = options?.code ?? null;
  }
}

export function errorText(err: unknown): string {
  if (err && typeof err === 'object' && 'code' in err && typeof err.code === 'string') return err.code;
  return err instanceof Error ? err.message : String(err);
}
