// mail.mx: the MX set in preference order and the addresses of each host. A null MX is the fact
// "accepts no mail" (finding mx_null, lane completed); no MX is the implicit MX of RFC 5321
// (the domain's own address); an MX query without a usable reply makes the lane unavailable or
// timeout (required: the job is then unavailable), never "no MX". The first MX addresses get a
// forward-confirmed reverse DNS check (./mx-reverse.ts).
import { presence } from '../../dns/presence.ts';
import type { CheckContext } from '../kit/product-contract.ts';
import type { CheckOutput } from '../../contract/tasks.ts';
import { ipObject, outcomeText, queryStatus } from '../kit/dns-replies.ts';
import { evidenceLine, type DnsAsker } from './dns-snapshot.ts';
import { mailFinding } from './findings.ts';
import { hostAddresses, MAX_MX_HOSTS, mxSet, type HostAddresses } from './mx-hosts.ts';
import { checkReverse } from './mx-reverse.ts';
import { LaneOutput, postureObjects } from './output.ts';
import type { MxProjection } from './schema.ts';

export async function runMxCheck(domain: string, asker: DnsAsker, ctx: CheckContext): Promise<CheckOutput> {
  const out = new LaneOutput();
  const mx = await mxSet(asker, domain);
  const domainRef = { type: 'domain', key: domain };
  if (mx.state === 'unknown') {
    out.failed([mx.query], {
      code: 'mx_unknown',
      message: `The MX query for ${domain} got ${outcomeText(mx.query)}: the MX set is unknown, not missing.`,
    });
    postureObjects(out, domain, 'mx', null);
    return out.done({
      domain,
      state: 'unknown',
      query: queryStatus(mx.query),
      hosts: [],
      implicit: null,
    } satisfies MxProjection);
  }

  const resolved = await Promise.all(
    mx.hosts.slice(0, MAX_MX_HOSTS).map((h) => (h.ipLiteral ? null : hostAddresses(asker, h.name))),
  );
  if (mx.hosts.length > MAX_MX_HOSTS) {
    out.limit({
      code: 'mx_hosts_truncated',
      message: `${mx.hosts.length} MX hosts; the first ${MAX_MX_HOSTS} were resolved.`,
    });
  }
  const hosts: MxProjection['hosts'] = mx.hosts.map((h, i) => {
    const r = resolved[i] ?? null;
    return {
      name: h.name,
      preference: h.preference,
      ipLiteral: h.ipLiteral,
      addresses: r?.addresses ?? [],
      resolution: h.ipLiteral ? 'ip_literal' : (r?.resolution ?? 'not_resolved'),
      cname: r?.cname ?? null,
      reverse: [],
    };
  });
  // Forward-confirmed reverse DNS of the addresses the smtp_starttls lane connects to (./mx-reverse.ts).
  await checkReverse(asker, out, hosts, ctx.runtime.config.ALLOW_PRIVATE_TARGETS);

  let implicit: MxProjection['implicit'] = null;
  if (mx.state === 'no_mx') {
    const self = await hostAddresses(asker, domain);
    implicit = { addresses: self.addresses, resolution: self.resolution };
    if (self.resolution === 'unknown')
      out.indeterminate(presence(self.a) === 'indeterminate' ? self.a : self.aaaa, 'implicit MX address');
    out.finding(
      mailFinding(
        'mx_missing',
        domainRef,
        self.resolution === 'resolved'
          ? `${domain} publishes no MX records; senders deliver to its own address (${self.addresses.join(', ')}).`
          : `${domain} publishes no MX records${self.resolution === 'unknown' ? '' : ' and has no address: it receives no mail'}.`,
        [evidenceLine(mx.query)],
      ),
    );
  }
  if (mx.state === 'null_mx') {
    out.finding(
      mailFinding('mx_null', domainRef, `${domain} publishes a null MX (RFC 7505): it accepts no mail.`, [
        `MX ${domain}: 0 .`,
      ]),
    );
  }
  if (mx.nullMixed) {
    out.finding(
      mailFinding(
        'mx_null_with_other_records',
        domainRef,
        `${domain} publishes a null MX next to ${mx.hosts.length} other MX record(s).`,
        [evidenceLine(mx.query)],
      ),
    );
  }

  postureObjects(out, domain, 'mx', { state: mx.state, hosts: hosts.map((h) => h.name) });
  for (const [i, h] of hosts.entries()) {
    const ref = out.object({
      type: 'mx_host',
      key: h.name,
      distance: 1,
      projection: {
        name: h.name,
        preference: h.preference,
        addresses: h.addresses,
        resolution: h.resolution,
        ...(h.reverse.length > 0 ? { reverse: h.reverse.map((x) => ({ address: x.address, state: x.state })) } : {}),
      },
    });
    out.relate(ref, 'mx_of', domainRef);
    for (const address of h.addresses) out.relate(ref, 'resolves_to', out.object(ipObject(address, 2)));
    const r = resolved[i] as HostAddresses | null | undefined;
    if (h.ipLiteral) {
      out.finding(
        mailFinding(
          'mx_target_ip_literal',
          ref,
          `The MX exchange "${h.name}" of ${domain} is an IP address, not a host name.`,
          [evidenceLine(mx.query)],
        ),
      );
      continue;
    }
    if (!r) continue;
    if (r.cname) {
      out.relate(
        ref,
        'cname_to',
        out.object({ type: 'host', key: r.cname, distance: 2, projection: { name: r.cname } }),
      );
      out.finding(
        mailFinding('mx_target_cname', ref, `The MX host ${h.name} is an alias of ${r.cname}.`, [
          `CNAME ${h.name}: ${r.cname}`,
        ]),
      );
    }
    if (r.resolution === 'nxdomain' || r.resolution === 'no_addresses') {
      out.finding(
        mailFinding(
          'mx_host_unresolvable',
          ref,
          `The MX host ${h.name} has no address (${r.resolution === 'nxdomain' ? 'NXDOMAIN' : 'NODATA'} for A and AAAA).`,
          [evidenceLine(r.a), evidenceLine(r.aaaa)],
        ),
      );
    }
    if (r.resolution === 'unknown')
      out.indeterminate(presence(r.a) === 'indeterminate' ? r.a : r.aaaa, `address of MX host ${h.name}`);
  }
  return out.done({ domain, state: mx.state, query: queryStatus(mx.query), hosts, implicit } satisfies MxProjection);
}
