// mail.smtp_starttls: an SMTP session (./smtp-session.ts) with each MX host × each of its
// addresses, bounded (5 hosts × 2 addresses), all at once. Addresses come from the outbound
// guard (every address of a host vetted, or the host refused). The presented chain is parsed in
// the pool (key, validity, SANs, DANE digests). Facts per session: banner, EHLO, STARTTLS,
// protocol, cipher, trust, host name match, expiry. A host none of whose sessions got as far as
// EHLO is unknown (limitation), never "no STARTTLS".
import { isIPv6 } from 'node:net';
import type { OutboundGuard } from '../../net/outbound-guard.ts';
import { OutboundFetchError, OutboundRefusedError } from '../../net/outbound-errors.ts';
import type { CheckContext } from '../kit/product-contract.ts';
import type { CheckOutput } from '../../contract/tasks.ts';
import { outcomeText } from '../kit/dns-replies.ts';
import type { DnsAsker } from './dns-snapshot.ts';
import { mailFinding } from './findings.ts';
import { deliveryHosts, pickAddresses } from './mx-hosts.ts';
import { implicitTlsEvidence, implicitTlsFor } from './implicit-tls.ts';
import { LaneOutput, postureObjects } from './output.ts';
import { UNOBSERVED } from '../kit/change-rules.ts';
import { inPool } from './pool.ts';
import type { CertificateChainFacts } from '../../net/certificate-chain.ts';
import {
  GAP_STATES,
  TIMEOUT_STATES,
  smtpSession,
  type SessionResult,
  type SmtpLimits,
} from '../../smtp/smtp-session.ts';
import type { SmtpProjection } from './schema.ts';

export const MAX_STARTTLS_HOSTS = 5;
export const MAX_ADDRESSES_PER_HOST = 2;
const OUTDATED = new Set(['TLSv1', 'TLSv1.1', 'SSLv3']);

export interface SmtpCheckOptions {
  limits: SmtpLimits;
  ehloName?: string;
  now?: () => Date;
}

type HostRow = SmtpProjection['hosts'][number];

async function sessionsFor(
  guard: OutboundGuard,
  host: string,
  ctx: CheckContext,
  opts: SmtpCheckOptions,
  ehloName: string,
): Promise<HostRow> {
  let addresses: string[];
  try {
    addresses = await guard.resolve(host, ctx.signal);
  } catch (err) {
    const resolution =
      err instanceof OutboundRefusedError
        ? 'not_allowed'
        : err instanceof OutboundFetchError && err.kind === 'host_not_found'
          ? 'no_address'
          : 'unknown';
    return { host, resolution, addresses: [], sessions: [] };
  }
  const picked = pickAddresses(addresses);
  const sessions = await Promise.all(
    picked.map((address) =>
      smtpSession(guard, { host, address }, { ehloName, limits: opts.limits, signal: ctx.signal }),
    ),
  );
  // A host without STARTTLS: is TLS offered on 465 instead? A fact; the verdict stays (./implicit-tls.ts).
  const implicit = await implicitTlsFor(guard, host, sessions, opts.limits, ctx.signal);
  const withCerts = await Promise.all(
    sessions.map(async (s) => {
      if (!s.tls || s.tls.chain.length === 0) return { ...s, certificate: null };
      const facts = await inPool(ctx, 'mailCertificateChain', {
        chain: s.tls.chain,
        now: (opts.now?.() ?? new Date()).toISOString(),
      }).catch((err: unknown) => ({ error: err instanceof Error ? err.message.slice(0, 120) : 'unparseable' }));
      return { ...s, certificate: facts as CertificateChainFacts | { error: string } };
    }),
  );
  return {
    host,
    resolution: 'resolved',
    addresses,
    sessions: withCerts.map((s, i) => ({ ...projectSession(s), implicitTls: implicit[i]! })),
  };
}

function projectSession(
  s: SessionResult & { certificate: CertificateChainFacts | { error: string } | null },
): Omit<HostRow['sessions'][number], 'implicitTls'> {
  const cert = s.certificate && !('error' in s.certificate) ? s.certificate : null;
  return {
    address: s.address,
    state: s.state,
    banner: s.banner,
    ehloExtensions: s.ehloExtensions,
    starttlsAdvertised: s.starttlsAdvertised,
    phases: s.phases,
    detail: s.detail,
    pipeliningBeforeTls: s.pipeliningBeforeTls,
    tls: s.tls
      ? {
          protocol: s.tls.protocol,
          cipher: s.tls.cipher?.standardName ?? s.tls.cipher?.name ?? null,
          chainTrusted: s.tls.chainTrusted,
          trustError: s.tls.trustError,
          hostnameMatch: s.tls.hostnameMatch,
          certificate: cert?.leaf ?? null,
          chainDigests: cert?.digests ?? [],
          certificateError: s.certificate && 'error' in s.certificate ? s.certificate.error : null,
        }
      : null,
  };
}

export async function runSmtpStarttlsCheck(
  domain: string,
  asker: DnsAsker,
  ctx: CheckContext,
  opts: SmtpCheckOptions,
): Promise<CheckOutput> {
  const out = new LaneOutput();
  const delivery = await deliveryHosts(asker, domain);
  const base = { domain, limits: { hosts: MAX_STARTTLS_HOSTS, addressesPerHost: MAX_ADDRESSES_PER_HOST } };
  if (delivery.kind === 'no_mail') {
    out.skip('not_applicable', {
      code: 'smtp_starttls_not_applicable',
      message: `${domain} receives no mail (${delivery.reason === 'null_mx' ? 'null MX' : 'no MX and no address'}): there is no SMTP server to test.`,
    });
    return out.done({ ...base, implicitMx: false, hosts: [] } satisfies SmtpProjection);
  }
  if (delivery.kind === 'unknown') {
    out.failed([delivery.query], {
      code: 'smtp_starttls_unknown',
      message: `The mail hosts of ${domain} are unknown (${outcomeText(delivery.query)}): no SMTP session was attempted.`,
    });
    return out.done({ ...base, implicitMx: false, hosts: [] } satisfies SmtpProjection);
  }
  const guard = ctx.runtime.services.outbound;
  if (!guard) {
    out.status = 'unavailable';
    out.reason = 'outbound_not_configured';
    out.limit({
      code: 'smtp_starttls_unavailable',
      message: 'No outbound guard is configured: no SMTP session was attempted.',
    });
    return out.done({ ...base, implicitMx: delivery.implicit, hosts: [] } satisfies SmtpProjection);
  }
  out.source({ source: 'smtp_session' });
  const hosts = delivery.hosts.slice(0, MAX_STARTTLS_HOSTS);
  if (delivery.hosts.length > MAX_STARTTLS_HOSTS)
    out.limit({
      code: 'smtp_hosts_truncated',
      message: `${delivery.hosts.length} MX hosts; the first ${MAX_STARTTLS_HOSTS} by preference were tested.`,
    });
  // SMTP_HELO_NAME (neutral by default), never this machine's host name: it would tell every
  // tested server which host or container runs the check.
  const ehloName = opts.ehloName ?? ctx.runtime.config.SMTP_HELO_NAME;
  const rows = await Promise.all(hosts.map((h) => sessionsFor(guard, h, ctx, opts, ehloName)));

  postureObjects(out, domain, 'smtp_starttls', {
    // A host whose addresses are unknown (DNS failure) or refused by the guard was not tested:
    // its empty list of states is no observation (./changes.ts).
    hosts: rows.map((r) => ({
      host: r.host,
      states: r.sessions.map((s) => s.state),
      ...(r.resolution === 'unknown' || r.resolution === 'not_allowed' ? { [UNOBSERVED]: true } : {}),
    })),
  });
  const now = opts.now?.() ?? new Date();
  let known = 0;
  const gaps: Array<SessionResult['state'] | 'unresolved'> = [];
  for (const row of rows) {
    const ref = out.object({
      type: 'mx_host',
      key: row.host,
      distance: 1,
      projection: {
        name: row.host,
        starttls: row.sessions.map((s) => ({ address: s.address, state: s.state, protocol: s.tls?.protocol ?? null })),
      },
    });
    if (row.resolution !== 'resolved') {
      out.partial({
        code: row.resolution === 'not_allowed' ? 'smtp_target_not_allowed' : 'smtp_host_unresolved',
        message: `No SMTP session with ${row.host}: ${row.resolution === 'not_allowed' ? 'its addresses are refused by the outbound address policy' : row.resolution === 'no_address' ? 'it has no address' : 'its addresses are unknown (DNS failure)'}.`,
      });
      gaps.push(row.resolution === 'not_allowed' ? 'not_allowed' : 'unresolved');
      continue;
    }
    for (const s of row.sessions) {
      out.relate(
        ref,
        'resolves_to',
        out.object({
          type: 'ip_address',
          key: s.address,
          distance: 2,
          projection: { address: s.address, version: isIPv6(s.address) ? 6 : 4 },
        }),
      );
      if (GAP_STATES.has(s.state)) {
        gaps.push(s.state);
        out.partial({
          code: `smtp_${s.state}`,
          message: `SMTP with ${row.host} (${s.address}) ended ${s.state.replace(/_/g, ' ')}${s.detail ? `: ${s.detail}` : ''}; its STARTTLS posture is unknown.`,
        });
        continue;
      }
      known++;
      const ev = [`${row.host} ${s.address}: ${s.state}`, ...(s.banner ? [`banner: ${s.banner}`] : [])];
      if (s.state === 'no_starttls') {
        out.finding(
          mailFinding(
            'smtp_starttls_missing',
            ref,
            `${row.host} (${s.address}) answered EHLO without offering STARTTLS.`,
            [...ev, `EHLO: ${s.ehloExtensions.join(', ')}`, ...implicitTlsEvidence(s.implicitTls)],
          ),
        );
        if (s.implicitTls?.state === 'tls')
          out.finding(
            mailFinding(
              'smtp_implicit_tls_only',
              ref,
              `${row.host} (${s.address}) offers TLS on port 465 but no STARTTLS on port 25: relaying MTAs use port 25 only.`,
              implicitTlsEvidence(s.implicitTls),
            ),
          );
      }
      const early = s.pipeliningBeforeTls;
      if (early?.detected)
        out.finding(
          mailFinding(
            'smtp_pipelining_before_tls',
            ref,
            `${row.host} (${s.address}) sent ${early.bytes} bytes of plain text after its 220 to STARTTLS, before TLS.`,
            [...ev, `after 220 to STARTTLS: ${early.bytes} bytes, "${early.sample ?? ''}"`],
          ),
        );
      if (s.state === 'starttls_refused' || s.state === 'tls_failed')
        out.finding(
          mailFinding(
            'smtp_starttls_failed',
            ref,
            `${row.host} (${s.address}) offers STARTTLS but the upgrade failed (${s.detail ?? s.state}).`,
            ev,
          ),
        );
      const t = s.tls;
      if (!t) continue;
      const certRef = t.certificate
        ? out.object({
            type: 'certificate',
            key: t.certificate.fingerprint256,
            distance: 2,
            projection: { ...t.certificate },
          })
        : null;
      if (certRef) out.relate(certRef, 'san_of', ref);
      const tlsEv = [
        ...ev,
        `protocol ${t.protocol}, cipher ${t.cipher}`,
        ...(t.certificate
          ? [
              `certificate ${t.certificate.subject.replace(/\n/g, ', ')}, valid ${t.certificate.validFrom} → ${t.certificate.validTo}`,
            ]
          : []),
      ];
      const expired = t.certificate
        ? new Date(t.certificate.validTo) < now || new Date(t.certificate.validFrom) > now
        : t.trustError === 'CERT_HAS_EXPIRED';
      if (expired)
        out.finding(
          mailFinding(
            'smtp_tls_certificate_expired',
            ref,
            `The certificate ${row.host} (${s.address}) presented is outside its validity period.`,
            tlsEv,
          ),
        );
      if (!t.chainTrusted && !(expired && t.trustError === 'CERT_HAS_EXPIRED')) {
        out.finding(
          mailFinding(
            'smtp_tls_certificate_untrusted',
            ref,
            `The certificate ${row.host} (${s.address}) presented is not trusted (${t.trustError ?? 'unknown issuer'}).`,
            tlsEv,
          ),
        );
      }
      if (t.hostnameMatch === false)
        out.finding(
          mailFinding(
            'smtp_tls_certificate_name_mismatch',
            ref,
            `The certificate ${row.host} (${s.address}) presented is not valid for ${row.host}${t.certificate ? ` (names: ${t.certificate.sans.slice(0, 5).join(', ') || t.certificate.subject})` : ''}.`,
            tlsEv,
          ),
        );
      if (t.protocol && OUTDATED.has(t.protocol))
        out.finding(
          mailFinding('smtp_tls_protocol_outdated', ref, `${row.host} (${s.address}) negotiated ${t.protocol}.`, tlsEv),
        );
    }
  }
  if (known === 0 && gaps.length > 0) {
    const allTimeouts = gaps.every((g) => g !== 'unresolved' && TIMEOUT_STATES.has(g));
    const allViolations = gaps.every((g) => g === 'protocol_violation');
    out.status = allTimeouts ? 'timeout' : allViolations ? 'failed' : 'unavailable';
    out.reason = allTimeouts
      ? 'smtp_timeout'
      : allViolations
        ? 'smtp_protocol_violation'
        : gaps.every((g) => g === 'not_allowed')
          ? 'target_not_allowed'
          : gaps.every((g) => g === 'unresolved')
            ? 'dns_failure'
            : 'smtp_unreachable';
  }
  return out.done({ ...base, implicitMx: delivery.implicit, hosts: rows } satisfies SmtpProjection);
}
