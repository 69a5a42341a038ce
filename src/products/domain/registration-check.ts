// domain.registration: RDAP data of the registrable domain. Expiry findings come from the RDAP
// expiration event only. A 404 from the RDAP server is the one "not registered"; an unconfigured,
// refused or failing server makes the lane unavailable (or timeout) with a limitation.
import { lookupDomain, type RdapLookup, type RdapUnavailableReason } from '../../rdap/client.ts';
import type { CheckContext } from '../kit/product-contract.ts';
import type { CheckOutput, FindingOut, ObjectRef } from '../../contract/tasks.ts';
import type { SourceRef } from '../../contract/lanes.ts';
import { notRun } from '../kit/dns-replies.ts';
import { finding } from './findings.ts';
import { nameParts } from '../kit/name-parts.ts';
import type { RegistrationProjection } from './schema.ts';

const DAY = 24 * 60 * 60 * 1000;
export const EXPIRING_SOON_DAYS = 30;

export interface RegistrationCheckOptions {
  /** Budget of the RDAP query (redirects included). */
  rdapTimeoutMs: number;
  now?: () => Date;
}

const UNAVAILABLE_TEXT: Record<RdapUnavailableReason, string> = {
  rdap_not_configured: 'No RDAP service is configured (RDAP_BASE_URL, RDAP_BOOTSTRAP_URL or the bootstrap snapshot).',
  rdap_no_service_for_tld: 'The RDAP bootstrap lists no server for this top-level domain.',
  rdap_unreachable: 'The RDAP server could not be reached or answered with an error.',
  rdap_invalid_response: 'The RDAP server answered with something that is not a domain object for this name.',
  target_not_allowed: 'The RDAP server resolves to an address outbound checks may not reach (private or reserved).',
};

function sourcesOf(r: Extract<RdapLookup, { status: 'completed' }>): SourceRef[] {
  const out: SourceRef[] = [{ source: 'rdap' }];
  if (r.service.via !== 'base_url')
    out.push({
      source: 'iana_rdap_bootstrap',
      ...(r.service.bootstrapPublication ? { version: r.service.bootstrapPublication } : {}),
    });
  return out;
}

export async function runRegistrationCheck(
  target: string,
  ctx: CheckContext,
  opts: RegistrationCheckOptions,
): Promise<CheckOutput> {
  const parts = nameParts(target);
  const domain = parts.registrableDomain;
  if (!domain) {
    // A public suffix is not registered by anyone: nothing to ask.
    return notRun('skipped', 'not_applicable', [], []);
  }
  const guard = ctx.runtime.services.outbound;
  if (!guard) {
    return notRun(
      'unavailable',
      'rdap_not_configured',
      [
        {
          code: 'registration_unavailable',
          message: 'No outbound guard is configured in this process; RDAP was not asked.',
        },
      ],
      [],
    );
  }
  const r = await lookupDomain(domain, {
    config: ctx.runtime.config,
    guard,
    signal: ctx.signal,
    timeoutMs: opts.rdapTimeoutMs,
  });
  if (r.status === 'timeout') {
    return notRun(
      'timeout',
      'rdap_timeout',
      [
        {
          code: 'registration_timeout',
          message: `The RDAP server did not answer for ${domain} in time; registration data is unknown.`,
        },
      ],
      [{ source: 'rdap' }],
    );
  }
  if (r.status === 'unavailable') {
    return notRun(
      'unavailable',
      r.reason,
      [{ code: 'registration_unavailable', message: UNAVAILABLE_TEXT[r.reason] }],
      [],
    );
  }

  const ref: ObjectRef = { type: 'registration', key: domain };
  const now = (opts.now ?? (() => new Date()))();
  let projection: RegistrationProjection;
  const findings: FindingOut[] = [];
  if (r.notFound) {
    projection = {
      domain,
      registered: false,
      handle: null,
      registrar: null,
      events: { registration: null, expiration: null, lastChanged: null },
      daysUntilExpiration: null,
      status: [],
      nameservers: [],
      secureDNS: { delegationSigned: null },
      source: 'rdap',
    };
  } else {
    const d = r.data;
    const expires = d.events.expiration ? Date.parse(d.events.expiration) : null;
    const days = expires === null ? null : Math.floor((expires - now.getTime()) / DAY);
    projection = {
      domain,
      registered: true,
      handle: d.handle,
      registrar: d.registrar,
      events: d.events,
      daysUntilExpiration: days,
      status: d.status,
      nameservers: d.nameservers,
      secureDNS: d.secureDNS,
      source: 'rdap',
    };
    const evidence = [`RDAP expiration event: ${d.events.expiration}`];
    if (expires !== null && expires <= now.getTime()) {
      findings.push(
        finding(
          'domain_expired',
          ref,
          `The registration of ${domain} expired on ${d.events.expiration!.slice(0, 10)}.`,
          evidence,
        ),
      );
    } else if (expires !== null && expires - now.getTime() < EXPIRING_SOON_DAYS * DAY) {
      findings.push(
        finding(
          'domain_expiring_soon',
          ref,
          `The registration of ${domain} expires on ${d.events.expiration!.slice(0, 10)} (in ${days} days).`,
          evidence,
        ),
      );
    }
  }
  return {
    status: 'completed',
    projection,
    objects: [{ type: 'registration', key: domain, distance: 0, projection }],
    relations: [],
    findings,
    limitations: [],
    sources: sourcesOf(r),
  };
}
