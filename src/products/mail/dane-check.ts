// mail.dane: TLSA records at _25._tcp.<host> for each MX host (RFC 7672). Only usages 2
// (DANE-TA) and 3 (DANE-EE) with selector 0/1 and matching type 0/1/2 are usable for SMTP. The
// AD flag is reported as the resolver gave it; DNSSEC is not validated locally. Matching the
// records against the certificate each MX presented needs the smtp_starttls lane and is done
// at assembly (./derive.ts).
import { presence, recordsOf } from '../../dns/presence.ts';
import type { CheckContext } from '../kit/product-contract.ts';
import type { CheckOutput } from '../../contract/tasks.ts';
import { outcomeText, queryStatus } from '../kit/dns-replies.ts';
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

export async function runDaneCheck(domain: string, asker: DnsAsker, _ctx: CheckContext): Promise<CheckOutput> {
  const out = new LaneOutput();
  const delivery = await deliveryHosts(asker, domain);
  if (delivery.kind === 'no_mail') {
    out.skip('not_applicable', {
      code: 'dane_not_applicable',
      message: `${domain} receives no mail (${delivery.reason === 'null_mx' ? 'null MX' : 'no MX and no address'}): DANE for SMTP does not apply.`,
    });
    return out.done({ domain, hosts: [], validation: 'not_validated_locally' } satisfies DaneProjection);
  }
  if (delivery.kind === 'unknown') {
    out.failed([delivery.query], {
      code: 'dane_unknown',
      message: `The mail hosts of ${domain} are unknown (${outcomeText(delivery.query)}): no TLSA record was looked up.`,
    });
    return out.done({ domain, hosts: [], validation: 'not_validated_locally' } satisfies DaneProjection);
  }
  const hosts = delivery.hosts.slice(0, MAX_DANE_HOSTS);
  if (delivery.hosts.length > MAX_DANE_HOSTS)
    out.limit({
      code: 'dane_hosts_truncated',
      message: `${delivery.hosts.length} MX hosts; TLSA was looked up for the first ${MAX_DANE_HOSTS}.`,
    });
  const replies = await Promise.all(hosts.map((h) => asker.ask(`_25._tcp.${h}`, 'TLSA')));
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
    return { host, query: queryStatus(r), presence: presence(r), ad: r.flags.ad, records };
  });
  if (rows.some((h) => h.records.length > 0)) {
    out.limit({
      code: 'dnssec_not_validated',
      message:
        'TLSA records and the AD flag are reported as the resolver returned them; the DNSSEC chain is not validated locally.',
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
  return out.done({ domain, hosts: rows, validation: 'not_validated_locally' } satisfies DaneProjection);
}
