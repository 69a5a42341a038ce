// scan.recursive.v1 end to end: HTTP admission (gates, budget bounds) → job → orchestrator
// expanding as results arrive → every lane worker (dns, mail, web, domain, active: real Redis
// streams and MySQL) → the whole lab (DNS, RDAP, web, mail and scan hosts on loopback) → terminal
// job. Each scenario asserts objects, relations, findings, coverage and the ledger
// (granted = available + reserved + captured) after the scan.
import { pino } from 'pino';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startHarness, type Harness } from '../helpers/harness.ts';
import { fundedTenant, pollTerminal as pollJob } from '../helpers/jobs.ts';
import { labEnv } from '../helpers/lab-runtime.ts';
import { startLab, type RunningLab } from '../lab/serve.ts';
import { scanLabPart, type ScanLab } from '../lab/scan-lab.ts';
import { webLabPart } from '../lab/web-lab.ts';
import { mailLabPart } from '../lab/mail-lab.ts';
import { CHAIN_LENGTH, SCAN_ZONE, WILD_ZONE } from '../lab/scan-zones.ts';
import { balance } from '../../src/credits/ledger.ts';
import { startOrchestrator, type OrchestratorHandle } from '../../src/jobs/orchestration/orchestrator.ts';
import { startLaneWorker, type LaneWorkerHandle } from '../../workers/start-lane-worker.ts';
import type { LaneHealth } from '../../src/queue/lane-health.ts';
import type { LaneName } from '../../src/queue/streams.ts';

const SCANS = '/v2/scans';
const GENEROUS = { app: { perMinute: 100_000, burst: 10_000 }, products: { 'scan.recursive.v1': { perMinute: 100_000, perHour: 1_000_000 } } };

interface Item { objectId: string; type: string; key: string; distance: number; projection: Record<string, unknown>; lanes: Array<{ lane: string; status: string }> }
interface Finding { findingId: string; code: string; severity: string; objectId: string; summary: string }

describe('scan.recursive.v1', () => {
  let lab: RunningLab;
  let scanLab: ScanLab;
  let h: Harness;
  let orchestrator: OrchestratorHandle;
  const workers: LaneWorkerHandle[] = [];

  const tenant = (credits: number, extra: Parameters<typeof fundedTenant>[2] = {}) =>
    fundedTenant(h, credits, { limits: GENEROUS, acceptResponsibleUse: h.config.RESPONSIBLE_USE_VERSION, ...extra });
  const poll = (key: string, jobRef: string) => pollJob(h, key, jobRef, 90_000);

  async function scan(key: string, body: unknown) {
    const res = await client(h.app, key).post(SCANS, body);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    return (await poll(key, res.body.jobRef)).body;
  }

  async function all<T>(key: string, path: string): Promise<T[]> {
    const out: T[] = [];
    let cursor: string | null = null;
    do {
      const res = await client(h.app, key).get(`${path}?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.status).toBe(200);
      out.push(...res.body.items);
      cursor = res.body.page.nextCursor;
    } while (cursor);
    return out;
  }

  async function ledgerHolds(wsId: number) {
    const b = await balance(h.deps.db, wsId);
    expect(b.granted).toBe(b.available + b.reserved + b.captured);
    expect(b.reserved).toBe(0);
    return b;
  }

  const body = (profile: string, value: string, maxCredits: number, active = false) => ({ profile, target: { type: 'domain_name', value }, options: { active, maxCredits } });

  beforeAll(async () => {
    lab = await startLab({ parts: [webLabPart(), mailLabPart, scanLabPart({ onReady: (s) => (scanLab = s) })] });
    h = await startHarness({ ...labEnv(lab.env), DNS_TIMEOUT_MS: '700', CANCEL_GRACE_MS: '1000' });
    const log = pino({ level: 'silent' });
    orchestrator = await startOrchestrator({ config: h.config, log, timing: { relayEveryMs: 200, relayAfterMs: 300, reconcileEveryMs: 500, sweepEveryMs: 300 } });
    for (const lane of ['dns', 'mail', 'web', 'domain', 'active'] as LaneName[]) {
      workers.push(await startLaneWorker(lane, { config: h.config, log, blockMs: 100, settings: { LANE_POOL_THREADS: 1, LANE_CONCURRENCY: 16, LANE_TENANT_CONCURRENCY: 16 } }));
    }
    await (h.deps.runtime.services.laneHealth as LaneHealth).refresh();
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.close()));
    await orchestrator?.close();
    await h?.close();
    await lab?.close();
  });

  describe('bad input: the documented 400s, before anything is reserved', () => {
    it.each([
      ['an unknown target type', { profile: 'quick', target: { type: 'ip_address', value: '127.0.0.1' }, options: { active: false, maxCredits: 10 } }, 'invalid_request'],
      ['an IP as target', body('quick', '127.0.0.1', 10), 'invalid_request'],
      ['a public suffix as target', body('quick', 'co.uk', 10), 'invalid_request'],
      ['a name over 253 characters', body('quick', `${'a'.repeat(60)}.`.repeat(5) + 'test', 10), 'invalid_request'],
      ['maxCredits missing', { profile: 'quick', target: { type: 'domain_name', value: SCAN_ZONE }, options: { active: false } }, 'invalid_request'],
      ['maxCredits not an integer', body('quick', SCAN_ZONE, 10.5), 'scan_credit_budget_invalid'],
      ['maxCredits out of the profile bounds', body('deep', SCAN_ZONE, 20), 'scan_credit_budget_invalid'],
      ['options.active not a boolean', { profile: 'quick', target: { type: 'domain_name', value: SCAN_ZONE }, options: { active: 'yes', maxCredits: 10 } }, 'invalid_request'],
      ['active on a passive profile', body('balanced', SCAN_ZONE, 50, true), 'invalid_request'],
    ])('%s', async (_name, payload, code) => {
      const t = await tenant(1000);
      const res = await client(h.app, t.key).post(SCANS, payload);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe(code);
      if (code === 'scan_credit_budget_invalid') expect(res.body.error.details.bounds).toMatchObject({ min: expect.any(Number), max: expect.any(Number) });
      expect(await balance(h.deps.db, t.wsId)).toMatchObject({ reserved: 0, available: 1000 });
    });
  });

  describe('balanced: recursion of one hop, scope, provenance', () => {
    let t: Awaited<ReturnType<typeof tenant>>;
    let job: Record<string, any>;
    let items: Item[];
    let findings: Finding[];
    const byKey = (key: string) => items.find((i) => i.key === key);

    beforeAll(async () => {
      t = await tenant(1000);
      job = await scan(t.key, body('balanced', SCAN_ZONE, 200));
      items = await all<Item>(t.key, `/v2/jobs/${job.jobRef}/results`);
      findings = await all<Finding>(t.key, `/v2/jobs/${job.jobRef}/findings`);
    }, 120_000);

    it('ends terminal with a ledger that holds, charging only what ran', async () => {
      expect(['completed', 'partial']).toContain(job.status);
      expect(job.ledger.reserved).toBe(200);
      expect(job.ledger.captured + job.ledger.released).toBe(200);
      const b = await ledgerHolds(t.wsId);
      expect(b.captured).toBe(job.ledger.captured);
    });

    it('scans in-scope names one hop away (MX, NS, SRV, SPF, CNAME, certificate SANs) and only records out-of-scope ones', async () => {
      for (const name of [`mail.${SCAN_ZONE}`, `ns1.${SCAN_ZONE}`, `sip.${SCAN_ZONE}`, `api.${SCAN_ZONE}`, `www.${SCAN_ZONE}`]) {
        const item = byKey(name);
        expect(item, name).toBeDefined();
        expect(item!.distance, name).toBe(1);
        expect(item!.lanes.map((l) => l.lane), name).toContain('dns'); // it was scanned itself
      }
      for (const name of ['mx.thirdparty-mail.test', 'ns.thirdparty-dns.test', 'partner.thirdparty-cdn.test', '_spf.thirdparty-mail.test']) {
        const item = byKey(name);
        expect(item, name).toBeDefined();
        expect(item!.distance, name).toBe(1);
        expect(item!.projection.inScope, name).toBe(false);
        // Never scanned itself (the target's mail posture does examine its MX hosts, wherever they are).
        expect(item!.lanes.map((l) => l.lane), name).not.toContain('dns');
      }
      const tasks = await sql<{ object_key: string }>`SELECT t.object_key FROM tasks t JOIN jobs j ON j.id = t.job_id WHERE j.public_id = ${job.jobRef}`.execute(h.deps.db);
      expect(tasks.rows.map((r) => r.object_key).filter((k) => k.includes('thirdparty'))).toEqual([]);
    });

    it('keeps provenance: how each name was found, from where, with its relation', async () => {
      expect(byKey(`sip.${SCAN_ZONE}`)!.projection).toMatchObject({ foundVia: 'srv', foundFrom: SCAN_ZONE });
      expect(byKey(`api.${SCAN_ZONE}`)!.projection.foundVia).toBe('san');
      const apex = await client(h.app, t.key).get(`/v2/jobs/${job.jobRef}/objects/${byKey(SCAN_ZONE)!.objectId}`);
      const rel = apex.body.relations.map((r: { relation: string; direction: string }) => `${r.relation}:${r.direction}`);
      expect(rel).toEqual(expect.arrayContaining(['mx_of:incoming', 'ns_of:incoming', 'resolves_to:outgoing']));
    });

    it('does not go beyond one hop: names found from distance-1 names are recorded, not scanned', async () => {
      // www is a CNAME to the apex; the apex page's links are a deep source, not balanced.
      expect(byKey(`loop-a.${SCAN_ZONE}`)).toBeUndefined();
      expect(items.every((i) => i.distance <= 2)).toBe(true);
    });

    it('posture of the apex and www, delegation and registration', async () => {
      const lanes = job.lanes.map((l: { lane: string }) => l.lane);
      expect(lanes).toEqual(expect.arrayContaining(['dns', 'mail', 'web', 'domain']));
      expect(lanes).not.toContain('active');
      expect(findings.length).toBeGreaterThan(0);
    });
  });
});
