// lookup.dns.v1 through HTTP and the whole admission chain, against the loopback DNS lab.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createTenant, startHarness, type Harness, type Tenant } from '../helpers/harness.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { LAB_SPECIAL_USE } from '../lab/addresses.ts';
import { LEAK, PRIVATE_ONLY } from '../lab/private-zones.ts';
import { HUGE_TXT } from '../lab/zones.ts';
import { INLINE_REPLY_MAX_BYTES } from '../../src/contract/envelope.ts';
import { DNS_TYPE_CAPS } from '../../src/products/dns-lookup/index.ts';

describe('POST /v2/lookups/dns', () => {
  let lab: LabDns;
  let h: Harness;
  let t: Tenant;
  beforeAll(async () => {
    lab = await startLabDns();
    h = await startHarness({
      DNS_SERVERS: lab.address,
      DNS_TIMEOUT_MS: '400',
      ALLOW_SPECIAL_USE_DOMAINS: LAB_SPECIAL_USE,
    });
    t = await createTenant(h);
  });
  afterAll(async () => {
    await h.close();
    await lab.close();
  });

  it('answers the eight types of an ordinary zone in a completed envelope', async () => {
    const res = await client(h.app, t.key).post('/v2/lookups/dns', { value: 'LAB.test.' });
    expect(res.status).toBe(200);
    expect(res.body.input).toEqual({ value: 'lab.test' });
    expect(res.body.status).toBe('completed');
    expect(res.body.result.records.A.answers[0]).toMatchObject({ type: 'A', ttl: 300, data: '127.0.0.10' });
    expect(res.body.result.records.MX.outcome).toBe('answer');
    expect(res.body.credits.charged).toBe(0);
    expect(JSON.stringify(res.body)).not.toContain(String(lab.port));
  });

  it('an answer that leads into a private zone (cluster.local) is cut where it leaves public DNS (issue 30 item 3)', async () => {
    for (const name of [LEAK.k8s, LEAK.via, LEAK.back]) {
      const res = await client(h.app, t.key).post('/v2/lookups/dns', { value: name });
      expect(res.status, name).toBe(200);
      const text = JSON.stringify(res.body);
      for (const secret of Object.values(PRIVATE_ONLY)) expect(text, `${name}: ${secret}`).not.toContain(secret);
      expect(text, name).not.toContain('cluster.local');
      expect(text, name).not.toContain('corp.internal');
      expect(res.body.result.records.A.outcome, name).toBe('left_public_dns');
      expect(res.body).toMatchObject({ status: 'partial', coverage: { complete: false } });
      expect(res.body.lanes.find((l: { lane: string }) => l.lane === 'resolver').status).toBe('completed');
      expect(
        res.body.limitations.map((l: { code: string }) => l.code),
        name,
      ).toContain('answer_leaves_public_dns');
    }
  });

  it('/readyz warns, and stays ready, when DNS_SERVERS answers localhost or a special-use name', async () => {
    let body: { status: string; warnings?: Array<{ code: string; names: string[] }> } = { status: '' };
    for (let i = 0; i < 50 && !body.warnings; i++) {
      const res = await client(h.app, t.key).get('/readyz');
      expect(res.status).toBe(200);
      body = res.body;
      if (!body.warnings) await new Promise((r) => setTimeout(r, 100));
    }
    expect(body.status).toBe('ready');
    expect(body.warnings).toEqual([
      expect.objectContaining({
        code: 'dns_servers_answer_special_use_names',
        names: ['localhost', 'kubernetes.default.svc.cluster.local'],
      }),
    ]);
    expect(JSON.stringify(body)).not.toContain(PRIVATE_ONLY.k8sAddress);
  });

  it('keeps NXDOMAIN, SERVFAIL and REFUSED distinct per type', async () => {
    const nx = await client(h.app, t.key).post('/v2/lookups/dns', { value: 'nope.lab.test' });
    expect(nx.body.result.records.A).toMatchObject({ outcome: 'nxdomain', rcode: 'NXDOMAIN' });
    const sf = await client(h.app, t.key).post('/v2/lookups/dns', { value: 'servfail.lab.test' });
    expect(sf.status).toBe(200);
    expect(sf.body.result.records.A).toMatchObject({ outcome: 'servfail', rcode: 'SERVFAIL' });
    // A SERVFAIL proves nothing about the records: never a complete answer.
    expect(sf.body).toMatchObject({ status: 'partial', coverage: { complete: false } });
    expect(sf.body.limitations.filter((l: { code: string }) => l.code === 'dns_indeterminate')).toHaveLength(8);
    const rf = await client(h.app, t.key).post('/v2/lookups/dns', { value: 'refused.lab.test' });
    expect(rf.body.result.records.A).toMatchObject({ outcome: 'refused', rcode: 'REFUSED' });
  });

  it("a name whose servers never answer is the target's fact: a 200 partial with every type indeterminate, never a 503 (issue 31)", async () => {
    const res = await client(h.app, t.key).post('/v2/lookups/dns', { value: 'timeout.lab.test' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'partial', coverage: { complete: false } });
    for (const rows of Object.values(res.body.result.records) as Array<{ outcome: string; answers: unknown[] }>)
      expect(rows).toMatchObject({ outcome: 'timeout', answers: [] });
    expect(res.body.limitations.filter((l: { code: string }) => l.code === 'dns_indeterminate')).toHaveLength(8);
    expect(h.deps.runtime.services.resolver!.readiness()).toBe('ready');
  });

  it.each([
    [{ value: `${'a'.repeat(64)}.lab.test` }],
    [{ value: `${'abcdefghi.'.repeat(26)}com` }],
    [{ value: '' }],
    [{ value: 42 }],
    [{ value: 'bad_label!.lab.test' }],
    [{ value: '192.0.2.1' }],
  ])('rejects %j with invalid_request on value', async (body) => {
    const res = await client(h.app, t.key).post('/v2/lookups/dns', body);
    expect(res.status).toBe(400);
    expect(res.body.error.details.issues[0].path).toBe('value');
  });

  it('normalises an IDN to its A-label form', async () => {
    const res = await client(h.app, t.key).post('/v2/lookups/dns', { value: 'Bücher.lab.test' });
    expect(res.status).toBe(200);
    expect(res.body.input.value).toBe('xn--bcher-kva.lab.test');
  });

  it('a 52 KB TXT set: the reply is cut to the caps, says so, and is what idempotency keeps (issue 45 item 2)', async () => {
    const key = `huge-txt-${Date.now()}`;
    const res = await client(h.app, t.key).post(
      '/v2/lookups/dns',
      { value: HUGE_TXT.name },
      { 'Idempotency-Key': key },
    );
    expect(res.status).toBe(200);
    expect(Buffer.byteLength(res.text)).toBeLessThanOrEqual(INLINE_REPLY_MAX_BYTES);
    const txt = res.body.result.records.TXT;
    expect(txt.outcome).toBe('answer');
    expect(txt.truncated).toEqual(['answers']);
    expect(txt.answers.length).toBeGreaterThan(0);
    expect(txt.answers.length + txt.omittedAnswers).toBe(HUGE_TXT.records);
    expect(Buffer.byteLength(JSON.stringify(txt.answers))).toBeLessThanOrEqual(DNS_TYPE_CAPS.bytes);
    expect(res.body.limitations.map((l: { code: string }) => l.code)).toContain('output_truncated');
    // A cut answer is never a complete one.
    expect(res.body).toMatchObject({ status: 'partial', coverage: { complete: false } });
    expect(res.body.lanes.find((l: { lane: string }) => l.lane === 'record_types')).toMatchObject({
      status: 'partial',
      reason: 'answers_truncated',
    });
    // The bounded reply is what is kept and replayed.
    const replay = await client(h.app, t.key).post(
      '/v2/lookups/dns',
      { value: HUGE_TXT.name },
      { 'Idempotency-Key': key },
    );
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.text).toBe(res.text);
  });

  it('idempotency never keeps a reply larger than an inline reply may be (finish-lease.lua)', async () => {
    const leases = h.deps.idempotency!.leases;
    const claim = (key: string) => ({
      applicationId: 990_001,
      apiKeyId: 990_001,
      key,
      fingerprint: 'a'.repeat(64),
      token: 't',
    });
    const fits = { status: 200, body: `"${'x'.repeat(INLINE_REPLY_MAX_BYTES - 2)}"` };
    await leases.finish(claim('fits'), true, fits);
    expect(await leases.storedReply(990_001, 990_001, 'fits')).toEqual(fits);
    await leases.finish(claim('over'), true, { status: 200, body: `"${'x'.repeat(INLINE_REPLY_MAX_BYTES)}"` });
    expect(await leases.storedReply(990_001, 990_001, 'over')).toBeNull();
  });
});

describe('POST /v2/lookups/dns with no reachable resolver', () => {
  it('is capability_unavailable, never an empty answer', async () => {
    const h = await startHarness({ DNS_SERVERS: '127.0.0.1:9', DNS_TIMEOUT_MS: '200' });
    try {
      const t = await createTenant(h);
      const key = 'dns-unreachable-1';
      const res = await client(h.app, t.key).post(
        '/v2/lookups/dns',
        { value: 'example.com' },
        { 'Idempotency-Key': key },
      );
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('capability_unavailable');
      // A 503 stores no idempotency record: the same key may be retried.
      const rows = await h.deps.db.selectFrom('idempotency_records').select('id').where('idem_key', '=', key).execute();
      expect(rows).toEqual([]);
    } finally {
      await h.close();
    }
  });
});
