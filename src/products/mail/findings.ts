// The mail product's finding codes, declared once: the checks and the cross-lane derivation build
// findings from these rows, src/products/findings-catalog.ts gathers them and docs/findings.md
// lists them (test/unit/findings-catalog.test.ts fails when they drift). Every description says
// when the finding is raised and what never raises it: a "missing X" code is raised only from an
// authoritative NXDOMAIN or NODATA, never from SERVFAIL, a timeout or a refused connection.
import { findingFactory, type FindingKind } from '../kit/findings.ts';

const k = (
  severity: FindingKind['severity'],
  confidence: FindingKind['confidence'],
  title: string,
  description: string,
) => ({ severity, confidence, title, description });

const NEVER_DNS =
  'Never raised when the query got SERVFAIL, REFUSED or no reply (the lane is partial or unavailable with a limitation instead).';

const rows = {
  // ---- mx
  mx_null: k(
    'info',
    'confirmed',
    'Domain accepts no mail (null MX)',
    'The MX set is the single null MX "0 ." of RFC 7505: the domain states that it accepts no mail. A fact, not a failure: the STARTTLS, DANE, MTA-STS and TLS-RPT lanes are then skipped as not applicable.',
  ),
  mx_null_with_other_records: k(
    'low',
    'confirmed',
    'Null MX published with other MX records',
    'A null MX ("0 .") is published next to other MX records; RFC 7505 §3 forbids the mix and senders disagree on what it means.',
  ),
  mx_missing: k(
    'low',
    'confirmed',
    'No MX records',
    `The MX query was answered NXDOMAIN or NODATA. Mail then goes to the domain's own A/AAAA (the implicit MX of RFC 5321 §5.1), if any. ${NEVER_DNS}`,
  ),
  mx_target_cname: k(
    'low',
    'confirmed',
    'MX target is an alias (CNAME)',
    'An MX exchange is a CNAME; RFC 2181 §10.3 and RFC 5321 §5.1 require the exchange to have its own address records, and some senders refuse aliases.',
  ),
  mx_target_ip_literal: k(
    'medium',
    'confirmed',
    'MX target is an IP address',
    'An MX exchange is written as an IP address. The exchange must be a host name (RFC 7505 §2, RFC 5321 §5.1); senders look it up as a name and most fail.',
  ),
  mx_host_unresolvable: k(
    'medium',
    'confirmed',
    'MX host has no address',
    `An MX host got NXDOMAIN or NODATA for both A and AAAA: mail to it cannot be delivered, and a host name that does not exist can be registered by someone else. ${NEVER_DNS}`,
  ),
  mx_reverse_dns_missing: k(
    'low',
    'confirmed',
    'MX address has no reverse DNS (PTR)',
    `The PTR query for an address of an MX host was answered NXDOMAIN or NODATA (iprev permerror, RFC 8601 §3). Receivers score mail from such hosts down; RFC 5321 §4.1.4 forbids refusing mail on this alone. ${NEVER_DNS} Never raised for an address outside the reverse-DNS policy (not globally reachable and not in ALLOW_PRIVATE_TARGETS: not asked, a limitation).`,
  ),
  mx_reverse_dns_mismatch: k(
    'low',
    'confirmed',
    'MX address reverse DNS does not resolve back',
    'The PTR names of an MX address (first 3) were all answered, and none has an A/AAAA record leading back to the address (iprev fail, RFC 8601 §3, RFC 1912 §2.1). Receivers score it; RFC 5321 §4.1.4 forbids refusing mail on this alone. Never raised when a forward lookup failed (temperror, a limitation).',
  ),
  // ---- zone
  zone_not_signed: k(
    'info',
    'confirmed',
    "Mail domain's zone is not DNSSEC-signed",
    `The DS query for the zone holding the mail records was answered NODATA at the parent: MX, SPF, DMARC and TLSA answers can be forged on the path, and DANE cannot apply (RFC 4035 §5, RFC 4033 §5). ${NEVER_DNS}`,
  ),
  zone_soa_serial_mismatch: k(
    'low',
    'confirmed',
    'Name servers serve different SOA serials',
    "The zone's name servers, each asked its SOA directly (first 4, over TCP), answered authoritatively with different serials: they hold different copies of the zone, so a receiver may see old or new mail records depending on the server it asks (RFC 1034 §4.3.5). Normal for the minutes a change takes to reach every server. Never raised from a server that did not answer.",
  ),
  zone_ns_inconsistent: k(
    'low',
    'confirmed',
    'Name servers disagree on the NS set',
    "The zone's name servers, each asked its NS set directly, answered authoritatively with different sets (RFC 1034 §4.2.2, RFC 1912 §2.8): resolvers follow whichever they meet. Never raised from a server that did not answer.",
  ),
  // ---- spf
  spf_missing: k(
    'medium',
    'confirmed',
    'No SPF record',
    `The domain's TXT records were answered (or NXDOMAIN/NODATA) and none starts with "v=spf1". ${NEVER_DNS}`,
  ),
  spf_multiple_records: k(
    'high',
    'confirmed',
    'Several SPF records',
    'More than one TXT record starts with "v=spf1": every SPF check of the domain ends in permerror (RFC 7208 §4.5).',
  ),
  spf_syntax_error: k(
    'high',
    'confirmed',
    'SPF syntax error',
    'A record of the include/redirect tree has a term that does not parse (RFC 7208 §4.6, §12): evaluation ends in permerror when it reaches that record.',
  ),
  spf_lookup_limit_exceeded: k(
    'high',
    'confirmed',
    'SPF needs more than 10 DNS lookups',
    'The tree, walked statically, has more than 10 terms that cost a lookup (include, a, mx, ptr, exists, redirect; RFC 7208 §4.6.4): a receiver that reaches them returns permerror. Never raised from a count that is only a lower bound because a branch was indeterminate, unless the lower bound itself is over 10. A loop is spf_include_loop.',
  ),
  spf_void_lookup_limit_exceeded: k(
    'high',
    'confirmed',
    'SPF has more than 2 void lookups',
    'More than two lookups of the tree were answered NXDOMAIN or NODATA (RFC 7208 §4.6.4), include and redirect targets that do not exist or have no TXT record included: receivers that apply the void limit return permerror. Indeterminate replies never count as void.',
  ),
  spf_include_loop: k(
    'high',
    'confirmed',
    'SPF include or redirect loop',
    'An include or redirect chain comes back to a record already being evaluated: receivers recurse until the 10-lookup limit and return permerror (RFC 7208 §4.6.4). The evidence names the chain.',
  ),
  spf_dns_answer_over_512: k(
    'low',
    'confirmed',
    'SPF TXT answer exceeds 512 bytes',
    'The TXT answer at the domain or at an include/redirect target, every TXT record at the name counted (RFC 7208 §3.4), needs more than 512 bytes even in its smallest form: receivers that ask without EDNS get a truncated reply and must retry over TCP, and some then return temperror (RFC 1035 §4.2.1). Computed from the records, so it holds for every server of the zone; the evidence gives the byte counts.',
  ),
  spf_mx_limit_exceeded: k(
    'high',
    'confirmed',
    'SPF mx term with more than 10 MX hosts',
    'An mx term points at a name with more than 10 MX records: each mx may cause at most 10 further address lookups (RFC 7208 §4.6.4), so the check ends in permerror.',
  ),
  spf_include_without_record: k(
    'high',
    'confirmed',
    'SPF include or redirect target has no SPF record',
    `An include or redirect names a domain whose TXT reply was answered and holds no SPF record: evaluation returns permerror (RFC 7208 §5.2, §6.1). ${NEVER_DNS}`,
  ),
  spf_all_pass: k(
    'high',
    'confirmed',
    'SPF authorizes every sender (+all)',
    'The effective top-level all term is "+all" (or "all"): any host on the internet passes SPF for the domain.',
  ),
  spf_all_neutral: k(
    'low',
    'confirmed',
    'SPF ends neutral (?all or no all)',
    'The effective top-level result for unlisted hosts is neutral ("?all", or no all term and no redirect): SPF then protects nothing.',
  ),
  spf_ptr_deprecated: k(
    'low',
    'confirmed',
    'SPF uses the ptr mechanism',
    'A record of the tree uses "ptr", which RFC 7208 §5.5 says SHOULD NOT be used: slow, unreliable, and ignored by large receivers.',
  ),
  // ---- dmarc
  dmarc_missing: k(
    'medium',
    'confirmed',
    'No DMARC record',
    `Every name of the DMARC tree walk (the domain up to its top label) was answered without a DMARC record. ${NEVER_DNS}`,
  ),
  dmarc_multiple_records: k(
    'high',
    'confirmed',
    'Several DMARC records',
    'A name of the tree walk publishes more than one "v=DMARC1" record: receivers discard them all (RFC 7489 §6.6.3).',
  ),
  dmarc_record_invalid: k(
    'medium',
    'confirmed',
    'DMARC record has no valid policy',
    'The DMARC record that applies has no valid p tag (none, quarantine, reject), or an invalid sp/np: receivers apply it as p=none or not at all.',
  ),
  dmarc_policy_none: k(
    'medium',
    'confirmed',
    'DMARC policy is none',
    'The policy that applies to the domain is p=none: failing mail is delivered as usual (monitoring only).',
  ),
  dmarc_subdomain_policy_none: k(
    'low',
    'confirmed',
    'DMARC subdomain policy is none',
    'The domain policy enforces, but subdomains (sp) or non-existent subdomains (np) are left at none: spoofing moves to a subdomain.',
  ),
  dmarc_testing: k(
    'low',
    'confirmed',
    'DMARC policy in test mode (t=y)',
    'The record sets t=y (DMARCbis): receivers apply the next weaker policy.',
  ),
  dmarc_removed_tags: k(
    'info',
    'confirmed',
    'DMARC record uses tags removed by DMARCbis',
    'The record uses pct, rf or ri, which DMARCbis removed; receivers that follow it ignore them.',
  ),
  dmarc_rua_unauthorized: k(
    'medium',
    'confirmed',
    'External DMARC report destination not authorized',
    `A rua/ruf address is in another organisational domain and "<domain>._report._dmarc.<destination>" was answered without a "v=DMARC1" record (RFC 7489 §7.1): receivers will not send those reports. ${NEVER_DNS}`,
  ),
  dmarc_report_destination_no_mail: k(
    'medium',
    'confirmed',
    'DMARC report destination accepts no mail',
    `A rua/ruf mailto: destination domain publishes a null MX (RFC 7505), or has neither MX nor address records (no implicit MX, RFC 5321 §5.1): reports sent there are lost. Asked for internal destinations too. ${NEVER_DNS}`,
  ),
  // ---- mta_sts
  mta_sts_missing: k(
    'low',
    'confirmed',
    'No MTA-STS record',
    `"_mta-sts.<domain>" was answered NXDOMAIN/NODATA or holds no "v=STSv1" record: senders cannot require TLS to the domain's MX hosts. Not raised for a null-MX domain. ${NEVER_DNS}`,
  ),
  mta_sts_record_invalid: k(
    'medium',
    'confirmed',
    'MTA-STS record invalid',
    'Several "v=STSv1" records, or one without a valid id (RFC 8461 §3.1): senders ignore the policy.',
  ),
  mta_sts_policy_invalid: k(
    'high',
    'confirmed',
    'MTA-STS policy cannot be used',
    'The TXT record is published but the policy host answered with something senders must reject: a status other than 200, a redirect, a type other than text/plain, a certificate not valid for mta-sts.<domain>, a policy that does not parse, or a policy host name that does not exist (NXDOMAIN/NODATA). Never raised when the fetch timed out, the connection failed or the host was refused by the outbound policy (a limitation instead).',
  ),
  mta_sts_testing: k(
    'low',
    'confirmed',
    'MTA-STS in testing mode',
    'The policy mode is testing: failures are reported (TLS-RPT) but mail is still delivered without TLS.',
  ),
  mta_sts_mx_not_covered: k(
    'medium',
    'confirmed',
    'MX host not covered by the MTA-STS policy',
    "An MX host matches none of the policy's mx patterns: in enforce mode senders will not deliver to it.",
  ),
  mta_sts_max_age_short: k(
    'low',
    'confirmed',
    'MTA-STS max_age under one day',
    'The policy max_age is under 86400 s; RFC 8461 §3.2 recommends weeks so that a cached policy outlives an attack.',
  ),
  mta_sts_enforce_certificate_invalid: k(
    'high',
    'confirmed',
    'MTA-STS enforce with an invalid MX certificate',
    'The policy is in enforce mode and the STARTTLS certificate an MX host presented is not trusted, expired or not valid for its name: policy-honouring senders will not deliver to it. Derived from the smtp_starttls lane; never raised for an MX whose session did not reach the TLS handshake.',
  ),
  // ---- tls_rpt
  tls_rpt_missing: k(
    'low',
    'confirmed',
    'No TLS-RPT record while MTA-STS or DANE is deployed',
    `MTA-STS is published, or DANE is in effect (usable TLSA records validated by DNSSEC; unsigned ones are dane_tlsa_unsigned and do not count), but "_smtp._tls.<domain>" was answered without a "v=TLSRPTv1" record: delivery failures are never reported (RFC 8460). ${NEVER_DNS}`,
  ),
  tls_rpt_record_invalid: k(
    'low',
    'confirmed',
    'TLS-RPT record invalid',
    'Several "v=TLSRPTv1" records, a syntax error, or no rua URI with a mailto: or https: scheme (RFC 8460 §3).',
  ),
  // ---- dkim
  dkim_key_weak: k(
    'medium',
    'confirmed',
    'DKIM key shorter than 2048 bits',
    'An RSA key found at a probed selector has fewer than 2048 bits (RFC 8301 requires at least 1024 and recommends 2048; 1024-bit keys are factorable by a well-funded attacker).',
  ),
  dkim_key_testing: k(
    'low',
    'confirmed',
    'DKIM key in test mode (t=y)',
    'A key record at a probed selector carries t=y: verifiers may treat failures as if unsigned.',
  ),
  dkim_key_revoked: k(
    'info',
    'confirmed',
    'Revoked DKIM key',
    'A key record at a probed selector has an empty p= (RFC 6376 §3.6.1): the key was revoked. Normal after a rotation.',
  ),
  dkim_key_invalid: k(
    'medium',
    'confirmed',
    'DKIM key record unusable',
    'A "v=DKIM1" or p= record at a probed selector does not parse or holds an unknown key type: signatures made with it fail.',
  ),
  // ---- bimi
  bimi_record_invalid: k(
    'low',
    'confirmed',
    'BIMI record invalid',
    'Several "v=BIMI1" records at default._bimi, or a record without an https logo (l=) or with a non-https authority (a=).',
  ),
  bimi_dmarc_not_enforcing: k(
    'medium',
    'confirmed',
    'BIMI published without an enforcing DMARC policy',
    "A BIMI record is published but the DMARC policy does not meet BIMI's prerequisite (p and sp quarantine or reject, not t=y, pct 100): mailbox providers will not show the logo. Derived from the dmarc lane; never raised when the DMARC lane got no answer.",
  ),
  bimi_logo_unusable: k(
    'medium',
    'confirmed',
    'BIMI logo cannot be used',
    'The l= logo, fetched through the outbound guard, answered with something a mailbox provider refuses: a status other than 200, a body over 64 KiB (or a gzip body that inflates past it), a certificate not valid for its host, a redirect off https, or a host name that does not exist. Never raised when the fetch timed out, the connection failed or the address was refused by the outbound policy (limitation bimi_logo_unreachable).',
  ),
  bimi_logo_not_tiny_ps: k(
    'medium',
    'confirmed',
    'BIMI logo breaks SVG Tiny PS',
    'The fetched logo is not SVG Tiny Portable/Secure (draft-svg-tiny-ps-abrotman §2): not well-formed, a root other than <svg version="1.2" baseProfile="tiny-ps">, x or y on the root, no <title>, an element outside SVG Tiny 1.2 or removed by the profile (script, handler, a, image, foreignObject, animation, audio, video…), an event handler attribute, an external reference (an href or url() that is not a fragment), entity declarations, or a viewBox that is not square. The evidence lists the violations.',
  ),
  bimi_certificate_invalid: k(
    'medium',
    'confirmed',
    'BIMI mark certificate invalid',
    'The a= mark certificate cannot be used: not fetched for a reason that is a fact (status, host, certificate, redirect, size), no PEM certificate, a chain element not signed by the next (signatures verified, not only names), a chain that does not lead to a BIMI trust anchor, a certificate outside its validity, no BIMI extended key usage (1.3.6.1.5.5.7.3.31), no usable logotype (RFC 3709: image/svg+xml, a data: URI, the declared hash), or an embedded logo that breaks SVG Tiny PS. Revocation is not checked. Never raised when the fetch timed out or was refused by the outbound policy (limitation bimi_certificate_unreachable).',
  ),
  bimi_certificate_domain_mismatch: k(
    'medium',
    'confirmed',
    'Mark certificate is for another domain',
    'The a= certificate chain is valid but its subjectAltName names neither the domain, nor the domain whose BIMI record applies, nor default._bimi of either: providers do not show the logo for this domain.',
  ),
  bimi_certificate_logo_mismatch: k(
    'medium',
    'confirmed',
    "l= logo differs from the certificate's logo",
    'Both the l= logo and the mark certificate were fetched, and the SHA-256 of the logo (inflated) is not the hash of the logo the certificate carries: the BIMI draft requires them to be the same image.',
  ),
  bimi_no_evidence_document: k(
    'info',
    'firm',
    'BIMI without a mark certificate',
    'The BIMI record has a usable l= logo (fetched, SVG Tiny PS) and no a= evidence document: mailbox providers that require a VMC or CMC show no logo.',
  ),
  // ---- dane
  dane_tlsa_mismatch: k(
    'high',
    'confirmed',
    'DANE TLSA records do not match the MX certificate',
    'An MX host publishes usable TLSA records (usage 2 or 3) and the certificate its STARTTLS presented matches none of them: DANE-validating senders will not deliver to it. Derived from the smtp_starttls lane; never raised when no certificate was obtained (the dane lane is partial instead), nor when the TLSA records are unsigned (dane_tlsa_unsigned: senders ignore them).',
  ),
  dane_tlsa_unsigned: k(
    'low',
    'confirmed',
    'TLSA records without DNSSEC have no effect',
    'An MX host publishes TLSA records but its zone has no DS record at the parent, or a resolver declared validating (DNS_RESOLVER_VALIDATES) returned them insecure (no AD): senders cannot validate them and ignore them, so DANE is not in effect (RFC 7672 §2.2). Never raised when the DNSSEC state is unknown (limitation dnssec_status_unknown).',
  ),
  dane_tlsa_unusable: k(
    'low',
    'confirmed',
    'DANE TLSA records unusable for SMTP',
    'An MX host publishes TLSA records but none with usage 2 (DANE-TA) or 3 (DANE-EE) and a known selector and matching type; RFC 7672 §3.1.3 makes them unusable, so senders treat the host as without DANE.',
  ),
  // ---- smtp_starttls
  smtp_starttls_missing: k(
    'high',
    'confirmed',
    'MX host does not offer STARTTLS',
    'The MX host answered EHLO without advertising STARTTLS: mail to it travels in clear text. Never raised when port 25 was unreachable, the banner never came or EHLO failed (those are session states with a limitation).',
  ),
  smtp_implicit_tls_only: k(
    'info',
    'confirmed',
    'MX host offers TLS on port 465 only',
    'The MX host answered EHLO on port 25 without STARTTLS and completes a TLS handshake with an SMTP greeting on port 465 (implicit TLS, RFC 8314 §3.3). Port 465 is for message submission: MTAs relaying mail to the domain use port 25 only, so their mail still travels in clear text (smtp_starttls_missing is raised as well).',
  ),
  smtp_starttls_failed: k(
    'medium',
    'confirmed',
    'STARTTLS advertised but the upgrade failed',
    'The MX host advertised STARTTLS, then refused the command or the TLS handshake failed: senders fall back to clear text or defer.',
  ),
  smtp_pipelining_before_tls: k(
    'low',
    'confirmed',
    'MX host sends data after its 220 to STARTTLS',
    "After answering STARTTLS with 220, the MX host (or something on the path to it) sent plain text before its TLS handshake. A server must send nothing there (RFC 3207 §4-5): a client that keeps those bytes reads them as the server's replies inside TLS, the response-injection form of the STARTTLS class of CVE-2011-0411. The bytes are recorded (pipeliningBeforeTls) and were never read as TLS or as replies.",
  ),
  smtp_tls_certificate_untrusted: k(
    'medium',
    'confirmed',
    'MX certificate not trusted',
    'The STARTTLS certificate does not chain to a trusted root (self-signed, unknown issuer…). Opportunistic senders still deliver; MTA-STS and PKIX-based policies fail.',
  ),
  smtp_tls_certificate_name_mismatch: k(
    'medium',
    'confirmed',
    'MX certificate not valid for the MX host name',
    'The STARTTLS certificate names none of the MX host name (subjectAltName DNS names, wildcards by RFC 6125).',
  ),
  smtp_tls_certificate_expired: k(
    'medium',
    'confirmed',
    'MX certificate expired',
    "The STARTTLS certificate's notAfter is in the past (or notBefore in the future).",
  ),
  smtp_tls_protocol_outdated: k(
    'medium',
    'confirmed',
    'MX negotiates TLS older than 1.2',
    'The STARTTLS handshake, offered TLS 1.0 to 1.3, settled on TLS 1.0 or 1.1 (RFC 8996 deprecates both).',
  ),
} as const;

export type MailFindingCode = keyof typeof rows;

export const mailFindings = Object.fromEntries(Object.entries(rows).map(([code, r]) => [code, { code, ...r }])) as {
  [C in MailFindingCode]: FindingKind & { code: C };
};

export const mailFinding = findingFactory(mailFindings);
