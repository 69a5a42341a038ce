// RDAP: RFC 9224 bootstrap matching, the reply reduction, and the client against the real RDAP
// lab server on loopback (no mocks): base URL, bootstrap URL, 404, errors, redirects, refusals.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../../src/config/config.ts';
import {
  findRdapService,
  parseDnsBootstrap,
  resetBootstrapCache,
  snapshotBootstrap,
} from '../../src/rdap/bootstrap.ts';
import { lookupDomain } from '../../src/rdap/client.ts';
import { parseDomainResponse } from '../../src/rdap/domain-response.ts';
import { createResolver } from '../../src/dns/stub-resolver.ts';
import { createOutboundGuard } from '../../src/net/outbound-guard.ts';
import { LAB_REGISTRAR, rdapNames as n } from '../lab/rdap-fixtures.ts';
import { startLabRdap, type LabRdap } from '../lab/rdap-server.ts';
import { LAB_ALLOW } from '../lab/addresses.ts';

const BASE_ENV = {
  DATABASE_URL: 'mysql://x',
  REDIS_URL: 'redis://x',
  KEY_PEPPER: 'x'.repeat(32),
  CURSOR_SECRET: 'y'.repeat(32),
  WEBHOOK_SECRET_KEY: 'w'.repeat(32),
  RDAP_BOOTSTRAP_URL: 'off', // never IANA's real file (the default); tests that want one set the lab's
};
const config = (env: Record<string, string> = {}): Config => parseConfig({ ...BASE_ENV, ...env });
/** The guard a lane would get from its runtime for this configuration. */
const guardFor = (c: Config) =>
  createOutboundGuard({ allow: c.ALLOW_PRIVATE_TARGETS, resolver: createResolver(c), portMap: c.OUTBOUND_PORT_MAP });
const via = (c: Config, extra: Record<string, unknown> = {}) => ({ config: c, guard: guardFor(c), ...extra });

describe('RFC 9224 bootstrap', () => {
  const file = {
    version: '1.0',
    publication: '2026-01-14T00:00:00Z',
    description: 'RDAP bootstrap file for Domain Name System registrations',
    services: [
      [
        ['com', 'net'],
        ['http://rdap.example.com/', 'https://rdap.example.com/'],
      ],
      [['uk'], ['https://rdap.uk.example/']],
      [['co.uk'], ['https://rdap.co-uk.example/']],
      [['example.org'], ['https://rdap.sub.example/']],
      [['org'], ['https://rdap.org.example/']],
      [['ftp-only'], ['ftp://nope.example/']],
    ],
  };
  const b = parseDnsBootstrap(file);

  it('matches the entry with the most trailing labels (longest match)', () => {
    expect(findRdapService(b, 'bbc.co.uk')).toEqual({ entry: 'co.uk', baseUrl: 'https://rdap.co-uk.example/' });
    expect(findRdapService(b, 'www.bbc.co.uk')?.entry).toBe('co.uk');
    expect(findRdapService(b, 'nominet.uk')?.entry).toBe('uk');
    expect(findRdapService(b, 'a.example.org')).toEqual({ entry: 'example.org', baseUrl: 'https://rdap.sub.example/' });
    expect(findRdapService(b, 'wikipedia.org')?.entry).toBe('org');
  });

  it('matches labels, not string suffixes; case and a trailing dot do not matter', () => {
    expect(findRdapService(b, 'notexample.org')?.entry).toBe('org');
    expect(findRdapService(b, 'EXAMPLE.NET.')?.entry).toBe('net');
    expect(findRdapService(b, 'example.test')).toBeNull();
    expect(findRdapService(b, 'x.ftp-only')).toBeNull(); // no http(s) URL: no service
  });

  it('prefers HTTPS when both schemes are listed', () => {
    expect(findRdapService(b, 'example.com')?.baseUrl).toBe('https://rdap.example.com/');
  });

  it('rejects a file that is not a bootstrap file', () => {
    expect(() => parseDnsBootstrap({ services: 'nope' })).toThrow();
    expect(() => parseDnsBootstrap([])).toThrow();
  });

  it('the shipped snapshot is a valid file that covers com and not .test', () => {
    const snap = snapshotBootstrap();
    expect(snap).not.toBeNull();
    expect(findRdapService(snap!, 'example.com')?.baseUrl).toBe('https://rdap.verisign.com/com/v1/');
    expect(findRdapService(snap!, 'bbc.co.uk')?.entry).toBe('uk');
    expect(findRdapService(snap!, 'lab.test')).toBeNull();
  });
});

describe('parseDomainResponse', () => {
  it('keeps what the product reports and drops links, notices and contacts', () => {
    const d = parseDomainResponse(
      {
        objectClassName: 'domain',
        handle: 'H-1',
        ldhName: 'EXAMPLE.COM',
        links: [{ href: 'https://rdap.secret.example/domain/example.com' }],
        entities: [
          { roles: ['registrant'], vcardArray: ['vcard', [['fn', {}, 'text', 'Private Person']]] },
          {
            roles: ['registrar'],
            publicIds: [{ type: 'IANA Registrar ID', identifier: '292' }],
            vcardArray: [
              'vcard',
              [
                ['version', {}, 'text', '4.0'],
                ['fn', {}, 'text', 'MarkMonitor Inc.'],
              ],
            ],
          },
        ],
        events: [
          { eventAction: 'registration', eventDate: '1997-09-15T04:00:00Z' },
          { eventAction: 'expiration', eventDate: 'not a date' },
        ],
        status: ['Client Delete Prohibited'],
        nameservers: [{ ldhName: 'NS1.EXAMPLE.COM.' }, { ldhName: 'ns1.example.com' }, { nope: 1 }],
        secureDNS: { delegationSigned: false },
      },
      'example.com',
    );
    expect(d).toEqual({
      handle: 'H-1',
      ldhName: 'example.com',
      registrar: { name: 'MarkMonitor Inc.', ianaId: '292' },
      events: { registration: '1997-09-15T04:00:00.000Z', expiration: null, lastChanged: null },
      status: ['client delete prohibited'],
      nameservers: ['ns1.example.com'],
      secureDNS: { delegationSigned: false },
      source: 'rdap',
    });
    expect(JSON.stringify(d)).not.toMatch(/secret|Private Person/);
  });

  it('is null for another object class or another name', () => {
    expect(parseDomainResponse({ objectClassName: 'entity', handle: 'X' }, 'example.com')).toBeNull();
    expect(parseDomainResponse({ objectClassName: 'domain', ldhName: 'other.com' }, 'example.com')).toBeNull();
    expect(parseDomainResponse('nope', 'example.com')).toBeNull();
  });
});

describe('lookupDomain against the RDAP lab', () => {
  let lab: LabRdap;
  let viaBase: Config;
  beforeAll(async () => {
    lab = await startLabRdap();
    viaBase = config({ RDAP_BASE_URL: lab.baseUrl, ALLOW_PRIVATE_TARGETS: '127.0.0.0/8' });
  });
  afterAll(async () => {
    await lab.close();
  });
  beforeEach(() => resetBootstrapCache());

  it('a registered domain: registrar, events, status, name servers, DNSSEC; no server URL, no contact data', async () => {
    const r = await lookupDomain(n.registered, via(viaBase));
    expect(r.status).toBe('completed');
    if (r.status !== 'completed' || r.notFound) throw new Error('expected data');
    expect(r.data).toMatchObject({
      ldhName: 'lab.test',
      handle: 'LAB_TEST-LAB',
      registrar: LAB_REGISTRAR,
      status: ['active', 'client transfer prohibited'],
      nameservers: ['ns1.lab.test', 'ns2.lab.test'],
      secureDNS: { delegationSigned: false },
      source: 'rdap',
    });
    expect(r.data.events.registration).toBe('2019-03-01T12:00:00.000Z');
    expect(Date.parse(r.data.events.expiration!)).toBeGreaterThan(Date.now());
    expect(r.service).toEqual({ via: 'base_url' });
    const text = JSON.stringify(r);
    expect(text).not.toContain(lab.baseUrl);
    expect(text).not.toContain(String(lab.port));
    expect(text).not.toMatch(/Jane|jane@|whois\.lab/);
    expect(lab.requests).toContain('/domain/lab.test');
  });

  it('404 from the server is the one "not registered"', async () => {
    expect(await lookupDomain(n.notRegistered, via(viaBase))).toEqual({
      status: 'completed',
      notFound: true,
      service: { via: 'base_url' },
    });
  });

  it('a server error is unavailable, never not-registered', async () => {
    expect(await lookupDomain(n.serverError, via(viaBase))).toEqual({
      status: 'unavailable',
      reason: 'rdap_unreachable',
    });
  });

  it('a server that never answers is a timeout', async () => {
    const t0 = performance.now();
    expect(await lookupDomain(n.slow, via(viaBase, { timeoutMs: 300 }))).toEqual({ status: 'timeout' });
    expect(performance.now() - t0).toBeLessThan(3000);
  });

  it('follows a redirect to another server', async () => {
    const r = await lookupDomain(n.redirected, via(viaBase));
    expect(r).toMatchObject({ status: 'completed', data: { ldhName: n.redirected } });
  });

  it('a redirect to an address outside ALLOW_PRIVATE_TARGETS is refused, never fetched', async () => {
    const narrow = config({ RDAP_BASE_URL: lab.baseUrl, ALLOW_PRIVATE_TARGETS: LAB_ALLOW });
    expect(await lookupDomain(n.redirectOutsideAllowlist, via(narrow))).toEqual({
      status: 'unavailable',
      reason: 'target_not_allowed',
    });
  });

  it('a private server is refused when ALLOW_PRIVATE_TARGETS is empty, before any request', async () => {
    const before = lab.requests.length;
    const r = await lookupDomain(n.registered, via(config({ RDAP_BASE_URL: lab.baseUrl })));
    expect(r).toEqual({ status: 'unavailable', reason: 'target_not_allowed' });
    expect(lab.requests.length).toBe(before);
  });

  it('without RDAP_BASE_URL the snapshot decides: no entry for .test', async () => {
    const before = lab.requests.length;
    expect(await lookupDomain(n.registered, via(config({ ALLOW_PRIVATE_TARGETS: '127.0.0.0/8' })))).toEqual({
      status: 'unavailable',
      reason: 'rdap_no_service_for_tld',
    });
    expect(lab.requests.length).toBe(before);
  });

  it('RDAP_BOOTSTRAP_URL: the file is fetched at first use, once, and routes .test to the lab', async () => {
    const c = config({ RDAP_BOOTSTRAP_URL: lab.bootstrapUrl, ALLOW_PRIVATE_TARGETS: '127.0.0.0/8' });
    const fetchesBefore = lab.requests.filter((p) => p === '/bootstrap/dns.json').length;
    const [r1, r2] = await Promise.all([lookupDomain(n.registered, via(c)), lookupDomain(n.notRegistered, via(c))]);
    expect(r1).toMatchObject({
      status: 'completed',
      data: { ldhName: 'lab.test' },
      service: { via: 'bootstrap_remote', bootstrapPublication: '2026-01-01T00:00:00Z' },
    });
    expect(r2).toMatchObject({ status: 'completed', notFound: true });
    await lookupDomain(n.expired, via(c));
    expect(lab.requests.filter((p) => p === '/bootstrap/dns.json').length - fetchesBefore).toBe(1);
  });

  it('RDAP_BOOTSTRAP_URL that cannot be fetched (or is refused) falls back to the snapshot', async () => {
    const refused = config({ RDAP_BOOTSTRAP_URL: lab.bootstrapUrl }); // loopback not allowed
    expect(await lookupDomain(n.registered, via(refused))).toEqual({
      status: 'unavailable',
      reason: 'rdap_no_service_for_tld',
    });
    resetBootstrapCache();
    const dead = config({ RDAP_BOOTSTRAP_URL: 'http://127.0.0.1:1/dns.json', ALLOW_PRIVATE_TARGETS: '127.0.0.0/8' });
    expect(await lookupDomain(n.registered, via(dead))).toEqual({
      status: 'unavailable',
      reason: 'rdap_no_service_for_tld',
    });
  });

  it("the caller's abort propagates (the lane runner owns cancellation)", async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('cancelled')), 50);
    await expect(lookupDomain(n.slow, via(viaBase, { timeoutMs: 5000, signal: ac.signal }))).rejects.toThrow(
      'cancelled',
    );
  });
});
