// lookup.domain.v1 below the job machinery: the three checks against the real DNS lab (through
// the real StubResolver) and the real RDAP lab, then plan() and assemble() on their outputs.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/config.ts';
import { ApiError } from '../../src/contract/errors.ts';
import { buildEnvelope } from '../../src/contract/envelope.ts';
import { createProductRuntime } from '../../src/products/kit/runtime.ts';
import { createDomainChecks, domainInput, domainProduct, domainResult } from '../../src/products/domain/index.ts';
import { resetBootstrapCache } from '../../src/rdap/bootstrap.ts';
import { productReadiness } from '../../src/products/kit/readiness.ts';
import type { CheckOutput, FindingOut, TaskOutcomeView } from '../../src/contract/tasks.ts';
import type { CheckSpec, ProductRuntime } from '../../src/products/kit/product-contract.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { domainLabNames as d, domainZones } from '../lab/domain-zones.ts';
import { LAB_REGISTRAR } from '../lab/rdap-fixtures.ts';
import { startLabRdap, type LabRdap } from '../lab/rdap-server.ts';
import { labNames, labZones } from '../lab/zones.ts';
import { LAB_SPECIAL_USE } from '../lab/addresses.ts';

let dns: LabDns;
let rdap: LabRdap;
let rt: ProductRuntime; // RDAP_BASE_URL = the lab, loopback allowed
let rtNoRdap: ProductRuntime; // no RDAP_BASE_URL: the snapshot, which has no .test
let rtNoAllow: ProductRuntime; // RDAP_BASE_URL = the lab, ALLOW_PRIVATE_TARGETS empty
let rtNoResolver: ProductRuntime;

const checks = createDomainChecks({ rdapTimeoutMs: 500 });
const spec = (name: string): CheckSpec => checks.find((c) => c.name === name)!;

function runtime(env: Record<string, string>): ProductRuntime {
  const config = parseConfig({
    DATABASE_URL: 'mysql://x',
    REDIS_URL: 'redis://x',
    KEY_PEPPER: 'x'.repeat(32),
    CURSOR_SECRET: 'y'.repeat(32),
    WEBHOOK_SECRET_KEY: 'w'.repeat(32),
    // Bracketed: src/config/config.ts rejects plain "ip:port" for IPv4 (see the dns product test).
    DNS_SERVERS: `[${dns.host}]:${dns.port}`,
    DNS_TIMEOUT_MS: '500',
    ALLOW_SPECIAL_USE_DOMAINS: LAB_SPECIAL_USE,
    RDAP_BOOTSTRAP_URL: 'off', // never IANA's real file (the default)
    ...env,
  });
  return createProductRuntime(config, pino({ level: 'silent' }));
}

beforeAll(async () => {
  dns = await startLabDns({ zones: [...labZones, ...domainZones] });
  rdap = await startLabRdap();
  rt = runtime({ RDAP_BASE_URL: rdap.baseUrl, ALLOW_PRIVATE_TARGETS: '127.0.0.0/8' });
  rtNoRdap = runtime({ ALLOW_PRIVATE_TARGETS: '127.0.0.0/8' });
  rtNoAllow = runtime({ RDAP_BASE_URL: rdap.baseUrl });
  rtNoResolver = { ...rt, services: {} };
  resetBootstrapCache();
});

afterAll(async () => {
  await Promise.all([dns?.close(), rdap?.close()]);
});

const run = (check: string, name: string, runtime = rt): Promise<CheckOutput> =>
  spec(check).run({ objectKey: name, target: name, params: {} }, { runtime, signal: new AbortController().signal });
const delegation = (name: string, r = rt) => run('domain.delegation', name, r);
const registration = (name: string, r = rt) => run('domain.registration', name, r);
const records = (name: string, r = rt) => run('domain.records', name, r);
const codes = (fs: FindingOut[]) => fs.map((f) => f.code).sort();

describe('domain.delegation', () => {
  it('a registered domain: NS with addresses, SOA, DS absent (answered NODATA)', async () => {
    const out = await delegation(d.expired);
    expect(out.status).toBe('completed');
    expect(out.projection).toMatchObject({
      zone: d.expired,
      state: 'delegated',
      nameservers: [
        { name: `ns1.${d.expired}`, addresses: ['127.0.0.53'], resolution: 'resolved' },
        { name: `ns2.${d.expired}`, addresses: ['127.0.0.54', '::1'], resolution: 'resolved' },
      ],
      soa: { mname: `ns1.${d.expired}`, serial: 2026020101 },
      dnssec: { ds: 'absent', records: [], validation: 'not_validated_locally' },
      queries: { NS: { outcome: 'answer', rcode: 'NOERROR' }, SOA: { outcome: 'answer' }, DS: { outcome: 'nodata' } },
    });
    expect(codes(out.findings)).toEqual(['dnssec_not_signed']);
    expect(out.findings[0]).toMatchObject({ severity: 'info', object: { type: 'domain', key: d.expired } });
    expect(out.objects.map((o) => `${o.type}:${o.key}`).sort()).toEqual(
      [
        `domain:${d.expired}`,
        'ip_address:127.0.0.53',
        'ip_address:127.0.0.54',
        'ip_address:::1',
        `ns_host:ns1.${d.expired}`,
        `ns_host:ns2.${d.expired}`,
      ].sort(),
    );
    expect(out.relations).toContainEqual({
      from: { type: 'ns_host', key: `ns1.${d.expired}` },
      relation: 'ns_of',
      to: { type: 'domain', key: d.expired },
    });
    expect(out.relations).toContainEqual({
      from: { type: 'ns_host', key: `ns2.${d.expired}` },
      relation: 'resolves_to',
      to: { type: 'ip_address', key: '::1' },
    });
    expect(out.sources).toEqual([{ source: 'dns_resolver' }]);
    expect(JSON.stringify(out)).not.toContain(dns.address);
  });

  it('a single name server is a low finding', async () => {
    const out = await delegation(labNames.apex);
    expect(out.status).toBe('completed');
    expect(codes(out.findings)).toEqual(['dns_single_nameserver', 'dnssec_not_signed']);
    expect(out.findings.find((f) => f.code === 'dns_single_nameserver')).toMatchObject({
      severity: 'low',
      confidence: 'confirmed',
    });
  });

  it('a name below the registrable domain: both are reported, the delegation is the registrable one', async () => {
    const out = await delegation(labNames.www);
    expect(out.projection).toMatchObject({ zone: 'lab.test', state: 'delegated' });
    const target = out.objects.find((o) => o.key === 'www.lab.test')!;
    expect(target).toMatchObject({
      type: 'domain',
      projection: { name: 'www.lab.test', registrableDomain: 'lab.test', publicSuffix: 'test' },
    });
    expect(out.objects.find((o) => o.type === 'domain' && o.key === 'lab.test')).toBeDefined();
    expect(out.relations).toContainEqual({
      from: { type: 'domain', key: 'lab.test' },
      relation: 'discovered_from',
      to: { type: 'domain', key: 'www.lab.test' },
    });
    expect(out.findings.every((f) => f.object.key === 'lab.test')).toBe(true);
  });

  it('NXDOMAIN for the registrable domain: dns_delegation_missing, the lane completed', async () => {
    const out = await delegation(d.notRegistered);
    expect(out.status).toBe('completed');
    expect(out.projection).toMatchObject({
      state: 'not_delegated',
      nameservers: [],
      queries: { NS: { outcome: 'nxdomain', rcode: 'NXDOMAIN' } },
    });
    expect(codes(out.findings)).toEqual(['dns_delegation_missing']);
    expect(out.findings[0]).toMatchObject({
      severity: 'medium',
      confidence: 'confirmed',
      object: { type: 'domain', key: d.notRegistered },
    });
  });

  it('SERVFAIL: unavailable with a limitation, never a "missing" finding', async () => {
    const out = await delegation(d.servfail);
    expect(out).toMatchObject({ status: 'unavailable', reason: 'dns_servfail', findings: [] });
    expect(out.limitations.map((l) => l.code)).toEqual(['dns_delegation_unavailable']);
    expect(out.limitations[0]!.message).toContain('unknown, not missing');
    expect(out.projection).toMatchObject({ state: 'unknown' });
  });

  it('timeout: timeout with a limitation, no finding', async () => {
    const out = await delegation(d.timeout);
    expect(out).toMatchObject({ status: 'timeout', reason: 'dns_timeout', findings: [] });
    expect(out.limitations.map((l) => l.code)).toEqual(['dns_delegation_timeout']);
  });

  it('DS present: signed, reported as given (not validated locally), no dnssec finding', async () => {
    const out = await delegation(d.signed);
    expect(out.projection).toMatchObject({
      dnssec: { ds: 'present', records: [{ keyTag: 12345, algorithm: 13, digestType: 2, digest: 'aa'.repeat(32) }] },
    });
    expect(codes(out.findings)).toEqual([]);
    expect(out.limitations.map((l) => l.code)).toEqual(['dnssec_not_validated']);
  });

  it('DS unanswered: partial, DNSSEC unknown, no dnssec_not_signed', async () => {
    const out = await delegation(d.dsTimeout);
    expect(out.status).toBe('partial');
    expect(out.projection).toMatchObject({
      state: 'delegated',
      dnssec: { ds: 'unknown' },
      queries: { DS: { outcome: 'timeout', rcode: null } },
    });
    expect(codes(out.findings)).toEqual([]);
    expect(out.limitations.map((l) => l.code)).toEqual(['dnssec_status_unknown']);
  });

  it('an NS host that does not exist is a medium finding on that host', async () => {
    const out = await delegation(d.danglingNs);
    const f = out.findings.find((x) => x.code === 'dns_nameserver_nxdomain');
    expect(f).toMatchObject({ severity: 'medium', object: { type: 'ns_host', key: d.goneNsHost } });
    expect(out.projection).toMatchObject({
      nameservers: expect.arrayContaining([{ name: d.goneNsHost, addresses: [], resolution: 'nxdomain' }]),
    });
  });

  it('no resolver configured: unavailable', async () => {
    expect(await delegation(d.expired, rtNoResolver)).toMatchObject({
      status: 'unavailable',
      reason: 'resolver_not_configured',
      findings: [],
    });
  });
});

describe('domain.registration', () => {
  it('a registered domain: registrar, events, status; sources say rdap and nothing about the server', async () => {
    const out = await registration(labNames.apex);
    expect(out.status).toBe('completed');
    expect(out.projection).toMatchObject({
      domain: 'lab.test',
      registered: true,
      registrar: LAB_REGISTRAR,
      status: ['active', 'client transfer prohibited'],
      nameservers: ['ns1.lab.test', 'ns2.lab.test'],
      secureDNS: { delegationSigned: false },
      source: 'rdap',
    });
    expect((out.projection as { daysUntilExpiration: number }).daysUntilExpiration).toBeGreaterThan(390);
    expect(out.objects).toEqual([{ type: 'registration', key: 'lab.test', distance: 0, projection: out.projection }]);
    expect(out.findings).toEqual([]);
    expect(out.sources).toEqual([{ source: 'rdap' }]);
    expect(JSON.stringify(out)).not.toContain(rdap.baseUrl);
    expect(JSON.stringify(out)).not.toContain(`:${rdap.port}`);
  });

  it('expired: domain_expired (high) from the RDAP expiration event', async () => {
    const out = await registration(d.expired);
    expect(codes(out.findings)).toEqual(['domain_expired']);
    expect(out.findings[0]).toMatchObject({ severity: 'high', object: { type: 'registration', key: d.expired } });
    expect((out.projection as { daysUntilExpiration: number }).daysUntilExpiration).toBeLessThan(0);
  });

  it('expiring within 30 days: domain_expiring_soon (medium)', async () => {
    const out = await registration(d.expiringSoon);
    expect(codes(out.findings)).toEqual(['domain_expiring_soon']);
    expect(out.findings[0]!.severity).toBe('medium');
  });

  it('a subdomain is looked up as its registrable domain', async () => {
    const out = await registration(`www.${d.expired}`);
    expect(out.projection).toMatchObject({ domain: d.expired, registered: true });
    expect(rdap.requests).not.toContain(`/domain/www.${d.expired}`);
  });

  it('RDAP 404: completed, registered false, no finding', async () => {
    const out = await registration(d.notRegistered);
    expect(out).toMatchObject({
      status: 'completed',
      findings: [],
      projection: { domain: d.notRegistered, registered: false, registrar: null },
    });
  });

  it('RDAP unconfigured for the TLD (no RDAP_BASE_URL, .test absent from the snapshot): unavailable', async () => {
    const out = await registration(labNames.apex, rtNoRdap);
    expect(out).toMatchObject({ status: 'unavailable', reason: 'rdap_no_service_for_tld', findings: [], objects: [] });
    expect(out.limitations.map((l) => l.code)).toEqual(['registration_unavailable']);
  });

  it('a private RDAP server with ALLOW_PRIVATE_TARGETS empty: refused, unavailable target_not_allowed', async () => {
    const before = rdap.requests.length;
    const out = await registration(labNames.apex, rtNoAllow);
    expect(out).toMatchObject({ status: 'unavailable', reason: 'target_not_allowed', findings: [] });
    expect(rdap.requests.length).toBe(before);
  });

  it('a server error is unavailable; a silent server is timeout; neither is "not registered"', async () => {
    expect(await registration(d.serverError)).toMatchObject({
      status: 'unavailable',
      reason: 'rdap_unreachable',
      findings: [],
    });
    const slow = await registration(d.slow);
    expect(slow).toMatchObject({ status: 'timeout', reason: 'rdap_timeout', findings: [] });
    expect(slow.limitations.map((l) => l.code)).toEqual(['registration_timeout']);
  });

  it('a public suffix has no registration: skipped, not applicable', async () => {
    expect(await registration('test')).toMatchObject({ status: 'skipped', reason: 'not_applicable', findings: [] });
  });
});

describe('domain.records', () => {
  it('A, AAAA, MX, TXT, CAA of the target; addresses and MX hosts as objects', async () => {
    const out = await records(labNames.apex);
    expect(out.status).toBe('completed');
    const p = out.projection as { records: Record<string, { outcome: string; answers: Array<{ data: unknown }> }> };
    expect(Object.keys(p.records)).toEqual(['A', 'AAAA', 'MX', 'TXT', 'CAA']);
    expect(p.records.A!.answers.map((a) => a.data)).toEqual(['127.0.0.10']);
    expect(p.records.MX!.answers.map((a) => a.data)).toEqual([
      { preference: 10, exchange: 'mail.lab.test' },
      { preference: 20, exchange: 'mail2.lab.test' },
    ]);
    expect(p.records.CAA!.answers.map((a) => a.data)).toContainEqual({ flags: 0, tag: 'issue', value: 'ca.lab.test' });
    const domain = out.objects.find((o) => o.type === 'domain')!;
    expect(domain.projection).toMatchObject({ name: 'lab.test', records: { A: ['127.0.0.10'], AAAA: ['::1'] } });
    expect(out.relations).toContainEqual({
      from: { type: 'domain', key: 'lab.test' },
      relation: 'resolves_to',
      to: { type: 'ip_address', key: '127.0.0.10' },
    });
    expect(out.relations).toContainEqual({
      from: { type: 'mx_host', key: 'mail.lab.test' },
      relation: 'mx_of',
      to: { type: 'domain', key: 'lab.test' },
    });
    expect(out.findings).toEqual([]);
  });

  it('NXDOMAIN target: completed (an answer), no objects beyond the domain', async () => {
    const out = await records(labNames.nxdomain);
    expect(out.status).toBe('completed');
    expect(out.objects.map((o) => o.type)).toEqual(['domain']);
  });

  it('SERVFAIL target: unavailable, every type unknown, no finding', async () => {
    const out = await records(labNames.servfail);
    expect(out).toMatchObject({ status: 'unavailable', reason: 'dns_servfail', findings: [] });
    expect(out.limitations).toHaveLength(5);
    expect(out.objects[0]!.projection).toMatchObject({ records: { A: null, MX: null } });
  });

  it('some types unanswered: partial, the answered ones kept', async () => {
    const out = await records(labNames.partial);
    expect(out.status).toBe('partial');
    expect(out.limitations.map((l) => l.message.split(' ')[0])).toEqual(['TXT', 'CAA']);
    expect(out.objects.find((o) => o.type === 'ip_address')?.key).toBe('127.0.0.43');
  });

  it('silent server: timeout', async () => {
    expect(await records(labNames.timeout)).toMatchObject({ status: 'timeout', reason: 'dns_timeout', findings: [] });
  });
});

// ---- plan, assemble, readiness -----------------------------------------------------------------

const job = domainProduct.job!;

async function tasksFor(name: string, runtime = rt, skip: string[] = []): Promise<TaskOutcomeView[]> {
  const plans = job.plan(domainInput.parse({ value: name }));
  const out: TaskOutcomeView[] = [];
  for (const p of plans) {
    if (skip.includes(p.check)) continue;
    const output = await run(p.check, p.objectKey, runtime);
    out.push({
      check: p.check,
      productLane: p.productLane,
      required: p.required,
      objectKey: p.objectKey,
      status: output.status,
      reason: output.reason,
      output,
    });
  }
  return out;
}

describe('plan and assemble', () => {
  it('plan: three tasks on the domain lane, costs summing to the price', () => {
    const input = domainInput.parse({ value: 'WWW.Lab.Test.' });
    const plans = job.plan(input);
    expect(plans.map((p) => [p.check, p.lane, p.productLane, p.required, p.unitCost, p.objectKey])).toEqual([
      ['domain.delegation', 'domain', 'dns_delegation', true, 1, 'www.lab.test'],
      ['domain.registration', 'domain', 'registration', false, 1, 'www.lab.test'],
      ['domain.records', 'domain', 'dns_records', false, 0, 'www.lab.test'],
    ]);
    expect(plans.reduce((s, p) => s + p.unitCost, 0)).toBe(domainProduct.price(input));
    expect(job.target(input)).toEqual({ type: 'domain_name', value: 'www.lab.test' });
    expect(job.deadlineMs).toBe(120_000);
    expect(new Set(checks.map((c) => c.name))).toEqual(new Set(plans.map((p) => p.check)));
  });

  it('all lanes complete: a completed envelope whose result matches the schema', async () => {
    const tasks = await tasksFor(d.expired);
    const out = job.assemble!(domainInput.parse({ value: d.expired }), tasks);
    expect(domainResult.parse(out.result)).toEqual(out.result);
    expect(out.result).toMatchObject({
      name: d.expired,
      registrableDomain: d.expired,
      publicSuffix: 'test',
      delegation: { state: 'delegated' },
      registration: { registered: true },
      records: { name: d.expired },
    });
    expect(out.lanes.map((l) => [l.lane, l.required, l.status])).toEqual([
      ['dns_delegation', true, 'completed'],
      ['registration', false, 'completed'],
      ['dns_records', false, 'completed'],
    ]);
    expect(out.sources).toEqual([{ source: 'dns_resolver' }, { source: 'rdap' }]);
    const env = buildEnvelope(domainProduct, { value: d.expired }, out, 'req_t', 2);
    expect(env).toMatchObject({
      product: 'lookup.domain.v1',
      status: 'completed',
      coverage: { complete: true },
      credits: { charged: 2 },
    });
    const text = JSON.stringify(env);
    expect(text).not.toContain(rdap.baseUrl);
    expect(text).not.toContain(dns.address);
  });

  it('partial: lanes that did not complete contribute null and their limitations', async () => {
    // Delegation of lab.test completes; RDAP has no service for .test; timeout.lab.test is silent.
    const tasks = await tasksFor(labNames.timeout, rtNoRdap);
    const out = job.assemble!(domainInput.parse({ value: labNames.timeout }), tasks);
    const result = domainResult.parse(out.result);
    expect(result).toEqual(out.result);
    expect(result).toMatchObject({
      name: 'timeout.lab.test',
      registrableDomain: 'lab.test',
      registration: null,
      records: null,
    });
    expect(result.delegation).toMatchObject({ zone: 'lab.test', state: 'delegated' });
    expect(out.lanes.map((l) => [l.lane, l.status, l.reason])).toEqual([
      ['dns_delegation', 'completed', undefined],
      ['registration', 'unavailable', 'rdap_no_service_for_tld'],
      ['dns_records', 'timeout', 'dns_timeout'],
    ]);
    expect(out.limitations.map((l) => l.code)).toEqual(
      expect.arrayContaining(['registration_unavailable', 'dns_indeterminate']),
    );
    const env = buildEnvelope(domainProduct, { value: labNames.timeout }, out, 'req_t', 1);
    expect(env).toMatchObject({ status: 'partial', coverage: { complete: false } });
  });

  it('a task without outcome is a failed lane with a limitation; a failed required lane fails the envelope', async () => {
    const tasks = await tasksFor(d.servfail, rt, ['domain.records']);
    const out = job.assemble!(domainInput.parse({ value: d.servfail }), tasks);
    const result = domainResult.parse(out.result);
    expect(result).toEqual(out.result);
    expect(result.delegation).toBeNull();
    expect(out.lanes.map((l) => [l.lane, l.status, l.reason])).toEqual([
      ['dns_delegation', 'unavailable', 'dns_servfail'],
      ['registration', 'completed', undefined],
      ['dns_records', 'failed', 'task_missing'],
    ]);
    expect(out.limitations.map((l) => l.code)).toEqual(['dns_delegation_unavailable', 'dns_records_failed']);
    expect(() => buildEnvelope(domainProduct, { value: d.servfail }, out, 'req_t')).toThrow(ApiError);
  });

  it('a task that ended without output (e.g. dead-lettered) still explains its null', () => {
    const out = job.assemble!(domainInput.parse({ value: 'lab.test' }), [
      {
        check: 'domain.delegation',
        productLane: 'dns_delegation',
        required: true,
        objectKey: 'lab.test',
        status: 'failed',
        reason: 'dead_lettered',
        output: null,
      },
    ]);
    expect(domainResult.parse(out.result).delegation).toBeNull();
    expect(out.limitations[0]).toMatchObject({ code: 'dns_delegation_failed' });
    expect(out.lanes[0]).toMatchObject({ lane: 'dns_delegation', status: 'failed', reason: 'dead_lettered' });
  });
});

describe('readiness', () => {
  it('ready with a resolver; registration ready from the snapshot alone', () => {
    expect(domainProduct.readiness(rtNoRdap)).toEqual({
      dns_delegation: 'ready',
      registration: 'ready',
      dns_records: 'ready',
    });
    // The product also needs a live domain lane worker (src/queue/lane-health.ts).
    expect(productReadiness(domainProduct, rt)).toBe('unavailable');
    const liveness = (up: (lane: string) => boolean) => ({
      state: (lane: string) => (up(lane) ? ('alive' as const) : ('down' as const)),
      accepting: up,
    });
    const live = {
      ...rt,
      services: {
        ...rt.services,
        laneHealth: liveness((lane) => lane === 'domain' || lane === 'orchestrator'),
      },
    };
    expect(productReadiness(domainProduct, live)).toBe('available');
    const otherLane = {
      ...rt,
      services: { ...rt.services, laneHealth: liveness((lane) => lane === 'dns' || lane === 'orchestrator') },
    };
    expect(productReadiness(domainProduct, otherLane)).toBe('unavailable');
    const noOrchestrator = {
      ...rt,
      services: { ...rt.services, laneHealth: liveness((lane) => lane === 'domain') },
    };
    expect(productReadiness(domainProduct, noOrchestrator)).toBe('unavailable');
    // A domain worker being restarted (within LANE_RESTART_GRACE_MS) still takes the job.
    const restarting = {
      ...rt,
      services: {
        ...rt.services,
        laneHealth: {
          state: (lane: string) => (lane === 'domain' ? ('restarting' as const) : ('alive' as const)),
          accepting: () => true,
        },
      },
    };
    expect(productReadiness(domainProduct, restarting)).toBe('available');
  });

  it('without a resolver the required lane is unconfigured: the product is unavailable', () => {
    expect(domainProduct.readiness(rtNoResolver)).toMatchObject({
      dns_delegation: 'unconfigured',
      dns_records: 'unconfigured',
    });
    expect(productReadiness(domainProduct, rtNoResolver)).toBe('unavailable');
  });

  it('the product keeps the placeholder identity', () => {
    expect(domainProduct).toMatchObject({
      id: 'lookup.domain.v1',
      path: '/v2/lookups/domain',
      mode: 'async',
      rateClass: 'async_lookup',
      scope: 'scan:create',
    });
    expect(domainProduct.price(domainInput.parse({ value: 'example.com' }))).toBe(2);
    expect(domainInput.safeParse({ value: 'example.com', extra: 1 }).success).toBe(false);
  });
});
