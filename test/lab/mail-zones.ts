// Fixture zones of the mail lab: one second-level .test domain per mail posture (tldts treats
// "test" as the public suffix, so each is its own organisational domain). Every address is in
// the mail block 127.0.1.0/24 (or, for refusal cases, outside LAB_ALLOW); SPF ip4: terms name
// loopback too, although SPF terms are never connected to. Zones depend on what the lab issued
// at start (TLSA digests of its certificates, DKIM keys), hence a function.
import { createHash } from 'node:crypto';
import { COMMON_SELECTORS } from '../../src/products/mail/dkim-selectors.ts';
import { LAB_REFUSED_ADDRESS, labHost } from './addresses.ts';
import { zoneApex, type NameBehaviour, type Zone, type ZoneRecord } from './zones.ts';

/** The lab's SMTP and policy hosts (127.0.1.n). */
export const MAIL_HOSTS = {
  good: labHost('mail', 1),
  noStarttls: labHost('mail', 2),
  wrongHost: labHost('mail', 3),
  expired: labHost('mail', 4),
  silent: labHost('mail', 5),
  endless: labHost('mail', 6),
  giant: labHost('mail', 7),
  oldTls: labHost('mail', 8),
  selfSigned: labHost('mail', 9),
  refuseStarttls: labHost('mail', 10),
  /** SMTP without STARTTLS and nothing on port 465. */
  plainOnly: labHost('mail', 11),
  /** SMTP without STARTTLS, and a port 465 that accepts and never speaks. */
  silent465: labHost('mail', 15),
  /** Good STARTTLS servers whose reverse DNS is missing, points elsewhere, or fails. */
  ptrNone: labHost('mail', 12),
  ptrMismatch: labHost('mail', 13),
  ptrServfail: labHost('mail', 14),
  /** STARTTLS servers that send plain text after their 220 to STARTTLS: with the 220, and later. */
  injectWith220: labHost('mail', 16),
  injectLater: labHost('mail', 17),
  /** Where the mismatching PTR name points (nothing listens there). */
  ptrElsewhere: labHost('mail', 99),
  /** A second lab DNS server (the mirror with another copy of zone-split.test). */
  nsMirror: labHost('mail', 53),
  /** A name server address where nothing listens. */
  nsNowhere: labHost('mail', 54),
  stsGood: labHost('mail', 20),
  stsTesting: labHost('mail', 21),
  stsEndless: labHost('mail', 22),
  stsRedirect: labHost('mail', 23),
  stsBadCert: labHost('mail', 24),
  stsEnforceBad: labHost('mail', 25),
  sts404: labHost('mail', 26),
  /** The BIMI host: logos and mark certificates of every BIMI fixture, routed on Host. */
  bimi: labHost('mail', 27),
} as const;

/** The fixture domains, by the posture each shows. */
export const mailLab = {
  good: 'good-mail.test',
  nothing: 'nothing-mail.test',
  spfOver: 'spf-over.test',
  dmarcNone: 'dmarc-none.test',
  ruaExternal: 'rua-ext.test',
  ruaNullMx: 'rua-nullmx.test',
  ruaVoid: 'rua-void.test',
  ruaIndet: 'rua-indet.test',
  stsTesting: 'sts-testing.test',
  nullMx: 'null-mx.test',
  dmarcServfail: 'dmarc-servfail.test',
  mxBad: 'mx-bad.test',
  spfBad: 'spf-bad.test',
  spfMulti: 'spf-multi.test',
  spfVoid: 'spf-void.test',
  spfNeutral: 'spf-neutral.test',
  dmarcMulti: 'dmarc-multi.test',
  dmarcInvalid: 'dmarc-invalid.test',
  dmarcLax: 'dmarc-lax.test',
  stsMulti: 'sts-multi.test',
  stsBadCert: 'sts-badcert.test',
  stsEndless: 'sts-endless.test',
  stsRedirect: 'sts-redirect.test',
  sts404: 'sts-404.test',
  stsEnforceBad: 'sts-enforce-bad.test',
  stsRefused: 'sts-refused.test',
  tlsRptBad: 'tlsrpt-bad.test',
  dkimBad: 'dkim-bad.test',
  bimiBad: 'bimi-bad.test',
  daneBad: 'dane-bad.test',
  daneNoCert: 'dane-nocert.test',
  daneUnsigned: 'dane-unsigned.test',
  daneSigned: 'dane-signed.test',
  smtpBad: 'smtp-bad.test',
  smtpSilent: 'smtp-silent.test',
  smtpEndless: 'smtp-endless.test',
  smtpGiant: 'smtp-giant.test',
  smtpRefused: 'smtp-refused.test',
  mxServfail: 'mx-servfail.test',
  mxTimeout: 'mx-timeout.test',
  /** Every name of the zone is silent: no lane can learn anything (the job is unavailable). */
  silentZone: 'mail-silent.test',
  indeterminate: 'indet-mail.test',
  spfSuite: 'spf-suite.test',
  smtpPlainOnly: 'smtp-plain-only.test',
  smtpSilent465: 'smtp-465-silent.test',
  /** Two MX hosts that send bytes after their 220 to STARTTLS (issue 30 item 9). */
  smtpInject: 'smtp-inject.test',
  zoneSplit: 'zone-split.test',
  zoneTimeout: 'zone-timeout.test',
  zoneNoServer: 'zone-noserver.test',
  ptrNone: 'ptr-none.test',
  ptrMismatch: 'ptr-mismatch.test',
  ptrServfail: 'ptr-servfail.test',
  spfLoop: 'include-loop.spf-suite.test',
  bimiSvgBad: 'bimi-svgbad.test',
  bimiVmcOther: 'bimi-vmc-other.test',
  bimiVmcUntrusted: 'bimi-vmc-untrusted.test',
  bimiVmcNoEku: 'bimi-vmc-noeku.test',
  bimiLogoMismatch: 'bimi-logo-mismatch.test',
  bimiNoVmc: 'bimi-novmc.test',
  bimi404: 'bimi-404.test',
  bimiSlow: 'bimi-slow.test',
  bimiRefused: 'bimi-refused.test',
  spfBig: 'spf-big.test',
  spfHuge: 'spf-huge.test',
} as const;

export interface MailZoneMaterial {
  /** SubjectPublicKeyInfo DER of the certificate the good SMTP server presents. */
  goodSpki: Buffer;
  /** DKIM public keys (SubjectPublicKeyInfo, base64). */
  dkim2048: string;
  dkim1024: string;
}

const txt = (name: string, value: string): ZoneRecord => ({
  name,
  type: 'TXT',
  data: value.length > 255 ? value.match(/.{1,255}/g)! : [value],
});
const a = (name: string, address: string): ZoneRecord => ({ name, type: 'A', data: address });
const mx = (preference: number, exchange: string): ZoneRecord => ({
  name: '@',
  type: 'MX',
  data: { preference, exchange },
});
const tlsa = (name: string, usage: number, selector: number, matchingType: number, hex: string): ZoneRecord => ({
  name,
  type: 'TLSA',
  data: { usage, selector, matchingType, certificate: Buffer.from(hex, 'hex') },
});
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/**
 * The mail zones' name server: ns.mail-lab.test is the lab DNS itself (127.0.0.1), so the zone
 * lane's direct SOA/NS questions (TCP port 53, mapped to the lab's port) reach a server that
 * really serves each zone.
 */
export const MAIL_NS = 'ns.mail-lab.test';

function apex(origin: string, serial = 2026010101, ns: string[] = [MAIL_NS]): ZoneRecord[] {
  const [soa] = zoneApex(origin, serial);
  return [
    { ...soa!, data: { ...(soa!.data as object), mname: ns[0] } },
    ...ns.map((n) => ({ name: '@', type: 'NS', ttl: 3600, data: n })),
  ];
}

function zone(origin: string, records: ZoneRecord[], behaviours: NameBehaviour[] = []): Zone {
  return { origin, ttl: 300, records: [...apex(origin), ...records], behaviours };
}

/**
 * A zone that plays "signed": a DS record at its apex (the lab serves the parent's DS from the
 * child, which a stub resolver cannot tell apart) and AD on every reply to a client that asks for
 * it, as a validating resolver would give (the lab's env declares DNS_RESOLVER_VALIDATES). Nothing
 * is really signed: AD is a bit.
 */
function signed(z: Zone): Zone {
  const ds: ZoneRecord = {
    name: '@',
    type: 'DS',
    data: { keyTag: 12345, algorithm: 13, digestType: 2, digest: Buffer.alloc(32, 0xab) },
  };
  return { ...z, authenticatedData: true, records: [...z.records, ds] };
}

/** An SPF evaluation lab: the RFC 7208 suite's applicable cases, re-expressed (./spf-suite-cases.ts). */
function spfSuiteZone(): Zone {
  const o = mailLab.spfSuite;
  return zone(
    o,
    [
      // Processing limits (RFC 7208 §4.6.4), after the suite's "redirect-loop", "include-loop",
      // "mx-limit", "mech-at-limit", "mech-over-limit", "include-at-limit", "include-over-limit",
      // "void-at-limit", "void-over-limit", "false-a-limit".
      txt('redirect-loop', `v=spf1 ip4:127.0.1.1 redirect=redirect-loop.${o}`),
      txt('include-loop', `v=spf1 include:include-loop-b.${o}`),
      txt('include-loop-b', `v=spf1 include:include-loop.${o}`),
      txt('mx-limit', `v=spf1 mx`),
      ...Array.from({ length: 11 }, (_, i) => ({
        name: 'mx-limit',
        type: 'MX',
        data: { preference: i, exchange: `h${i}.${o}` },
      })),
      txt('mech-at-limit', 'v=spf1 a mx a mx a mx a mx a ptr ip4:127.0.1.4 -all'),
      a('mech-at-limit', '127.0.1.8'),
      { name: 'mech-at-limit', type: 'MX', data: { preference: 10, exchange: `mech-at-limit.${o}` } },
      txt('mech-over-limit', 'v=spf1 a mx a mx a mx a mx a ptr a ip4:127.0.1.4 -all'),
      a('mech-over-limit', '127.0.1.20'),
      txt('include-at-limit', `v=spf1 a include:eight-a.${o} ip4:127.0.1.4 mx -all`),
      a('include-at-limit', '127.0.1.4'),
      txt('eight-a', 'v=spf1 a a a a a a a a'),
      a('eight-a', '127.0.1.10'),
      txt('include-over-limit', `v=spf1 a include:eight-a.${o} a ip4:127.0.1.4 -all`),
      a('include-over-limit', '127.0.1.21'),
      txt('void-over-limit', `v=spf1 a:void1.${o} a:void2.${o} a:void3.${o} ?all`),
      txt('void-at-limit', `v=spf1 a:void1.${o} a:void2.${o} ?all`),
      txt('false-a-limit', 'v=spf1 a -all'),
      ...Array.from({ length: 12 }, (_, i) => a('false-a-limit', `127.0.1.${i + 1}`)),
      // Syntax and record selection (RFC 7208 §4.5, §4.6, §5), after "include-none", "include-empty-domain",
      // "multitxt2", "all-arg", "a-bad-cidr4", "modifier-charset-bad1", "detect-errors-anywhere",
      // "redirect-is-modifier" ("redirect:" is an unknown mechanism, not the modifier).
      txt('include-none', `v=spf1 include:no-record.${o} -all`),
      txt('no-record', 'this is not SPF'),
      txt('include-empty-domain', 'v=spf1 include: -all'),
      txt('multitxt2', 'v=spf1 -all'),
      txt('multitxt2', 'v=spf1 +all'),
      txt('all-arg', 'v=spf1 -all:foobar'),
      txt('a-bad-cidr4', 'v=spf1 a/33 -all'),
      txt('modifier-charset-bad1', 'v=spf1 -all foo=bar%'),
      txt('detect-errors-anywhere', 'v=spf1 -all foobar'),
      txt('redirect-is-modifier', 'v=spf1 -all redirect:ok'),
      txt('mixed-case', 'V=sPf1 -ALL'),
      // Void lookups at include and redirect targets (RFC 7208 §4.6.4: a TXT lookup answered NXDOMAIN
      // or NODATA is void like an a/mx one): three voids, the third an include; a redirect to nothing;
      // an include whose TXT holds no SPF record (answered: not void, still a permerror).
      txt('void-include', `v=spf1 a:void1.${o} a:void2.${o} include:nx3.${o} -all`),
      txt('redirect-nx', `v=spf1 redirect=nx4.${o}`),
      txt('include-txt-nonspf', `v=spf1 include:no-record.${o} -all`),
      // Indeterminate (the suite's "include-temperror", re-expressed with a silent server): never a pass.
      txt('include-temperror', `v=spf1 include:silent.${o} -all`),
    ],
    [{ name: 'silent', behaviour: { kind: 'silent' } }],
  );
}

/**
 * Reverse DNS of the mail block (the longest origin wins over the lab's 127.in-addr.arpa): every
 * SMTP host's PTR names a host that resolves back to it, so the fixtures raise no reverse-DNS
 * finding by accident; then one address without PTR, one whose PTR leads elsewhere, one SERVFAIL.
 */
function reverseZone(): Zone {
  const H = MAIL_HOSTS;
  const L = mailLab;
  const ptr = (address: string, name: string): ZoneRecord => ({
    name: address.split('.')[3]!,
    type: 'PTR',
    data: name,
  });
  return zone(
    '1.0.127.in-addr.arpa',
    [
      ptr(H.good, `mx1.${L.good}`),
      ptr(H.noStarttls, `plain.${L.smtpBad}`),
      ptr(H.wrongHost, `wrong.${L.smtpBad}`),
      ptr(H.expired, `expired.${L.smtpBad}`),
      ptr(H.silent, `mx.${L.smtpSilent}`),
      ptr(H.endless, `mx.${L.smtpEndless}`),
      ptr(H.giant, `mx.${L.smtpGiant}`),
      ptr(H.oldTls, `old.${L.smtpBad}`),
      ptr(H.selfSigned, `self.${L.smtpBad}`),
      ptr(H.refuseStarttls, 'mx.smtp-refuse.test'),
      ptr(H.plainOnly, `mx.${L.smtpPlainOnly}`),
      ptr(H.silent465, `mx.${L.smtpSilent465}`),
      ptr(H.ptrMismatch, `other.${L.ptrMismatch}`),
      // H.ptrNone: no PTR (NXDOMAIN).
    ],
    [{ name: H.ptrServfail.split('.')[3]!, behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } }],
  );
}

/**
 * One domain per BIMI evidence case, each with an enforcing DMARC policy and its logo (and mark
 * certificate) on the BIMI host (mail-lab.ts serves them on Host).
 */
function bimiZones(): Zone[] {
  const L = mailLab;
  const bimi = (domain: string, withVmc: boolean, address: string = MAIL_HOSTS.bimi) =>
    signed(
      zone(domain, [
        mx(10, `mx1.${L.good}`),
        a('@', address),
        txt('@', 'v=spf1 -all'),
        txt('_dmarc', 'v=DMARC1; p=reject'),
        txt('default._bimi', `v=BIMI1; l=https://${domain}/logo.svg${withVmc ? `; a=https://${domain}/vmc.pem` : ''}`),
      ]),
    );
  return [
    bimi(L.bimiSvgBad, false),
    bimi(L.bimiVmcOther, true),
    bimi(L.bimiVmcUntrusted, true),
    bimi(L.bimiVmcNoEku, true),
    bimi(L.bimiLogoMismatch, true),
    bimi(L.bimiNoVmc, false),
    bimi(L.bimi404, true),
    bimi(L.bimiSlow, false),
    // The BIMI host resolves outside the addresses the service may reach: limitations, no finding.
    bimi(L.bimiRefused, true, LAB_REFUSED_ADDRESS),
  ];
}

function zoneSplitRecords(): ZoneRecord[] {
  return [mx(10, `mx1.${mailLab.good}`), a('ns2', MAIL_HOSTS.nsMirror)];
}

/** The second lab DNS (same port, its own address) and the zones only it serves. */
export function mailDnsMirrors(): Array<{ host: string; zones: Zone[] }> {
  const L = mailLab;
  return [
    {
      host: MAIL_HOSTS.nsMirror,
      zones: [
        {
          origin: L.zoneSplit,
          ttl: 300,
          records: [...apex(L.zoneSplit, 2026010102, [`ns2.${L.zoneSplit}`]), ...zoneSplitRecords()],
        },
      ],
    },
  ];
}

export function mailZones(m: MailZoneMaterial): Zone[] {
  const H = MAIL_HOSTS;
  const L = mailLab;
  const goodTlsa = sha256(m.goodSpki);
  return [
    signed(
      zone(L.good, [
        mx(10, `mx1.${L.good}`),
        a('mx1', H.good),
        txt('@', `v=spf1 mx ip4:127.0.1.0/24 -all`),
        txt('_dmarc', `v=DMARC1; p=reject; rua=mailto:dmarc@${L.good}`),
        txt('_mta-sts', 'v=STSv1; id=20260101T000000'),
        a('mta-sts', H.stsGood),
        txt('_smtp._tls', `v=TLSRPTv1; rua=mailto:tlsrpt@${L.good}`),
        txt('selector1._domainkey', `v=DKIM1; k=rsa; p=${m.dkim2048}`),
        txt('default._bimi', `v=BIMI1; l=https://${L.good}/logo.svg; a=https://${L.good}/vmc.pem`),
        a('@', H.bimi),
        tlsa(`_25._tcp.mx1`, 3, 1, 1, goodTlsa),
      ]),
    ),
    // Nothing at all, except an address: mail goes to it (implicit MX), which offers no STARTTLS.
    zone(L.nothing, [a('@', H.noStarttls)]),
    zone(L.spfOver, [
      mx(10, `mx1.${L.good}`),
      txt('@', `v=spf1 include:a.${L.spfOver} include:b.${L.spfOver} -all`),
      txt('a', 'v=spf1 a a a a a ~all'),
      txt('b', `v=spf1 mx mx mx mx exists:x.${L.spfOver} ~all`),
      a('a', '127.0.1.30'),
      a('x', '127.0.1.31'),
      { name: 'b', type: 'MX', data: { preference: 10, exchange: `mx1.${L.good}` } },
      txt('_dmarc', 'v=DMARC1; p=reject'),
    ]),
    zone(L.dmarcNone, [
      mx(10, `mx1.${L.good}`),
      txt('@', 'v=spf1 -all'),
      txt('_dmarc', 'v=DMARC1; p=none'),
      txt('default._bimi', `v=BIMI1; l=https://${L.dmarcNone}/logo.svg`),
      a('@', H.bimi),
    ]),
    zone(L.ruaExternal, [
      mx(10, `mx1.${L.good}`),
      txt('@', 'v=spf1 -all'),
      txt('_dmarc', `v=DMARC1; p=quarantine; rua=mailto:agg@collector-ok.test,mailto:agg@collector-no.test`),
    ]),
    zone('collector-ok.test', [mx(10, `mx1.${L.good}`), txt(`${L.ruaExternal}._report._dmarc`, 'v=DMARC1')]),
    // No MX but an address: the implicit MX receives the reports (not "no MX").
    zone('collector-no.test', [a('@', '127.0.1.40')]),
    // Report destinations that authorize the reports but receive no mail, or whose MX fails.
    zone(L.ruaNullMx, [
      mx(10, `mx1.${L.good}`),
      txt('@', 'v=spf1 -all'),
      txt('_dmarc', 'v=DMARC1; p=reject; rua=mailto:agg@collector-null.test'),
    ]),
    zone('collector-null.test', [mx(0, ''), txt(`${L.ruaNullMx}._report._dmarc`, 'v=DMARC1')]),
    zone(L.ruaVoid, [
      mx(10, `mx1.${L.good}`),
      txt('@', 'v=spf1 -all'),
      txt('_dmarc', 'v=DMARC1; p=reject; rua=mailto:agg@collector-void.test; ruf=mailto:f@collector-void.test'),
    ]),
    zone('collector-void.test', [txt(`${L.ruaVoid}._report._dmarc`, 'v=DMARC1')]),
    zone(L.ruaIndet, [
      mx(10, `mx1.${L.good}`),
      txt('@', 'v=spf1 -all'),
      txt('_dmarc', 'v=DMARC1; p=reject; rua=mailto:agg@collector-servfail.test'),
    ]),
    zone(
      'collector-servfail.test',
      [txt(`${L.ruaIndet}._report._dmarc`, 'v=DMARC1')],
      [{ name: '@', behaviour: { kind: 'rcode', rcode: 'SERVFAIL' }, types: ['MX'] }],
    ),
    zone(L.stsTesting, [
      mx(10, `mx1.${L.stsTesting}`),
      a('mx1', H.good),
      txt('@', 'v=spf1 mx -all'),
      txt('_dmarc', 'v=DMARC1; p=reject'),
      txt('_mta-sts', 'v=STSv1; id=1'),
      a('mta-sts', H.stsTesting),
    ]),
    signed(zone(L.nullMx, [mx(0, ''), txt('@', 'v=spf1 -all'), txt('_dmarc', 'v=DMARC1; p=reject')])),
    zone(
      L.dmarcServfail,
      [mx(10, `mx1.${L.good}`), txt('@', 'v=spf1 -all')],
      [{ name: '_dmarc', behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } }],
    ),
    zone(L.mxBad, [
      mx(10, `alias.${L.mxBad}`),
      mx(20, '127.0.1.1'),
      mx(30, `gone.${L.mxBad}`),
      mx(0, ''),
      { name: 'alias', type: 'CNAME', data: `mx1.${L.good}` },
      txt('@', 'v=spf1 -all'),
    ]),
    zone(L.spfBad, [
      mx(10, `mx1.${L.good}`),
      txt('@', `v=spf1 ptr include:broken.${L.spfBad} include:missing.${L.spfBad} mx:big.${L.spfBad} +all`),
      txt('broken', 'v=spf1 ip4:127.0.1.300 -all'),
      txt('missing', 'not an spf record'),
      ...Array.from({ length: 11 }, (_, i) => ({
        name: 'big',
        type: 'MX',
        data: { preference: i, exchange: `mx1.${L.good}` },
      })),
    ]),
    zone(L.spfMulti, [mx(10, `mx1.${L.good}`), txt('@', 'v=spf1 -all'), txt('@', 'v=spf1 ~all')]),
    zone(L.spfVoid, [
      mx(10, `mx1.${L.good}`),
      txt('@', `v=spf1 a:v1.${L.spfVoid} mx:v2.${L.spfVoid} exists:v3.${L.spfVoid} -all`),
    ]),
    // An SPF record of about 300 bytes beside two site-verification records: every TXT record at the
    // name travels in the answer, about 600 bytes, over the 512 of a client without EDNS.
    zone(L.spfBig, [
      mx(10, `mx1.${L.good}`),
      txt('@', `v=spf1 ${Array.from({ length: 16 }, (_, i) => `ip4:127.0.1.${i + 1}`).join(' ')} -all`),
      txt('@', `google-site-verification=${'g'.repeat(120)}`),
      txt('@', `ms-domain-verification=${'m'.repeat(120)}`),
      txt('_dmarc', 'v=DMARC1; p=reject'),
    ]),
    // Past the resolver's own EDNS size (1232): the lab truncates the UDP reply, the resolver asks
    // again over TCP.
    zone(L.spfHuge, [
      mx(10, `mx1.${L.good}`),
      txt('@', `v=spf1 ${Array.from({ length: 40 }, (_, i) => `ip4:127.0.1.${i + 1}`).join(' ')} -all`),
      ...Array.from({ length: 5 }, (_, i) => txt('@', `verification-${i}=${'v'.repeat(150)}`)),
      txt('_dmarc', 'v=DMARC1; p=reject'),
    ]),
    zone(L.spfNeutral, [mx(10, `mx1.${L.good}`), txt('@', 'v=spf1 ip4:127.0.1.1 ?all')]),
    zone(L.dmarcMulti, [
      mx(10, `mx1.${L.good}`),
      txt('_dmarc', 'v=DMARC1; p=reject'),
      txt('_dmarc', 'v=DMARC1; p=none'),
    ]),
    zone(L.dmarcInvalid, [
      mx(10, `mx1.${L.good}`),
      txt('_dmarc', 'v=DMARC1; p=bogus; rua=mailto:d@dmarc-invalid.test'),
    ]),
    zone(L.dmarcLax, [mx(10, `mx1.${L.good}`), txt('_dmarc', 'v=DMARC1; p=reject; sp=none; t=y; pct=50; ri=3600')]),
    zone(L.stsMulti, [mx(10, `mx1.${L.good}`), txt('_mta-sts', 'v=STSv1; id=1'), txt('_mta-sts', 'v=STSv1; id=2')]),
    zone(L.stsBadCert, [mx(10, `mx1.${L.good}`), txt('_mta-sts', 'v=STSv1; id=1'), a('mta-sts', H.stsBadCert)]),
    zone(L.stsEndless, [mx(10, `mx1.${L.good}`), txt('_mta-sts', 'v=STSv1; id=1'), a('mta-sts', H.stsEndless)]),
    zone(L.stsRedirect, [mx(10, `mx1.${L.good}`), txt('_mta-sts', 'v=STSv1; id=1'), a('mta-sts', H.stsRedirect)]),
    zone(L.sts404, [mx(10, `mx1.${L.good}`), txt('_mta-sts', 'v=STSv1; id=1'), a('mta-sts', H.sts404)]),
    zone(L.stsEnforceBad, [
      mx(10, `mx.${L.stsEnforceBad}`),
      a('mx', H.wrongHost),
      txt('_mta-sts', 'v=STSv1; id=1'),
      a('mta-sts', H.stsEnforceBad),
      txt('_smtp._tls', `v=TLSRPTv1; rua=mailto:tls@${L.stsEnforceBad}`),
    ]),
    // The policy host resolves outside the addresses the service may reach: a limitation, no finding.
    zone(L.stsRefused, [mx(10, `mx1.${L.good}`), txt('_mta-sts', 'v=STSv1; id=1'), a('mta-sts', LAB_REFUSED_ADDRESS)]),
    zone(L.tlsRptBad, [mx(10, `mx1.${L.good}`), txt('_smtp._tls', 'v=TLSRPTv1; rua=ftp://reports.tlsrpt-bad.test/')]),
    zone(L.dkimBad, [
      mx(10, `mx1.${L.good}`),
      txt('default._domainkey', `v=DKIM1; k=rsa; p=${m.dkim1024}`),
      txt('dkim._domainkey', 'v=DKIM1; k=rsa; p='),
      txt('mail._domainkey', `v=DKIM1; k=rsa; t=y; p=${m.dkim2048}`),
      txt('k1._domainkey', 'v=DKIM1; k=rsa; p=bm90IGEga2V5'),
    ]),
    zone(L.bimiBad, [
      mx(10, `mx1.${L.good}`),
      txt('_dmarc', 'v=DMARC1; p=reject'),
      txt('default._bimi', 'v=BIMI1; l=http://bimi-bad.test/logo.svg'),
    ]),
    signed(
      zone(L.daneBad, [
        mx(10, `mx.${L.daneBad}`),
        mx(20, `mx2.${L.daneBad}`),
        a('mx', H.good),
        a('mx2', H.good),
        tlsa('_25._tcp.mx', 3, 1, 1, '00'.repeat(32)),
        tlsa('_25._tcp.mx2', 1, 1, 1, goodTlsa),
      ]),
    ),
    signed(
      zone(L.daneNoCert, [mx(10, `mx.${L.daneNoCert}`), a('mx', H.noStarttls), tlsa('_25._tcp.mx', 3, 1, 1, goodTlsa)]),
    ),
    // The same matching TLSA record, with and without DNSSEC, and no MTA-STS or TLS-RPT: only the
    // signed one puts DANE in effect (and so expects TLS-RPT).
    zone(L.daneUnsigned, [mx(10, `mx.${L.daneUnsigned}`), a('mx', H.good), tlsa('_25._tcp.mx', 3, 1, 1, goodTlsa)]),
    signed(zone(L.daneSigned, [mx(10, `mx.${L.daneSigned}`), a('mx', H.good), tlsa('_25._tcp.mx', 3, 1, 1, goodTlsa)])),
    zone(L.smtpBad, [
      mx(10, `plain.${L.smtpBad}`),
      mx(20, `wrong.${L.smtpBad}`),
      mx(30, `expired.${L.smtpBad}`),
      mx(40, `old.${L.smtpBad}`),
      mx(50, `self.${L.smtpBad}`),
      a('plain', H.noStarttls),
      a('wrong', H.wrongHost),
      a('expired', H.expired),
      a('old', H.oldTls),
      a('self', H.selfSigned),
    ]),
    zone('smtp-refuse.test', [mx(10, 'mx.smtp-refuse.test'), a('mx', H.refuseStarttls)]),
    zone(L.smtpSilent, [mx(10, `mx.${L.smtpSilent}`), a('mx', H.silent)]),
    zone(L.smtpEndless, [mx(10, `mx.${L.smtpEndless}`), a('mx', H.endless)]),
    zone(L.smtpGiant, [mx(10, `mx.${L.smtpGiant}`), a('mx', H.giant)]),
    zone(L.smtpRefused, [mx(10, `mx.${L.smtpRefused}`), a('mx', LAB_REFUSED_ADDRESS)]),
    zone(
      L.mxServfail,
      [txt('@', 'v=spf1 -all')],
      [{ name: '@', behaviour: { kind: 'rcode', rcode: 'SERVFAIL' }, types: ['MX'] }],
    ),
    zone(L.mxTimeout, [], [{ name: '@', behaviour: { kind: 'silent' }, types: ['MX'] }]),
    zone(L.silentZone, [], [{ name: '@', behaviour: { kind: 'silent' }, subtree: true }]),
    // Every lane's own question gets SERVFAIL or silence; the MX answers, so the job runs.
    zone(
      L.indeterminate,
      [mx(10, `mx.${L.indeterminate}`)],
      [
        { name: '@', behaviour: { kind: 'rcode', rcode: 'SERVFAIL' }, types: ['TXT', 'DS'] },
        { name: '_dmarc', behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } },
        { name: '_mta-sts', behaviour: { kind: 'silent' } },
        { name: '_smtp._tls', behaviour: { kind: 'rcode', rcode: 'REFUSED' } },
        { name: 'default._bimi', behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } },
        { name: '_25._tcp.mx', behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } },
        { name: 'mx', behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } },
        ...COMMON_SELECTORS.map((sel) => ({
          name: `${sel}._domainkey`,
          behaviour: { kind: 'rcode' as const, rcode: 'SERVFAIL' as const },
        })),
      ],
    ),
    spfSuiteZone(),
    reverseZone(),
    ...bimiZones(),
    zone('mail-lab.test', [a('ns', '127.0.0.1')]),
    // Two name servers with different copies: the lab DNS serves serial …01 and two NS records, the
    // mirror on 127.0.1.53 (mailDnsMirrors) serial …02 and one.
    {
      origin: L.zoneSplit,
      ttl: 300,
      records: [...apex(L.zoneSplit, 2026010101, [MAIL_NS, `ns2.${L.zoneSplit}`]), ...zoneSplitRecords()],
    },
    // The NS query never answers: the zone lane times out.
    zone(L.zoneTimeout, [mx(10, `mx1.${L.good}`)], [{ name: '@', behaviour: { kind: 'silent' }, types: ['NS'] }]),
    // DS never answers, and the one name server listens nowhere: the zone is known only in part.
    {
      origin: L.zoneNoServer,
      ttl: 300,
      records: [
        ...apex(L.zoneNoServer, 2026010101, [`ns.${L.zoneNoServer}`]),
        mx(10, `mx1.${L.good}`),
        a('ns', H.nsNowhere),
      ],
      behaviours: [{ name: '@', behaviour: { kind: 'silent' }, types: ['DS'] }],
    },
    zone(L.smtpPlainOnly, [mx(10, `mx.${L.smtpPlainOnly}`), a('mx', H.plainOnly)]),
    zone(L.smtpSilent465, [mx(10, `mx.${L.smtpSilent465}`), a('mx', H.silent465)]),
    zone(L.smtpInject, [
      mx(10, `mx1.${L.smtpInject}`),
      mx(20, `mx2.${L.smtpInject}`),
      a('mx1', H.injectWith220),
      a('mx2', H.injectLater),
    ]),
    zone(L.ptrNone, [mx(10, `mx.${L.ptrNone}`), a('mx', H.ptrNone)]),
    zone(L.ptrMismatch, [mx(10, `mx.${L.ptrMismatch}`), a('mx', H.ptrMismatch), a('other', H.ptrElsewhere)]),
    zone(L.ptrServfail, [mx(10, `mx.${L.ptrServfail}`), a('mx', H.ptrServfail)]),
    // The tree walk's last name, _dmarc.test: answered (NODATA) as a real public suffix's would be,
    // instead of REFUSED like every other name outside the lab's zones.
    zone('_dmarc.test', []),
  ];
}
