import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createTenant, startHarness, type Harness, type Tenant } from '../helpers/harness.ts';

describe('POST /v2/lookups/mac', () => {
  let h: Harness;
  let t: Tenant;
  beforeAll(async () => {
    h = await startHarness();
    t = await createTenant(h);
  });
  afterAll(() => h.close());

  it.each([['F4:F5:E8:12:34:56'], ['f4-f5-e8-12-34-56'], ['f4f5.e812.3456'], ['F4F5E8123456'], ['f4f5e8-123456']])(
    'accepts the notation %s and finds the MA-L vendor',
    async (value) => {
      const res = await client(h.app, t.key).post('/v2/lookups/mac', { value });
      expect(res.status).toBe(200);
      expect(res.body.product).toBe('lookup.mac.v1');
      expect(res.body.result.normalized).toBe('F4:F5:E8:12:34:56');
      expect(res.body.result.oui).toBe('F4:F5:E8');
      expect(res.body.result.organization).toMatch(/Google/);
      expect(res.body.result.assignment).toEqual({
        block: 'MA-L',
        prefix: 'F4F5E8',
        prefixBits: 24,
        registry: 'IEEE MA-L',
      });
      expect(res.body.result.isMulticast).toBe(false);
      expect(res.body.status).toBe('completed');
      expect(res.body.coverage).toEqual({ complete: true });
      expect(res.body.credits).toEqual({ charged: 0 });
      expect(res.body.sources[0].version).toMatch(/^oui-data@\d/);
      expect(res.headers['x-request-id']).toBe(res.body.requestId);
    },
  );

  it('prefers MA-S over the IEEE RA parent block (longest prefix)', async () => {
    const res = await client(h.app, t.key).post('/v2/lookups/mac', { value: '00:1B:C5:00:00:01' });
    expect(res.status).toBe(200);
    expect(res.body.result.assignment.block).toBe('MA-S');
    expect(res.body.result.assignment.prefix).toBe('001BC5000');
    expect(res.body.result.organization).toMatch(/Converging Systems/);
    expect(res.body.lanes.find((l: { lane: string }) => l.lane === 'oui_extended').status).toBe('skipped');
  });

  it('is partial, not "unknown vendor", when an IEEE RA block needs the unconfigured IAB registry', async () => {
    const res = await client(h.app, t.key).post('/v2/lookups/mac', { value: '00:50:C2:12:34:56' });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('partial');
    expect(res.body.coverage.complete).toBe(false);
    expect(res.body.lanes).toContainEqual({
      lane: 'oui_extended',
      required: false,
      status: 'unavailable',
      reason: 'not_configured',
    });
    expect(res.body.limitations.map((l: { code: string }) => l.code)).toContain('oui_extended_unavailable');
    expect(res.body.result.organization).toMatch(/IEEE Registration Authority/);
  });

  it('reports multicast and locally administered bits with the SLAP quadrant', async () => {
    const mc = await client(h.app, t.key).post('/v2/lookups/mac', { value: '01:00:5E:00:00:FB' });
    expect(mc.body.result.isMulticast).toBe(true);
    const local = await client(h.app, t.key).post('/v2/lookups/mac', { value: 'DA:A1:19:00:00:01' });
    expect(local.body.result.isLocallyAdministered).toBe(true);
    expect(local.body.result.slapQuadrant).toBe('ELI');
    expect(local.body.result.isRandomizedHint).toBe(true);
    expect(local.body.result.assignment).toBeNull();
    const aai = await client(h.app, t.key).post('/v2/lookups/mac', { value: '02:00:00:00:00:01' });
    expect(aai.body.result.slapQuadrant).toBe('AAI');
  });

  it.each([
    [{ value: 'not-a-mac' }, 'value'],
    [{ value: '00:11:22:33:44' }, 'value'],
    [{ value: '00:11:22:33:44:55:66' }, 'value'],
    [{ value: '00:11-22:33:44:55' }, 'value'],
    [{ value: 12 }, 'value'],
    [{}, 'value'],
    [{ value: '001122334455', extra: 1 }, ''],
  ])('rejects %j with invalid_request naming the field', async (body, field) => {
    const res = await client(h.app, t.key).post('/v2/lookups/mac', body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.details.issues.map((i: { path: string }) => i.path)).toContain(field);
  });

  describe('with the IAB/CID registries configured', () => {
    let h2: Harness;
    beforeAll(async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'oui-'));
      writeFileSync(
        path.join(dir, 'iab.csv'),
        'Registry,Assignment,Organization Name,Organization Address\nIAB,0050C2123,"Example Widgets, Inc.",1 Main St Springfield US\n',
      );
      writeFileSync(
        path.join(dir, 'cid.csv'),
        'Registry,Assignment,Organization Name,Organization Address\nCID,DAA119,Example CID Holder,2 Side St Leeds GB\n',
      );
      h2 = await startHarness({ OUI_EXTRA_CSV_DIR: dir });
    });
    afterAll(() => h2.close());

    it('resolves an IAB assignment inside the IEEE RA block and completes', async () => {
      const tenant = await createTenant(h2);
      const res = await client(h2.app, tenant.key).post('/v2/lookups/mac', { value: '00:50:C2:12:34:56' });
      expect(res.body.status).toBe('completed');
      expect(res.body.result.assignment).toEqual({
        block: 'IAB',
        prefix: '0050C2123',
        prefixBits: 36,
        registry: 'IEEE IAB',
      });
      expect(res.body.result.organization).toBe('Example Widgets, Inc.');
      expect(res.body.result.country).toBe('US');
    });

    it('resolves a CID in the ELI quadrant and does not call it randomized', async () => {
      const tenant = await createTenant(h2);
      const res = await client(h2.app, tenant.key).post('/v2/lookups/mac', { value: 'DA:A1:19:00:00:01' });
      expect(res.body.result.assignment.block).toBe('CID');
      expect(res.body.result.isRandomizedHint).toBe(false);
    });
  });
});
