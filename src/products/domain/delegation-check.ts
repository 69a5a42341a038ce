// domain.delegation: NS, SOA and DS of the registrable domain, and the addresses of its name
// servers. Absence is reported only from replies: NXDOMAIN for NS is "not delegated", NODATA for
// DS is "not signed". A SERVFAIL, timeout or error leaves the fact unknown: the lane is
// unavailable/timeout (NS) or partial (SOA, DS), with a limitation, and no finding.
import type { QueryResult, Resolver } from '../../dns/types.ts';
import type { CheckContext } from '../kit/product-contract.ts';
import type { CheckOutput, FindingOut, ObjectOut, ObjectRef, RelationOut } from '../../contract/tasks.ts';
import type { LaneStatus, Limitation } from '../../contract/lanes.ts';
import {
  DNS_SOURCE,
  canonicalIp,
  failureOf,
  hostName,
  ipObject,
  known,
  notRun,
  outcomeText,
  queryStatus,
  resolverOf,
} from '../kit/dns-replies.ts';
import { dsState as dsStateOf } from '../kit/delegation.ts';
import { finding } from './findings.ts';
import { nameParts, type NameParts } from '../kit/name-parts.ts';
import type { DelegationProjection } from './schema.ts';

/** More NS hosts than this are listed but not resolved (real delegations have 2–13). */
const MAX_NS_RESOLVED = 13;

type NsHost = DelegationProjection['nameservers'][number];

function domainObjects(
  parts: NameParts,
  summary: Record<string, unknown> | null,
): { objects: ObjectOut[]; relations: RelationOut[] } {
  const target: ObjectOut = {
    type: 'domain',
    key: parts.name,
    distance: 0,
    projection: { name: parts.name, registrableDomain: parts.registrableDomain, publicSuffix: parts.publicSuffix },
  };
  if (parts.zone === parts.name) {
    if (summary) target.projection.delegation = summary;
    return { objects: [target], relations: [] };
  }
  // A subdomain: the delegation belongs to its registrable domain, reported as its own object.
  const zone: ObjectOut = {
    type: 'domain',
    key: parts.zone,
    distance: 0,
    projection: {
      name: parts.zone,
      registrableDomain: parts.registrableDomain,
      publicSuffix: parts.publicSuffix,
      ...(summary ? { delegation: summary } : {}),
    },
  };
  return {
    objects: [target, zone],
    relations: [
      {
        from: { type: 'domain', key: parts.zone },
        relation: 'discovered_from',
        to: { type: 'domain', key: parts.name },
      },
    ],
  };
}

async function resolveNsHost(resolver: Resolver, name: string, signal: AbortSignal): Promise<NsHost> {
  const [a, aaaa] = await Promise.all([
    resolver.query(name, 'A', { signal }),
    resolver.query(name, 'AAAA', { signal }),
  ]);
  const addresses = [...a.answers, ...aaaa.answers]
    .filter((r) => r.type === 'A' || r.type === 'AAAA')
    .map((r) => canonicalIp(r.data))
    .filter((x): x is string => x !== null);
  let resolution: NsHost['resolution'];
  if (addresses.length > 0) resolution = 'resolved';
  else if (a.outcome === 'nxdomain' && aaaa.outcome === 'nxdomain') resolution = 'nxdomain';
  else if (known(a) && known(aaaa)) resolution = 'no_addresses';
  else resolution = 'unknown';
  return { name, addresses: [...new Set(addresses)], resolution };
}

function unknownProjection(parts: NameParts, ns: QueryResult, soa: QueryResult, ds: QueryResult): DelegationProjection {
  return {
    zone: parts.zone,
    state: 'unknown',
    nameservers: [],
    soa: null,
    dnssec: { ds: 'unknown', records: [], validation: 'not_validated_locally' },
    queries: { NS: queryStatus(ns), SOA: queryStatus(soa), DS: queryStatus(ds) },
  };
}

export async function runDelegationCheck(target: string, ctx: CheckContext): Promise<CheckOutput> {
  const parts = nameParts(target);
  const resolver = resolverOf(ctx.runtime);
  if (!resolver) {
    return notRun(
      'unavailable',
      'resolver_not_configured',
      [
        {
          code: 'dns_delegation_unavailable',
          message: 'No DNS resolver is configured; the delegation was not checked.',
        },
      ],
      [],
    );
  }
  const signal = ctx.signal;
  const zone = parts.zone;
  const [ns, soa, ds] = await Promise.all([
    resolver.query(zone, 'NS', { signal }),
    resolver.query(zone, 'SOA', { signal }),
    resolver.query(zone, 'DS', { signal }),
  ]);
  const zoneRef: ObjectRef = { type: 'domain', key: zone };

  if (!known(ns)) {
    const f = failureOf([ns]);
    const { objects } = domainObjects(parts, null);
    return notRun(
      f.status,
      f.reason,
      [
        {
          code: f.status === 'timeout' ? 'dns_delegation_timeout' : 'dns_delegation_unavailable',
          message: `The NS query for ${zone} got ${outcomeText(ns)}: the delegation is unknown, not missing.`,
        },
      ],
      [DNS_SOURCE],
      unknownProjection(parts, ns, soa, ds),
      objects.slice(0, 1),
    );
  }

  const limitations: Limitation[] = [];
  const findings: FindingOut[] = [];
  let status: LaneStatus = 'completed';
  const partial = (l: Limitation) => {
    status = 'partial';
    limitations.push(l);
  };

  const nsNames = [...new Set(ns.answers.filter((r) => r.type === 'NS').map((r) => hostName(r.data)))].sort();
  let state: DelegationProjection['state'];
  if (nsNames.length > 0) state = 'delegated';
  else if (ns.outcome === 'nxdomain' && soa.outcome !== 'answer' && soa.outcome !== 'nodata') state = 'not_delegated';
  else if (ns.outcome === 'nxdomain') {
    state = 'unknown';
    partial({
      code: 'dns_inconsistent_replies',
      message: `The NS query for ${zone} got NXDOMAIN while its SOA query was answered; the delegation state is left unknown.`,
    });
  } else state = 'no_nameservers';

  if (state === 'not_delegated') {
    findings.push(
      finding('dns_delegation_missing', zoneRef, `${zone} does not exist in the DNS (NXDOMAIN).`, [
        `NS ${zone}: NXDOMAIN${ns.flags.aa ? ' (authoritative answer)' : ''}`,
      ]),
    );
  }

  // SOA: only a missing reply is a gap; NODATA/NXDOMAIN are facts, reported as soa null.
  const soaRecord = soa.answers.find((r) => r.type === 'SOA');
  if (!known(soa) && state !== 'not_delegated') {
    partial({ code: 'soa_unknown', message: `The SOA query for ${zone} got ${outcomeText(soa)}.` });
  }

  // DS: present, absent (answered NODATA) or unknown.
  const dsRecords = ds.answers
    .filter((r) => r.type === 'DS')
    .map((r) => r.data as DelegationProjection['dnssec']['records'][number]);
  const dsState: DelegationProjection['dnssec']['ds'] = dsStateOf(ds, state !== 'not_delegated');
  if (dsState === 'present') {
    limitations.push({
      code: 'dnssec_not_validated',
      message: 'DS records are reported as the resolver returned them; the DNSSEC chain is not validated locally.',
    });
  } else if (dsState === 'absent') {
    if (state === 'delegated') {
      findings.push(
        finding(
          'dnssec_not_signed',
          zoneRef,
          `The parent zone holds no DS record for ${zone}: the delegation is not DNSSEC-signed.`,
          [`DS ${zone}: NOERROR, no records`],
        ),
      );
    }
  } else {
    if (state !== 'not_delegated')
      partial({
        code: 'dnssec_status_unknown',
        message: `The DS query for ${zone} got ${outcomeText(ds)}; whether the delegation is signed is unknown.`,
      });
  }

  if (nsNames.length === 1) {
    findings.push(
      finding('dns_single_nameserver', zoneRef, `${zone} is delegated to a single name server (${nsNames[0]}).`, [
        `NS ${zone}: ${nsNames[0]}`,
      ]),
    );
  }

  const toResolve = nsNames.slice(0, MAX_NS_RESOLVED);
  const resolved = await Promise.all(toResolve.map((n) => resolveNsHost(resolver, n, signal)));
  const nameservers: NsHost[] = [
    ...resolved,
    ...nsNames.slice(MAX_NS_RESOLVED).map((name) => ({ name, addresses: [], resolution: 'unknown' as const })),
  ];
  if (nsNames.length > MAX_NS_RESOLVED) {
    limitations.push({
      code: 'nameservers_truncated',
      message: `${nsNames.length} NS hosts; the addresses of the first ${MAX_NS_RESOLVED} were resolved.`,
    });
  }
  const unresolved = resolved.filter((h) => h.resolution === 'unknown').map((h) => h.name);
  if (unresolved.length > 0) {
    limitations.push({
      code: 'nameserver_addresses_unknown',
      message: `No usable reply for the addresses of: ${unresolved.join(', ')}.`,
    });
  }

  const projection: DelegationProjection = {
    zone,
    state,
    nameservers,
    soa: (soaRecord?.data as DelegationProjection['soa']) ?? null,
    dnssec: { ds: dsState, records: dsRecords, validation: 'not_validated_locally' },
    queries: { NS: queryStatus(ns), SOA: queryStatus(soa), DS: queryStatus(ds) },
  };

  const { objects, relations } = domainObjects(parts, { state, nameservers: nsNames, ds: dsState });
  for (const h of nameservers) {
    const ref: ObjectRef = { type: 'ns_host', key: h.name };
    objects.push({
      type: 'ns_host',
      key: h.name,
      distance: 1,
      projection: { name: h.name, addresses: h.addresses, resolution: h.resolution },
    });
    relations.push({ from: ref, relation: 'ns_of', to: zoneRef });
    for (const address of h.addresses) {
      objects.push(ipObject(address, 2));
      relations.push({ from: ref, relation: 'resolves_to', to: { type: 'ip_address', key: address } });
    }
    if (h.resolution === 'nxdomain') {
      findings.push(
        finding('dns_nameserver_nxdomain', ref, `${h.name}, a name server of ${zone}, does not exist (NXDOMAIN).`, [
          `A ${h.name}: NXDOMAIN`,
          `AAAA ${h.name}: NXDOMAIN`,
        ]),
      );
    }
  }

  return { status, projection, objects: dedupe(objects), relations, findings, limitations, sources: [DNS_SOURCE] };
}

/** Two NS hosts may share an address: one object per (type, key). */
function dedupe(objects: ObjectOut[]): ObjectOut[] {
  const seen = new Map<string, ObjectOut>();
  for (const o of objects) if (!seen.has(`${o.type}\u0000${o.key}`)) seen.set(`${o.type}\u0000${o.key}`, o);
  return [...seen.values()];
}
