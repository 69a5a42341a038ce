// The http lane's I/O: both chains (from http:// and from https:// on the URL's host and path),
// and a CORS preflight on the primary chain's final URL as soon as that is known, all through the
// outbound guard. As the Observatory does, a chain whose certificate does not verify is read again
// without verification and marked `verified: false`, so a broken certificate does not hide the
// headers (the tls lane reports the certificate itself). Nothing here decides anything: it records
// what happened.
import {
  OutboundFetchError,
  OutboundRefusedError,
  type GuardedResponse,
  type OutboundGuard,
} from '../../net/outbound-guard.ts';
import type { ChainEvidence, ChainFailure, PreflightEvidence, WebEvidence } from './evidence.ts';

export interface CollectOptions {
  /** Budget of one chain (every hop), and of the preflight. */
  fetchTimeoutMs: number;
  connectTimeoutMs?: number;
  headersTimeoutMs?: number;
  bodyIdleTimeoutMs?: number;
  maxBytes?: number;
  /**
   * 'passive' (default): every hop on the guard's passive ports (src/net/passive-ports.ts); 'any':
   * an authorized lookup, whose URL and redirects may use any port.
   */
  ports?: 'passive' | 'any';
  /** Active work's scope: a hop to a host it refuses is refused (out_of_scope), nothing connected. */
  inScope?: (host: string) => boolean;
  signal: AbortSignal;
}

/** Redirects followed per chain: as many as the MDN HTTP Observatory's grader follows (10). */
export const CHAIN_MAX_REDIRECTS = 10;
/** A foreign origin for the CORS preflight: reflected back with credentials, it means "any site". */
export const CORS_PROBE_ORIGIN = 'https://cors-probe.lss.invalid';
export const MAX_BODY_BYTES = 1024 * 1024;
/** Only these bodies are kept (HTML for <meta> policies and scripts). */
const TEXT_TYPES = /^(text\/|application\/(xhtml\+xml|xml|json))/i;

function failureOf(err: unknown): ChainFailure {
  if (err instanceof OutboundRefusedError)
    return { kind: 'refused', phase: null, code: null, reason: err.reason, range: err.range, host: err.host };
  if (err instanceof OutboundFetchError)
    return { kind: err.kind, phase: err.phase, code: err.code, reason: null, range: null, host: null };
  return { kind: 'connection_failed', phase: null, code: null, reason: null, range: null, host: null };
}

/** Verification failures (not protocol ones): the chain is read again without verification. */
const CERT_PROBLEM = /CERT|ALTNAME|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|KEY_TOO_SMALL|TOO_WEAK/;

function bodyText(res: GuardedResponse): string | null {
  const type = res.headers['content-type'];
  if (typeof type !== 'string' || !TEXT_TYPES.test(type)) return null;
  return res.body.toString('utf8');
}

async function readChain(guard: OutboundGuard, start: string, o: CollectOptions): Promise<ChainEvidence> {
  const fetchOnce = (verifyTls: boolean) =>
    guard.fetch(start, {
      signal: o.signal,
      timeoutMs: o.fetchTimeoutMs,
      verifyTls,
      maxRedirects: CHAIN_MAX_REDIRECTS,
      maxBytes: o.maxBytes ?? MAX_BODY_BYTES,
      bodyOverflow: 'truncate',
      headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' },
      ...(o.connectTimeoutMs ? { connectTimeoutMs: o.connectTimeoutMs } : {}),
      ...(o.headersTimeoutMs ? { headersTimeoutMs: o.headersTimeoutMs } : {}),
      ...(o.bodyIdleTimeoutMs ? { bodyIdleTimeoutMs: o.bodyIdleTimeoutMs } : {}),
      ports: o.ports ?? 'passive',
      ...(o.inScope ? { inScope: o.inScope } : {}),
    });
  const hasHttps = (hops: { url: string }[]) => hops.some((h) => h.url.startsWith('https:'));
  let verified: boolean | null = true;
  let res: GuardedResponse;
  try {
    try {
      res = await fetchOnce(true);
    } catch (err) {
      if (!(err instanceof OutboundFetchError && err.kind === 'tls_failed' && CERT_PROBLEM.test(err.code ?? '')))
        throw err;
      verified = false;
      res = await fetchOnce(false);
    }
  } catch (err) {
    o.signal.throwIfAborted();
    const hops = (err as { hops?: ChainEvidence['hops'] }).hops ?? [];
    const failure = failureOf(err);
    return {
      start,
      outcome: failure.kind === 'refused' ? 'refused' : 'failed',
      hops,
      verified: hasHttps(hops) ? verified : null,
      body: null,
      failure,
    };
  }
  return {
    start,
    outcome: 'response',
    hops: res.hops,
    verified: hasHttps(res.hops) ? verified : null,
    body: bodyText(res),
    failure: null,
  };
}

async function preflight(
  guard: OutboundGuard,
  url: string,
  verifyTls: boolean,
  o: CollectOptions,
): Promise<PreflightEvidence | null> {
  try {
    const res = await guard.fetch(url, {
      ports: o.ports ?? 'passive',
      ...(o.inScope ? { inScope: o.inScope } : {}),
      method: 'OPTIONS',
      signal: o.signal,
      timeoutMs: o.fetchTimeoutMs,
      maxRedirects: 0,
      maxBytes: 64 * 1024,
      bodyOverflow: 'truncate',
      verifyTls,
      headers: { origin: CORS_PROBE_ORIGIN, 'access-control-request-method': 'GET' },
    });
    return { url, status: res.status, origin: CORS_PROBE_ORIGIN, headers: res.hops.at(-1)!.headers };
  } catch {
    o.signal.throwIfAborted();
    return null; // no preflight answer: CORS is reported as not observed
  }
}

function notAttempted(start: string, reason: string): ChainEvidence {
  return {
    start,
    outcome: 'not_attempted',
    hops: [],
    verified: null,
    body: null,
    failure: null,
    skippedReason: reason,
  };
}

export async function collectWebEvidence(input: URL, guard: OutboundGuard, o: CollectOptions): Promise<WebEvidence> {
  const variant = (scheme: 'http:' | 'https:') => {
    const u = new URL(input.href);
    u.protocol = scheme;
    return u.href;
  };
  // An explicit port belongs to one scheme: the other is not guessed.
  const explicitPort = input.port !== '';
  const httpStart = variant('http:');
  const httpsStart = variant('https:');
  const httpChain = Promise.resolve(
    explicitPort && input.protocol !== 'http:'
      ? notAttempted(httpStart, 'explicit_port')
      : readChain(guard, httpStart, o),
  );
  const httpsChain = Promise.resolve(
    explicitPort && input.protocol !== 'https:'
      ? notAttempted(httpsStart, 'explicit_port')
      : readChain(guard, httpsStart, o),
  );
  // The primary chain is https when it answered, else http. The preflight goes to its last URL and
  // starts the moment that is known: an https answer does not wait for the http chain, which is
  // usually the longer one (http:// → a redirect → https://), so the preflight's round trip runs
  // beside it instead of after it (issue 32: no serial waits inside a task).
  const primaryChain = httpsChain.then(async (https) => {
    if (https.outcome === 'response') return { primary: 'https' as const, chain: https };
    const http = await httpChain;
    return http.outcome === 'response' ? { primary: 'http' as const, chain: http } : null;
  });
  const preflighted = primaryChain.then((p) =>
    p ? preflight(guard, p.chain.hops.at(-1)!.url, p.chain.verified !== false, o) : null,
  );
  const [http, https, p, pf] = await Promise.all([httpChain, httpsChain, primaryChain, preflighted]);
  return {
    url: input.href,
    host: input.hostname.replace(/^\[(.*)\]$/, '$1'),
    http,
    https,
    primary: p?.primary ?? null,
    preflight: pf,
  };
}
