// RDAP domain lookups (RFC 9082 query, RFC 9083 reply) through the outbound guard. The server is
// RDAP_BASE_URL when set (every TLD; how the lab is used), else the RFC 9224 bootstrap entry for
// the name. Only a 404 from the RDAP server means "not registered"; every other failure is
// `unavailable` or `timeout`, never absence. The server's URL never appears in what is returned.
//
// Each RDAP server (base URL) has a circuit breaker (src/resilience/breaker.ts): after
// RDAP_FAILURES_TO_OPEN consecutive timeouts or connection failures, lookups to that server answer
// `unavailable` (rdap_unreachable) at once instead of holding a domain-lane task for the whole
// RDAP budget each, and the server's RFC 9082 `help` path is asked about once a second; the first
// HTTP answer of any status closes it. So a dead registry costs one probe a second, not every
// task's timeout, and lookups resume within about a second of its return. A redirect hop to
// another server (a registry sending the query to a registrar's RDAP server) is charged to that
// server's own breaker (keyed by its origin): a dead registrar never closes the registry to every
// other name (issue 31).

import type { Config } from '../config/config.ts';
import { OutboundFetchError, OutboundRefusedError, type OutboundGuard } from '../net/outbound-guard.ts';
import { Breaker, type BreakerState } from '../resilience/breaker.ts';
import { activeBootstrap, findRdapService } from './bootstrap.ts';
import { parseDomainResponse, type RdapDomainData } from './domain-response.ts';

export type { RdapDomainData } from './domain-response.ts';

export type RdapUnavailableReason =
  | 'rdap_not_configured' // neither RDAP_BASE_URL nor a usable bootstrap file
  | 'rdap_no_service_for_tld' // the bootstrap file lists no server for the name's TLD
  | 'rdap_unreachable' // network failure, or the server answered with an error status
  | 'rdap_invalid_response' // 200 with a body that is not a domain object for the name
  | 'target_not_allowed'; // the server's address is private/reserved and not in ALLOW_PRIVATE_TARGETS

/** How the server was chosen; for `sources`, never the URL itself. */
export interface RdapServiceInfo {
  via: 'base_url' | 'bootstrap_snapshot' | 'bootstrap_remote';
  bootstrapPublication?: string;
}

export type RdapLookup =
  | { status: 'completed'; notFound?: false; data: RdapDomainData; service: RdapServiceInfo }
  | { status: 'completed'; notFound: true; service: RdapServiceInfo }
  | { status: 'unavailable'; reason: RdapUnavailableReason }
  | { status: 'timeout' };

export interface RdapLookupOptions {
  config: Pick<Config, 'RDAP_BASE_URL' | 'RDAP_BOOTSTRAP_URL'>;
  /** Every RDAP request (bootstrap file included) goes through the process's outbound guard. */
  guard: OutboundGuard;
  signal?: AbortSignal;
  /** Budget of the domain query (redirects included). */
  timeoutMs?: number;
}

function withSlash(base: string): string {
  return base.endsWith('/') ? base : `${base}/`;
}

/** Consecutive timeouts or connection failures of one server that open its breaker. */
export const RDAP_FAILURES_TO_OPEN = 5;
/** Failures that say the server cannot be reached (not a refusal, an abort or a bad answer). */
const UNREACHABLE = new Set(['timeout', 'dns_failure', 'host_not_found', 'connection_failed', 'tls_failed']);

interface ServerHealth {
  breaker: Breaker;
  /** The guard of the latest lookup: the probe goes through it too. */
  guard: OutboundGuard;
}
const servers = new Map<string, ServerHealth>();
/**
 * Servers tracked at once: registries and the registrars' servers they redirect to. Past it the
 * least recently created one is forgotten (its breaker stopped), so redirects cannot grow it.
 */
const MAX_SERVERS = 1000;

function healthOf(baseUrl: string, guard: OutboundGuard): ServerHealth {
  let h = servers.get(baseUrl);
  if (!h) {
    if (servers.size >= MAX_SERVERS) {
      const [oldest, entry] = servers.entries().next().value as [string, ServerHealth];
      entry.breaker.stop();
      servers.delete(oldest);
    }
    const entry: ServerHealth = {
      guard,
      breaker: new Breaker({
        // One breaker per server: the operator's log and metric say which registry is down.
        name: `rdap:${new URL(baseUrl).host}`,
        failuresToOpen: RDAP_FAILURES_TO_OPEN,
        probeTimeoutMs: 2000,
        probe: async (signal) => {
          // Any HTTP answer means the server is there again; the body is not read past 16 KiB.
          await entry.guard.fetch(new URL('help', baseUrl), {
            // An RDAP server is the operator's or IANA's, never the target's word: any port.
            ports: 'any',
            timeoutMs: 2000,
            maxBytes: 16 * 1024,
            signal,
            headers: { accept: 'application/rdap+json, application/json;q=0.9' },
          });
          return true;
        },
      }),
    };
    h = entry;
    servers.set(baseUrl, h);
  }
  h.guard = guard;
  return h;
}

/**
 * The health of the server that answered (or failed) a hop at `hopUrl`: the lookup's own server
 * when the hop is on its origin, else the hop's origin as a server of its own.
 */
function serverOf(hopUrl: string, baseUrl: string, guard: OutboundGuard): ServerHealth {
  let origin: string;
  try {
    origin = new URL(hopUrl).origin;
  } catch {
    return healthOf(baseUrl, guard);
  }
  return healthOf(origin === new URL(baseUrl).origin ? baseUrl : withSlash(origin), guard);
}

/** The breaker state of an RDAP server (diagnostics, tests); closed when never used. */
export function rdapServerState(baseUrl: string): BreakerState {
  return servers.get(withSlash(baseUrl))?.breaker.state ?? 'closed';
}

/** Tests only: forget every server's breaker (their timers stop). */
export function resetRdapServerHealth(): void {
  for (const h of servers.values()) h.breaker.stop();
  servers.clear();
}

async function serviceFor(
  name: string,
  opts: RdapLookupOptions,
): Promise<{ baseUrl: string; info: RdapServiceInfo } | RdapUnavailableReason> {
  if (opts.config.RDAP_BASE_URL) return { baseUrl: opts.config.RDAP_BASE_URL, info: { via: 'base_url' } };
  const active = await activeBootstrap(opts.config, { guard: opts.guard });
  if (!active) return 'rdap_not_configured';
  const hit = findRdapService(active.bootstrap, name);
  if (!hit) return 'rdap_no_service_for_tld';
  return {
    baseUrl: hit.baseUrl,
    info: {
      via: active.origin === 'remote' ? 'bootstrap_remote' : 'bootstrap_snapshot',
      bootstrapPublication: active.bootstrap.publication,
    },
  };
}

/**
 * Registration data of `name` (a registrable domain, A-labels). Throws only when the caller's
 * signal aborts; every other outcome is a value.
 */
export async function lookupDomain(name: string, opts: RdapLookupOptions): Promise<RdapLookup> {
  const ldh = name.toLowerCase().replace(/\.$/, '');
  const service = await serviceFor(ldh, opts);
  opts.signal?.throwIfAborted();
  if (typeof service === 'string') return { status: 'unavailable', reason: service };

  let url: URL;
  try {
    url = new URL(`domain/${encodeURIComponent(ldh)}`, withSlash(service.baseUrl));
  } catch {
    return { status: 'unavailable', reason: 'rdap_not_configured' };
  }
  const baseUrl = withSlash(service.baseUrl);
  const health = healthOf(baseUrl, opts.guard);
  // Recently unreachable and not answering the probes yet: answer at once, ask nothing.
  if (health.breaker.isOpen()) return { status: 'unavailable', reason: 'rdap_unreachable' };
  let res;
  try {
    res = await opts.guard.fetch(url, {
      // The RDAP server is the operator's or IANA's: any port. A redirect elsewhere (a registry
      // sending us to a registrar's server) is someone else's word: the passive ports only.
      ports: 'configured',
      timeoutMs: opts.timeoutMs ?? 15_000,
      signal: opts.signal,
      headers: { accept: 'application/rdap+json, application/json;q=0.9' },
    });
  } catch (err) {
    if (err instanceof OutboundRefusedError) {
      return {
        status: 'unavailable',
        reason: err.reason === 'target_not_allowed' ? 'target_not_allowed' : 'rdap_unreachable',
      };
    }
    if (err instanceof OutboundFetchError) {
      if (err.kind === 'aborted') opts.signal?.throwIfAborted();
      // Every server that answered a hop is reachable; the one that failed is the last hop's
      // target (the first server when no hop answered), and only its own breaker is charged.
      for (const hop of err.hops) serverOf(hop.url, baseUrl, opts.guard).breaker.success();
      const last = err.hops.at(-1);
      const failed = last ? last.next : url.href;
      if (UNREACHABLE.has(err.kind) && failed) serverOf(failed, baseUrl, opts.guard).breaker.failure();
      if (err.kind === 'timeout') return { status: 'timeout' };
      if (err.kind === 'response_too_large') return { status: 'unavailable', reason: 'rdap_invalid_response' };
    }
    return { status: 'unavailable', reason: 'rdap_unreachable' };
  }
  for (const hop of res.hops) serverOf(hop.url, baseUrl, opts.guard).breaker.success();
  health.breaker.success();

  if (res.status === 404) return { status: 'completed', notFound: true, service: service.info };
  if (res.status !== 200) return { status: 'unavailable', reason: 'rdap_unreachable' };
  let body: unknown;
  try {
    body = JSON.parse(res.body.toString('utf8'));
  } catch {
    return { status: 'unavailable', reason: 'rdap_invalid_response' };
  }
  const data = parseDomainResponse(body, ldh);
  if (!data) return { status: 'unavailable', reason: 'rdap_invalid_response' };
  return { status: 'completed', data, service: service.info };
}
