// mail.zone: the basics of the zone that holds the domain's mail records (its registrable domain,
// as the domain lookup's delegation lane reads it): NS, SOA and whether the zone is signed (DS at
// the parent, kit/delegation.ts). Without DNSSEC, MX, SPF, DMARC and TLSA answers can be forged on
// the path and DANE cannot apply (RFC 4033 §5). Then each name server (first 4) is asked SOA and
// NS directly, over TCP through the outbound guard (its address vetted like any target), so
// copies that disagree are seen: different SOA serials (a zone update that did not reach every
// server, RFC 1034 §4.3.5) or different NS sets (RFC 1034 §4.2.2). A server that does not answer
// is a limitation, never a disagreement.
import { isIPv6 } from 'node:net';
import { presence, recordsOf } from '../../dns/presence.ts';
import { queryOverStream } from '../../dns/stream-query.ts';
import type { QueryResult } from '../../dns/types.ts';
import type { OutboundGuard } from '../../net/outbound-guard.ts';
import { OutboundFetchError, OutboundRefusedError } from '../../net/outbound-errors.ts';
import type { CheckOutput } from '../../contract/tasks.ts';
import type { CheckContext } from '../kit/product-contract.ts';
import { dsState } from '../kit/delegation.ts';
import { hostName, outcomeText, queryStatus } from '../kit/dns-replies.ts';
import { nameParts } from '../kit/name-parts.ts';
import { evidenceLine, type DnsAsker } from './dns-snapshot.ts';
import { mailFinding } from './findings.ts';
import { LaneOutput, postureObjects } from './output.ts';
import type { ZoneProjection } from './schema.ts';

/** Name servers asked directly (real delegations have 2–4; more adds cost, not evidence). */
export const MAX_ZONE_SERVERS = 4;
const CONNECT_MS = 3_000;
const QUERY_MS = 2_000;

type Server = ZoneProjection['servers'][number];

export async function runZoneCheck(domain: string, asker: DnsAsker, ctx: CheckContext): Promise<CheckOutput> {
  const out = new LaneOutput();
  const zone = nameParts(domain).zone;
  const [ns, soa, ds] = await Promise.all([asker.ask(zone, 'NS'), asker.ask(zone, 'SOA'), asker.ask(zone, 'DS')]);
  const queries = { NS: queryStatus(ns), SOA: queryStatus(soa), DS: queryStatus(ds) };
  if (presence(ns) === 'indeterminate') {
    out.failed([ns], {
      code: 'zone_unknown',
      message: `The NS query for ${zone} got ${outcomeText(ns)}: the zone's name servers are unknown, not missing.`,
    });
    postureObjects(out, domain, 'zone', null);
    return out.done({
      zone,
      queries,
      nameservers: [],
      soa: null,
      ds: 'unknown',
      validated: null,
      servers: [],
    } satisfies ZoneProjection);
  }
  const nameservers = [...new Set(recordsOf(ns).map((r) => hostName(r.data)))].sort();
  const soaRecord = (recordsOf(soa)[0]?.data ?? null) as ZoneProjection['soa'];
  if (presence(soa) === 'indeterminate') out.indeterminate(soa, `SOA of the zone ${zone}`);
  const nameExists = nameservers.length > 0 ? true : ns.outcome === 'nxdomain' ? false : null;
  const signed = dsState(ds, nameExists);
  if (signed === 'unknown')
    out.partial({
      code: 'dnssec_status_unknown',
      message: `The DS query for ${zone} got ${outcomeText(ds)}: whether the zone is signed is unknown.`,
    });
  const validated =
    ctx.runtime.config.DNS_RESOLVER_VALIDATES === true && presence(soa) !== 'indeterminate' ? soa.flags.ad : null;

  const zoneRef = { type: 'domain', key: zone };
  if (zone !== domain) out.object({ type: 'domain', key: zone, distance: 0, projection: { name: zone } });
  const posture = postureObjects(out, domain, 'zone', {
    zone,
    nameservers,
    ds: signed,
    serial: soaRecord?.serial ?? null,
  });
  if (signed === 'absent' && nameservers.length > 0)
    out.finding(
      mailFinding(
        'zone_not_signed',
        zoneRef,
        `The zone ${zone} holding the mail records of ${domain} is not DNSSEC-signed (no DS at its parent): its MX, SPF, DMARC and TLSA answers can be forged on the path, and DANE cannot apply.`,
        [evidenceLine(ds)],
      ),
    );

  const servers = await askServers(ctx, zone, nameservers.slice(0, MAX_ZONE_SERVERS), out);
  if (nameservers.length > MAX_ZONE_SERVERS)
    out.limit({
      code: 'zone_servers_truncated',
      message: `${nameservers.length} name servers; the first ${MAX_ZONE_SERVERS} were asked directly.`,
    });
  for (const s of servers) {
    const ref = out.object({
      type: 'ns_host',
      key: s.name,
      distance: 1,
      projection: { name: s.name, addresses: s.address ? [s.address] : [], zoneState: s.state },
    });
    out.relate(ref, 'ns_of', zoneRef);
    if (s.state !== 'answered' && s.state !== 'not_authoritative')
      out.partial({
        code: 'zone_server_unanswered',
        message: `The name server ${s.name}${s.address ? ` (${s.address})` : ''} of ${zone} was not asked or gave no usable answer (${s.state.replace(/_/g, ' ')}${s.detail ? `: ${s.detail}` : ''}); its copy of the zone is unknown.`,
      });
  }
  const answered = servers.filter((s) => s.state === 'answered');
  const serials = new Set(answered.map((s) => s.serial));
  if (serials.size > 1)
    out.finding(
      mailFinding(
        'zone_soa_serial_mismatch',
        posture,
        `The name servers of ${zone} serve different SOA serials (${[...serials].join(', ')}): they hold different copies of the zone.`,
        answered.map((s) => `SOA ${zone} @${s.name} (${s.address}): serial ${s.serial}`),
      ),
    );
  const sets = new Set(answered.map((s) => s.ns.join(' ')));
  if (sets.size > 1)
    out.finding(
      mailFinding(
        'zone_ns_inconsistent',
        posture,
        `The name servers of ${zone} disagree on its NS set.`,
        answered.map((s) => `NS ${zone} @${s.name} (${s.address}): ${s.ns.join(', ') || 'none'}`),
      ),
    );
  return out.done({
    zone,
    queries,
    nameservers,
    soa: soaRecord,
    ds: signed,
    validated,
    servers,
  } satisfies ZoneProjection);
}

async function askServers(ctx: CheckContext, zone: string, names: string[], out: LaneOutput): Promise<Server[]> {
  const guard = ctx.runtime.services.outbound;
  if (names.length === 0) return [];
  if (!guard) {
    out.partial({
      code: 'zone_servers_not_asked',
      message: 'No outbound guard is configured: the name servers were not asked directly.',
    });
    return [];
  }
  out.source({ source: 'authoritative_dns' });
  return Promise.all(names.map((name) => askServer(guard, zone, name, ctx.signal)));
}

/** SOA and NS of the zone asked of one name server, on one TCP connection through the guard. */
async function askServer(guard: OutboundGuard, zone: string, name: string, signal: AbortSignal): Promise<Server> {
  const row: Server = { name, address: null, state: 'unreachable', serial: null, ns: [], detail: null };
  let address: string;
  try {
    const addresses = await guard.resolve(name, signal);
    address = addresses.find((a) => !isIPv6(a)) ?? addresses[0]!;
  } catch (err) {
    if (err instanceof OutboundRefusedError) return { ...row, state: 'not_allowed', detail: err.message };
    if (err instanceof OutboundFetchError && err.kind === 'host_not_found') return { ...row, state: 'no_address' };
    return { ...row, state: 'unknown_address', detail: err instanceof Error ? err.message : String(err) };
  }
  row.address = address;
  let socket: Awaited<ReturnType<OutboundGuard['connectTcp']>>;
  try {
    socket = await guard.connectTcp({ address, port: 53, host: name }, { timeoutMs: CONNECT_MS, signal });
  } catch (err) {
    if (err instanceof OutboundRefusedError) return { ...row, state: 'not_allowed', detail: err.message };
    const timeout = err instanceof OutboundFetchError && err.kind === 'timeout';
    return { ...row, state: timeout ? 'timeout' : 'unreachable', detail: err instanceof Error ? err.message : null };
  }
  try {
    const soa = await queryOverStream(socket, zone, 'SOA', { timeoutMs: QUERY_MS, signal });
    const ns =
      presence(soa) === 'indeterminate'
        ? null
        : await queryOverStream(socket, zone, 'NS', { timeoutMs: QUERY_MS, signal });
    return judge(row, soa, ns);
  } finally {
    socket.destroy();
  }
}

function judge(row: Server, soa: QueryResult, ns: QueryResult | null): Server {
  if (presence(soa) === 'indeterminate' || !ns || presence(ns) === 'indeterminate') {
    const failed = !ns || presence(soa) === 'indeterminate' ? soa : ns;
    // REFUSED or a non-authoritative answer: the server does not serve the zone (a lame delegation).
    if (failed.outcome === 'refused') return { ...row, state: 'not_authoritative', detail: 'REFUSED' };
    return { ...row, state: failed.outcome === 'timeout' ? 'timeout' : 'failed', detail: outcomeText(failed) };
  }
  if (!soa.flags.aa) return { ...row, state: 'not_authoritative', detail: 'answered without the AA bit' };
  const serial = (recordsOf(soa)[0]?.data as { serial?: number } | undefined)?.serial ?? null;
  const names = [...new Set(recordsOf(ns).map((r) => hostName(r.data)))].sort();
  return { ...row, state: 'answered', serial, ns: names };
}
