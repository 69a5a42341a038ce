// mail.dane: TLSA records at _25._tcp.<host> for each MX host (RFC 7672). Only usages 2
// (DANE-TA) and 3 (DANE-EE) with selector 0/1 and matching type 0/1/2 are usable for SMTP. DANE
// applies only to TLSA records a sender can validate with DNSSEC (RFC 7672 §2.2), so each host
// gets a DNSSEC state: secure (a resolver the operator declares validating, DNS_RESOLVER_VALIDATES,
// set AD on the TLSA answer), insecure (that resolver answered without AD, or the zone has no DS
// at its parent: nothing can validate it) or unknown. Matching the records against the
// certificate each MX presented needs the smtp_starttls lane and is done at assembly
// (./derive.ts).
import { isDeterminate, presence, recordsOf } from '../../dns/presence.ts';
import type { QueryResult } from '../../dns/types.ts';
import type { CheckContext } from '../kit/product-contract.ts';
import type { CheckOutput } from '../../contract/tasks.ts';
import { outcomeText, queryStatus } from '../kit/dns-replies.ts';
import { dsState, type DsState } from '../kit/delegation.ts';
import { nameParts } from '../kit/name-parts.ts';
import { evidenceLine, type DnsAsker } from './dns-snapshot.ts';
import { mailFinding } from './findings.ts';
import { deliveryHosts } from './mx-hosts.ts';
import { LaneOutput, postureObjects } from './output.ts';
import type { DaneProjection } from './schema.ts';

export const MAX_DANE_HOSTS = 5;

export function tlsaUsable(r: { usage: number; selector: number; matchingType: number }): boolean {
  return (
    (r.usage === 2 || r.usage === 3) &&
    (r.selector === 0 || r.selector === 1) &&
    r.matchingType >= 0 &&
    r.matchingType <= 2
  );
}

type Dnssec = DaneProjection['hosts'][number]['dnssec'];

/**
 * secure only from a declared validating resolver's AD; insecure when that resolver answered
 * NOERROR without AD (a bogus answer would be SERVFAIL, RFC 4035 §3.2.3) or when the zone has no DS
 * (no chain of trust, whoever validates); unknown otherwise.
 */
export function dnssecOf(tlsa: QueryResult, ds: DsState, resolverValidates: boolean): Dnssec {
  if (resolverValidates && isDeterminate(tlsa)) return tlsa.flags.ad ? 'secure' : 'insecure';
  if (ds === 'absent') return 'insecure';
  return 'unknown';
}

export async function runDaneCheck(domain: string, asker: DnsAsker, ctx: CheckContext): Promise<CheckOutput> {
  const validates = ctx.runtime.config.DNS_RESOLVER_VALIDATES === true;
  const validation: DaneProjection['validation'] = validates ? 'validated_by_resolver' : 'not_validated';
  const out = new LaneOutput();
  const delivery = await deliveryHosts(asker, domain);
  if (delivery.kind === 'no_mail') {
    out.skip('not_applicable', {
      code: 'dane_not_applicable',
      message: `${domain} receives no mail (${delivery.reason === 'null_mx' ? 'null MX' : 'no MX and no address'}): DANE for SMTP does not apply.`,
    });
    return out.done({ domain, hosts: [], validation } satisfies DaneProjection);
  }
  if (delivery.kind === 'unknown') {
    out.failed([delivery.query], {
      code: 'dane_unknown',
      message: `The mail hosts of ${domain} are unknown (${outcomeText(delivery.query)}): no TLSA record was looked up.`,
    });
    return out.done({ domain, hosts: [], validation } satisfies DaneProjection);
  }
  const hosts = delivery.hosts.slice(0, MAX_DANE_HOSTS);
  if (delivery.hosts.length > MAX_DANE_HOSTS)
    out.limit({
      code: 'dane_hosts_truncated',
      message: `${delivery.hosts.length} MX hosts; TLSA was looked up for the first ${MAX_DANE_HOSTS}.`,
    });
  // One wave: the TLSA of each host and the DS of each host's zone at its parent.
  const zones = [...new Set(hosts.map((h) => nameParts(h).zone))];
  const [replies, dsReplies] = await Promise.all([
    Promise.all(hosts.map((h) => asker.ask(`_25._tcp.${h}`, 'TLSA'))),
    Promise.all(zones.map((z) => asker.ask(z, 'DS'))),
  ]);
  const dsOf = new Map(zones.map((z, i) => [z, { reply: dsReplies[i]!, state: dsState(dsReplies[i]!, null) }]));
  const rows: DaneProjection['hosts'] = hosts.map((host, i) => {
    const r = replies[i]!;
    const records = recordsOf(r).map((rec) => {
      const d = rec.data as { usage: number; selector: number; matchingType: number; certificate: string };
      return {
        usage: d.usage,
        selector: d.selector,
        matchingType: d.matchingType,
        data: d.certificate,
        usable: tlsaUsable(d),
      };
    });
    const zone = nameParts(host).zone;
    const ds = dsOf.get(zone)!;
    return {
      host,
      query: queryStatus(r),
      presence: presence(r),
      ad: r.flags.ad,
      dnssec: dnssecOf(r, ds.state, validates),
      ds: { zone, state: ds.state },
      records,
    };
  });
  const unknown = rows.filter((h) => h.records.length > 0 && h.dnssec === 'unknown');
  if (unknown.length > 0) {
    out.limit({
      code: 'dnssec_status_unknown',
      message: `Whether the TLSA records of ${unknown.map((h) => h.host).join(', ')} are DNSSEC-validated is unknown: ${validates ? 'the validating resolver gave no usable answer' : 'the resolver is not declared validating (DNS_RESOLVER_VALIDATES) and the zone has a DS record, or its DS reply was unusable'}. DANE is not claimed for them.`,
    });
  }
  postureObjects(out, domain, 'dane', {
    hosts: rows.map((h) => ({ host: h.host, tlsa: h.presence, usable: h.records.filter((r) => r.usable).length })),
  });
  for (const [i, h] of rows.entries()) {
    const ref = out.object({
      type: 'mx_host',
      key: h.host,
      distance: 1,
      projection: { name: h.host, tlsa: h.presence },
    });
    if (h.presence === 'indeterminate') out.indeterminate(replies[i]!, `DANE for ${h.host}`);
    if (h.records.length > 0 && h.dnssec === 'insecure') {
      const ds = dsOf.get(h.ds.zone)!;
      out.finding(
        mailFinding(
          'dane_tlsa_unsigned',
          ref,
          `${h.host} publishes TLSA records, which have no effect without DNSSEC: ${h.ds.state === 'absent' ? `${h.ds.zone} has no DS record at its parent` : 'the validating resolver returned them insecure (no AD)'}.`,
          [evidenceLine(replies[i]!), evidenceLine(ds.reply), `AD bit on the TLSA answer: ${h.ad}`],
        ),
      );
    }
    if (h.records.length > 0 && !h.records.some((r) => r.usable)) {
      out.finding(
        mailFinding(
          'dane_tlsa_unusable',
          ref,
          `The TLSA records of ${h.host} have no usage 2 or 3 record with a known selector and matching type.`,
          [
            evidenceLine(replies[i]!),
            ...h.records.map((r) => `${r.usage} ${r.selector} ${r.matchingType} ${r.data.slice(0, 64)}`),
          ],
        ),
      );
    }
  }
  if (rows.length > 0 && rows.every((h) => h.presence === 'indeterminate')) {
    out.failed(replies, {
      code: 'dane_unknown',
      message: `No TLSA query for the MX hosts of ${domain} got a usable reply.`,
    });
  }
  return out.done({ domain, hosts: rows, validation } satisfies DaneProjection);
}
