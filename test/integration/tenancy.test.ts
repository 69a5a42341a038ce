// CONTRACT §2 tenancy: revocation within the documented bound, idempotency isolation between
// workspaces, and the product list every key may read.
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveScope, createKey, revokeKey, setWorkspaceFlags } from '../../src/auth/tenancy-repo.ts';
import { products as registered } from '../../src/products/registry.ts';
import { client, createTenant, idemKey, startHarness, type Harness } from '../helpers/harness.ts';

const MAC = '/v2/lookups/mac';

describe('key revocation', () => {
  // The Authenticator trusts a verified key for AUTH_CACHE_TTL_MS. That TTL is the documented upper
  // bound for a revocation to take effect in a process: the cache entry of the last successful
  // check expires at most TTL after that check started, which was before the revocation. We poll
  // every 10 ms, so the first 401 must come within TTL + one poll + one request (slack 200 ms).
  const TTL_MS = 300;
  const SLACK_MS = 200;
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ AUTH_CACHE_TTL_MS: String(TTL_MS) });
  });
  afterAll(() => h.close());

  it(`takes effect within AUTH_CACHE_TTL_MS (${TTL_MS} ms) + ${SLACK_MS} ms`, async () => {
    const t = await createTenant(h);
    const c = client(h.app, t.key);
    expect((await c.get('/v2/products')).status).toBe(200); // now cached
    const start = performance.now();
    await revokeKey(h.deps.db, t.keyId);
    let status = 200;
    let elapsed = 0;
    while (status === 200 && elapsed < TTL_MS + 5 * SLACK_MS) {
      status = (await c.get('/v2/products')).status;
      elapsed = performance.now() - start;
      if (status === 200) await sleep(10);
    }
    expect(status).toBe(401);
    expect(elapsed).toBeLessThanOrEqual(TTL_MS + SLACK_MS);
    // And it stays revoked, for writes too.
    await sleep(TTL_MS + 50);
    const res = await c.post(MAC, { value: 'F4F5E8123456' });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('authentication_required');
  });

  it('revoking one key leaves the other keys of the workspace working', async () => {
    const t = await createTenant(h);
    const sibling = await createKey(h.deps.db, h.config.KEY_PEPPER, { workspace: t.workspaceId });
    expect((await client(h.app, sibling.key).get('/v2/products')).status).toBe(200);
    await revokeKey(h.deps.db, t.keyId);
    await sleep(TTL_MS + 50);
    expect((await client(h.app, t.key).get('/v2/products')).status).toBe(401);
    expect((await client(h.app, sibling.key).get('/v2/products')).status).toBe(200);
    expect((await client(h.app, sibling.key).post(MAC, { value: 'F4F5E8123456' })).status).toBe(200);
  });

  it('workspace grants change within the same bound (responsible use, capability, scope)', async () => {
    const t = await createTenant(h, { active: true });
    const scan = {
      profile: 'advanced',
      target: { type: 'domain_name', value: 'www.example.com' },
      options: { active: true, maxCredits: 100 },
    };
    expect((await client(h.app, t.key).post('/v2/scans', scan)).body.error.code).toBe('responsible_use_required');
    await setWorkspaceFlags(h.deps.db, t.workspaceId, { acceptResponsibleUse: h.config.RESPONSIBLE_USE_VERSION });
    await approveScope(h.deps.db, t.workspaceId, 'example.com');
    await sleep(TTL_MS + 50);
    expect((await client(h.app, t.key).post('/v2/scans', scan)).body.error.code).toBe('scan_profile_unavailable');
  });
});

describe('workspace isolation', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());

  it('the same Idempotency-Key in two workspaces with different bodies: no conflict, no cross replay', async () => {
    const a = await createTenant(h);
    const b = await createTenant(h);
    const key = idemKey();
    const ra = await client(h.app, a.key).post(MAC, { value: 'F4:F5:E8:12:34:56' }, { 'Idempotency-Key': key });
    const rb = await client(h.app, b.key).post(MAC, { value: '00:1B:C5:00:00:01' }, { 'Idempotency-Key': key });
    expect(ra.status).toBe(200);
    expect(rb.status).toBe(200);
    expect(rb.headers['idempotent-replayed']).toBeUndefined();
    expect(ra.body.result.normalized).toBe('F4:F5:E8:12:34:56');
    expect(rb.body.result.normalized).toBe('00:1B:C5:00:00:01');
    // Each workspace's retry replays its own reply.
    const ra2 = await client(h.app, a.key).post(MAC, { value: 'F4:F5:E8:12:34:56' }, { 'Idempotency-Key': key });
    const rb2 = await client(h.app, b.key).post(MAC, { value: '00:1B:C5:00:00:01' }, { 'Idempotency-Key': key });
    expect(ra2.headers['idempotent-replayed']).toBe('true');
    expect(rb2.headers['idempotent-replayed']).toBe('true');
    expect(ra2.text).toBe(ra.text);
    expect(rb2.text).toBe(rb.text);
    // And the other workspace's body under the same key is this workspace's conflict, not its replay.
    const cross = await client(h.app, a.key).post(MAC, { value: '00:1B:C5:00:00:01' }, { 'Idempotency-Key': key });
    expect(cross.status).toBe(409);
    expect(cross.body.error.code).toBe('idempotency_key_conflict');
  });

  it('the same Idempotency-Key and the same body in two workspaces run twice', async () => {
    const a = await createTenant(h);
    const b = await createTenant(h);
    const key = idemKey();
    const ra = await client(h.app, a.key).post(MAC, { value: 'F4:F5:E8:12:34:56' }, { 'Idempotency-Key': key });
    const rb = await client(h.app, b.key).post(MAC, { value: 'F4:F5:E8:12:34:56' }, { 'Idempotency-Key': key });
    expect(rb.status).toBe(200);
    expect(rb.headers['idempotent-replayed']).toBeUndefined();
    expect(rb.body.requestId).not.toBe(ra.body.requestId);
  });

  it('approved scopes and active grants belong to one workspace', async () => {
    const ru = h.config.RESPONSIBLE_USE_VERSION;
    const owner = await createTenant(h, {
      active: true,
      acceptResponsibleUse: ru,
      approveScopes: ['owner-example.com'],
    });
    const stranger = await createTenant(h, {
      active: true,
      acceptResponsibleUse: ru,
      approveScopes: ['stranger-example.com'],
    });
    const scan = {
      profile: 'advanced',
      target: { type: 'domain_name', value: 'owner-example.com' },
      options: { active: true, maxCredits: 100 },
    };
    expect((await client(h.app, owner.key).post('/v2/scans', scan)).body.error.code).toBe('scan_profile_unavailable');
    expect((await client(h.app, stranger.key).post('/v2/scans', scan)).body.error.code).toBe(
      'approved_target_scope_required',
    );
  });

  it('a workspace with many approved scopes still approves every one of them', async () => {
    // Long lists must not be truncated anywhere between the table and the gate (e.g. a
    // GROUP_CONCAT limit): a truncated suffix would deny a scope or approve a shorter name.
    const suffixes = Array.from(
      { length: 120 },
      (_, i) => `scope-${String(i).padStart(3, '0')}-some-longer-label.example.net`,
    );
    const t = await createTenant(h, {
      active: true,
      acceptResponsibleUse: h.config.RESPONSIBLE_USE_VERSION,
      approveScopes: suffixes,
    });
    expect(suffixes.join(',').length).toBeGreaterThan(4096);
    const scan = (value: string) => ({
      profile: 'advanced',
      target: { type: 'domain_name', value },
      options: { active: true, maxCredits: 100 },
    });
    for (const s of [suffixes[0]!, suffixes[60]!, suffixes[119]!]) {
      expect((await client(h.app, t.key).post('/v2/scans', scan(`www.${s}`))).body.error.code).toBe(
        'scan_profile_unavailable',
      );
    }
    const truncated = suffixes[119]!.slice(0, -3); // "…example." without "net" would be a different name
    expect((await client(h.app, t.key).post('/v2/scans', scan(`${truncated}org`))).body.error.code).toBe(
      'approved_target_scope_required',
    );
  });
});

describe('GET /v2/products', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());

  it('lists all eight products with readiness and lanes', async () => {
    const t = await createTenant(h, { scopes: ['finding:read'] });
    const res = await client(h.app, t.key).get('/v2/products');
    expect(res.status).toBe(200);
    const list = res.body.products as Array<Record<string, any>>;
    expect(list.map((p) => p.product).sort()).toEqual([
      'lookup.dns.v1',
      'lookup.domain.v1',
      'lookup.ip.v1',
      'lookup.mac.v1',
      'lookup.mail.v1',
      'lookup.phone.v1',
      'lookup.web.v1',
      'scan.recursive.v1',
    ]);
    const byId = new Map(list.map((p) => [p.product, p]));

    const mac = byId.get('lookup.mac.v1')!;
    expect(['available', 'partially_configured']).toContain(mac.readiness);
    expect(mac).toMatchObject({
      method: 'POST',
      path: '/v2/lookups/mac',
      mode: 'sync',
      credits: { basis: 'fixed', amount: 0 },
    });
    expect(mac.lanes).toContainEqual(
      expect.objectContaining({ lane: 'oui_registry', required: true, readiness: 'ready' }),
    );
    if (!h.config.OUI_EXTRA_CSV_DIR) {
      // Without OUI_EXTRA_CSV_DIR the optional lane is visibly unconfigured and mac is partial.
      expect(mac.lanes).toContainEqual(
        expect.objectContaining({ lane: 'oui_extended', required: false, readiness: 'unconfigured' }),
      );
      expect(mac.readiness).toBe('partially_configured');
    }

    for (const [id, path, price] of [
      ['lookup.domain.v1', '/v2/lookups/domain', 2],
      ['lookup.mail.v1', '/v2/lookups/mail', 4],
      ['lookup.web.v1', '/v2/lookups/web', 4],
    ] as const) {
      const p = byId.get(id)!;
      expect(p).toMatchObject({
        readiness: 'unavailable',
        mode: 'async',
        path,
        credits: { basis: 'fixed', amount: price },
      });
      expect(p.lanes.length).toBeGreaterThan(0);
      // domain, web and mail are built but no lane worker runs beside this harness: their lanes are
      // down.
      for (const lane of p.lanes) expect(lane.readiness).toBe('down');
    }
    const scan = byId.get('scan.recursive.v1')!;
    expect(scan).toMatchObject({
      readiness: 'unavailable',
      mode: 'async',
      path: '/v2/scans',
      credits: { basis: 'maxCredits', amount: null },
    });

    for (const def of registered) {
      const p = byId.get(def.id)!;
      expect(p.title).toBe(def.title);
      expect(p.lanes.map((l: { lane: string }) => l.lane)).toEqual(def.lanes.map((l) => l.lane));
      expect(p.lanes.map((l: { required: boolean }) => l.required)).toEqual(def.lanes.map((l) => l.required));
      for (const lane of p.lanes) expect(lane.description.length).toBeGreaterThan(0);
      // A product without a ready required lane is never advertised as available.
      if (p.lanes.some((l: { required: boolean; readiness: string }) => l.required && l.readiness !== 'ready'))
        expect(p.readiness).toBe('unavailable');
    }
  });

  it('also with the IAB/CID registries configured mac reports a fully ready lane set', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'oui-'));
    const header = 'Registry,Assignment,Organization Name,Organization Address\n';
    writeFileSync(path.join(dir, 'iab.csv'), `${header}IAB,0050C2123,Example,1 Main St\n`);
    writeFileSync(path.join(dir, 'cid.csv'), `${header}CID,DAA119,Example,2 Side St\n`);
    const h2 = await startHarness({ OUI_EXTRA_CSV_DIR: dir });
    try {
      const t = await createTenant(h2);
      const res = await client(h2.app, t.key).get('/v2/products');
      const mac = res.body.products.find((p: { product: string }) => p.product === 'lookup.mac.v1');
      expect(mac.readiness).toBe('available');
    } finally {
      await h2.close();
    }
  });
});
