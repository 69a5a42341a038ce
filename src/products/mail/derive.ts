// What lookup.mail.v1 knows only from two lanes at once, worked out at assembly (pure) from the
// finished lanes' projections:
//   dane × smtp_starttls     the usable TLSA records of each MX against the chain it presented
//   mta_sts × smtp_starttls  in enforce mode, each MX's certificate must be trusted and valid for it
//   bimi × dmarc             BIMI's prerequisite: an enforcing DMARC policy
//   tls_rpt × (mta_sts, dane) reporting is expected once MTA-STS is published or DANE is in effect
//                            (TLSA records DNSSEC-validated, never unsigned ones)
// A derivation whose input lane gave no answer derives nothing (and says so in a limitation).
import type { DerivedOutput, FindingOut } from '../../contract/tasks.ts';
import type { Limitation } from '../../contract/lanes.ts';
import type { ChainDigests } from '../../net/certificate-chain.ts';
import { mailFinding } from './findings.ts';
import type {
  BimiProjection,
  DaneProjection,
  DmarcProjection,
  MtaStsProjection,
  SmtpProjection,
  TlsRptProjection,
} from './schema.ts';

export interface DeriveInput {
  domain: string;
  dane: DaneProjection | null;
  smtp: SmtpProjection | null;
  mtaSts: MtaStsProjection | null;
  bimi: BimiProjection | null;
  dmarc: DmarcProjection | null;
  dmarcAnswered: boolean;
  tlsRpt: TlsRptProjection | null;
}

export interface Derivation {
  derived: DerivedOutput[];
  limitations: Limitation[];
  /** Lanes whose reported status drops to partial (e.g. dane with nothing to match). */
  partialLanes: string[];
}

type Tlsa = DaneProjection['hosts'][number]['records'][number];

/** RFC 6698 §2.1 / RFC 7672 §3.1: usage 3 matches the leaf, usage 2 any certificate above it. */
export function tlsaMatches(r: Tlsa, chain: ChainDigests[]): boolean {
  const candidates = r.usage === 3 ? chain.slice(0, 1) : r.usage === 2 ? chain.slice(1) : [];
  const want = r.data.toLowerCase();
  return candidates.some((c) => {
    const spki = r.selector === 1;
    if (r.matchingType === 1) return (spki ? c.spkiSha256 : c.certSha256) === want;
    if (r.matchingType === 2) return (spki ? c.spkiSha512 : c.certSha512) === want;
    if (r.matchingType === 0) return (spki ? c.spkiHex : c.certHex) === want;
    return false;
  });
}

function hostRow(smtp: SmtpProjection | null, host: string) {
  return smtp?.hosts.find((h) => h.host === host) ?? null;
}

function chainsOf(smtp: SmtpProjection | null, host: string): Array<{ address: string; chain: ChainDigests[] }> {
  return (hostRow(smtp, host)?.sessions ?? [])
    .filter((s) => s.tls && s.tls.chainDigests.length > 0)
    .map((s) => ({ address: s.address, chain: s.tls!.chainDigests }));
}

function deriveDane(i: DeriveInput, out: Derivation): void {
  if (!i.dane) return;
  const findings: FindingOut[] = [];
  let unmatched = 0;
  for (const h of i.dane.hosts) {
    const usable = h.records.filter((r) => r.usable);
    // Unsigned records are ignored by senders (dane_tlsa_unsigned, raised by the dane lane): they
    // are still matched for the projection, but a mismatch or a missing certificate changes nothing.
    const inEffect = h.dnssec !== 'insecure';
    if (h.records.length === 0) {
      h.match = 'no_records';
      continue;
    }
    if (usable.length === 0) {
      h.match = 'no_usable_records';
      continue;
    }
    const chains = chainsOf(i.smtp, h.host);
    if (chains.length === 0) {
      h.match = 'no_certificate';
      if (inEffect) unmatched++;
      continue;
    }
    const failing = chains.filter((c) => !usable.some((r) => tlsaMatches(r, c.chain)));
    h.match = failing.length === 0 ? 'matched' : 'not_matched';
    if (failing.length > 0 && inEffect) {
      findings.push(
        mailFinding(
          'dane_tlsa_mismatch',
          { type: 'mx_host', key: h.host },
          `The certificate ${h.host} presented (${failing.map((f) => f.address).join(', ')}) matches none of its ${usable.length} usable TLSA record(s)${h.dnssec === 'unknown' ? ', if these records are DNSSEC-validated (their DNSSEC state is unknown)' : ''}.`,
          [
            ...usable.map(
              (r) => `TLSA _25._tcp.${h.host}: ${r.usage} ${r.selector} ${r.matchingType} ${r.data.slice(0, 64)}`,
            ),
            ...failing.map((f) => `${f.address}: leaf SPKI SHA-256 ${f.chain[0]!.spkiSha256}`),
          ],
        ),
      );
    }
  }
  if (unmatched > 0) {
    out.partialLanes.push('dane');
    out.limitations.push({
      code: 'dane_not_matched',
      message: `${unmatched} MX host(s) publish usable TLSA records but the smtp_starttls lane obtained no certificate from them: the records were not matched.`,
    });
  }
  if (findings.length > 0)
    out.derived.push({ lane: 'dane', objects: [], relations: [], findings, sources: [{ source: 'smtp_session' }] });
}

function deriveMtaStsEnforce(i: DeriveInput, out: Derivation): void {
  if (i.mtaSts?.policy?.mode !== 'enforce') return;
  if (!i.smtp) {
    out.limitations.push({
      code: 'mta_sts_certificates_unchecked',
      message:
        'The MTA-STS policy enforces TLS, but the smtp_starttls lane gave no answer: the MX certificates were not checked against it.',
    });
    return;
  }
  const findings: FindingOut[] = [];
  for (const row of i.smtp.hosts) {
    const bad = row.sessions.filter(
      (s) =>
        s.tls &&
        (!s.tls.chainTrusted ||
          s.tls.hostnameMatch === false ||
          s.tls.certificate?.expired ||
          s.tls.certificate?.notYetValid),
    );
    if (bad.length === 0) continue;
    findings.push(
      mailFinding(
        'mta_sts_enforce_certificate_invalid',
        { type: 'mx_host', key: row.host },
        `The MTA-STS policy of ${i.domain} is in enforce mode and ${row.host} presented a certificate that policy-honouring senders reject.`,
        bad.map(
          (s) =>
            `${s.address}: trusted ${s.tls!.chainTrusted}${s.tls!.trustError ? ` (${s.tls!.trustError})` : ''}, valid for ${row.host} ${s.tls!.hostnameMatch}`,
        ),
      ),
    );
  }
  if (findings.length > 0)
    out.derived.push({ lane: 'mta_sts', objects: [], relations: [], findings, sources: [{ source: 'smtp_session' }] });
}

function deriveBimi(i: DeriveInput, out: Derivation): void {
  if (i.bimi?.state !== 'present') return;
  if (!i.dmarcAnswered || !i.dmarc || i.dmarc.state === 'unknown') {
    i.bimi.dmarcPrerequisite = { met: null, reason: 'the dmarc lane gave no answer' };
    out.limitations.push({
      code: 'bimi_prerequisite_unknown',
      message: 'BIMI is published, but the DMARC policy is unknown: its prerequisite was not checked.',
    });
    return;
  }
  const d = i.dmarc;
  const tags = d.record?.tags ?? {};
  let reason: string | null = null;
  if (!d.record || !d.policy) reason = 'no DMARC policy applies';
  else if (d.policy.domain !== 'quarantine' && d.policy.domain !== 'reject') reason = `p=${d.policy.domain}`;
  else if (d.policy.subdomains === 'none') reason = 'sp=none';
  else if (d.policy.testing) reason = 't=y';
  else if (tags.pct !== undefined && Number(tags.pct) !== 100) reason = `pct=${tags.pct}`;
  i.bimi.dmarcPrerequisite = { met: reason === null, reason };
  if (reason) {
    out.derived.push({
      lane: 'bimi',
      objects: [],
      relations: [],
      sources: [{ source: 'dns_resolver' }],
      findings: [
        mailFinding(
          'bimi_dmarc_not_enforcing',
          { type: 'mail_posture', key: i.domain },
          `${i.domain} publishes BIMI but its DMARC policy does not qualify (${reason}).`,
          d.record ? [`TXT _dmarc.${d.record.domain}: ${d.record.raw}`] : [],
        ),
      ],
    });
  }
}

function deriveTlsRpt(i: DeriveInput, out: Derivation): void {
  if (i.tlsRpt?.state !== 'absent') return;
  const sts = i.mtaSts?.txt?.state === 'present';
  // DANE is in effect only where usable records are DNSSEC-validated (RFC 7672 §2.2): records in an
  // unsigned zone, or whose state is unknown, never make TLS-RPT expected.
  const dane = (i.dane?.hosts ?? []).some((h) => h.dnssec === 'secure' && h.records.some((r) => r.usable));
  if (!sts && !dane) return;
  const unsigned = (i.dane?.hosts ?? []).some((h) => h.dnssec === 'insecure' && h.records.length > 0);
  out.derived.push({
    lane: 'tls_rpt',
    objects: [],
    relations: [],
    sources: [{ source: 'dns_resolver' }],
    findings: [
      mailFinding(
        'tls_rpt_missing',
        { type: 'domain', key: i.domain },
        `${i.domain} deploys ${[sts ? 'MTA-STS' : '', dane ? 'DANE (DNSSEC-validated TLSA records)' : ''].filter(Boolean).join(' and ')}${unsigned ? ' (and publishes TLSA records, which have no effect without DNSSEC)' : ''} but publishes no TLS-RPT record.`,
        [`TXT _smtp._tls.${i.domain}: ${i.tlsRpt.query.outcome === 'nxdomain' ? 'NXDOMAIN' : 'no v=TLSRPTv1 record'}`],
      ),
    ],
  });
}

export function deriveAcrossLanes(i: DeriveInput): Derivation {
  const out: Derivation = { derived: [], limitations: [], partialLanes: [] };
  deriveDane(i, out);
  deriveMtaStsEnforce(i, out);
  deriveBimi(i, out);
  deriveTlsRpt(i, out);
  return out;
}
