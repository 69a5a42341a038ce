// What the http lane observed, as plain data (it crosses into the parse pool, is scored, and is
// what the Observatory reference test replays): the chain from http:// and the chain from
// https:// (every response: status, Location, scheme or host change, HSTS, headers), the final
// body when it is text, and the CORS preflight. A chain that did not produce a response says why
// (refused, failed, not attempted) — its absence is never read as "no such site".
import type { HopRecord } from '../../net/outbound-errors.ts';

export interface ChainFailure {
  /** OutboundFetchError kind or 'refused'. */
  kind: string;
  phase: string | null;
  /** OpenSSL reason of a TLS failure. */
  code: string | null;
  /** For refusals: target_not_allowed, url_not_allowed… and the range of the refused address. */
  reason: string | null;
  range: string | null;
  /** The host whose hop was refused or failed. */
  host: string | null;
}

export interface ChainEvidence {
  /** The first URL asked. */
  start: string;
  outcome: 'response' | 'refused' | 'failed' | 'not_attempted';
  hops: HopRecord[];
  /** Every https hop had a verified certificate; false when verification failed and the chain was re-read without it; null: no https hop. */
  verified: boolean | null;
  /** The final body as text (HTML and text types only, capped); null otherwise. */
  body: string | null;
  failure: ChainFailure | null;
  /** Why the chain was not attempted (e.g. an explicit non-default port). */
  skippedReason?: string;
}

export interface PreflightEvidence {
  url: string;
  status: number;
  /** The foreign Origin sent. */
  origin: string;
  headers: Record<string, string | string[]>;
}

export interface WebEvidence {
  /** The input URL. */
  url: string;
  host: string;
  http: ChainEvidence;
  https: ChainEvidence;
  /** The chain whose final response is assessed: https when it produced one, else http. */
  primary: 'https' | 'http' | null;
  preflight: PreflightEvidence | null;
}

export function finalHop(c: ChainEvidence): HopRecord | null {
  return c.outcome === 'response' ? (c.hops.at(-1) ?? null) : null;
}

export function primaryChain(e: WebEvidence): ChainEvidence | null {
  return e.primary === null ? null : e[e.primary];
}
