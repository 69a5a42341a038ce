// mail.tls_rpt: the "_smtp._tls" record (RFC 8460 §3): exactly one "v=TLSRPTv1" record, its
// syntax, and rua URIs with a mailto: or https: scheme. Whether it is missing matters only when
// MTA-STS or DANE is deployed, which needs the other lanes: tls_rpt_missing is derived at assembly.
import { presence } from '../../dns/presence.ts';
import type { CheckContext } from '../kit/product-contract.ts';
import type { CheckOutput } from '../../contract/tasks.ts';
import { outcomeText, queryStatus } from '../kit/dns-replies.ts';
import { evidenceLine, taggedTxt, type DnsAsker } from './dns-snapshot.ts';
import { mailFinding } from './findings.ts';
import { mxSet } from './mx-hosts.ts';
import { LaneOutput, postureObjects } from './output.ts';
import { parseReportUris } from './report-uris.ts';
import type { TlsRptProjection } from './schema.ts';

const VERSION = /^v=TLSRPTv1(?:[ \t]*;|[ \t]*$)/;

/** RFC 8460 §3 syntax errors of one record ([] when it is valid). */
export function tlsRptErrors(record: string): { errors: string[]; rua: string | undefined } {
  const fields = record.split(';').map((f) => f.trim());
  if (fields[fields.length - 1] === '') fields.pop();
  const errors: string[] = [];
  let rua: string | undefined;
  for (const f of fields.slice(1)) {
    const m = /^([A-Za-z0-9][A-Za-z0-9_.-]{0,31})=(.*)$/.exec(f);
    if (!m) {
      errors.push(`malformed field "${f.slice(0, 60)}"`);
      continue;
    }
    if (m[1] === 'rua') {
      if (rua !== undefined) errors.push('duplicate rua');
      rua = m[2]!;
    }
  }
  if (rua === undefined) errors.push('no rua field');
  return { errors, rua };
}

export async function runTlsRptCheck(domain: string, asker: DnsAsker, _ctx: CheckContext): Promise<CheckOutput> {
  const out = new LaneOutput();
  const [reply, mx] = await Promise.all([asker.ask(`_smtp._tls.${domain}`, 'TXT'), mxSet(asker, domain)]);
  const base = { domain, query: queryStatus(reply) };
  if (mx.state === 'null_mx') {
    out.skip('not_applicable', {
      code: 'tls_rpt_not_applicable',
      message: `${domain} publishes a null MX: it receives no mail, so TLS reporting does not apply.`,
    });
    return out.done({ ...base, state: 'not_applicable', record: null, rua: [], errors: [] } satisfies TlsRptProjection);
  }
  if (presence(reply) === 'indeterminate') {
    out.failed([reply], {
      code: 'tls_rpt_unknown',
      message: `The TXT query for _smtp._tls.${domain} got ${outcomeText(reply)}: whether TLS-RPT is deployed is unknown, not missing.`,
    });
    postureObjects(out, domain, 'tls_rpt', null);
    return out.done({ ...base, state: 'unknown', record: null, rua: [], errors: [] } satisfies TlsRptProjection);
  }
  const { records } = taggedTxt(reply, VERSION);
  const state: TlsRptProjection['state'] =
    records.length === 0 ? 'absent' : records.length > 1 ? 'multiple' : 'present';
  const posture = postureObjects(out, domain, 'tls_rpt', { state });
  if (state === 'absent')
    return out.done({ ...base, state, record: null, rua: [], errors: [] } satisfies TlsRptProjection);
  const record = records[0]!;
  const { errors, rua: ruaValue } = tlsRptErrors(record);
  const rua = parseReportUris(ruaValue).map((u) => ({
    uri: u.uri,
    scheme: u.scheme,
    valid: (u.scheme === 'mailto' || u.scheme === 'https') && u.destination !== null,
  }));
  if (ruaValue !== undefined && !rua.some((u) => u.valid)) errors.push('no rua URI with a mailto: or https: scheme');
  if (state === 'multiple') errors.unshift(`${records.length} v=TLSRPTv1 records (senders ignore them all)`);
  if (errors.length > 0) {
    out.finding(
      mailFinding(
        'tls_rpt_record_invalid',
        posture,
        `The TLS-RPT record of ${domain} is unusable: ${errors.join('; ')}.`,
        [evidenceLine(reply), ...records],
      ),
    );
  }
  return out.done({
    ...base,
    state: errors.length > 0 ? 'invalid' : state,
    record,
    rua,
    errors,
  } satisfies TlsRptProjection);
}
