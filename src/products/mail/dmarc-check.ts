// mail.dmarc: the DMARCbis tree walk (every name at once: at most 8 TXT queries), evaluated in the
// parse pool with mailauth (./dmarc-policy.ts), the RFC 7489 organisational domain from the public
// suffix list beside the tree walk's, and the authorization record of every external report
// destination, and whether each mailto: destination receives mail at all (./report-destinations.ts).
// A walk cut by SERVFAIL or a timeout is `unknown`, never "no DMARC".
import { presence } from '../../dns/presence.ts';
import type { CheckContext } from '../kit/product-contract.ts';
import type { CheckOutput } from '../../contract/tasks.ts';
import { outcomeText } from '../kit/dns-replies.ts';
import { nameParts } from '../kit/name-parts.ts';
import { evidenceLine, taggedTxt, type DnsAsker } from './dns-snapshot.ts';
import { treeWalkNames } from './dmarc-policy.ts';
import { mailFinding } from './findings.ts';
import { LaneOutput, postureObjects } from './output.ts';
import { inPool } from './pool.ts';
import { checkDestinations } from './report-destinations.ts';
import { parseReportUris } from './report-uris.ts';
import type { DmarcProjection } from './schema.ts';
import { UNOBSERVED } from '../kit/change-rules.ts';

const orgOf = (name: string) => nameParts(name).registrableDomain ?? name;
const DMARC1 = /^v=DMARC1/i;

export async function runDmarcCheck(domain: string, asker: DnsAsker, ctx: CheckContext): Promise<CheckOutput> {
  const out = new LaneOutput();
  const names = treeWalkNames(domain);
  const replies = await Promise.all(names.map((n) => asker.ask(`_dmarc.${n}`, 'TXT')));
  const ev = await inPool(ctx, 'mailDmarcEvaluate', { domain, snapshot: asker.snapshot });
  const rfc7489 = orgOf(domain);
  const organisationalDomain = {
    dmarcbis: ev.organisationalDomain,
    rfc7489,
    differ: ev.organisationalDomain !== null && ev.organisationalDomain !== rfc7489,
  };
  const base = { domain, walk: ev.walk, organisationalDomain };

  if (ev.state === 'unknown' && ev.record === null) {
    const failed = replies.filter((r) => presence(r) === 'indeterminate');
    out.failed(failed, {
      code: 'dmarc_unknown',
      message: `The DMARC tree walk for ${domain} got ${failed.map((r) => `${outcomeText(r)} for ${r.name}`).join(', ')}: the policy is unknown, not missing.`,
    });
    postureObjects(out, domain, 'dmarc', null);
    return out.done({
      ...base,
      state: 'unknown',
      multiple: ev.multiple,
      record: null,
      valid: false,
      policy: null,
      removedTags: [],
      reporting: [],
    } satisfies DmarcProjection);
  }
  for (const r of replies) if (presence(r) === 'indeterminate') out.indeterminate(r, 'DMARC tree walk');
  if (ev.error && ev.record)
    out.partial({
      code: 'dmarc_org_domain_unknown',
      message: `The tree walk above ${ev.record.domain} was cut by a DNS failure (${ev.error}): the DMARCbis organisational domain is unknown.`,
    });

  // A name of the walk up to the record (the record's own, or every one when none was found) that
  // got no answer may hold the policy that applies: the summary is then no observation (a gap,
  // ./changes.ts), whatever it says.
  const upTo = ev.record ? ev.walk.findIndex((w) => w.name === ev.record!.domain) : ev.walk.length;
  const unobserved = ev.walk.slice(0, upTo < 0 ? ev.walk.length : upTo + 1).some((w) => w.presence === 'indeterminate');
  const posture = postureObjects(out, domain, 'dmarc', {
    state: ev.state,
    policy: ev.policy?.domain ?? null,
    recordDomain: ev.record?.domain ?? null,
    ...(unobserved ? { [UNOBSERVED]: true } : {}),
  });
  for (const name of ev.multiple) {
    const r = replies[names.indexOf(name)]!;
    out.finding(
      mailFinding(
        'dmarc_multiple_records',
        posture,
        `_dmarc.${name} publishes ${taggedTxt(r, DMARC1).records.length} DMARC records; receivers discard them all.`,
        taggedTxt(r, DMARC1).records,
      ),
    );
  }
  if (ev.state === 'absent' && ev.multiple.length === 0) {
    out.finding(
      mailFinding(
        'dmarc_missing',
        { type: 'domain', key: domain },
        `No DMARC record applies to ${domain} (tree walk: ${names.map((n) => `_dmarc.${n}`).join(', ')}).`,
        replies.map(evidenceLine),
      ),
    );
  }

  const reporting: DmarcProjection['reporting'] = [];
  if (ev.record) {
    const rec = ev.record;
    const evidence = [`TXT _dmarc.${rec.domain}: ${rec.raw}`];
    if (!ev.valid)
      out.finding(
        mailFinding(
          'dmarc_record_invalid',
          posture,
          `The DMARC record at _dmarc.${rec.domain} has no valid p=${rec.tags.sp !== undefined || rec.tags.np !== undefined ? ' (or an invalid sp/np)' : ''}.`,
          evidence,
        ),
      );
    const pol = ev.policy;
    if (pol?.domain === 'none')
      out.finding(
        mailFinding(
          'dmarc_policy_none',
          posture,
          `The DMARC policy for ${domain} is none${rec.inherited ? ` (inherited from ${rec.domain})` : ''}.`,
          evidence,
        ),
      );
    else if (pol && (pol.subdomains === 'none' || pol.nonExistentSubdomains === 'none')) {
      out.finding(
        mailFinding(
          'dmarc_subdomain_policy_none',
          posture,
          `DMARC for ${domain} enforces ${pol.domain}, but subdomains get ${pol.subdomains} and non-existent subdomains ${pol.nonExistentSubdomains}.`,
          evidence,
        ),
      );
    }
    if (pol?.testing)
      out.finding(
        mailFinding('dmarc_testing', posture, `The DMARC record at _dmarc.${rec.domain} sets t=y.`, evidence),
      );
    if (ev.removedTags.length > 0)
      out.finding(
        mailFinding(
          'dmarc_removed_tags',
          posture,
          `The DMARC record at _dmarc.${rec.domain} uses ${ev.removedTags.join(', ')}, removed by DMARCbis.`,
          evidence,
        ),
      );

    const ownerOrg = orgOf(rec.domain);
    const uris = [
      ...parseReportUris(String(rec.tags.rua ?? '')).map((u) => ({ ...u, tag: 'rua' as const })),
      ...parseReportUris(String(rec.tags.ruf ?? '')).map((u) => ({ ...u, tag: 'ruf' as const })),
    ].slice(0, 10);
    // Whether each mailto: destination receives mail, asked alongside the authorizations.
    const mailOf = checkDestinations(asker, out, posture, rec.domain, uris);
    mailOf.catch(() => {}); // awaited below; an abort must not surface as an unhandled rejection first
    const checks = await Promise.all(
      uris.map(async (u) => {
        if (!u.destination || orgOf(u.destination) === ownerOrg)
          return { ...u, external: false, authorization: 'not_needed' as const };
        const r = await asker.ask(`${rec.domain}._report._dmarc.${u.destination}`, 'TXT');
        const auth = taggedTxt(r, DMARC1);
        if (auth.presence === 'indeterminate') out.indeterminate(r, `report authorization for ${u.destination}`);
        else if (auth.presence === 'absent') {
          out.finding(
            mailFinding(
              'dmarc_rua_unauthorized',
              posture,
              `${u.tag} destination ${u.destination} has not authorized reports for ${rec.domain}.`,
              [u.uri, evidenceLine(r)],
            ),
          );
        }
        return {
          ...u,
          external: true,
          authorization:
            auth.presence === 'present'
              ? ('authorized' as const)
              : auth.presence === 'absent'
                ? ('not_authorized' as const)
                : ('unknown' as const),
        };
      }),
    );
    const mail = await mailOf;
    reporting.push(
      ...checks.map((c) => ({ ...c, accepts: (c.destination && mail.get(c.destination)) || 'not_checked' })),
    );
  }
  return out.done({
    ...base,
    state: ev.state,
    multiple: ev.multiple,
    record: ev.record,
    valid: ev.valid,
    policy: ev.policy,
    removedTags: ev.removedTags,
    reporting,
  } satisfies DmarcProjection);
}
