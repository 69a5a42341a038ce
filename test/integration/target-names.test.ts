// What admission refuses about the names and ports a request asks about (issue 18 items 2, 4, 5),
// through HTTP and the whole chain, before anything is reserved or resolved:
//   - special-use names (IANA registries, non-global reverse zones, TLDs outside the public suffix
//     list) on every product that takes a name or URL: 400 invalid_request with details.reason,
//     unless ALLOW_SPECIAL_USE_DOMAINS lists the suffix;
//   - a public suffix of either section of the list as a scan target: 400, details.reason
//     public_suffix with the section;
//   - a web lookup on a port outside 80, 443, 8080, 8443 without authorized: true: 403
//     active_authorization_required; with it, the active gates.
// The refusals are validation (CONTRACT §2 step 5): they come before the active gates.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balance } from '../../src/credits/ledger.ts';
import { client, startHarness, type Harness } from '../helpers/harness.ts';
import { fundedTenant } from '../helpers/jobs.ts';

const GENEROUS = {
  app: { perMinute: 100_000, burst: 10_000 },
  products: Object.fromEntries(
    ['lookup.dns.v1', 'lookup.domain.v1', 'lookup.mail.v1', 'lookup.web.v1', 'scan.recursive.v1'].map((p) => [
      p,
      { perMinute: 100_000, perHour: 1_000_000 },
    ]),
  ),
};

const scan = (value: string, profile = 'quick', active = false) => ({
  profile,
  target: { type: 'domain_name', value },
  options: { active, maxCredits: profile === 'advanced' ? 50 : 10 },
});

describe('names and ports refused at admission', () => {
  let h: Harness;
  let allowing: Harness;

  beforeAll(async () => {
    // The test runner's environment sets no ALLOW_SPECIAL_USE_DOMAINS: the production default.
    h = await startHarness({ ALLOW_SPECIAL_USE_DOMAINS: '' });
    allowing = await startHarness({ ALLOW_SPECIAL_USE_DOMAINS: 'test,corp.internal' });
  });
  afterAll(async () => {
    await h?.close();
    await allowing?.close();
  });

  const tenant = (on = h, extra = {}) =>
    fundedTenant(on, 1000, {
      limits: GENEROUS,
      acceptResponsibleUse: on.config.RESPONSIBLE_USE_VERSION,
      ...extra,
    });

  describe('special-use names: 400 invalid_request on every product that takes a name or URL', () => {
    it.each([
      ['/v2/lookups/dns', { value: 'kubernetes.default.svc.cluster.local' }, 'special_use_domain', 'local', 'value'],
      ['/v2/lookups/dns', { value: 'localhost' }, 'special_use_domain', 'localhost', 'value'],
      [
        '/v2/lookups/dns',
        { value: '7.0.0.10.in-addr.arpa' },
        'non_global_reverse_zone',
        '7.0.0.10.in-addr.arpa',
        'value',
      ],
      ['/v2/lookups/dns', { value: 'lab.test' }, 'special_use_domain', 'test', 'value'],
      ['/v2/lookups/domain', { value: 'db.internal' }, 'special_use_domain', 'internal', 'value'],
      ['/v2/lookups/domain', { value: 'nas.lan' }, 'unlisted_tld', 'lan', 'value'],
      ['/v2/lookups/mail', { value: 'corp.home.arpa' }, 'special_use_domain', 'home.arpa', 'value'],
      [
        '/v2/lookups/web',
        { url: 'http://metadata.google.internal/computeMetadata/v1/' },
        'special_use_domain',
        'internal',
        'url',
      ],
      ['/v2/lookups/web', { url: 'https://printer.local/', authorized: true }, 'special_use_domain', 'local', 'url'],
      ['/v2/scans', scan('router.home.arpa'), 'special_use_domain', 'home.arpa', 'target.value'],
      // Validation comes before the active gates: an unauthorized advanced scan of it is still a 400.
      ['/v2/scans', scan('intranet.corp', 'advanced', false), 'special_use_domain', 'corp', 'target.value'],
    ])('%s %j → %s (%s)', async (route, body, reason, suffix, path) => {
      const t = await tenant();
      const res = await client(h.app, t.key).post(route, body);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.details).toMatchObject({ reason, suffix, issues: [{ path }] });
      expect(await balance(h.deps.db, t.wsId)).toMatchObject({ reserved: 0, available: 1000 });
    });

    it('the same names pass validation where ALLOW_SPECIAL_USE_DOMAINS lists their suffix', async () => {
      const t = await tenant(allowing);
      // No lane worker runs here: a request that passed validation and the gates stops at readiness.
      for (const [route, body] of [
        ['/v2/lookups/domain', { value: 'lab.test' }],
        ['/v2/lookups/mail', { value: 'db.corp.internal' }],
        ['/v2/scans', scan('scan-basic.test')],
      ] as const) {
        const res = await client(allowing.app, t.key).post(route, body);
        expect([503], `${route} ${JSON.stringify(res.body)}`).toContain(res.status);
      }
      const other = await client(allowing.app, t.key).post('/v2/lookups/domain', { value: 'db.other.internal' });
      expect(other.body.error.details).toMatchObject({ reason: 'special_use_domain', suffix: 'internal' });
    });

    it("an address in a web URL is the outbound guard's business, not a name: it passes this check", async () => {
      const t = await tenant();
      const res = await client(h.app, t.key).post('/v2/lookups/web', { url: 'https://127.200.0.1/' });
      expect(res.status).toBe(503);
    });
  });

  describe('a public suffix of either section is not a scan target', () => {
    it.each([
      ['github.io', 'private'],
      ['s3.amazonaws.com', 'private'],
      ['herokuapp.com', 'private'],
      ['blogspot.com', 'private'],
      ['co.uk', 'icann'],
      ['com', 'icann'],
    ])('%s (%s section) → 400 public_suffix', async (value, section) => {
      const t = await tenant();
      const res = await client(h.app, t.key).post('/v2/scans', scan(value));
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.details).toMatchObject({
        reason: 'public_suffix',
        section,
        suffix: value,
        issues: [{ path: 'target.value' }],
      });
      expect(await balance(h.deps.db, t.wsId)).toMatchObject({ reserved: 0 });
    });

    it("an owner's name below a private suffix is a scan target", async () => {
      const t = await tenant();
      const res = await client(h.app, t.key).post('/v2/scans', scan('alice.github.io'));
      expect(res.status).toBe(503); // validated; no lane worker runs in this test
    });
  });

  describe('a passive web lookup stays on the web ports', () => {
    it.each(['https://example.com:22/', 'http://example.com:6379/', 'https://example.com:3389/login'])(
      '%s without authorized → 403 active_authorization_required, nothing reserved',
      async (url) => {
        const t = await tenant();
        const res = await client(h.app, t.key).post('/v2/lookups/web', { url });
        expect(res.status).toBe(403);
        expect(res.body.error.code).toBe('active_authorization_required');
        expect(await balance(h.deps.db, t.wsId)).toMatchObject({ reserved: 0 });
      },
    );

    it.each(['https://example.com/', 'http://example.com/', 'http://example.com:8080/', 'https://example.com:8443/'])(
      '%s passes the gates without authorization',
      async (url) => {
        const t = await tenant();
        const res = await client(h.app, t.key).post('/v2/lookups/web', { url });
        expect(res.status).toBe(503);
      },
    );

    it('with authorized: true the active gates apply as for scans', async () => {
      const url = 'https://example.com:22/';
      const noPermission = await tenant();
      let res = await client(h.app, noPermission.key).post('/v2/lookups/web', { url, authorized: true });
      expect(res.body.error.code).toBe('active_permission_required');
      const unapproved = await tenant(h, { active: true, approveScopes: ['other.example.org'] });
      res = await client(h.app, unapproved.key).post('/v2/lookups/web', { url, authorized: true });
      expect(res.body.error.code).toBe('approved_target_scope_required');
      const approved = await tenant(h, { active: true, approveScopes: ['example.com'] });
      res = await client(h.app, approved.key).post('/v2/lookups/web', { url, authorized: true });
      expect(res.status).toBe(503);
    });
  });
});
