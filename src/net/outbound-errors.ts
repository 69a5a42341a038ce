// What the outbound guard answers instead of a connection. A refusal means no connection was made
// to the refused target; a failure means the request was allowed but produced no response. Lanes
// map both to lane statuses and limitations, never to "absent" (except host_not_found, which is
// an authoritative NXDOMAIN/NODATA for the host's addresses).
import type { RefusedRange } from './address-policy.ts';

export type RefusalReason = 'target_not_allowed' | 'scheme_not_allowed' | 'credentials_not_allowed' | 'url_not_allowed';

/** The request was refused by policy before any connection was made to the refused target. */
export class OutboundRefusedError extends Error {
  readonly reason: RefusalReason;
  readonly host: string;
  /** For target_not_allowed: the range of the first refused address. */
  readonly range: RefusedRange | null;
  constructor(reason: RefusalReason, host: string, range: RefusedRange | null = null, detail?: string) {
    super(`outbound request refused (${reason}${range ? `: ${range} address` : ''}${detail ? `: ${detail}` : ''})`);
    this.name = 'OutboundRefusedError';
    this.reason = reason;
    this.host = host;
    this.range = range;
  }
}

export type FetchFailure =
  | 'timeout' | 'aborted'
  /** The host's A and AAAA questions were answered NXDOMAIN or NODATA: it has no address. */
  | 'host_not_found'
  /** The host's addresses are unknown: SERVFAIL, timeout… (indeterminate, never absence). */
  | 'dns_failure'
  | 'connection_failed' | 'too_many_redirects' | 'bad_redirect' | 'response_too_large' | 'headers_too_large'
  | 'tls_failed';

/** The request was allowed but did not produce a response. */
export class OutboundFetchError extends Error {
  readonly kind: FetchFailure;
  constructor(kind: FetchFailure, message: string = kind, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'OutboundFetchError';
    this.kind = kind;
  }
}

export function errorText(err: unknown): string {
  if (err && typeof err === 'object' && 'code' in err && typeof err.code === 'string') return err.code;
  return err instanceof Error ? err.message : String(err);
}
