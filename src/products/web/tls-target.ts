// Where the TLS lanes connect: the URL's host on its https port (the URL's own port for an
// https URL that names one, else 443), every address resolved and vetted by the outbound guard.
// A host that cannot be resolved or is refused is a lane status with a limitation, never "no TLS".
import { OutboundFetchError, OutboundRefusedError, type OutboundGuard } from '../../net/outbound-guard.ts';
import type { CheckOutput, ObjectOut, RelationOut } from '../../contract/tasks.ts';
import type { Limitation } from '../../contract/lanes.ts';

export interface TlsTarget {
  host: string;
  port: number;
  addresses: string[];
}

export function tlsEndpoint(target: string): { host: string; port: number } {
  const u = new URL(target);
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
  return { host, port: u.protocol === 'https:' && u.port ? Number(u.port) : 443 };
}

export function notRun(status: CheckOutput['status'], reason: string, limitation: Limitation): CheckOutput {
  return {
    status,
    reason,
    projection: {},
    objects: [],
    relations: [],
    findings: [],
    limitations: [limitation],
    sources: [],
  };
}

/** The vetted addresses, or the CheckOutput that says why there are none. */
export async function resolveTlsTarget(
  target: string,
  guard: OutboundGuard | undefined,
  lane: string,
  signal: AbortSignal,
): Promise<TlsTarget | CheckOutput> {
  const { host, port } = tlsEndpoint(target);
  if (!guard)
    return notRun('unavailable', 'outbound_not_configured', {
      code: `${lane}_unavailable`,
      message: 'No outbound guard in this process: no handshake was made.',
    });
  try {
    return { host, port, addresses: await guard.resolve(host, signal) };
  } catch (err) {
    signal.throwIfAborted();
    if (err instanceof OutboundRefusedError) {
      return notRun('unavailable', err.reason, {
        code: `${lane}_refused`,
        message: `${host} resolves to an address outbound checks may not reach (${err.range ?? err.reason}); no handshake was made.`,
      });
    }
    const kind = err instanceof OutboundFetchError ? err.kind : 'dns_failure';
    if (kind === 'timeout')
      return notRun('timeout', 'dns_timeout', {
        code: `${lane}_timeout`,
        message: `The addresses of ${host} did not arrive in time.`,
      });
    const out = notRun('unavailable', kind, {
      code: `${lane}_unavailable`,
      message:
        kind === 'host_not_found'
          ? `${host} has no A or AAAA records: there is nothing to connect to.`
          : `The addresses of ${host} are unknown (${kind}).`,
    });
    // An authoritative NXDOMAIN/NODATA is a fact about the target; an indeterminate answer is not.
    return kind === 'host_not_found' ? { ...out, measured: true, projection: { host, port, addresses: [] } } : out;
  }
}

/** host → resolves_to → each address. */
export function addressObjects(t: TlsTarget): { objects: ObjectOut[]; relations: RelationOut[] } {
  const objects: ObjectOut[] = [{ type: 'host', key: t.host, distance: 0, projection: { name: t.host } }];
  const relations: RelationOut[] = [];
  for (const address of t.addresses) {
    objects.push({
      type: 'ip_address',
      key: address,
      distance: 1,
      projection: { address, version: address.includes(':') ? 6 : 4 },
    });
    relations.push({
      from: { type: 'host', key: t.host },
      relation: 'resolves_to',
      to: { type: 'ip_address', key: address },
    });
  }
  return { objects, relations };
}
