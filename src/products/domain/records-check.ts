// domain.records: A, AAAA, MX, TXT and CAA of the target itself. Completed when every type got a
// reply about the name (records, NODATA or NXDOMAIN), partial when some did, unavailable/timeout
// when none did: a type without a usable reply is listed with its outcome, never as "no records".
import type { QueryResult } from '../../dns/types.ts';
import type { CheckContext } from '../kit/product-contract.ts';
import type { CheckOutput, ObjectOut, RelationOut } from '../../contract/tasks.ts';
import type { LaneStatus, Limitation } from '../../contract/lanes.ts';
import { indeterminateLimitation } from '../../dns/presence.ts';
import {
  DNS_SOURCE,
  canonicalIp,
  failureOf,
  hostName,
  ipObject,
  known,
  notRun,
  resolverOf,
} from '../kit/dns-replies.ts';
import { nameParts } from '../kit/name-parts.ts';
import { recordTypes, type DomainRecordType, type RecordRows, type RecordsProjection } from './schema.ts';

function rows(r: QueryResult): RecordRows {
  return {
    outcome: r.outcome,
    rcode: r.rcode,
    answers: r.answers.map((a) => ({ name: a.name, type: a.type, ttl: a.ttl, data: a.data as never })),
  };
}

export async function runRecordsCheck(target: string, ctx: CheckContext): Promise<CheckOutput> {
  const { name } = nameParts(target);
  const resolver = resolverOf(ctx.runtime);
  if (!resolver) {
    return notRun(
      'unavailable',
      'resolver_not_configured',
      [{ code: 'dns_records_unavailable', message: 'No DNS resolver is configured; the records were not queried.' }],
      [],
    );
  }
  const results = await Promise.all(recordTypes.map((t) => resolver.query(name, t, { signal: ctx.signal })));
  const byType = Object.fromEntries(recordTypes.map((t, i) => [t, results[i]!])) as Record<
    DomainRecordType,
    QueryResult
  >;
  const projection: RecordsProjection = {
    name,
    records: Object.fromEntries(recordTypes.map((t) => [t, rows(byType[t])])) as RecordsProjection['records'],
  };

  const missing = recordTypes.filter((t) => !known(byType[t]));
  const limitations: Limitation[] = missing.map((t) => indeterminateLimitation(byType[t]));
  let status: LaneStatus = 'completed';
  let reason: string | undefined;
  if (missing.length === recordTypes.length) ({ status, reason } = failureOf(results));
  else if (missing.length > 0) status = 'partial';

  const data = (t: DomainRecordType) => byType[t].answers.filter((a) => a.type === t).map((a) => a.data);
  const domain: ObjectOut = {
    type: 'domain',
    key: name,
    distance: 0,
    projection: { name, records: Object.fromEntries(recordTypes.map((t) => [t, known(byType[t]) ? data(t) : null])) },
  };
  const objects: ObjectOut[] = [domain];
  const relations: RelationOut[] = [];
  const addresses = new Set([...data('A'), ...data('AAAA')].map(canonicalIp).filter((x): x is string => x !== null));
  for (const address of addresses) {
    objects.push(ipObject(address, 1));
    relations.push({
      from: { type: 'domain', key: name },
      relation: 'resolves_to',
      to: { type: 'ip_address', key: address },
    });
  }
  const exchanges = new Set(
    data('MX')
      .map((mx) => hostName((mx as { exchange: string }).exchange))
      .filter((x) => x.length > 0),
  );
  for (const exchange of exchanges) {
    objects.push({ type: 'mx_host', key: exchange, distance: 1, projection: { name: exchange } });
    relations.push({ from: { type: 'mx_host', key: exchange }, relation: 'mx_of', to: { type: 'domain', key: name } });
  }

  return {
    status,
    ...(reason ? { reason } : {}),
    projection,
    objects,
    relations,
    findings: [],
    limitations,
    sources: [DNS_SOURCE],
  };
}
