// Issue 30 items 4 and 5, below the job machinery, against the loopback lab's DNS:
//   - what may be an approved scope (the admin CLI's rule) and what a stored row approves;
//   - proof of control: the TXT record _lss-challenge.<scope> asked of the zone's own servers
//     (present, missing, indeterminate; a resolver's cached answer, or one without AA, is no
//     proof: issue 45 item 5), a found token cached, nothing else;
//   - the lane's re-check before an active task sends anything;
//   - ACTIVE_DENY_CIDRS: active work never connects there, whatever ALLOW_PRIVATE_TARGETS allows.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtimeFor } from '../helpers/lab-runtime.ts';
import { labHost } from '../lab/addresses.ts';
import { startLab, type LabPartFactory, type RunningLab } from '../lab/serve.ts';
import { servedApex, type Zone } from '../lab/zones.ts';
import { approvableScope, approvesNames, InvalidScopeError } from '../../src/auth/approved-scopes.ts';
import { askProof, challengeName, ScopeProofs, type ProofDns } from '../../src/auth/scope-proof.ts';
import { scopeProofRefusal } from '../../src/products/kit/active-admission.ts';
import type { CheckContext, ProductRuntime } from '../../src/products/kit/product-contract.ts';
import { createScanChecks } from '../../src/products/scan/checks/index.ts';
import { DEFAULT_ACTIVE_DENY_CIDRS, parseConfig } from '../../src/config/config.ts';

const ZONE = 'proof-lab.test';
const FLAKY = `flaky.${ZONE}`;
const HOST = labHost('scan', 211);
const TOKEN = 'lss-0123456789abcdef0123456789abcdef01234567';

/** Issue 45: another owner's zone, where a dangling wildcard CNAME of ZONE points. */
const OTHER_OWNER = 'other-owner.test';

/**
 * Issue 45: zones whose own server (a mirror on an address of its own) and the resolver (the lab
 * DNS, DNS_SERVERS) disagree, as a resolver's cache and the zone do after a change:
 *   STALE     the resolver still has the token, the zone's server no longer does (removed);
 *   FRESH     the zone's server has it, the resolver not yet (its negative answer cached);
 *   CACHED    the zone's "server" holds the token but answers without AA (a cache, a forwarder);
 *   DEAD      the zone's server listens nowhere (indeterminate, never a disproof).
 */
const STALE = 'stale-cache.test';
const FRESH = 'fresh-record.test';
const CACHED = 'cache-only.test';
const DEAD = 'dead-server.test';
const MIRROR = { stale: labHost('scan', 212), fresh: labHost('scan', 213), cached: labHost('scan', 214) };
const NOWHERE = labHost('scan', 215);
const withToken = (origin: string, ns?: string): Zone => ({
  origin,
  records: [...servedApex(origin, ns), { name: '_lss-challenge', type: 'TXT', data: [TOKEN] }],
});
const without = (origin: string, ns?: string): Zone => ({ origin, records: servedApex(origin, ns) });
const mirrors = [
  { host: MIRROR.stale, zones: [without(STALE, MIRROR.stale)] },
  { host: MIRROR.fresh, zones: [withToken(FRESH, MIRROR.fresh)] },
  { host: MIRROR.cached, zones: [{ ...withToken(CACHED, MIRROR.cached), notAuthoritative: true }] },
];

const zones: Zone[] = [
  // What the resolver (the lab DNS) answers for them.
  withToken(STALE, MIRROR.stale),
  without(FRESH, MIRROR.fresh),
  withToken(CACHED, MIRROR.cached),
  withToken(DEAD, NOWHERE),
  {
    origin: OTHER_OWNER,
    records: [...servedApex(OTHER_OWNER), { name: 'x', type: 'TXT', data: [TOKEN] }],
  },
  {
    origin: ZONE,
    records: [
      ...servedApex(ZONE),
      { name: '@', type: 'A', data: HOST },
      { name: 'www', type: 'A', data: HOST },
      // Issue 45: a wildcard CNAME into another owner's zone (whoever holds it answers the challenge),
      { name: '*.wild', type: 'CNAME', data: `x.${OTHER_OWNER}` },
      // a wildcard TXT that holds the token for every name,
      { name: '*.wildtxt', type: 'TXT', data: [TOKEN] },
      // and a CNAME that stays inside the registrable domain (a proof).
      { name: '_lss-challenge.inside', type: 'CNAME', data: `tok.${ZONE}` },
      { name: 'tok', type: 'TXT', data: [TOKEN] },
    ],
    behaviours: [{ name: `_lss-challenge.flaky`, behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } }],
  },
];

const NONE = { allowSuffixes: [], allowCidrs: [] };
const LAB = { allowSuffixes: ['test'], allowCidrs: [] };

describe('approved scopes: what the admin CLI accepts, and what a stored row approves', () => {
  it.each([
    ['cluster.local', /special-use/],
    ['corp.internal', /special-use/],
    ['10.0.0.1', /IP address/],
    ['8.8.8', /numeric/],
    ['0.1', /numeric/],
    ['-foo.com', /LDH/],
    ['foo-.com', /LDH/],
    ['_dmarc.example.com', /LDH/],
    ['com', /public suffix/],
    ['co.uk', /public suffix.*icann section/],
    ['github.io', /public suffix.*private section/],
    ['10.in-addr.arpa', /arpa/],
    ['home.arpa', /arpa/],
    ['lab.test', /special-use/],
    ['', /not a domain name/],
  ])('refuses %s', (domain, why) => {
    expect(() => approvableScope(domain, NONE)).toThrow(InvalidScopeError);
    expect(() => approvableScope(domain, NONE)).toThrow(why);
  });

  it('accepts a registrable domain or a name below one, normalised', () => {
    expect(approvableScope('*.Shop.Example.COM.', NONE)).toBe('shop.example.com');
    expect(approvableScope('alice.github.io', NONE)).toBe('alice.github.io');
    expect(approvableScope('bücher.de', NONE)).toBe('xn--bcher-kva.de');
    // The lab's zone, where ALLOW_SPECIAL_USE_DOMAINS lists test.
    expect(approvableScope('lab.test', LAB)).toBe('lab.test');
  });

  it('a stored row approves names only when the rule would accept it (shape and list; special-use is the CLI and the migration)', () => {
    for (const bad of ['com', 'co.uk', 'github.io', '0.1', '8.8.8', '-foo.com', '10.0.0.1'])
      expect(approvesNames(bad), bad).toBe(false);
    for (const good of ['example.com', 'alice.github.io', 'lab.test']) expect(approvesNames(good), good).toBe(true);
  });
});

describe('proof of control through the lab DNS', () => {
  let lab: RunningLab;
  let rt: ProductRuntime;
  let dns: ProofDns;
  let connections = 0;
  const ctx = (runtime = rt): CheckContext => ({ runtime, signal: new AbortController().signal });

  beforeAll(async () => {
    const part: LabPartFactory = async (c) => {
      await c.listen(22, [
        {
          host: HOST,
          server: net.createServer((s) => {
            connections++;
            s.destroy();
          }),
        },
      ]);
      return { name: 'proof', zones, dnsMirrors: mirrors, close: async () => {} };
    };
    lab = await startLab({ parts: [part] });
    rt = runtimeFor(lab.env, { SCOPE_PROOF_CACHE_SECONDS: '0' });
    dns = { resolver: rt.services.resolver!, servers: rt.services.outbound! };
  }, 60_000);

  afterAll(async () => {
    await lab?.close();
  });

  it('present only while a TXT record holds the token; another value is missing; SERVFAIL is indeterminate', async () => {
    const resolver = dns;
    expect((await askProof(resolver, ZONE, TOKEN)).state).toBe('missing'); // NXDOMAIN
    lab.dns.publish(challengeName(ZONE), 'TXT', [['someone-else']]);
    const other = await askProof(resolver, ZONE, TOKEN);
    expect(other).toMatchObject({ state: 'missing', name: `_lss-challenge.${ZONE}` });
    lab.dns.publish(challengeName(ZONE), 'TXT', [['someone-else'], [TOKEN.slice(0, 20), TOKEN.slice(20)]]);
    expect((await askProof(resolver, ZONE, TOKEN)).state).toBe('present'); // two strings of one record, joined
    lab.dns.withdraw(challengeName(ZONE));
    expect((await askProof(resolver, ZONE, TOKEN)).state).toBe('missing');
    const flaky = await askProof(resolver, FLAKY, TOKEN);
    expect(flaky.state).toBe('indeterminate');
    expect(flaky.detail).toContain('SERVFAIL');
  });

  it("the record must be the challenge name itself, not a wildcard and not another owner's (issue 45 item 5)", async () => {
    const resolver = dns;
    const viaOther = await askProof(resolver, `wild.${ZONE}`, TOKEN);
    expect(viaOther.state).toBe('missing');
    expect(viaOther.detail).toContain(OTHER_OWNER);
    const wildcard = await askProof(resolver, `wildtxt.${ZONE}`, TOKEN);
    expect(wildcard.state).toBe('missing');
    expect(wildcard.detail).toContain('wildcard');
    // Inside the scope's registrable domain a CNAME may lead to the record.
    expect((await askProof(resolver, `inside.${ZONE}`, TOKEN)).state).toBe('present');
  });

  it('a found token is reused for the cache time; missing and indeterminate answers are asked again', async () => {
    let questions = 0;
    const inner = rt.services.resolver!;
    const counting: ProofDns = {
      servers: dns.servers,
      resolver: {
        readiness: () => inner.readiness(),
        query: (...a) => {
          questions++;
          return inner.query(...a);
        },
      },
    };
    const asked = async (f: () => Promise<unknown>) => {
      const before = questions;
      await f();
      return questions - before;
    };
    const cached = new ScopeProofs(counting, { cacheSeconds: 3600 });
    expect((await cached.check(ZONE, TOKEN)).state).toBe('missing');
    expect(await asked(() => cached.check(ZONE, TOKEN))).toBeGreaterThan(0);
    lab.dns.publish(challengeName(ZONE), 'TXT', [[TOKEN]]);
    expect((await cached.check(ZONE, TOKEN)).state).toBe('present');
    lab.dns.withdraw(challengeName(ZONE));
    // Within the cache time the removal is not seen yet: that is the documented bound (at most an hour).
    expect(await asked(async () => expect((await cached.check(ZONE, TOKEN)).state).toBe('present'))).toBe(0);
    expect(await asked(() => cached.check(FLAKY, TOKEN))).toBeGreaterThan(0);
    expect(await asked(() => cached.check(FLAKY, TOKEN))).toBeGreaterThan(0);
    // With no cache, the removal is seen at once.
    lab.dns.publish(challengeName(ZONE), 'TXT', [[TOKEN]]);
    const uncached = new ScopeProofs(counting, { cacheSeconds: 0 });
    expect((await uncached.check(ZONE, TOKEN)).state).toBe('present');
    lab.dns.withdraw(challengeName(ZONE));
    expect((await uncached.check(ZONE, TOKEN)).state).toBe('missing');
  });

  it("the zone's own servers decide, never a resolver's cache (issue 45 item 5)", async () => {
    // The resolver still holds a removed record: not a proof (the zone's server says it is gone).
    const stale = await askProof(dns, STALE, TOKEN);
    expect(stale.state).toBe('missing');
    // A record the zone's server holds is the proof, whatever the resolver has cached.
    expect(await askProof(dns, FRESH, TOKEN)).toMatchObject({ state: 'present' });
    // A copy served without the AA bit (a cache, a forwarder asked as the zone's server) is no proof.
    const copy = await askProof(dns, CACHED, TOKEN);
    expect(copy).toMatchObject({ state: 'indeterminate', reason: 'not_authoritative' });
    expect(copy.detail).toContain('AA');
    // No authoritative server reachable: nothing is known, neither proof nor removal.
    const dead = await askProof(dns, DEAD, TOKEN);
    expect(dead).toMatchObject({ state: 'indeterminate', reason: 'unreachable' });
  });

  it('in the lane: an active task of a verified scope runs only while the record holds the token; nothing is sent otherwise', async () => {
    const probe = createScanChecks({ tcp: { connectTimeoutMs: 500 } }).find((c) => c.name === 'scan.tcp_probe')!;
    const task = (scope: string) => ({
      objectKey: `www.${ZONE}`,
      target: ZONE,
      distance: 1,
      params: { host: `www.${ZONE}`, approvedScope: scope, scopeProof: 'verified', proofToken: TOKEN },
    });
    lab.dns.publish(challengeName(ZONE), 'TXT', [[TOKEN]]);
    expect(await scopeProofRefusal(task(ZONE), ctx())).toBeNull();
    const ran = await probe.run(task(ZONE), ctx());
    expect(ran.status).toBe('completed');
    expect(connections).toBeGreaterThan(0);

    lab.dns.withdraw(challengeName(ZONE));
    const before = connections;
    const gone = await probe.run(task(ZONE), ctx());
    expect(gone).toMatchObject({ status: 'unavailable', reason: 'proof_missing' });
    expect(gone.limitations.map((l) => l.code)).toEqual(['proof_missing']);
    const unknown = await probe.run(task(FLAKY), ctx());
    expect(unknown).toMatchObject({ status: 'unavailable', reason: 'proof_indeterminate' });
    expect(connections).toBe(before);
    // An operator's approval is not asked about.
    const override = await scopeProofRefusal(
      { objectKey: `www.${ZONE}`, params: { approvedScope: ZONE, scopeProof: 'operator_override' } },
      ctx(),
    );
    expect(override).toBeNull();
  });

  it('ACTIVE_DENY_CIDRS: active work never connects there, although ALLOW_PRIVATE_TARGETS allows it; passive work still may', async () => {
    const denied = runtimeFor(lab.env, { ACTIVE_DENY_CIDRS: `${HOST}/32` });
    const probe = createScanChecks({ tcp: { connectTimeoutMs: 500 } }).find((c) => c.name === 'scan.tcp_probe')!;
    const before = connections;
    const out = await probe.run(
      { objectKey: `www.${ZONE}`, target: ZONE, distance: 1, params: { host: `www.${ZONE}` } },
      ctx(denied),
    );
    expect(out).toMatchObject({ status: 'unavailable', reason: 'target_not_allowed' });
    expect(connections).toBe(before);
    // The passive guard of the same process still reaches the host (a web lookup of it works).
    expect(await denied.services.outbound!.resolve(`www.${ZONE}`)).toEqual([HOST]);
    await expect(denied.services.activeOutbound!.resolve(`www.${ZONE}`)).rejects.toMatchObject({
      reason: 'target_not_allowed',
      range: 'active_denied',
    });
  });

  it('the default deny list holds the cloud metadata ranges', () => {
    const c = parseConfig({
      DATABASE_URL: 'mysql://x',
      REDIS_URL: 'redis://x',
      KEY_PEPPER: 'x'.repeat(32),
      CURSOR_SECRET: 'y'.repeat(32),
      WEBHOOK_SECRET_KEY: 'w'.repeat(32),
    });
    expect(c.ACTIVE_DENY_CIDRS).toEqual([...DEFAULT_ACTIVE_DENY_CIDRS]);
    expect(c.ACTIVE_DENY_CIDRS).toEqual(
      expect.arrayContaining(['169.254.0.0/16', '100.100.100.200/32', '168.63.129.16/32', 'fd00:ec2::/32']),
    );
  });
});
