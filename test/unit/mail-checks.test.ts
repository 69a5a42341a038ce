// lookup.mail.v1 below the job machinery: the ten checks against the real mail lab (DNS with
// the posture zones, SMTP servers, MTA-STS HTTPS hosts, all on loopback) through the real
// resolver and outbound guard, then assemble() with its cross-lane derivations. Every finding
// code has a fixture that raises it and fixtures that must not; every lane is shown present,
// absent and indeterminate; a SERVFAIL or a timeout never produces a "missing" finding.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/config.ts';
import { createProductRuntime } from '../../src/products/kit/runtime.ts';
import { assembleMail } from '../../src/products/mail/assemble.ts';
import { createMailChecks } from '../../src/products/mail/checks.ts';
import { selectorsFor } from '../../src/products/mail/dkim-selectors.ts';
import { mailFindings, type MailFindingCode } from '../../src/products/mail/findings.ts';
import { mailLanes, type MailLaneName } from '../../src/products/mail/lanes.ts';
import type { AssembledOutcome, CheckOutput, TaskOutcomeView } from '../../src/contract/tasks.ts';
import type { ProductRuntime } from '../../src/products/kit/product-contract.ts';
import type { MailResult, SpfProjection } from '../../src/products/mail/schema.ts';
import { assertMatchesSchema } from '../helpers/contract-check.ts';
import { mailLabPart } from '../lab/mail-lab.ts';
import { mailLab as L } from '../lab/mail-zones.ts';
import { startLab, type RunningLab } from '../lab/serve.ts';

let lab: RunningLab;
let rt: ProductRuntime;
const checks = createMailChecks({
  smtpLimits: { connectMs: 1000, bannerMs: 1000, commandMs: 1000, tlsMs: 2000, quitMs: 300 },
  mtaStsFetchTimeoutMs: 1500,
  bimiFetchTimeoutMs: 1500,
});

beforeAll(async () => {
  lab = await startLab({ parts: [mailLabPart] });
  const [host, port] = lab.env.DNS_SERVERS!.split(':');
  const config = parseConfig({
    DATABASE_URL: 'mysql://x',
    REDIS_URL: 'redis://x',
    KEY_PEPPER: 'x'.repeat(32),
    CURSOR_SECRET: 'y'.repeat(32),
    WEBHOOK_SECRET_KEY: 'w'.repeat(32),
    ...lab.env,
    DNS_SERVERS: `[${host}]:${port}`,
    DNS_TIMEOUT_MS: '500',
  });
  rt = createProductRuntime(config, pino({ level: 'silent' }));
}, 60_000);
afterAll(async () => {
  await lab?.close();
});

interface Lookup {
  outputs: Record<MailLaneName, CheckOutput>;
  env: AssembledOutcome<MailResult>;
  codes: string[];
}
const cache = new Map<string, Promise<Lookup>>();

/** All ten checks for a domain, assembled; once per domain for the whole file. */
function lookup(domain: string): Promise<Lookup> {
  let hit = cache.get(domain);
  if (!hit) {
    hit = (async () => {
      const names = Object.keys(mailLanes) as MailLaneName[];
      const outs = await Promise.all(
        names.map((lane) =>
          checks
            .find((c) => c.name === mailLanes[lane].check)!
            .run(
              { objectKey: domain, target: domain, params: {} },
              { runtime: rt, signal: new AbortController().signal },
            ),
        ),
      );
      const outputs = Object.fromEntries(names.map((n, i) => [n, outs[i]!])) as Record<MailLaneName, CheckOutput>;
      const tasks: TaskOutcomeView[] = names.map((n) => ({
        check: mailLanes[n].check,
        productLane: n,
        required: mailLanes[n].required,
        objectKey: domain,
        status: outputs[n].status,
        reason: outputs[n].reason,
        output: outputs[n],
      }));
      const env = assembleMail(domain, tasks);
      const codes = [...outs.flatMap((o) => o.findings), ...(env.derived ?? []).flatMap((d) => d.findings)].map(
        (f) => f.code,
      );
      return { outputs, env, codes };
    })();
    cache.set(domain, hit);
  }
  return hit;
}

const status = async (domain: string, lane: MailLaneName) => (await lookup(domain)).outputs[lane].status;

/** Every code: a fixture that raises it, and fixtures (the good posture and a near miss) that must not. */
const FIXTURES: Record<MailFindingCode, { raisedBy: string; notBy: string[] }> = {
  mx_null: { raisedBy: L.nullMx, notBy: [L.good, L.mxServfail] },
  mx_null_with_other_records: { raisedBy: L.mxBad, notBy: [L.good, L.nullMx] },
  mx_missing: { raisedBy: L.nothing, notBy: [L.good, L.nullMx, L.mxServfail, L.mxTimeout] },
  mx_target_cname: { raisedBy: L.mxBad, notBy: [L.good] },
  mx_target_ip_literal: { raisedBy: L.mxBad, notBy: [L.good] },
  mx_host_unresolvable: { raisedBy: L.mxBad, notBy: [L.good, L.indeterminate] },
  zone_not_signed: { raisedBy: L.nothing, notBy: [L.good, L.indeterminate, L.zoneNoServer, L.zoneTimeout] },
  zone_soa_serial_mismatch: { raisedBy: L.zoneSplit, notBy: [L.good, L.nothing, L.zoneNoServer] },
  zone_ns_inconsistent: { raisedBy: L.zoneSplit, notBy: [L.good, L.nothing, L.zoneNoServer] },
  mx_reverse_dns_missing: { raisedBy: L.ptrNone, notBy: [L.good, L.ptrServfail, L.ptrMismatch, L.smtpRefused] },
  mx_reverse_dns_mismatch: { raisedBy: L.ptrMismatch, notBy: [L.good, L.ptrNone, L.ptrServfail] },
  spf_missing: { raisedBy: L.nothing, notBy: [L.good, L.indeterminate, L.mxServfail] },
  spf_multiple_records: { raisedBy: L.spfMulti, notBy: [L.good] },
  spf_syntax_error: { raisedBy: L.spfBad, notBy: [L.good, L.spfOver] },
  spf_lookup_limit_exceeded: { raisedBy: L.spfOver, notBy: [L.good, L.spfBad, L.spfLoop] },
  spf_include_loop: { raisedBy: L.spfLoop, notBy: [L.good, L.spfOver] },
  spf_dns_answer_over_512: { raisedBy: L.spfBig, notBy: [L.good, L.spfOver, L.indeterminate] },
  spf_void_lookup_limit_exceeded: { raisedBy: L.spfVoid, notBy: [L.good, L.spfOver] },
  spf_mx_limit_exceeded: { raisedBy: L.spfBad, notBy: [L.good, L.spfOver] },
  spf_include_without_record: { raisedBy: L.spfBad, notBy: [L.good, L.spfOver] },
  spf_all_pass: { raisedBy: L.spfBad, notBy: [L.good, L.spfNeutral] },
  spf_all_neutral: { raisedBy: L.spfNeutral, notBy: [L.good, L.spfBad] },
  spf_ptr_deprecated: { raisedBy: L.spfBad, notBy: [L.good] },
  dmarc_missing: { raisedBy: L.nothing, notBy: [L.good, L.dmarcServfail, L.indeterminate, L.dmarcMulti] },
  dmarc_multiple_records: { raisedBy: L.dmarcMulti, notBy: [L.good] },
  dmarc_record_invalid: { raisedBy: L.dmarcInvalid, notBy: [L.good, L.dmarcNone] },
  dmarc_policy_none: { raisedBy: L.dmarcNone, notBy: [L.good, L.dmarcLax] },
  dmarc_subdomain_policy_none: { raisedBy: L.dmarcLax, notBy: [L.good, L.dmarcNone] },
  dmarc_testing: { raisedBy: L.dmarcLax, notBy: [L.good] },
  dmarc_removed_tags: { raisedBy: L.dmarcLax, notBy: [L.good] },
  dmarc_rua_unauthorized: { raisedBy: L.ruaExternal, notBy: [L.good, L.ruaNullMx] },
  dmarc_report_destination_no_mail: {
    raisedBy: L.ruaNullMx,
    notBy: [L.good, L.ruaExternal, L.ruaIndet, L.nullMx, L.indeterminate],
  },
  mta_sts_missing: { raisedBy: L.nothing, notBy: [L.good, L.nullMx, L.indeterminate, L.stsMulti] },
  mta_sts_record_invalid: { raisedBy: L.stsMulti, notBy: [L.good] },
  mta_sts_policy_invalid: { raisedBy: L.stsBadCert, notBy: [L.good, L.stsEndless, L.stsRefused] },
  mta_sts_testing: { raisedBy: L.stsTesting, notBy: [L.good] },
  mta_sts_mx_not_covered: { raisedBy: L.stsTesting, notBy: [L.good] },
  mta_sts_max_age_short: { raisedBy: L.stsTesting, notBy: [L.good] },
  mta_sts_enforce_certificate_invalid: { raisedBy: L.stsEnforceBad, notBy: [L.good] },
  tls_rpt_missing: { raisedBy: L.stsTesting, notBy: [L.good, L.nothing, L.indeterminate, L.daneUnsigned] },
  tls_rpt_record_invalid: { raisedBy: L.tlsRptBad, notBy: [L.good] },
  dkim_key_weak: { raisedBy: L.dkimBad, notBy: [L.good] },
  dkim_key_testing: { raisedBy: L.dkimBad, notBy: [L.good] },
  dkim_key_revoked: { raisedBy: L.dkimBad, notBy: [L.good] },
  dkim_key_invalid: { raisedBy: L.dkimBad, notBy: [L.good] },
  bimi_record_invalid: { raisedBy: L.bimiBad, notBy: [L.good, L.dmarcNone] },
  bimi_dmarc_not_enforcing: { raisedBy: L.dmarcNone, notBy: [L.good, L.bimiBad] },
  bimi_logo_unusable: { raisedBy: L.bimi404, notBy: [L.good, L.bimiSlow, L.bimiRefused, L.bimiSvgBad] },
  bimi_logo_not_tiny_ps: { raisedBy: L.bimiSvgBad, notBy: [L.good, L.bimiNoVmc, L.bimi404] },
  bimi_certificate_invalid: {
    raisedBy: L.bimiVmcUntrusted,
    notBy: [L.good, L.bimiVmcOther, L.bimiRefused, L.bimiLogoMismatch],
  },
  bimi_certificate_domain_mismatch: { raisedBy: L.bimiVmcOther, notBy: [L.good, L.bimiVmcUntrusted] },
  bimi_certificate_logo_mismatch: { raisedBy: L.bimiLogoMismatch, notBy: [L.good, L.bimiVmcOther] },
  bimi_no_evidence_document: { raisedBy: L.bimiNoVmc, notBy: [L.good, L.bimiSvgBad, L.bimiSlow] },
  dane_tlsa_mismatch: { raisedBy: L.daneBad, notBy: [L.good, L.daneNoCert] },
  dane_tlsa_unusable: { raisedBy: L.daneBad, notBy: [L.good] },
  dane_tlsa_unsigned: { raisedBy: L.daneUnsigned, notBy: [L.good, L.daneSigned, L.daneBad, L.indeterminate] },
  smtp_starttls_missing: { raisedBy: L.smtpBad, notBy: [L.good, L.smtpSilent, L.smtpEndless, L.smtpRefused] },
  smtp_implicit_tls_only: { raisedBy: L.nothing, notBy: [L.good, L.smtpPlainOnly] },
  smtp_starttls_failed: { raisedBy: 'smtp-refuse.test', notBy: [L.good, L.smtpSilent] },
  smtp_pipelining_before_tls: { raisedBy: L.smtpInject, notBy: [L.good, 'smtp-refuse.test', L.smtpBad] },
  smtp_tls_certificate_untrusted: { raisedBy: L.smtpBad, notBy: [L.good] },
  smtp_tls_certificate_name_mismatch: { raisedBy: L.smtpBad, notBy: [L.good] },
  smtp_tls_certificate_expired: { raisedBy: L.smtpBad, notBy: [L.good] },
  smtp_tls_protocol_outdated: { raisedBy: L.smtpBad, notBy: [L.good] },
};

/** Codes that claim something is missing: only an authoritative NXDOMAIN/NODATA may raise them. */
const MISSING = [
  'mx_missing',
  'spf_missing',
  'dmarc_missing',
  'mta_sts_missing',
  'tls_rpt_missing',
  'smtp_starttls_missing',
  'mx_host_unresolvable',
  'spf_include_without_record',
];

describe('the finding catalog against the lab', () => {
  it('every code has a raising and a non-raising fixture', () => {
    expect(Object.keys(FIXTURES).sort()).toEqual(Object.keys(mailFindings).sort());
  });

  for (const [code, f] of Object.entries(FIXTURES)) {
    it(`${code}: raised by ${f.raisedBy}, not by ${f.notBy.join(', ')}`, async () => {
      expect((await lookup(f.raisedBy)).codes).toContain(code);
      for (const d of f.notBy) expect((await lookup(d)).codes, d).not.toContain(code);
    });
  }

  it("every fixture's result matches the OpenAPI schema (no field left undocumented)", async () => {
    const domains = new Set(Object.values(FIXTURES).flatMap((f) => [f.raisedBy, ...f.notBy]));
    for (const d of domains) {
      const { env } = await lookup(d);
      assertMatchesSchema('LookupMailEnvelope', {
        product: 'lookup.mail.v1',
        status: 'partial',
        input: { value: d },
        result: env.result,
        lanes: env.lanes,
        sources: env.sources,
        limitations: env.limitations,
        coverage: { complete: false },
        credits: { charged: 0 },
        requestId: `req_${'0'.repeat(26)}`,
        completedAt: new Date().toISOString(),
      });
    }
  });

  it('the good posture raises no finding at all', async () => {
    expect((await lookup(L.good)).codes).toEqual([]);
  });

  it('SERVFAIL and timeouts never produce a "missing" finding', async () => {
    // Every question of indet-mail.test but the MX gets SERVFAIL, REFUSED or silence: no finding at all.
    expect((await lookup(L.indeterminate)).codes).toEqual([]);
    expect((await lookup(L.dmarcServfail)).codes).not.toContain('dmarc_missing');
    for (const d of [L.mxServfail, L.mxTimeout]) {
      const { codes } = await lookup(d);
      expect(
        codes.filter((c) => ['mx_missing', 'mx_null', 'smtp_starttls_missing', 'mx_host_unresolvable'].includes(c)),
        d,
      ).toEqual([]);
    }
    // …while the same questions answered NXDOMAIN/NODATA do raise them.
    expect((await lookup(L.nothing)).codes).toEqual(
      expect.arrayContaining(
        MISSING.filter((c) => !['tls_rpt_missing', 'mx_host_unresolvable', 'spf_include_without_record'].includes(c)),
      ),
    );
  });
});

describe('each lane: present, absent, indeterminate', () => {
  const table: Array<[MailLaneName, string, string, string, string]> = [
    // lane, present, absent, indeterminate, indeterminate status
    ['mx', L.good, L.nothing, L.mxServfail, 'unavailable'],
    ['spf', L.good, L.nothing, L.indeterminate, 'unavailable'],
    ['dmarc', L.good, L.nothing, L.dmarcServfail, 'unavailable'],
    ['mta_sts', L.good, L.nothing, L.indeterminate, 'timeout'],
    ['tls_rpt', L.good, L.nothing, L.indeterminate, 'unavailable'],
    ['dkim', L.good, L.nothing, L.indeterminate, 'unavailable'],
    ['bimi', L.good, L.nothing, L.indeterminate, 'unavailable'],
    ['dane', L.good, L.nothing, L.indeterminate, 'unavailable'],
    ['smtp_starttls', L.good, L.nothing, L.indeterminate, 'unavailable'],
    ['zone', L.good, L.nothing, L.zoneTimeout, 'timeout'],
  ];
  for (const [lane, present, absent, indet, indetStatus] of table) {
    it(`${lane}: ${present} / ${absent} / ${indet}`, async () => {
      // dkim is at best partial: selectors cannot be listed.
      const best = lane === 'dkim' ? 'partial' : 'completed';
      expect(await status(present, lane)).toBe(best);
      expect(await status(absent, lane)).toBe(best);
      const out = (await lookup(indet)).outputs[lane];
      expect(out.status).toBe(indetStatus);
      expect(out.limitations.length).toBeGreaterThan(0);
      expect(out.findings).toEqual([]);
    });
  }

  it('the projection says what was found, with null for what is unknown', async () => {
    const good = (await lookup(L.good)).env.result;
    expect(good.mx).toMatchObject({
      state: 'mx',
      hosts: [{ name: 'mx1.good-mail.test', preference: 10, addresses: ['127.0.1.1'], resolution: 'resolved' }],
    });
    expect(good.spf).toMatchObject({
      state: 'present',
      evaluation: { verdict: 'ok', lookups: 1, lookupsLowerBound: false, all: { qualifier: '-' } },
    });
    expect(good.dmarc).toMatchObject({
      state: 'present',
      policy: { domain: 'reject', subdomains: 'reject', nonExistentSubdomains: 'reject', testing: false },
      organisationalDomain: { dmarcbis: L.good, rfc7489: L.good, differ: false },
    });
    expect(good.mtaSts).toMatchObject({
      txt: { state: 'present', id: '20260101T000000' },
      policy: { fetched: true, mode: 'enforce', maxAge: 604800 },
      coverage: [{ host: 'mx1.good-mail.test', covered: true }],
    });
    expect(good.tlsRpt).toMatchObject({ state: 'present', rua: [{ scheme: 'mailto', valid: true }] });
    expect(good.dkim!.selectors).toEqual([
      expect.objectContaining({ selector: 'selector1', state: 'key', keyType: 'rsa', bits: 2048, testing: false }),
    ]);
    expect(good.bimi).toMatchObject({
      state: 'present',
      location: `https://${L.good}/logo.svg`,
      dmarcPrerequisite: { met: true },
    });
    expect(good.dane!.validation).toBe('validated_by_resolver');
    expect(good.dane!.hosts[0]).toMatchObject({
      host: 'mx1.good-mail.test',
      presence: 'present',
      ad: true,
      dnssec: 'secure',
      ds: { zone: L.good, state: 'present' },
      match: 'matched',
      records: [{ usage: 3, selector: 1, matchingType: 1, usable: true }],
    });
    const session = good.smtpStarttls!.hosts[0]!.sessions[0]!;
    expect(session).toMatchObject({
      address: '127.0.1.1',
      state: 'tls',
      starttlsAdvertised: true,
      tls: { protocol: 'TLSv1.3', chainTrusted: true, hostnameMatch: true },
    });
    expect(session.tls!.certificate).toMatchObject({
      sans: expect.arrayContaining(['mx1.good-mail.test']),
      expired: false,
      keyType: 'ec',
    });
    expect(session.banner).toContain('ESMTP');

    const indet = (await lookup(L.indeterminate)).env.result;
    expect(indet.spf).toBeNull();
    expect(indet.dmarc).toBeNull();
    expect(indet.bimi).toBeNull();
  });

  it('a null MX is a fact: mx completes, the receiving lanes are skipped as not applicable', async () => {
    const { outputs, env } = await lookup(L.nullMx);
    expect(outputs.mx.status).toBe('completed');
    expect(env.result.mx).toMatchObject({ state: 'null_mx', hosts: [] });
    for (const lane of ['mta_sts', 'tls_rpt', 'dane', 'smtp_starttls'] as const)
      expect(outputs[lane]).toMatchObject({ status: 'skipped', reason: 'not_applicable' });
    for (const lane of ['spf', 'dmarc', 'bimi'] as const) expect(outputs[lane].status).toBe('completed');
  });

  it('reverse DNS of each MX address: pass, permerror, fail, temperror, not asked', async () => {
    const rev = async (d: string) => (await lookup(d)).env.result.mx!.hosts[0]!.reverse;
    expect(await rev(L.good)).toEqual([
      { address: '127.0.1.1', state: 'pass', ptr: [`mx1.${L.good}`], confirmedBy: `mx1.${L.good}` },
    ]);
    expect(await rev(L.ptrNone)).toEqual([{ address: '127.0.1.12', state: 'permerror', ptr: [], confirmedBy: null }]);
    expect(await rev(L.ptrMismatch)).toEqual([
      { address: '127.0.1.13', state: 'fail', ptr: [`other.${L.ptrMismatch}`], confirmedBy: null },
    ]);
    expect(await rev(L.ptrServfail)).toEqual([
      { address: '127.0.1.14', state: 'temperror', ptr: [], confirmedBy: null },
    ]);
    const servfail = (await lookup(L.ptrServfail)).outputs.mx;
    expect(servfail.status).toBe('partial');
    expect(servfail.findings).toEqual([]);
    expect(servfail.limitations.map((l) => l.message).join(' ')).toContain('reverse DNS of 127.0.1.14');
    // An MX outside the allowed addresses: its PTR is never asked.
    const refused = await lookup(L.smtpRefused);
    expect(await rev(L.smtpRefused)).toEqual([
      { address: '127.200.0.1', state: 'not_asked', ptr: [], confirmedBy: null },
    ]);
    expect(refused.outputs.mx.status).toBe('partial');
    expect(refused.outputs.mx.limitations.map((l) => l.code)).toContain('reverse_dns_not_allowed');
    expect(refused.outputs.mx.findings).toEqual([]);
  });

  it('zone: NS, SOA, DS at the parent, and each name server asked directly', async () => {
    const good = (await lookup(L.good)).env.result.zone!;
    expect(good).toMatchObject({
      zone: L.good,
      nameservers: ['ns.mail-lab.test'],
      soa: { mname: 'ns.mail-lab.test', serial: 2026010101 },
      ds: 'present',
      validated: true,
      servers: [
        {
          name: 'ns.mail-lab.test',
          address: '127.0.0.1',
          state: 'answered',
          serial: 2026010101,
          ns: ['ns.mail-lab.test'],
        },
      ],
    });
    expect((await lookup(L.nothing)).env.result.zone).toMatchObject({ ds: 'absent', validated: false });
    // Two servers, two copies: both disagreements, each server's answer in the evidence.
    const split = await lookup(L.zoneSplit);
    expect(split.env.result.zone!.servers.map((x) => [x.name, x.state, x.serial, x.ns])).toEqual([
      ['ns.mail-lab.test', 'answered', 2026010101, ['ns.mail-lab.test', `ns2.${L.zoneSplit}`]],
      [`ns2.${L.zoneSplit}`, 'answered', 2026010102, [`ns2.${L.zoneSplit}`]],
    ]);
    expect(split.outputs.zone.status).toBe('completed');
    // A server that listens nowhere and a DS that never answers: partial, limitations, no finding.
    const none = await lookup(L.zoneNoServer);
    expect(none.env.result.zone).toMatchObject({
      ds: 'unknown',
      servers: [{ name: `ns.${L.zoneNoServer}`, address: '127.0.1.54', state: 'unreachable' }],
    });
    expect(none.outputs.zone.status).toBe('partial');
    expect(none.outputs.zone.limitations.map((l) => l.code)).toEqual(
      expect.arrayContaining(['zone_server_unanswered', 'dnssec_status_unknown']),
    );
    expect(none.outputs.zone.findings).toEqual([]);
  });

  it("no MX: the domain's own address is the implicit MX, and it is tested", async () => {
    const { env } = await lookup(L.nothing);
    expect(env.result.mx).toMatchObject({
      state: 'no_mx',
      implicit: { addresses: ['127.0.1.2'], resolution: 'resolved' },
    });
    expect(env.result.smtpStarttls).toMatchObject({
      implicitMx: true,
      hosts: [{ host: L.nothing, sessions: [{ state: 'no_starttls', starttlsAdvertised: false }] }],
    });
  });
});

describe('smtp_starttls sessions', () => {
  it('tells apart no STARTTLS, wrong host, expired, self-signed and TLS 1.1, each on its own host', async () => {
    const rows = (await lookup(L.smtpBad)).env.result.smtpStarttls!.hosts;
    const by = (h: string) => rows.find((r) => r.host === `${h}.${L.smtpBad}`)!.sessions[0]!;
    expect(by('plain')).toMatchObject({ state: 'no_starttls', tls: null });
    expect(by('wrong').tls).toMatchObject({ chainTrusted: true, hostnameMatch: false });
    expect(by('expired').tls).toMatchObject({
      chainTrusted: false,
      trustError: 'CERT_HAS_EXPIRED',
      certificate: { expired: true },
    });
    expect(by('self').tls).toMatchObject({ chainTrusted: false });
    expect(by('old').tls).toMatchObject({ protocol: 'TLSv1.1' });
    const findings = (await lookup(L.smtpBad)).outputs.smtp_starttls.findings;
    expect(findings.find((f) => f.code === 'smtp_tls_certificate_expired')!.object).toEqual({
      type: 'mx_host',
      key: `expired.${L.smtpBad}`,
    });
    expect(findings.filter((f) => f.code === 'smtp_tls_certificate_untrusted').map((f) => f.object.key)).toEqual([
      `self.${L.smtpBad}`,
    ]);
  });

  it('no STARTTLS: port 465 is probed as a fact, and the STARTTLS verdict stays', async () => {
    const nothing = await lookup(L.nothing);
    const s = nothing.env.result.smtpStarttls!.hosts[0]!.sessions[0]!;
    expect(s).toMatchObject({
      state: 'no_starttls',
      implicitTls: { state: 'tls', chainTrusted: true, hostnameMatch: true, banner: expect.stringContaining('ESMTP') },
    });
    expect(s.implicitTls!.protocol).toMatch(/^TLSv1\.[23]$/);
    expect(nothing.codes).toEqual(expect.arrayContaining(['smtp_starttls_missing', 'smtp_implicit_tls_only']));
    const missing = nothing.outputs.smtp_starttls.findings.find((f) => f.code === 'smtp_starttls_missing')!;
    expect(missing.evidence!.map((e) => e.summary).join(' ')).toContain('port 465 (implicit TLS)');
    expect(nothing.outputs.smtp_starttls.status).toBe('completed');
    // Nothing on 465: refused, a state of the fact, not a gap of the lane.
    const plain = await lookup(L.smtpPlainOnly);
    expect(plain.env.result.smtpStarttls!.hosts[0]!.sessions[0]).toMatchObject({
      state: 'no_starttls',
      implicitTls: { state: 'refused', protocol: null },
    });
    expect(plain.outputs.smtp_starttls.status).toBe('completed');
    expect(plain.codes).toContain('smtp_starttls_missing');
    // 465 accepts and never answers: timeout, again a state of the fact (no limitation, lane completed).
    const silent = await lookup(L.smtpSilent465);
    expect(silent.env.result.smtpStarttls!.hosts[0]!.sessions[0]!.implicitTls).toMatchObject({ state: 'timeout' });
    expect(silent.outputs.smtp_starttls).toMatchObject({ status: 'completed', limitations: [] });
    expect(silent.codes).not.toContain('smtp_implicit_tls_only');
    // A host with STARTTLS is never probed on 465.
    expect((await lookup(L.good)).env.result.smtpStarttls!.hosts[0]!.sessions[0]!.implicitTls).toBeNull();
  });

  it('port 25 silent: banner timeout, lane timeout, never "no STARTTLS"', async () => {
    const { outputs, env } = await lookup(L.smtpSilent);
    expect(outputs.smtp_starttls).toMatchObject({ status: 'timeout', reason: 'smtp_timeout', findings: [] });
    expect(env.result.smtpStarttls).toBeNull();
    expect(outputs.smtp_starttls.limitations.map((l) => l.code)).toContain('smtp_banner_timeout');
  });

  it('an endless banner is cut at the byte cap: lane failed, no finding', async () => {
    const { outputs } = await lookup(L.smtpEndless);
    expect(outputs.smtp_starttls).toMatchObject({ status: 'failed', reason: 'smtp_protocol_violation', findings: [] });
  });

  it('a giant certificate chain is refused by the TLS client: the upgrade failed, the lane completes', async () => {
    const { outputs, env } = await lookup(L.smtpGiant);
    expect(outputs.smtp_starttls.status).toBe('completed');
    expect(env.result.smtpStarttls!.hosts[0]!.sessions[0]).toMatchObject({ state: 'tls_failed' });
  });

  it('an MX outside the allowed addresses is never connected to', async () => {
    const { outputs, env } = await lookup(L.smtpRefused);
    expect(outputs.smtp_starttls).toMatchObject({ status: 'unavailable', reason: 'target_not_allowed', findings: [] });
    expect(env.result.smtpStarttls).toBeNull();
  });
});

describe('cross-lane derivations', () => {
  it('dane: matched against the certificate presented; no certificate → dane partial with a limitation', async () => {
    const bad = (await lookup(L.daneBad)).env;
    expect(bad.result.dane!.hosts.map((h) => [h.host, h.match])).toEqual([
      [`mx.${L.daneBad}`, 'not_matched'],
      [`mx2.${L.daneBad}`, 'no_usable_records'],
    ]);
    const nocert = (await lookup(L.daneNoCert)).env;
    expect(nocert.result.dane!.hosts[0]!.match).toBe('no_certificate');
    expect(nocert.lanes.find((l) => l.lane === 'dane')!.status).toBe('partial');
    expect(nocert.limitations.map((l) => l.code)).toContain('dane_not_matched');
  });

  it('dane needs DNSSEC: unsigned TLSA records are dane_tlsa_unsigned, never "DANE deployed"', async () => {
    const unsigned = await lookup(L.daneUnsigned);
    expect(unsigned.env.result.dane!.hosts[0]).toMatchObject({
      dnssec: 'insecure',
      ds: { zone: L.daneUnsigned, state: 'absent' },
      match: 'matched',
    });
    expect(unsigned.codes).toContain('dane_tlsa_unsigned');
    expect(unsigned.codes).not.toContain('tls_rpt_missing');
    const f = unsigned.outputs.dane.findings.find((x) => x.code === 'dane_tlsa_unsigned')!;
    expect(f.summary).toContain('publishes TLSA records, which have no effect without DNSSEC');
    // The same record, signed: DANE is in effect, so TLS-RPT is expected and its absence named.
    const signed = await lookup(L.daneSigned);
    expect(signed.env.result.dane!.hosts[0]).toMatchObject({ dnssec: 'secure', match: 'matched' });
    const rpt = (signed.env.derived ?? []).flatMap((d) => d.findings).find((x) => x.code === 'tls_rpt_missing')!;
    expect(rpt.summary).toContain('DANE');
    expect(signed.codes).not.toContain('dane_tlsa_unsigned');
  });

  it('without a declared validating resolver: AD is not trusted, a signed zone is "unknown", an unsigned one still insecure', async () => {
    const [host, port] = lab.env.DNS_SERVERS!.split(':');
    const plain = createProductRuntime(
      parseConfig({
        DATABASE_URL: 'mysql://x',
        REDIS_URL: 'redis://x',
        KEY_PEPPER: 'x'.repeat(32),
        CURSOR_SECRET: 'y'.repeat(32),
        WEBHOOK_SECRET_KEY: 'w'.repeat(32),
        ...lab.env,
        DNS_SERVERS: `[${host}]:${port}`,
        DNS_TIMEOUT_MS: '500',
        DNS_RESOLVER_VALIDATES: 'false',
      }),
      pino({ level: 'silent' }),
    );
    const dane = (d: string) =>
      checks
        .find((c) => c.name === 'mail.dane')!
        .run({ objectKey: d, target: d, params: {} }, { runtime: plain, signal: new AbortController().signal });
    const good = await dane(L.good);
    expect(good.projection).toMatchObject({ validation: 'not_validated', hosts: [{ ad: true, dnssec: 'unknown' }] });
    expect(good.limitations.map((l) => l.code)).toContain('dnssec_status_unknown');
    expect(good.findings).toEqual([]);
    const unsigned = await dane(L.daneUnsigned);
    expect(unsigned.projection).toMatchObject({ hosts: [{ dnssec: 'insecure' }] });
    expect(unsigned.findings.map((x) => x.code)).toEqual(['dane_tlsa_unsigned']);
    // Unknown DNSSEC keeps the mismatch (hedged) and never makes TLS-RPT expected.
    const outputs = { ...(await lookup(L.daneBad)).outputs, dane: await dane(L.daneBad) };
    const tasks: TaskOutcomeView[] = (Object.keys(mailLanes) as MailLaneName[]).map((n) => ({
      check: mailLanes[n].check,
      productLane: n,
      required: mailLanes[n].required,
      objectKey: L.daneBad,
      status: outputs[n].status,
      reason: outputs[n].reason,
      output: outputs[n],
    }));
    const env = assembleMail(L.daneBad, tasks);
    const mismatch = (env.derived ?? []).flatMap((d) => d.findings).find((x) => x.code === 'dane_tlsa_mismatch')!;
    expect(mismatch.summary).toContain('if these records are DNSSEC-validated');
  });

  it('dmarc report destinations: MX, implicit MX, null MX, no mail at all, unknown', async () => {
    const accepts = async (d: string) =>
      (await lookup(d)).env.result.dmarc!.reporting.map((r) => [r.destination, r.tag, r.accepts]);
    expect(await accepts(L.good)).toEqual([[L.good, 'rua', 'mx']]);
    expect(await accepts(L.ruaExternal)).toEqual([
      ['collector-ok.test', 'rua', 'mx'],
      ['collector-no.test', 'rua', 'implicit_mx'],
    ]);
    expect(await accepts(L.ruaNullMx)).toEqual([['collector-null.test', 'rua', 'null_mx']]);
    expect(await accepts(L.ruaVoid)).toEqual([
      ['collector-void.test', 'rua', 'no_mail'],
      ['collector-void.test', 'ruf', 'no_mail'],
    ]);
    const voidFindings = (await lookup(L.ruaVoid)).outputs.dmarc.findings.filter(
      (f) => f.code === 'dmarc_report_destination_no_mail',
    );
    expect(voidFindings.map((f) => f.summary)).toEqual([
      `The DMARC rua/ruf destination collector-void.test of ${L.ruaVoid} has neither MX nor address records: reports sent there are lost.`,
    ]);
    // SERVFAIL for the destination's MX: unknown, the lane partial with a limitation, no finding.
    const indet = await lookup(L.ruaIndet);
    expect(await accepts(L.ruaIndet)).toEqual([['collector-servfail.test', 'rua', 'unknown']]);
    expect(indet.outputs.dmarc.status).toBe('partial');
    expect(indet.outputs.dmarc.limitations.map((l) => l.message).join(' ')).toContain(
      'mail for report destination collector-servfail.test',
    );
    expect(indet.codes).not.toContain('dmarc_report_destination_no_mail');
  });

  it("bimi: the DMARC prerequisite is checked against the dmarc lane's policy", async () => {
    const { env } = await lookup(L.dmarcNone);
    expect(env.result.bimi!.dmarcPrerequisite).toEqual({ met: false, reason: 'p=none' });
    expect((await lookup(L.bimiBad)).env.result.bimi!.dmarcPrerequisite).toBeUndefined(); // an invalid record is not checked
  });
});

describe('bimi evidence: the logo and the mark certificate, fetched through the guard', () => {
  it('good: a Tiny PS logo and a VMC for the domain that chains to a trust anchor and carries the same logo', async () => {
    const { env, outputs } = await lookup(L.good);
    const bimi = env.result.bimi!;
    expect(bimi.logo).toMatchObject({
      url: `https://${L.good}/logo.svg`,
      fetched: true,
      status: 200,
      contentType: 'image/svg+xml',
      failure: null,
      svg: { valid: true, violations: [], title: 'Good Mail', square: true },
    });
    expect(bimi.certificate).toMatchObject({
      fetched: true,
      facts: {
        kind: 'VMC',
        markType: 'Registered Mark',
        chainTrusted: true,
        bimiEku: true,
        sans: [L.good],
        domainMatch: true,
        logoMatch: true,
        logo: { mediaType: 'image/svg+xml', hashAlgorithm: 'sha256', hashValid: true, svg: { valid: true } },
        problems: [],
      },
    });
    expect(bimi.certificate!.facts!.logo!.declaredHash).toBe(bimi.logo!.svg!.sha256);
    expect(outputs.bimi.status).toBe('completed');
    expect(outputs.bimi.limitations.map((l) => l.code)).toEqual(['bimi_certificate_revocation_not_checked']);
  });

  it('a logo that breaks the profile lists each violation', async () => {
    const { env, outputs } = await lookup(L.bimiSvgBad);
    expect(env.result.bimi!.logo!.svg!.violations).toEqual(
      expect.arrayContaining([
        `the root's version is "1.1", not "1.2"`,
        'the viewBox 0 0 200 100 is not square',
        'an event handler attribute (onload on <svg>)',
        '<script> is not allowed in SVG Tiny PS',
        '<image> is not allowed in SVG Tiny PS',
        'an external reference (xlink:href="https://tracker.bimi-svgbad.test/p.png" on <image>)',
        'no <title> child of the root <svg>',
      ]),
    );
    expect(outputs.bimi.findings.map((f) => f.code)).toEqual(['bimi_logo_not_tiny_ps']);
  });

  it('mark certificates: another domain, self-signed, no BIMI EKU, another logo', async () => {
    const facts = async (d: string) => (await lookup(d)).env.result.bimi!.certificate!.facts!;
    expect(await facts(L.bimiVmcOther)).toMatchObject({
      chainTrusted: true,
      domainMatch: false,
      sans: ['other-brand.test'],
    });
    expect(await facts(L.bimiVmcUntrusted)).toMatchObject({
      chainTrusted: false,
      trustError: 'the chain does not lead to a BIMI trust anchor',
    });
    expect((await facts(L.bimiVmcNoEku)).problems).toContain('no BIMI extended key usage (1.3.6.1.5.5.7.3.31)');
    expect((await lookup(L.bimiVmcNoEku)).codes).toContain('bimi_certificate_invalid');
    expect(await facts(L.bimiLogoMismatch)).toMatchObject({ chainTrusted: true, logoMatch: false, problems: [] });
  });

  it('a body that never ends and an address outside the policy are limitations, never findings', async () => {
    const slow = await lookup(L.bimiSlow);
    expect(slow.outputs.bimi.status).toBe('partial');
    expect(slow.outputs.bimi.findings).toEqual([]);
    expect(slow.outputs.bimi.limitations.map((l) => l.code)).toEqual(['bimi_logo_unreachable']);
    expect(slow.env.result.bimi!.logo).toMatchObject({ fetched: false, failure: 'timeout', svg: null });
    const refused = await lookup(L.bimiRefused);
    expect(refused.outputs.bimi).toMatchObject({ status: 'partial', findings: [] });
    expect(refused.outputs.bimi.limitations.map((l) => l.code)).toEqual([
      'bimi_logo_unreachable',
      'bimi_certificate_unreachable',
    ]);
    expect(refused.env.result.bimi!.certificate).toMatchObject({ failure: 'target_not_allowed', facts: null });
  });
});

describe('mta_sts policy fetch', () => {
  it('a body that never ends is cut by the deadline: a limitation, no finding', async () => {
    const { outputs } = await lookup(L.stsEndless);
    expect(outputs.mta_sts.status).toBe('partial');
    expect(outputs.mta_sts.findings).toEqual([]);
    expect(outputs.mta_sts.limitations.map((l) => l.code)).toEqual(['mta_sts_policy_unreachable']);
  });

  it('a redirect, a 404 and a wrong-host certificate are facts about the policy host', async () => {
    for (const [d, failure] of [
      [L.stsRedirect, 'redirect'],
      [L.sts404, 'invalid_policy'],
      [L.stsBadCert, 'certificate_invalid'],
    ] as const) {
      const { outputs, env } = await lookup(d);
      expect(
        outputs.mta_sts.findings.map((f) => f.code),
        d,
      ).toEqual(['mta_sts_policy_invalid']);
      expect(env.result.mtaSts!.policy!.failure, d).toBe(failure);
    }
  });

  it('a policy host outside the allowed addresses is refused: a limitation, no finding', async () => {
    const { outputs } = await lookup(L.stsRefused);
    expect(outputs.mta_sts).toMatchObject({ status: 'partial', findings: [] });
    expect(outputs.mta_sts.limitations[0]!.message).toContain('target_not_allowed');
  });
});

describe('spf: the RFC 7208 test suite cases that apply to static evaluation', () => {
  // Each row re-expresses a case of the public RFC 7208 test suite (section "Processing limits"
  // and the syntax sections), by its name there, as a lab zone (test/lab/mail-zones.ts). The
  // expected verdict is the suite's result for a sender that matches nothing before the limit.
  const cases: Array<
    [
      string,
      SpfProjection['evaluation'] extends infer E ? (E extends { verdict: infer V } ? V : never) : never,
      string?,
    ]
  > = [
    ['redirect-loop', 'permerror', 'loop'],
    ['include-loop', 'permerror', 'loop'],
    ['mx-limit', 'permerror', 'mx_limit'],
    ['mech-at-limit', 'ok'],
    ['mech-over-limit', 'permerror', 'lookup_limit'],
    ['include-over-limit', 'permerror', 'lookup_limit'],
    // The suite expects pass: its client matches ip4 before the 11th lookup. Statically, a sender
    // that matches nothing reaches 11 lookups: permerror (the one case where the two differ).
    ['include-at-limit', 'permerror', 'lookup_limit'],
    ['void-at-limit', 'ok'],
    ['void-over-limit', 'permerror', 'void_limit'],
    ['false-a-limit', 'ok'],
    ['include-none', 'permerror', 'include_no_record'],
    ['include-empty-domain', 'permerror', 'syntax'],
    ['multitxt2', 'permerror', 'multiple_records'],
    ['all-arg', 'permerror', 'syntax'],
    ['a-bad-cidr4', 'permerror', 'syntax'],
    ['modifier-charset-bad1', 'permerror', 'syntax'],
    ['detect-errors-anywhere', 'permerror', 'syntax'],
    ['redirect-is-modifier', 'permerror', 'syntax'],
    ['mixed-case', 'ok'],
    ['include-temperror', 'indeterminate'],
    ['void-include', 'permerror', 'void_limit'],
    ['redirect-nx', 'permerror', 'include_no_record'],
    ['include-txt-nonspf', 'permerror', 'include_no_record'],
  ];
  for (const [name, verdict, reason] of cases) {
    it(`${name}: ${verdict}${reason ? ` (${reason})` : ''}`, async () => {
      const out = await checks
        .find((c) => c.name === 'mail.spf')!
        .run(
          { objectKey: `${name}.${L.spfSuite}`, target: '', params: {} },
          { runtime: rt, signal: new AbortController().signal },
        );
      const ev = (out.projection as SpfProjection).evaluation!;
      expect(ev.verdict).toBe(verdict);
      if (reason) expect(ev.permerrors.map((p) => p.reason)).toContain(reason);
      if (verdict === 'indeterminate') {
        expect(out.status).toBe('partial');
        expect(ev.lookupsLowerBound).toBe(true);
        expect(out.findings.map((f) => f.code)).not.toContain('spf_include_without_record');
      }
    });
  }

  it('an include or redirect target that does not exist is a void lookup; one with non-SPF TXT is not', async () => {
    const run = async (name: string) =>
      (
        (
          await checks
            .find((c) => c.name === 'mail.spf')!
            .run(
              { objectKey: `${name}.${L.spfSuite}`, target: '', params: {} },
              { runtime: rt, signal: new AbortController().signal },
            )
        ).projection as SpfProjection
      ).evaluation!;
    const voidInclude = await run('void-include');
    expect(voidInclude.voidLookups).toBe(3);
    expect(voidInclude.tree.terms.find((t) => t.kind === 'include')).toMatchObject({ void: true, lookups: 1 });
    expect((await run('redirect-nx')).voidLookups).toBe(1);
    const nonSpf = await run('include-txt-nonspf');
    expect(nonSpf.voidLookups).toBe(0);
    expect(nonSpf.tree.terms.find((t) => t.kind === 'include')!.void).toBe(false);
    // A loop: its own code, not the lookup limit; the chain is the evidence.
    const loop = await lookup(L.spfLoop);
    const f = loop.outputs.spf.findings.find((x) => x.code === 'spf_include_loop')!;
    expect(f.evidence!.map((e) => e.summary).join(' ')).toContain(
      `include-loop.${L.spfSuite} → include-loop-b.${L.spfSuite}`,
    );
  });

  it('answer size: every TXT record at the name counts; over 512 is a finding, over 1232 goes over TCP', async () => {
    const big = (await lookup(L.spfBig)).env.result.spf!.size!;
    expect(big).toMatchObject({ txtRecords: 3, over512: true, transport: 'udp', targetsOver512: [] });
    expect(big.answerBytes).toBeGreaterThan(512);
    expect(big.answerBytes).toBeLessThan(1232);
    expect(big.strings.length).toBe(1);
    expect(big.recordBytes).toBe(big.strings[0]);
    const huge = (await lookup(L.spfHuge)).env.result.spf!.size!;
    expect(huge).toMatchObject({ txtRecords: 6, over512: true, transport: 'tcp' });
    expect(huge.answerBytes).toBeGreaterThan(1232);
    expect(huge.strings.reduce((a, b) => a + b, 0)).toBe(huge.recordBytes);
    expect(Math.max(...huge.strings)).toBe(255);
    const good = (await lookup(L.good)).env.result.spf!.size!;
    expect(good).toMatchObject({ txtRecords: 1, over512: false, transport: 'udp' });
    expect(good.answerBytes).toBe(12 + 16 + 4 + 12 + 1 + good.recordBytes);
    // Indeterminate: the TXT reply is unknown, so is its size.
    expect((await lookup(L.indeterminate)).env.result.spf).toBeNull();
    expect(
      (await lookup(L.spfBig)).outputs.spf.findings.find((x) => x.code === 'spf_dns_answer_over_512')!.evidence![0]!
        .summary,
    ).toMatch(/^TXT spf-big\.test: 3 record\(s\), at least \d+ bytes/);
  });

  it("counts per branch: the tree shows each include's cost", async () => {
    const ev = (await lookup(L.spfOver)).env.result.spf!.evaluation!;
    expect(ev).toMatchObject({ verdict: 'permerror', lookups: 12, lookupsLowerBound: false });
    expect(ev.tree).toMatchObject({
      lookups: 2,
      total: 12,
      children: [
        { domain: `a.${L.spfOver}`, via: 'include', lookups: 5, total: 5 },
        { domain: `b.${L.spfOver}`, lookups: 5, total: 5 },
      ],
    });
  });
});

describe('dkim: selectors inferred from the MX hosts and SPF includes', () => {
  it('puts provider selectors first, says where each came from, and caps the list', () => {
    const probes = selectorsFor(['aspmx.l.google.com'], ['spf.protection.outlook.com', 'sendgrid.net']);
    expect(probes.slice(0, 4)).toEqual([
      { selector: 'google', source: 'mx:google_workspace' },
      { selector: '20230601', source: 'mx:google_workspace' },
      { selector: '20210112', source: 'mx:google_workspace' },
      { selector: '20161025', source: 'mx:google_workspace' },
    ]);
    expect(probes).toContainEqual({ selector: 'selector1', source: 'spf:microsoft_365' });
    expect(probes).toContainEqual({ selector: 's1', source: 'spf:sendgrid' });
    expect(probes).toContainEqual({ selector: 'default', source: 'common' });
    expect(probes.length).toBeLessThanOrEqual(40);
    expect(new Set(probes.map((p) => p.selector)).size).toBe(probes.length);
    // Nothing recognised: the documented list alone.
    expect(selectorsFor(['mx1.good-mail.test'], []).every((p) => p.source === 'common')).toBe(true);
  });

  it("the good posture's key was found under a probed selector and the probes are listed", async () => {
    const dkim = (await lookup(L.good)).env.result.dkim!;
    expect(dkim.probes).toContain('selector1');
    expect(dkim.probed).toBe(dkim.probes.length);
  });
});
