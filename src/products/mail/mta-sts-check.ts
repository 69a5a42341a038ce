// mail.mta_sts: the "_mta-sts" TXT record (exactly one, with a valid id) and the policy, fetched
// over HTTPS through the outbound guard as RFC 8461 §3.3 demands (no redirects, 200, text/plain,
// a certificate valid for mta-sts.<domain>, a body cap and a deadline), then parsed in the pool:
// mode, max_age and whether the mx patterns cover every MX host. Enforce-mode certificate checks
// need the smtp_starttls lane and are derived at assembly (./derive.ts).
import { presence } from '../../dns/presence.ts';
import type { CheckContext } from '../kit/product-contract.ts';
import type { CheckOutput } from '../../contract/tasks.ts';
import { outcomeText, queryStatus } from '../kit/dns-replies.ts';
import { evidenceLine, type DnsAsker } from './dns-snapshot.ts';
import { mailFinding } from './findings.ts';
import { deliveryHosts } from './mx-hosts.ts';
import { judgeOutbound } from './outbound-failure.ts';
import { UNOBSERVED } from '../kit/change-rules.ts';
import { LaneOutput, postureObjects } from './output.ts';
import { inPool } from './pool.ts';
import type { MtaStsProjection } from './schema.ts';

/** RFC 8461 §3.3 suggests 64 KiB as the largest policy a sender accepts. */
export const MTA_STS_MAX_BYTES = 64 * 1024;
export const MIN_MAX_AGE = 86_400;

export async function runMtaStsCheck(
  domain: string,
  asker: DnsAsker,
  ctx: CheckContext,
  opts: { fetchTimeoutMs: number },
): Promise<CheckOutput> {
  const out = new LaneOutput();
  const [txtReply, delivery] = await Promise.all([
    asker.ask(`_mta-sts.${domain}`, 'TXT'),
    deliveryHosts(asker, domain),
  ]);
  const base = { domain, query: queryStatus(txtReply) };
  if (delivery.kind === 'no_mail') {
    out.skip('not_applicable', {
      code: 'mta_sts_not_applicable',
      message: `${domain} receives no mail (${delivery.reason === 'null_mx' ? 'null MX' : 'no MX and no address'}): MTA-STS does not apply.`,
    });
    return out.done({ ...base, txt: null, policy: null, coverage: [] } satisfies MtaStsProjection);
  }
  if (presence(txtReply) === 'indeterminate') {
    out.failed([txtReply], {
      code: 'mta_sts_unknown',
      message: `The TXT query for _mta-sts.${domain} got ${outcomeText(txtReply)}: whether MTA-STS is deployed is unknown, not missing.`,
    });
    postureObjects(out, domain, 'mta_sts', null);
    return out.done({ ...base, txt: null, policy: null, coverage: [] } satisfies MtaStsProjection);
  }
  const txt = await inPool(ctx, 'mailMtaStsTxt', { domain, snapshot: asker.snapshot });
  if (delivery.kind === 'unknown') out.indeterminate(delivery.query, 'MX hosts for policy coverage');
  const posture = postureObjects(out, domain, 'mta_sts', { txt: txt.state, id: txt.id });
  if (txt.state === 'absent') {
    out.finding(
      mailFinding('mta_sts_missing', { type: 'domain', key: domain }, `${domain} publishes no MTA-STS record.`, [
        evidenceLine(txtReply),
      ]),
    );
    return out.done({ ...base, txt, policy: null, coverage: [] } satisfies MtaStsProjection);
  }
  if (txt.state !== 'present') {
    out.finding(
      mailFinding(
        'mta_sts_record_invalid',
        posture,
        txt.state === 'multiple'
          ? `_mta-sts.${domain} publishes several v=STSv1 records.`
          : `The MTA-STS record of ${domain} has no valid id.`,
        [evidenceLine(txtReply)],
      ),
    );
    return out.done({ ...base, txt, policy: null, coverage: [] } satisfies MtaStsProjection);
  }

  const url = `https://mta-sts.${domain}/.well-known/mta-sts.txt`;
  const guard = ctx.runtime.services.outbound;
  const fetched: NonNullable<MtaStsProjection['policy']> = {
    url,
    fetched: false,
    status: null,
    contentType: null,
    failure: null,
    mode: null,
    maxAge: null,
    mx: [],
    lax: false,
  };
  const hosts = delivery.kind === 'hosts' ? delivery.hosts : [];
  if (!guard) {
    out.partial({
      code: 'mta_sts_policy_not_fetched',
      message: 'No outbound guard is configured: the policy was not fetched.',
    });
    return out.done({ ...base, txt, policy: fetched, coverage: [] } satisfies MtaStsProjection);
  }
  let body: string;
  try {
    const res = await guard.fetchReferenced(url, {
      maxRedirects: 0,
      timeoutMs: opts.fetchTimeoutMs,
      maxBytes: MTA_STS_MAX_BYTES,
      signal: ctx.signal,
    });
    fetched.status = res.status;
    fetched.contentType = String(res.headers['content-type'] ?? '') || null;
    body = res.body.toString('utf8');
  } catch (err) {
    const v = judgeOutbound(err);
    fetched.failure = v.code;
    if (v.kind === 'fact') {
      out.finding(
        mailFinding('mta_sts_policy_invalid', posture, `The MTA-STS policy of ${domain} cannot be used: ${v.detail}.`, [
          url,
        ]),
      );
    } else {
      // The policy's mode and max_age were not observed (./changes.ts: gaps, not "no policy").
      out.object({
        type: 'mail_posture',
        key: domain,
        projection: { mta_sts: { txt: txt.state, id: txt.id, [UNOBSERVED]: ['mode', 'maxAge'] } },
      });
      out.partial({
        code: 'mta_sts_policy_unreachable',
        message: `The MTA-STS policy at ${url} could not be fetched (${v.code}); its content is unknown.`,
      });
    }
    return out.done({ ...base, txt, policy: fetched, coverage: [] } satisfies MtaStsProjection);
  }
  const mediaType = (fetched.contentType ?? '').split(';')[0]!.trim().toLowerCase();
  const problems: string[] = [];
  if (fetched.status !== 200) problems.push(`HTTP status ${fetched.status}`);
  else if (mediaType !== 'text/plain') problems.push(`Content-Type "${fetched.contentType ?? ''}" is not text/plain`);
  const parsed = problems.length === 0 ? await inPool(ctx, 'mailMtaStsPolicy', { body, hosts }) : null;
  if (parsed && !parsed.policy) problems.push(`the policy does not parse (${parsed.error})`);
  if (problems.length > 0 || !parsed?.policy) {
    fetched.failure = 'invalid_policy';
    out.finding(
      mailFinding(
        'mta_sts_policy_invalid',
        posture,
        `The MTA-STS policy of ${domain} cannot be used: ${problems.join('; ')}.`,
        [url],
      ),
    );
    return out.done({ ...base, txt, policy: fetched, coverage: [] } satisfies MtaStsProjection);
  }
  const policy = parsed.policy;
  Object.assign(fetched, {
    fetched: true,
    mode: policy.mode,
    maxAge: policy.maxAge,
    mx: policy.mx ?? [],
    lax: parsed.lax,
  });
  out.object({
    type: 'mail_posture',
    key: domain,
    projection: { mta_sts: { txt: txt.state, id: txt.id, mode: policy.mode, maxAge: policy.maxAge } },
  });
  const evidence = [
    url,
    `mode: ${policy.mode}`,
    `max_age: ${policy.maxAge}`,
    ...(policy.mx ?? []).map((m) => `mx: ${m}`),
  ];
  if (policy.mode === 'testing')
    out.finding(
      mailFinding('mta_sts_testing', posture, `The MTA-STS policy of ${domain} is in testing mode.`, evidence),
    );
  if (policy.mode !== 'none' && policy.maxAge < MIN_MAX_AGE) {
    out.finding(
      mailFinding(
        'mta_sts_max_age_short',
        posture,
        `The MTA-STS policy of ${domain} has max_age ${policy.maxAge} s (under one day).`,
        evidence,
      ),
    );
  }
  if (policy.mode !== 'none') {
    for (const c of parsed.coverage.filter((x) => !x.covered)) {
      out.finding(
        mailFinding(
          'mta_sts_mx_not_covered',
          { type: 'mx_host', key: c.host },
          `The MX host ${c.host} matches none of the mx patterns of the ${policy.mode} MTA-STS policy of ${domain}.`,
          evidence,
        ),
      );
    }
  }
  return out.done({ ...base, txt, policy: fetched, coverage: parsed.coverage } satisfies MtaStsProjection);
}
