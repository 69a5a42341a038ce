// Host names → addresses for the outbound guard, asked of the project's own resolver (never the
// system's getaddrinfo, which would bypass DNS_SERVERS and hide SERVFAIL behind "not found").
// A and AAAA go out together; the host has addresses when either answers with records. It has
// none (host_not_found) only when both questions are authoritatively absent; any indeterminate
// question without a usable sibling answer is a dns_failure: nothing is known.
import { presence, recordsOf } from '../dns/presence.ts';
import type { Resolver } from '../dns/types.ts';
import { OutboundFetchError } from './outbound-errors.ts';

/** Resolves a host name to its addresses; rejects with OutboundFetchError when it has none or nothing is known. */
export type HostResolver = (host: string, signal?: AbortSignal) => Promise<string[]>;

/** A HostResolver over the project's DNS resolver (A and AAAA together); never getaddrinfo. */
export function hostResolverOver(resolver: Resolver): HostResolver {
  return async (host, signal) => {
    const opts = signal ? { signal } : {};
    const [a, aaaa] = await Promise.all([resolver.query(host, 'A', opts), resolver.query(host, 'AAAA', opts)]);
    const addresses = [...recordsOf(a), ...recordsOf(aaaa)].map((r) => String(r.data));
    if (addresses.length > 0) return [...new Set(addresses)];
    if (presence(a) === 'absent' && presence(aaaa) === 'absent') {
      throw new OutboundFetchError('host_not_found', `${host} has no A or AAAA records (${a.rcode ?? a.outcome})`);
    }
    const failed = presence(a) === 'indeterminate' ? a : aaaa;
    throw new OutboundFetchError(
      'dns_failure',
      `the addresses of ${host} are unknown (${failed.type}: ${failed.outcome === 'left_public_dns' ? 'the answer left public DNS' : (failed.rcode ?? failed.outcome)})`,
    );
  };
}
