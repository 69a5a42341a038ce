// The two questions every outbound connection answers first: may this address be reached, and
// what are all the vetted addresses of this host? Plus the lookup function that lets a socket
// library (node:net, node:tls, undici) connect only to those addresses: it never asks DNS.
import { isIP, type LookupFunction } from 'node:net';
import { classifyAddress, inAllowList, isAllowedTarget } from './address-policy.ts';
import type { HostResolver } from './host-resolver.ts';
import { OutboundFetchError, OutboundRefusedError, errorText } from './outbound-errors.ts';

/**
 * Throws OutboundRefusedError unless the address may be connected to. `deny` (an active guard's
 * ACTIVE_DENY_CIDRS) refuses its ranges even where `allow` or the public policy would not.
 */
export function vetAddress(
  address: string,
  allow: readonly string[],
  host: string = address,
  deny: readonly string[] = [],
): void {
  if (deny.length > 0 && inAllowList(address, deny))
    throw new OutboundRefusedError('target_not_allowed', host, 'active_denied');
  if (!isAllowedTarget(address, allow)) {
    const range = classifyAddress(address);
    throw new OutboundRefusedError('target_not_allowed', host, range === 'public' ? null : range);
  }
}

/**
 * A host (name or literal) → every one of its addresses, each vetted. ANY refused address refuses
 * the host: connecting to "the allowed one" would let a round-robin or rebinding answer choose.
 */
export async function resolveVetted(
  host: string,
  allow: readonly string[],
  resolver: HostResolver,
  signal?: AbortSignal,
  deny: readonly string[] = [],
): Promise<string[]> {
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
  for (const a of addresses) vetAddress(a, allow, host, deny);
  return addresses;
}

/** A lookup that can only answer with the vetted addresses (Node asks for all with autoSelectFamily). */
export function pinnedLookup(addresses: readonly string[], onLookup?: (name: string) => void): LookupFunction {
  const pinned = addresses.map((address) => ({ address, family: isIP(address) }));
  return (name, options, callback) => {
    onLookup?.(name);
    if (options.all) callback(null, pinned);
    else callback(null, pinned[0]!.address, pinned[0]!.family);
  };
}

export function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
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
