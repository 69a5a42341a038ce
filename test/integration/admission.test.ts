// Admission: every error code the v2 routes can produce today, the CONTRACT §2 order in which they
// are reported, and the CONTRACT §3 envelope they all share.
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/auth/api-key.ts';
import { errorRegistry, type ErrorCode } from '../../src/contract/errors.ts';
import { revokeKey } from '../../src/auth/tenancy-repo.ts';
import { scanBudgetBounds } from '../../src/products/scan/rules/profiles.ts';
import type { RateOverrides } from '../../src/ratelimit/policies.ts';
import { assertMatchesContract } from '../helpers/contract-check.ts';
import { client, createTenant, idemKey, startHarness, type Harness, type Tenant } from '../helpers/harness.ts';

type Res = supertest.Response;

const MAC = '/v2/lookups/mac';
const MAC_BODY = { value: 'F4:F5:E8:12:34:56' };
const REQUEST_ID_RE = /^req_[0-9A-HJKMNP-TV-Z]{26}$/;
// Anything that would betray internals: stack frames, source paths, SQL, driver codes, hosts.
const LEAK_RE =
  /\bat [^\n]+:\d+:\d+|node_modules|\.ts:\d+|"stack"|\bSELECT\b|\bINSERT\b|\bUPDATE\b|\bDELETE\b|ER_[A-Z_]{3,}|sqlMessage|ECONN|127\.0\.0\.1|localhost|mysql|mariadb|redis|kysely|ioredis/i;

// Enough quota that no admission test here is refused by a limit (rate-limit.test.ts covers them).
const GENEROUS: RateOverrides = {
  app: { perMinute: 100_000, burst: 10_000 },
  products: Object.fromEntries(
    [
      'lookup.mac.v1',
      'lookup.phone.v1',
      'lookup.ip.v1',
      'lookup.dns.v1',
      'lookup.domain.v1',
      'lookup.mail.v1',
      'lookup.web.v1',
      'scan.recursive.v1',
    ].map((id) => [id, { perMinute: 100_000, perHour: 1_000_000 }]),
  ),
};

/** The CONTRACT §3 envelope of one error reply, checked in full; returns `error`. */
function expectError(res: Res, status: number, code: ErrorCode): Record<string, any> {
  expect(res.status, res.text).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(Object.keys(res.body)).toEqual(['error']);
  const e = res.body.error;
  expect(e.code).toBe(code);
  expect(e.status).toBe(status);
  expect(e.retryable).toBe(errorRegistry[code].retryable);
  expect(typeof e.message).toBe('string');
  expect(e.message.length).toBeGreaterThan(0);
  expect(e.requestId).toBe(res.headers['x-request-id']);
  for (const k of Object.keys(e))
    expect(['code', 'message', 'status', 'retryable', 'requestId', 'details']).toContain(k);
  expect(res.text).not.toMatch(LEAK_RE);
  if (errorRegistry[code].retryAfter === 'never') expect(res.headers['retry-after']).toBeUndefined();
  if (errorRegistry[code].retryAfter === 'always') expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  return e;
}

/** For requests the harness client cannot express (empty header, other media types): same contract check. */
async function checked(r: supertest.Test, method: 'get' | 'post', path: string): Promise<Res> {
  const res = await r;
  assertMatchesContract(method, path, res);
  return res;
}

describe('admission', () => {
  let h: Harness;
  let full: Tenant; // every scope, current responsible use, no active capability
  let noRu: Tenant; // every scope, responsible use never accepted
  let oldRu: Tenant; // accepted an older policy version
  let activeOk: Tenant; // active capability, current acceptance, approved example.com
  let activeNoRu: Tenant; // active capability and scope, but no acceptance
  let readOnly: Tenant;
  let findingOnly: Tenant;
  let noScopes: Tenant;

  beforeAll(async () => {
    h = await startHarness();
    const ru = h.config.RESPONSIBLE_USE_VERSION;
    [full, noRu, oldRu, activeOk, activeNoRu, readOnly, findingOnly, noScopes] = await Promise.all([
      createTenant(h, { acceptResponsibleUse: ru, approveScopes: ['example.com'], limits: GENEROUS }),
      createTenant(h, { limits: GENEROUS }),
      createTenant(h, {
        acceptResponsibleUse: `${ru}-old`,
        active: true,
        approveScopes: ['example.com'],
        limits: GENEROUS,
      }),
      createTenant(h, { acceptResponsibleUse: ru, active: true, approveScopes: ['example.com'], limits: GENEROUS }),
      createTenant(h, { active: true, approveScopes: ['example.com'], limits: GENEROUS }),
      createTenant(h, { scopes: ['scan:read'], limits: GENEROUS }),
      createTenant(h, { scopes: ['finding:read'], limits: GENEROUS }),
      createTenant(h, { scopes: [], limits: GENEROUS }),
    ]);
  });
  afterAll(() => h.close());

  describe('401 authentication_required', () => {
    const cases: Array<[string, () => Record<string, string>]> = [
      ['no Authorization header', () => ({})],
      ['a Basic scheme', () => ({ Authorization: `Basic ${Buffer.from('user:pass').toString('base64')}` })],
      ['the key without a scheme', () => ({ Authorization: full.key })],
      ['a Bearer scheme without a token', () => ({ Authorization: 'Bearer' })],
      ['a malformed key', () => ({ Authorization: 'Bearer not-a-key' })],
      ['a key of the wrong length', () => ({ Authorization: `Bearer ${full.key.slice(0, -2)}` })],
      [
        'a key with a bad checksum',
        () => ({ Authorization: `Bearer ${full.key.slice(0, -1)}${full.key.endsWith('A') ? 'B' : 'A'}` }),
      ],
      [
        'a key with one changed random char',
        () => ({ Authorization: `Bearer lsk_${full.key[4] === 'A' ? 'B' : 'A'}${full.key.slice(5)}` }),
      ],
      ['an unknown but well-formed key', () => ({ Authorization: `Bearer ${generateApiKey().key}` })],
      ['two tokens', () => ({ Authorization: `Bearer ${full.key} ${full.key}` })],
    ];

    it.each(cases)('POST %s → 401 with WWW-Authenticate', async (_name, headers) => {
      const res = await client(h.app).post(MAC, MAC_BODY, headers());
      expectError(res, 401, 'authentication_required');
      expect(res.headers['www-authenticate']).toMatch(/^Bearer\b/);
    });

    it.each(cases)('GET /v2/products with %s → 401', async (_name, headers) => {
      const res = await client(h.app).get('/v2/products', headers());
      expectError(res, 401, 'authentication_required');
      expect(res.headers['www-authenticate']).toMatch(/^Bearer\b/);
    });

    it('a revoked key is refused', async () => {
      const t = await createTenant(h, { limits: GENEROUS });
      expect((await client(h.app, t.key).post(MAC, MAC_BODY)).status).toBe(200);
      await revokeKey(h.deps.db, t.keyId);
      const res = await client(h.app, t.key).post(MAC, MAC_BODY);
      expectError(res, 401, 'authentication_required');
      expect(res.headers['www-authenticate']).toMatch(/^Bearer\b/);
      expectError(await client(h.app, t.key).get('/v2/products'), 401, 'authentication_required');
    });

    it('accepts the scheme name case-insensitively (RFC 9110 §11.1)', async () => {
      const res = await client(h.app).post(MAC, MAC_BODY, { Authorization: `bearer ${full.key}` });
      expect(res.status).toBe(200);
    });

    it('authentication wins over every later check (no scope, no Idempotency-Key, bad media type, huge body)', async () => {
      expectError(
        await client(h.app).post(MAC, { nope: 1 }, { 'Idempotency-Key': '' }),
        401,
        'authentication_required',
      );
      expectError(await client(h.app).post(MAC, { value: 'x'.repeat(70 * 1024) }), 401, 'authentication_required');
      expectError(
        await checked(supertest(h.app).post(MAC).set('Content-Type', 'text/plain').send('hello'), 'post', MAC),
        401,
        'authentication_required',
      );
      expectError(
        await client(h.app).post('/v2/scans', {
          profile: 'advanced',
          target: { type: 'domain_name', value: 'example.org' },
          options: { active: true, maxCredits: 1 },
        }),
        401,
        'authentication_required',
      );
    });
  });

  describe('403 insufficient_scope', () => {
    it('a scan:read key cannot post a lookup; details.requiredScopes names scan:create', async () => {
      const e = expectError(await client(h.app, readOnly.key).post(MAC, MAC_BODY), 403, 'insufficient_scope');
      expect(e.details).toEqual({ requiredScopes: ['scan:create'] });
    });

    it.each([
      ['/v2/lookups/domain', { value: 'example.com' }],
      ['/v2/lookups/web', { url: 'https://example.com/' }],
      [
        '/v2/scans',
        {
          profile: 'quick',
          target: { type: 'domain_name', value: 'example.com' },
          options: { active: false, maxCredits: 10 },
        },
      ],
    ])('a finding:read key cannot post %s', async (path, body) => {
      const e = expectError(await client(h.app, findingOnly.key).post(path, body), 403, 'insufficient_scope');
      expect(e.details.requiredScopes).toEqual(['scan:create']);
    });

    it('a key with no scopes may list products but not post', async () => {
      const list = await client(h.app, noScopes.key).get('/v2/products');
      expect(list.status).toBe(200);
      expect(list.body.products.length).toBe(8);
      expectError(await client(h.app, noScopes.key).post(MAC, MAC_BODY), 403, 'insufficient_scope');
    });

    it('scope wins over Idempotency-Key, body and active gates', async () => {
      expectError(
        await client(h.app, readOnly.key).post(MAC, { bogus: true }, { 'Idempotency-Key': '' }),
        403,
        'insufficient_scope',
      );
      expectError(
        await client(h.app, readOnly.key).post('/v2/scans', {
          profile: 'advanced',
          target: { type: 'domain_name', value: 'example.org' },
          options: { active: false, maxCredits: 1 },
        }),
        403,
        'insufficient_scope',
      );
    });
  });

  describe('400 idempotency_key_required', () => {
    it('missing', async () => {
      const res = await client(h.app, full.key).post(MAC, MAC_BODY, { 'Idempotency-Key': '' }); // '' = not sent by the harness
      expectError(res, 400, 'idempotency_key_required');
    });

    it('empty', async () => {
      const res = await checked(
        supertest(h.app).post(MAC).set('Authorization', `Bearer ${full.key}`).set('Idempotency-Key', '').send(MAC_BODY),
        'post',
        MAC,
      );
      expectError(res, 400, 'idempotency_key_required');
    });

    it.each([
      ['256 characters', 'k'.repeat(256)],
      ['an inner space', 'idem key'],
      ['a non-ASCII character', 'idem-clé'],
      ['a tab', 'idem\tkey'],
    ])('with %s', async (_name, value) => {
      expectError(
        await client(h.app, full.key).post(MAC, MAC_BODY, { 'Idempotency-Key': value }),
        400,
        'idempotency_key_required',
      );
    });

    it('accepts 1 and 255 visible ASCII characters', async () => {
      expect((await client(h.app, full.key).post(MAC, MAC_BODY, { 'Idempotency-Key': '!' })).status).toBe(200);
      const longest = `${idemKey()}~`.padEnd(255, '}');
      expect((await client(h.app, full.key).post(MAC, MAC_BODY, { 'Idempotency-Key': longest })).status).toBe(200);
    });

    it('wins over media type, size and validation errors', async () => {
      expectError(
        await client(h.app, full.key).post(MAC, { value: 'x'.repeat(70 * 1024) }, { 'Idempotency-Key': '' }),
        400,
        'idempotency_key_required',
      );
      expectError(
        await client(h.app, full.key).post(MAC, '{"value":', { 'Idempotency-Key': '' }),
        400,
        'idempotency_key_required',
      );
      expectError(
        await checked(
          supertest(h.app)
            .post(MAC)
            .set('Authorization', `Bearer ${full.key}`)
            .set('Content-Type', 'text/plain')
            .send('hi'),
          'post',
          MAC,
        ),
        400,
        'idempotency_key_required',
      );
      expectError(
        await client(h.app, noRu.key).post(
          '/v2/scans',
          {
            profile: 'advanced',
            target: { type: 'domain_name', value: 'example.org' },
            options: { active: false, maxCredits: 1 },
          },
          { 'Idempotency-Key': '' },
        ),
        400,
        'idempotency_key_required',
      );
    });
  });

  describe('body', () => {
    it('415 unsupported_media_type for text/plain', async () => {
      const res = await checked(
        supertest(h.app)
          .post(MAC)
          .set('Authorization', `Bearer ${full.key}`)
          .set('Idempotency-Key', idemKey())
          .set('Content-Type', 'text/plain')
          .send(JSON.stringify(MAC_BODY)),
        'post',
        MAC,
      );
      expectError(res, 415, 'unsupported_media_type');
    });

    it('415 for a form body', async () => {
      const res = await checked(
        supertest(h.app)
          .post(MAC)
          .set('Authorization', `Bearer ${full.key}`)
          .set('Idempotency-Key', idemKey())
          .type('form')
          .send({ value: 'F4F5E8123456' }),
        'post',
        MAC,
      );
      expectError(res, 415, 'unsupported_media_type');
    });

    it('accepts application/json with a charset parameter', async () => {
      const res = await checked(
        supertest(h.app)
          .post(MAC)
          .set('Authorization', `Bearer ${full.key}`)
          .set('Idempotency-Key', idemKey())
          .set('Content-Type', 'application/json; charset=utf-8')
          .send(JSON.stringify(MAC_BODY)),
        'post',
        MAC,
      );
      expect(res.status).toBe(200);
    });

    it('413 payload_too_large above 64 KiB', async () => {
      expectError(await client(h.app, full.key).post(MAC, { value: 'x'.repeat(64 * 1024) }), 413, 'payload_too_large');
    });

    it('413 also when the body is chunked (no Content-Length)', async () => {
      const r = supertest(h.app)
        .post(MAC)
        .set('Authorization', `Bearer ${full.key}`)
        .set('Idempotency-Key', idemKey())
        .set('Content-Type', 'application/json')
        .set('Transfer-Encoding', 'chunked');
      r.write(`{"value":"${'x'.repeat(40 * 1024)}`);
      r.write(`${'x'.repeat(40 * 1024)}"}`);
      expectError(await checked(r, 'post', MAC), 413, 'payload_too_large');
    });

    it('a body just under 64 KiB is read and validated', async () => {
      const e = expectError(
        await client(h.app, full.key).post(MAC, { value: 'x'.repeat(60 * 1024) }),
        400,
        'invalid_request',
      );
      expect(e.details.issues.map((i: { path: string }) => i.path)).toContain('value');
    });

    it('malformed JSON → invalid_request with details.issues', async () => {
      const e = expectError(
        await client(h.app, full.key).post(MAC, '{"value": "F4:F5:E8:12:34:56"'),
        400,
        'invalid_request',
      );
      expect(Array.isArray(e.details.issues)).toBe(true);
      expect(e.details.issues.length).toBeGreaterThan(0);
      expect(e.details.issues[0]).toEqual({ path: expect.any(String), message: expect.any(String) });
    });

    it('an unknown field → invalid_request naming it', async () => {
      const e = expectError(
        await client(h.app, full.key).post(MAC, { ...MAC_BODY, vendorHint: 'x' }),
        400,
        'invalid_request',
      );
      expect(JSON.stringify(e.details.issues)).toContain('vendorHint');
    });

    it('an unknown nested field of a scan → invalid_request', async () => {
      const e = expectError(
        await client(h.app, full.key).post('/v2/scans', {
          profile: 'quick',
          target: { type: 'domain_name', value: 'example.com' },
          options: { active: false, maxCredits: 10, depth: 3 },
        }),
        400,
        'invalid_request',
      );
      expect(JSON.stringify(e.details.issues)).toContain('depth');
    });

    it.each([
      ['no body', undefined],
      ['an empty object', {}],
      ['a JSON array', '[]'],
      ['a JSON string', '"F4F5E8123456"'],
      ['null', 'null'],
    ])('%s → invalid_request', async (_name, body) => {
      const e = expectError(await client(h.app, full.key).post(MAC, body), 400, 'invalid_request');
      expect(e.details.issues.length).toBeGreaterThan(0);
    });
  });

  describe('routing', () => {
    it.each(['/v2/nope', '/v2/lookups', '/v2/lookups/macs', '/v3/lookups/mac', '/', '/v2/products/extra'])(
      'GET %s → 404 route_not_found, with or without a key',
      async (path) => {
        expectError(await client(h.app).get(path), 404, 'route_not_found');
        expectError(await client(h.app, full.key).get(path), 404, 'route_not_found');
      },
    );

    it('POST to an unknown path → 404 without needing a key or an Idempotency-Key', async () => {
      expectError(
        await client(h.app).post('/v2/lookups/imei', { value: '1' }, { 'Idempotency-Key': '' }),
        404,
        'route_not_found',
      );
    });

    it.each(['/v2/lookups/mac', '/v2/lookups/phone', '/v2/lookups/web', '/v2/scans'])(
      'GET %s → 405 method_not_allowed with Allow: POST',
      async (path) => {
        const res = await client(h.app).get(path);
        expectError(res, 405, 'method_not_allowed');
        expect(res.headers.allow).toBe('POST');
        const withKey = await client(h.app, full.key).get(path);
        expectError(withKey, 405, 'method_not_allowed');
        expect(withKey.headers.allow).toBe('POST');
      },
    );

    it.each(['/v2/products', '/v2/openapi.json'])('POST %s → 405 with Allow: GET', async (path) => {
      const res = await client(h.app, full.key).post(path, {});
      expectError(res, 405, 'method_not_allowed');
      expect(res.headers.allow).toBe('GET');
    });

    it('GET /v2/openapi.json needs no key and describes every product route', async () => {
      const res = await client(h.app).get('/v2/openapi.json');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body.openapi).toBe('3.1.0');
      expect(res.body.info.version).toBe('2.0.0');
      for (const p of [
        '/v2/lookups/mac',
        '/v2/lookups/phone',
        '/v2/lookups/ip',
        '/v2/lookups/dns',
        '/v2/lookups/domain',
        '/v2/lookups/mail',
        '/v2/lookups/web',
        '/v2/scans',
        '/v2/products',
      ]) {
        expect(Object.keys(res.body.paths)).toContain(p);
      }
      expect(res.body.paths['/v2/openapi.json'].get.security).toEqual([]);
      expect(res.headers['x-request-id']).toMatch(REQUEST_ID_RE);
    });
  });

  describe('503 capability_unavailable for the async products not built yet', () => {
    it.each([
      ['/v2/lookups/domain', { value: 'example.com' }, 'lookup.domain.v1'],
      ['/v2/lookups/mail', { value: 'example.com' }, 'lookup.mail.v1'],
      ['/v2/lookups/web', { url: 'https://example.com/' }, 'lookup.web.v1'],
      ['/v2/lookups/web', { url: 'http://example.com/path?q=1', authorized: false }, 'lookup.web.v1'],
    ])('POST %s %j', async (path, body, product) => {
      const e = expectError(await client(h.app, full.key).post(path, body), 503, 'capability_unavailable');
      expect(e.retryable).toBe(true);
      expect(e.details).toEqual({ product });
    });

    it.each([
      ['/v2/lookups/domain', { value: 'not a domain' }, 'value'],
      ['/v2/lookups/mail', { value: '1.2.3.4' }, 'value'],
      ['/v2/lookups/web', { url: 'ftp://example.com/' }, 'url'],
      ['/v2/lookups/web', { url: 'https://user:pw@example.com/' }, 'url'],
      ['/v2/lookups/web', { url: 'https://example.com/', authorized: 'yes' }, 'authorized'],
    ])('%s validates the body before readiness: %j', async (path, body, field) => {
      const e = expectError(await client(h.app, full.key).post(path, body), 400, 'invalid_request');
      expect(e.details.issues.map((i: { path: string }) => i.path)).toContain(field);
    });

    it('a passive web lookup needs no responsible-use acceptance', async () => {
      expectError(
        await client(h.app, noRu.key).post('/v2/lookups/web', { url: 'https://example.org/' }),
        503,
        'capability_unavailable',
      );
    });
  });

  describe('scans', () => {
    const scan = (profile: string, value: string, options: Record<string, unknown>) => ({
      profile,
      target: { type: 'domain_name', value },
      options,
    });

    describe('scan_credit_budget_invalid', () => {
      const cases: Array<[string, number]> = [];
      for (const [profile, b] of Object.entries(scanBudgetBounds))
        cases.push([profile, b.min - 1], [profile, b.max + 1], [profile, b.min + 0.5], [profile, 0], [profile, -b.min]);

      it.each(cases)('%s with maxCredits %d', async (profile, maxCredits) => {
        const body = scan(profile, 'example.com', { active: profile === 'advanced', maxCredits });
        const e = expectError(
          await client(h.app, activeOk.key).post('/v2/scans', body),
          400,
          'scan_credit_budget_invalid',
        );
        expect(e.details.bounds).toEqual(scanBudgetBounds[profile as keyof typeof scanBudgetBounds]);
      });

      it('uses the CONTRACT §6 bounds', () => {
        expect(scanBudgetBounds).toEqual({
          quick: { min: 5, max: 100 },
          balanced: { min: 20, max: 1000 },
          deep: { min: 50, max: 100_000 },
          advanced: { min: 50, max: 200_000 },
        });
      });

      it.each(
        Object.entries(scanBudgetBounds).flatMap(
          ([p, b]) =>
            [
              [p, b.min],
              [p, b.max],
            ] as Array<[string, number]>,
        ),
      )('%s accepts the bound %d (and stops only at readiness)', async (profile, maxCredits) => {
        const body = scan(profile, 'example.com', { active: profile === 'advanced', maxCredits });
        expectError(await client(h.app, activeOk.key).post('/v2/scans', body), 503, 'scan_profile_unavailable');
      });

      it('is reported before the active gates (step 5 before step 6)', async () => {
        // advanced without authorization, no acceptance, no permission, target out of scope: the budget still wins.
        const body = scan('advanced', 'example.org', { active: false, maxCredits: 1 });
        expectError(await client(h.app, noRu.key).post('/v2/scans', body), 400, 'scan_credit_budget_invalid');
      });

      it('a maxCredits that is not a number is invalid_request', async () => {
        const e = expectError(
          await client(h.app, full.key).post(
            '/v2/scans',
            scan('quick', 'example.com', { active: false, maxCredits: '10' }),
          ),
          400,
          'invalid_request',
        );
        expect(e.details.issues.map((i: { path: string }) => i.path)).toContain('options.maxCredits');
        const missing = expectError(
          await client(h.app, full.key).post('/v2/scans', scan('quick', 'example.com', { active: false })),
          400,
          'invalid_request',
        );
        expect(missing.details.issues.map((i: { path: string }) => i.path)).toContain('options.maxCredits');
      });
    });

    it.each(['quick', 'balanced', 'deep'])(
      'options.active: true on %s is invalid_request (active work needs advanced)',
      async (profile) => {
        const e = expectError(
          await client(h.app, activeOk.key).post(
            '/v2/scans',
            scan(profile, 'example.com', { active: true, maxCredits: 50 }),
          ),
          400,
          'invalid_request',
        );
        expect(e.details.issues.map((i: { path: string }) => i.path)).toContain('options.active');
      },
    );

    it.each([
      [
        'an unknown profile',
        {
          profile: 'turbo',
          target: { type: 'domain_name', value: 'example.com' },
          options: { active: false, maxCredits: 50 },
        },
      ],
      [
        'an unknown target type',
        {
          profile: 'quick',
          target: { type: 'ip_address', value: '1.2.3.4' },
          options: { active: false, maxCredits: 50 },
        },
      ],
      ['no options', { profile: 'quick', target: { type: 'domain_name', value: 'example.com' } }],
      [
        'options without active',
        { profile: 'quick', target: { type: 'domain_name', value: 'example.com' }, options: { maxCredits: 50 } },
      ],
    ])('%s is invalid_request', async (_name, body) => {
      expectError(await client(h.app, activeOk.key).post('/v2/scans', body), 400, 'invalid_request');
    });

    describe('active-work gates, in CONTRACT §2 order', () => {
      it('advanced with options.active: false → active_authorization_required', async () => {
        expectError(
          await client(h.app, activeOk.key).post(
            '/v2/scans',
            scan('advanced', 'example.com', { active: false, maxCredits: 100 }),
          ),
          403,
          'active_authorization_required',
        );
      });

      it('active_authorization_required wins over responsible use, permission and target scope', async () => {
        expectError(
          await client(h.app, noRu.key).post(
            '/v2/scans',
            scan('advanced', 'example.org', { active: false, maxCredits: 100 }),
          ),
          403,
          'active_authorization_required',
        );
      });

      it.each(['quick', 'balanced', 'deep'])(
        'a passive %s scan needs current responsible-use acceptance',
        async (profile) => {
          expectError(
            await client(h.app, noRu.key).post(
              '/v2/scans',
              scan(profile, 'example.com', { active: false, maxCredits: 50 }),
            ),
            403,
            'responsible_use_required',
          );
        },
      );

      it('an acceptance of an older policy version does not count', async () => {
        expectError(
          await client(h.app, oldRu.key).post(
            '/v2/scans',
            scan('quick', 'example.com', { active: false, maxCredits: 50 }),
          ),
          403,
          'responsible_use_required',
        );
        expectError(
          await client(h.app, oldRu.key).post(
            '/v2/scans',
            scan('advanced', 'example.com', { active: true, maxCredits: 100 }),
          ),
          403,
          'responsible_use_required',
        );
      });

      it('responsible_use_required wins over active permission and target scope', async () => {
        expectError(
          await client(h.app, noRu.key).post(
            '/v2/scans',
            scan('advanced', 'example.org', { active: true, maxCredits: 100 }),
          ),
          403,
          'responsible_use_required',
        );
        expectError(
          await client(h.app, activeNoRu.key).post(
            '/v2/scans',
            scan('advanced', 'example.com', { active: true, maxCredits: 100 }),
          ),
          403,
          'responsible_use_required',
        );
      });

      it('active_permission_required when the workspace accepted but has no active capability (even in scope)', async () => {
        expectError(
          await client(h.app, full.key).post(
            '/v2/scans',
            scan('advanced', 'example.com', { active: true, maxCredits: 100 }),
          ),
          403,
          'active_permission_required',
        );
        expectError(
          await client(h.app, full.key).post(
            '/v2/scans',
            scan('advanced', 'example.org', { active: true, maxCredits: 100 }),
          ),
          403,
          'active_permission_required',
        );
      });

      it('a public suffix is not a scan target at all: invalid_request (step 5), before any gate', async () => {
        expectError(
          await client(h.app, activeOk.key).post(
            '/v2/scans',
            scan('advanced', 'com', { active: true, maxCredits: 100 }),
          ),
          400,
          'invalid_request',
        );
      });

      it.each(['example.org', 'notexample.com', 'example.com.evil.net', 'xample.com'])(
        'approved_target_scope_required for %s outside the approved example.com',
        async (target) => {
          expectError(
            await client(h.app, activeOk.key).post(
              '/v2/scans',
              scan('advanced', target, { active: true, maxCredits: 100 }),
            ),
            403,
            'approved_target_scope_required',
          );
        },
      );

      it.each(['example.com', 'www.example.com', 'a.b.EXAMPLE.com', 'example.com.'])(
        'a fully approved advanced scan of %s reaches readiness: 503 scan_profile_unavailable',
        async (target) => {
          const e = expectError(
            await client(h.app, activeOk.key).post(
              '/v2/scans',
              scan('advanced', target, { active: true, maxCredits: 100 }),
            ),
            503,
            'scan_profile_unavailable',
          );
          expect(e.retryable).toBe(true);
        },
      );

      it('a passive scan needs neither active permission nor approved scope', async () => {
        expectError(
          await client(h.app, full.key).post(
            '/v2/scans',
            scan('balanced', 'example.org', { active: false, maxCredits: 100 }),
          ),
          503,
          'scan_profile_unavailable',
        );
      });
    });

    describe('the web lookup with authorized: true is active work on the URL host', () => {
      const web = (url: string) => ({ url, authorized: true });
      it('needs responsible use first', async () => {
        expectError(
          await client(h.app, noRu.key).post('/v2/lookups/web', web('https://evil.example.org/')),
          403,
          'responsible_use_required',
        );
        expectError(
          await client(h.app, activeNoRu.key).post('/v2/lookups/web', web('https://example.com/')),
          403,
          'responsible_use_required',
        );
        expectError(
          await client(h.app, oldRu.key).post('/v2/lookups/web', web('https://example.com/')),
          403,
          'responsible_use_required',
        );
      });

      it('then the active capability', async () => {
        expectError(
          await client(h.app, full.key).post('/v2/lookups/web', web('https://example.com/')),
          403,
          'active_permission_required',
        );
      });

      it.each([
        'https://example.org/',
        'https://notexample.com/',
        'https://example.com.evil.net/x',
        'http://127.200.0.1/',
        'https://[::1]/',
        'https://evil.net/?next=https://example.com/',
        'https://evil.net/#example.com',
      ])('then the approved scope of the URL host: %s', async (url) => {
        expectError(
          await client(h.app, activeOk.key).post('/v2/lookups/web', web(url)),
          403,
          'approved_target_scope_required',
        );
      });

      it.each(['https://example.com/', 'http://www.example.com:8443/login', 'https://WWW.Example.COM./'])(
        'and an approved host %s reaches readiness: 503 capability_unavailable',
        async (url) => {
          expectError(
            await client(h.app, activeOk.key).post('/v2/lookups/web', web(url)),
            503,
            'capability_unavailable',
          );
        },
      );
    });
  });

  describe('dependencies down', () => {
    it('an unreachable database answers 503 service_unavailable, never a 500 or a leak', async () => {
      const dead = await startHarness({ DATABASE_URL: 'mysql://lss:secret@127.0.0.1:1/lss_nowhere' });
      try {
        const key = generateApiKey().key; // well-formed, so the database must be asked
        const read = await client(dead.app, key).get('/v2/products');
        const e = expectError(read, 503, 'service_unavailable');
        expect(e.retryable).toBe(true);
        expect(Number(read.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(read.text).not.toContain('secret');
        expectError(await client(dead.app, key).post(MAC, MAC_BODY), 503, 'service_unavailable');
        // A malformed key is still refused without the database.
        expectError(await client(dead.app, 'lsk_nope').post(MAC, MAC_BODY), 401, 'authentication_required');
      } finally {
        await dead.close();
      }
    });
  });

  describe('envelope and X-Request-Id', () => {
    it('every reply carries a minted X-Request-Id; errors repeat it', async () => {
      const ok = await client(h.app, full.key).post(MAC, MAC_BODY);
      expect(ok.headers['x-request-id']).toMatch(REQUEST_ID_RE);
      expect(ok.body.requestId).toBe(ok.headers['x-request-id']);
      const err = await client(h.app).get('/v2/products');
      expect(err.headers['x-request-id']).toMatch(REQUEST_ID_RE);
      expect(err.body.error.requestId).toBe(err.headers['x-request-id']);
      expect(err.headers['x-request-id']).not.toBe(ok.headers['x-request-id']);
    });

    it('echoes a sane incoming X-Request-Id on success and on errors', async () => {
      const id = 'trace-4f1c/ABC:123_~';
      const ok = await client(h.app, full.key).post(MAC, MAC_BODY, { 'X-Request-Id': id });
      expect(ok.status).toBe(200);
      expect(ok.headers['x-request-id']).toBe(id);
      expect(ok.body.requestId).toBe(id);
      const err = await client(h.app).post(MAC, MAC_BODY, { 'X-Request-Id': id });
      expectError(err, 401, 'authentication_required');
      expect(err.body.error.requestId).toBe(id);
      const nf = await client(h.app).get('/v2/nope', { 'X-Request-Id': 'x'.repeat(128) });
      expect(nf.body.error.requestId).toBe('x'.repeat(128));
    });

    it.each([
      ['129 characters', 'x'.repeat(129)],
      ['a space', 'my trace'],
      ['non-ASCII', 'trace-é'],
    ])('replaces an incoming X-Request-Id with %s', async (_n, id) => {
      const res = await client(h.app).get('/v2/nope', { 'X-Request-Id': id });
      expect(res.headers['x-request-id']).toMatch(REQUEST_ID_RE);
      expect(res.body.error.requestId).toBe(res.headers['x-request-id']);
    });
  });
});
