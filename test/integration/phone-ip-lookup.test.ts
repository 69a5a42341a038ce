// lookup.phone.v1 and lookup.ip.v1 through HTTP and the whole admission chain; the ip reverse_dns
// lane against the real stub resolver and the loopback DNS lab.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createTenant, startHarness, type Harness, type Tenant } from '../helpers/harness.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { LAB_SPECIAL_USE, LAB_ALLOW } from '../lab/addresses.ts';
import { LEAK, PRIVATE_ONLY } from '../lab/private-zones.ts';

describe('phone and ip lookups over HTTP', () => {
  let lab: LabDns;
  let h: Harness;
  let t: Tenant;
  beforeAll(async () => {
    lab = await startLabDns();
    h = await startHarness({
      DNS_SERVERS: lab.address,
      DNS_TIMEOUT_MS: '400',
      // The lab's reverse zone is 127.in-addr.arpa: its PTR names may be asked only for allowed ranges.
      ALLOW_PRIVATE_TARGETS: LAB_ALLOW,
      ALLOW_SPECIAL_USE_DOMAINS: LAB_SPECIAL_USE,
    });
    t = await createTenant(h);
  });
  afterAll(async () => {
    await h.close();
    await lab.close();
  });

  it('formats and classifies a phone number', async () => {
    const res = await client(h.app, t.key).post('/v2/lookups/phone', { value: '020 7946 0018', defaultRegion: 'gb' });
    expect(res.status).toBe(200);
    expect(res.body.result).toMatchObject({
      e164: '+442079460018',
      region: 'GB',
      countryCallingCode: '44',
      isValid: true,
    });
    expect(res.body.limitations.length).toBeGreaterThan(0);
  });

  it('answers an unparseable number with isValid false, not a 400', async () => {
    const res = await client(h.app, t.key).post('/v2/lookups/phone', { value: 'call me maybe', defaultRegion: 'US' });
    expect(res.status).toBe(200);
    expect(res.body.result.isValid).toBe(false);
    expect(res.body.result.invalidReason).toBeTruthy();
  });

  it.each([
    [{ value: '2079460018' }, 'defaultRegion'],
    [{ value: '+1 202 555 0100', defaultRegion: 'XX' }, 'defaultRegion'],
    [{ value: '1'.repeat(65), defaultRegion: 'US' }, 'value'],
    [{ value: 5, defaultRegion: 'US' }, 'value'],
  ])('rejects %j on %s', async (body, field) => {
    const res = await client(h.app, t.key).post('/v2/lookups/phone', body);
    expect(res.status).toBe(400);
    expect(res.body.error.details.issues.map((i: { path: string }) => i.path)).toContain(field);
  });

  it('classifies an IP from the IANA registry and finds its PTR through the lab', async () => {
    const res = await client(h.app, t.key).post('/v2/lookups/ip', { value: '127.0.0.1', reverseDns: true });
    expect(res.status).toBe(200);
    expect(res.body.result.scope).toBe('loopback');
    expect(res.body.result.ptr).toEqual(['localhost.lab.test']);
    expect(res.body.lanes.find((l: { lane: string }) => l.lane === 'reverse_dns').status).toBe('completed');
  });

  it('a reverse name that leads into a private reverse zone or names a private host is cut there (issue 30 item 3)', async () => {
    for (const value of [LEAK.ptrIntoPrivateZone, LEAK.ptrNamingPrivateHost]) {
      const res = await client(h.app, t.key).post('/v2/lookups/ip', { value, reverseDns: true });
      expect(res.status, value).toBe(200);
      const text = JSON.stringify(res.body);
      for (const secret of Object.values(PRIVATE_ONLY)) expect(text, `${value}: ${secret}`).not.toContain(secret);
      expect(text).not.toContain('corp.internal');
      expect(res.body.result.ptr, value).toBeNull();
      expect(res.body.status).toBe('partial');
      expect(res.body.lanes.find((l: { lane: string }) => l.lane === 'reverse_dns')).toMatchObject({
        status: 'unavailable',
        reason: 'left_public_dns',
      });
      expect(
        res.body.limitations.map((l: { code: string }) => l.code),
        value,
      ).toContain('answer_leaves_public_dns');
    }
  });

  it('reports a SERVFAIL on the reverse zone as a partial envelope, never as "no PTR"', async () => {
    const res = await client(h.app, t.key).post('/v2/lookups/ip', { value: '127.0.0.66', reverseDns: true });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('partial');
    expect(res.body.result.ptr).toBeNull();
    expect(res.body.limitations.map((l: { code: string }) => l.code)).toContain('reverse_dns_unavailable');
  });

  it('answers context from the shipped dataset with no variable set; lookup.ip.v1 is available', async () => {
    for (const [value, asn, org] of [
      ['8.8.8.8', 15169, 'Google LLC'],
      ['1.1.1.1', 13335, 'Cloudflare, Inc.'],
      ['2001:4860:4860::8888', 15169, 'Google LLC'],
    ] as const) {
      const res = await client(h.app, t.key).post('/v2/lookups/ip', { value, includeContext: true });
      expect(res.status).toBe(200);
      expect(res.body.status, value).toBe('completed');
      expect(res.body.lanes).toContainEqual(expect.objectContaining({ lane: 'context', status: 'completed' }));
      expect(res.body.result.context, value).toMatchObject({ asn, asName: org, routed: true, lookedUp: value });
      const source = res.body.sources.find((s: { source: string }) => s.source === 'ip_context_dataset');
      expect(source.version).toMatch(/^@ip-location-db\/asn@[\d.]+, @ip-location-db\/asn-country@[\d.]+$/);
      expect(source.attribution).toMatch(/CC BY 4\.0/);
      expect(source.attribution).toMatch(/db-ip\.com/);
    }
    const products = await client(h.app, t.key).get('/v2/products');
    const ip = products.body.products.find((p: { product: string }) => p.product === 'lookup.ip.v1');
    expect(ip.lanes).toContainEqual(expect.objectContaining({ lane: 'context', readiness: 'ready' }));
    expect(ip.readiness).toBe('available');
  });

  it.each([['10.0.0.0/8'], ['010.1.1.1'], ['not an ip'], ['']])('rejects %s on value', async (value) => {
    const res = await client(h.app, t.key).post('/v2/lookups/ip', { value });
    expect(res.status).toBe(400);
    expect(res.body.error.details.issues[0].path).toBe('value');
  });
});
