// Whether a DMARC report destination receives mail at all: a mailto: rua/ruf address is only as
// good as its domain's mail exchangers. MX hosts, or without MX the domain's own address (the
// implicit MX of RFC 5321 §5.1), accept mail; a null MX (RFC 7505 §3-4) or no MX and no address
// means every report sent there is lost. Asked for every destination, the domain's own included
// (a null-MX domain that sends rua to itself loses its reports too). Indeterminate stays unknown.
import { presence } from '../../dns/presence.ts';
import type { QueryResult } from '../../dns/types.ts';
import type { ObjectRef } from '../../contract/tasks.ts';
import { evidenceLine, type DnsAsker } from './dns-snapshot.ts';
import { mailFinding } from './findings.ts';
import { hostAddresses, mxSet } from './mx-hosts.ts';
import type { LaneOutput } from './output.ts';

export type Accepts = 'mx' | 'implicit_mx' | 'null_mx' | 'no_mail' | 'unknown' | 'not_checked';

export interface DestinationMail {
  accepts: Exclude<Accepts, 'not_checked'>;
  /** The replies that decided it (for evidence), or the indeterminate one. */
  replies: QueryResult[];
}

export async function destinationMail(asker: DnsAsker, destination: string): Promise<DestinationMail> {
  const mx = await mxSet(asker, destination);
  if (mx.state === 'unknown') return { accepts: 'unknown', replies: [mx.query] };
  if (mx.state === 'null_mx') return { accepts: 'null_mx', replies: [mx.query] };
  if (mx.state === 'mx') return { accepts: 'mx', replies: [mx.query] };
  const self = await hostAddresses(asker, destination);
  if (self.resolution === 'resolved') return { accepts: 'implicit_mx', replies: [mx.query, self.a, self.aaaa] };
  if (self.resolution === 'unknown')
    return { accepts: 'unknown', replies: [presence(self.a) === 'indeterminate' ? self.a : self.aaaa] };
  return { accepts: 'no_mail', replies: [mx.query, self.a, self.aaaa] };
}

/**
 * Asks every mailto: destination domain (each once, in parallel) and reports on the lane: a
 * finding for a destination that receives no mail, a limitation for one whose answer failed.
 * Returns the verdict per destination domain.
 */
export async function checkDestinations(
  asker: DnsAsker,
  out: LaneOutput,
  posture: ObjectRef,
  recordDomain: string,
  uris: ReadonlyArray<{ uri: string; scheme: string; destination: string | null; tag: string }>,
): Promise<Map<string, Accepts>> {
  const domains = [...new Set(uris.filter((u) => u.scheme === 'mailto' && u.destination).map((u) => u.destination!))];
  const verdicts = await Promise.all(domains.map((d) => destinationMail(asker, d)));
  const byDomain = new Map<string, Accepts>();
  domains.forEach((d, i) => {
    const v = verdicts[i]!;
    byDomain.set(d, v.accepts);
    if (v.accepts === 'unknown') out.indeterminate(v.replies[0]!, `mail for report destination ${d}`);
    if (v.accepts === 'null_mx' || v.accepts === 'no_mail') {
      const used = uris.filter((u) => u.destination === d);
      out.finding(
        mailFinding(
          'dmarc_report_destination_no_mail',
          posture,
          `The DMARC ${[...new Set(used.map((u) => u.tag))].join('/')} destination ${d} of ${recordDomain} ${v.accepts === 'null_mx' ? 'publishes a null MX' : 'has neither MX nor address records'}: reports sent there are lost.`,
          [...used.map((u) => u.uri), ...v.replies.map(evidenceLine)],
        ),
      );
    }
  });
  return byDomain;
}
