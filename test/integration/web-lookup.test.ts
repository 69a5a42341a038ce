// lookup.web.v1 end to end: HTTP admission (gates, credits) → job → orchestrator → web lane worker
// (in process, real Redis streams, MySQL and piscina pool) → the web lab → terminal job, ledger,
// results, objects and findings. Hostile peers end the job in time; bad input and failed gates
// reserve nothing.
import { pino } from 'pino';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, type createTenant, idemKey, startHarness, type Harness } from '../helpers/harness.ts';
import { fundedTenant, pollTerminal as pollJob } from '../helpers/jobs.ts';
import { assertMatchesSchema } from '../helpers/contract-check.ts';
import { labEnv } from '../helpers/lab-runtime.ts';
import { startLab, type RunningLab } from '../lab/serve.ts';
import { webLabPart, type WebLab } from '../lab/web-lab.ts';
import { WEB_ZONE, webLabAddress, webUrl } from '../lab/web-hosts.ts';
import { balance } from '../../src/credits/ledger.ts';
import { startOrchestrator, type OrchestratorHandle } from '../../src/jobs/orchestration/orchestrator.ts';
import { startLaneWorker, type LaneWorkerHandle } from '../../workers/start-lane-worker.ts';
import { createWebChecks } from '../../src/products/web/index.ts';
import type { LaneHealth } from '../../src/queue/lane-health.ts';

const WEB = '/v2/lookups/web';
const GENEROUS = {
  app: { perMinute: 100_000, burst: 10_000 },
  products: { 'lookup.web.v1': { perMinute: 100_000, perHour: 1_000_000 } },
};
// Short phases so hostile peers cost about a second each.
const checks = createWebChecks({ fetchTimeoutMs: 1200, handshakeTimeoutMs: 800 });

describe('lookup.web.v1 as a job', () => {
  let lab: RunningLab;
  let web: WebLab;
  let h: Harness;
  let orchestrator: OrchestratorHandle;
  let worker: LaneWorkerHandle;

  const tenant = (credits: number, opts: Parameters<typeof createTenant>[1] = {}) =>
    fundedTenant(h, credits, { limits: GENEROUS, ...opts });
  const pollTerminal = (key: string, jobRef: string, timeoutMs?: number) => pollJob(h, key, jobRef, timeoutMs);

  async function jobsOf(wsId: number): Promise<number> {
    const r = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM jobs WHERE workspace_id = ${wsId}`.execute(h.deps.db);
    return Number(r.rows[0]!.n);
  }

  beforeAll(async () => {
    lab = await startLab({ parts: [webLabPart({ onReady: (w) => (web = w) })] });
    h = await startHarness({
      ...labEnv(lab.env),
      DNS_TIMEOUT_MS: '500',
      CANCEL_GRACE_MS: '1000',
      // The `denied` lab host: active work never connects to it (issue 45).
      ACTIVE_DENY_CIDRS: `169.254.0.0/16,${webLabAddress('denied')}/32`,
    });
    const log = pino({ level: 'silent' });
    orchestrator = await startOrchestrator({
      config: h.config,
      log,
      timing: { relayEveryMs: 200, relayAfterMs: 300, reconcileEveryMs: 500, sweepEveryMs: 300 },
    });
    worker = await startLaneWorker('web', {
      config: h.config,
      log,
      blockMs: 200,
      settings: { LANE_POOL_THREADS: 1 },
      checks: (name) => checks.find((c) => c.name === name),
    });
    await (h.deps.runtime.services.laneHealth as LaneHealth).refresh();
  });
  afterAll(async () => {
    await worker?.close();
    await orchestrator?.close();
    await h?.close();
    await lab?.close();
    expect(web?.refusedConnections()).toBe(0);
  });

  it('is available in /v2/products while a web lane worker runs', async () => {
    const t = await tenant(0);
    const res = await client(h.app, t.key).get('/v2/products');
    const p = res.body.products.find((x: { product: string }) => x.product === 'lookup.web.v1');
    expect(p.readiness).toBe('available');
  });

  it('a strict host: 202, completed, 4 credits captured, objects and relations, no findings', async () => {
    const t = await tenant(10);
    const accepted = await client(h.app, t.key).post(WEB, { url: webUrl('strict') });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({
      product: 'lookup.web.v1',
      status: 'queued',
      target: { type: 'url', value: webUrl('strict') },
    });
    expect(await balance(h.deps.db, t.wsId)).toMatchObject({ reserved: 4, available: 6 });
    const done = await pollTerminal(t.key, accepted.body.jobRef);
    expect(done.body.status).toBe('completed');
    assertMatchesSchema('LookupWebEnvelope', done.body.result);
    expect(done.body.result.lanes.map((l: { lane: string; status: string }) => [l.lane, l.status])).toEqual([
      ['http', 'completed'],
      ['tls', 'completed'],
      ['tls_protocols', 'skipped'],
    ]);
    expect(done.body.result.result.http.score).toMatchObject({ score: 135, grade: 'A+' });
    const posture = (
      await client(h.app, t.key).get(`/v2/jobs/${accepted.body.jobRef}/results?limit=100`)
    ).body.items.find((i: { type: string }) => i.type === 'web_posture');
    expect(posture.projection).toMatchObject({ score: 135, grade: 'A+', observatoryWouldGrade: true });
    expect(done.body.result.result.tls).toMatchObject({ chainTrusted: true, hostnameMatch: true });
    expect(done.body.ledger).toMatchObject({ reserved: 4, captured: 4, released: 0 });
    const results = await client(h.app, t.key).get(`/v2/jobs/${accepted.body.jobRef}/results?limit=100`);
    const types = new Set(results.body.items.map((i: { type: string }) => i.type));
    for (const type of ['url', 'host', 'ip_address', 'certificate', 'web_posture']) expect(types, type).toContain(type);
    const host = results.body.items.find(
      (i: { type: string; key: string }) => i.type === 'host' && i.key === `strict.${WEB_ZONE}`,
    );
    const detail = await client(h.app, t.key).get(`/v2/jobs/${accepted.body.jobRef}/objects/${host.objectId}`);
    expect(detail.body.relations.map((r: { relation: string }) => r.relation)).toEqual(
      expect.arrayContaining(['resolves_to', 'san_of']),
    );
    const findings = await client(h.app, t.key).get(`/v2/jobs/${accepted.body.jobRef}/findings`);
    expect(findings.body.items).toEqual([]);
  });

  it('a page the Observatory would not grade (404): the web_posture object says so, like the result', async () => {
    const t = await tenant(10);
    const accepted = await client(h.app, t.key).post(WEB, { url: webUrl('notfound') });
    const done = await pollTerminal(t.key, accepted.body.jobRef);
    expect(done.body.result.result.http.score).toMatchObject({ observatoryWouldGrade: false });
    const results = await client(h.app, t.key).get(`/v2/jobs/${accepted.body.jobRef}/results?limit=100`);
    const posture = results.body.items.find((i: { type: string }) => i.type === 'web_posture');
    expect(posture.projection).toMatchObject({
      status: 404,
      score: done.body.result.result.http.score.score,
      observatoryWouldGrade: false,
    });
  });

  it('the findings route lists what a bare host lacks', async () => {
    const t = await tenant(10);
    const accepted = await client(h.app, t.key).post(WEB, { url: webUrl('none', 'http') });
    await pollTerminal(t.key, accepted.body.jobRef);
    const findings = await client(h.app, t.key).get(`/v2/jobs/${accepted.body.jobRef}/findings?limit=100`);
    expect(findings.body.items.map((f: { code: string }) => f.code).sort()).toEqual([
      'web_clickjacking_unprotected',
      'web_csp_missing',
      'web_hsts_missing',
      'web_https_redirect_missing',
      'web_nosniff_missing',
    ]);
  });

  it('partial charging: http partial (no HTTPS) is captured, tls unavailable is released', async () => {
    const t = await tenant(10);
    const accepted = await client(h.app, t.key).post(WEB, { url: webUrl('nohttps', 'http') });
    const done = await pollTerminal(t.key, accepted.body.jobRef);
    expect(done.body.status).toBe('partial');
    expect(done.body.coverage.complete).toBe(false);
    expect(done.body.ledger).toMatchObject({ reserved: 4, captured: 2, released: 2 });
    expect(await balance(h.deps.db, t.wsId)).toEqual({ granted: 10, reserved: 0, captured: 2, available: 8 });
  });

  it('a silent host (accepts, then stalls): the job ends partial within its budget, nothing captured, the worker lives on', async () => {
    const t = await tenant(10);
    const t0 = Date.now();
    const accepted = await client(h.app, t.key).post(WEB, { url: webUrl('silent') });
    const done = await pollTerminal(t.key, accepted.body.jobRef, 15_000);
    expect(Date.now() - t0).toBeLessThan(10_000);
    // A stall is a measured fact about the target, not our side being unavailable (CONTRACT §9).
    expect(done.body.status).toBe('partial');
    assertMatchesSchema('LookupWebEnvelope', done.body.result);
    expect(done.body.result.status).toBe('partial');
    expect(done.body.result.result.http.chains.http.failure).toMatchObject({ kind: 'timeout' });
    expect(done.body.lanes.map((l: { lane: string; timeout: number }) => [l.lane, l.timeout])).toEqual(
      expect.arrayContaining([
        ['http', 1],
        ['tls', 1],
      ]),
    );
    expect(done.body.ledger).toMatchObject({ reserved: 4, captured: 0, released: 4 });
    // The same worker still serves the next job.
    const next = await client(h.app, t.key).post(WEB, { url: webUrl('strict') });
    expect((await pollTerminal(t.key, next.body.jobRef)).body.status).toBe('completed');
  });

  it('a site that speaks only TLS 1.0: partial, with status, certificate and a legacy-protocol finding', async () => {
    const t = await tenant(10);
    const accepted = await client(h.app, t.key).post(WEB, { url: webUrl('tls10') });
    const done = await pollTerminal(t.key, accepted.body.jobRef);
    // http (a modern client, like browsers) cannot speak TLS 1.0: that is what it measured.
    expect(done.body.status).toBe('partial');
    assertMatchesSchema('LookupWebEnvelope', done.body.result);
    const env = done.body.result;
    expect(env.status).toBe('partial');
    expect(env.lanes.map((l: { lane: string; status: string }) => [l.lane, l.status])).toEqual([
      ['http', 'unavailable'],
      ['tls', 'completed'],
      ['tls_protocols', 'skipped'],
    ]);
    expect(env.result.tls).toMatchObject({ protocol: 'TLSv1', negotiatedWith: 'legacy_client_tls1.0_1.1' });
    expect(env.result.tls.certificate.sans).toContain(`tls10.${WEB_ZONE}`);
    expect(env.result.http.chains.https.outcome).toBe('failed');
    const findings = await client(h.app, t.key).get(`/v2/jobs/${accepted.body.jobRef}/findings`);
    expect(findings.body.items.map((f: { code: string }) => f.code)).toContain('tls_legacy_protocol_negotiated');
    expect(done.body.ledger).toMatchObject({ reserved: 4, captured: 2, released: 2 });
  });

  it('a redirect to a refused address is never fetched, however it is written', async () => {
    const t = await tenant(10);
    const before = web.requests.length;
    const accepted = await client(h.app, t.key).post(WEB, { url: webUrl('refusedhop', 'http') });
    await pollTerminal(t.key, accepted.body.jobRef);
    const findings = await client(h.app, t.key).get(`/v2/jobs/${accepted.body.jobRef}/findings`);
    expect(findings.body.items.map((f: { code: string }) => f.code)).toContain('web_redirect_to_disallowed_address');
    expect(web.refusedConnections()).toBe(0);
    expect(web.requests.slice(before).every((r) => r.address.startsWith('127.0.2.'))).toBe(true);
  });

  describe('authorized: true (active work)', () => {
    const body = (host = 'tls10') => ({ url: webUrl(host), authorized: true });

    it('gates in CONTRACT §2 order, each before any reservation', async () => {
      const cases: Array<[Parameters<typeof createTenant>[1], string]> = [
        [{ active: true, approveScopes: [WEB_ZONE] }, 'responsible_use_required'],
        [
          { acceptResponsibleUse: h.config.RESPONSIBLE_USE_VERSION, approveScopes: [WEB_ZONE] },
          'active_permission_required',
        ],
        [
          { acceptResponsibleUse: h.config.RESPONSIBLE_USE_VERSION, active: true, approveScopes: ['other.test'] },
          'approved_target_scope_required',
        ],
      ];
      for (const [opts, code] of cases) {
        const t = await tenant(20, opts);
        const res = await client(h.app, t.key).post(WEB, body());
        expect(res.status, code).toBe(403);
        expect(res.body.error.code).toBe(code);
        expect(await balance(h.deps.db, t.wsId)).toEqual({ granted: 20, reserved: 0, captured: 0, available: 20 });
        expect(await jobsOf(t.wsId)).toBe(0);
      }
    });

    it('with every gate passed: 8 reserved, tls_protocols runs and finds TLS 1.0', async () => {
      const t = await tenant(20, {
        acceptResponsibleUse: h.config.RESPONSIBLE_USE_VERSION,
        active: true,
        approveScopes: [WEB_ZONE],
      });
      const accepted = await client(h.app, t.key).post(WEB, body());
      expect(accepted.status).toBe(202);
      expect(await balance(h.deps.db, t.wsId)).toMatchObject({ reserved: 8 });
      const done = await pollTerminal(t.key, accepted.body.jobRef);
      expect(done.body.result.lanes.find((l: { lane: string }) => l.lane === 'tls_protocols')).toMatchObject({
        status: 'completed',
      });
      const findings = await client(h.app, t.key).get(`/v2/jobs/${accepted.body.jobRef}/findings`);
      expect(findings.body.items.map((f: { code: string }) => f.code)).toEqual(
        expect.arrayContaining(['tls_legacy_protocol_enabled', 'tls_legacy_protocol_negotiated']),
      );
      // http cannot speak TLS 1.0 (like browsers): required lane unavailable, nothing of it
      // captured; what tls and tls_protocols measured is the job's result (CONTRACT §9).
      expect(done.body.status).toBe('partial');
      expect(done.body.result.status).toBe('partial');
      expect(done.body.result.result.tlsProtocols.addresses[0].versions).toMatchObject({
        TLSv1: { outcome: 'accepted' },
        'TLSv1.3': { outcome: 'rejected' },
      });
      expect(done.body.result.result.tls.certificate).not.toBeNull();
      expect(done.body.ledger).toMatchObject({ reserved: 8, captured: 6, released: 2 });
    });
  });

  describe('authorized: every hop inside the approved scope, through the active guard (issue 45)', () => {
    const activeTenant = (scope: string) =>
      tenant(20, { acceptResponsibleUse: h.config.RESPONSIBLE_USE_VERSION, active: true, approveScopes: [scope] });

    it('a redirect out of the approved scope stops the chain: nothing is sent to the other host', async () => {
      const t = await activeTenant(`escape.${WEB_ZONE}`);
      const before = web.requests.length;
      const accepted = await client(h.app, t.key).post(WEB, { url: webUrl('escape'), authorized: true });
      expect(accepted.status).toBe(202);
      const done = await pollTerminal(t.key, accepted.body.jobRef);
      const seen = web.requests.slice(before);
      // Inside the scope the chain is followed (/ → /landing); the hop to strict.weblab.test (443)
      // and the http chain's hop to its port 6379 are refused before they are resolved.
      expect(seen.some((r) => r.host === `escape.${WEB_ZONE}` && r.path === '/landing')).toBe(true);
      expect(seen.filter((r) => r.host.startsWith(`strict.${WEB_ZONE}`) || r.path === '/from-escape')).toEqual([]);
      expect(seen.every((r) => r.address === webLabAddress('escape'))).toBe(true);
      const http = done.body.result.lanes.find((l: { lane: string }) => l.lane === 'http');
      expect(http).toMatchObject({ status: 'unavailable', reason: 'out_of_scope' });
      const limitations = done.body.result.limitations.map((l: { code: string }) => l.code);
      expect(limitations).toContain('redirect_out_of_scope');
      const findings = await client(h.app, t.key).get(`/v2/jobs/${accepted.body.jobRef}/findings`);
      const outOfScope = findings.body.items.filter((f: { code: string }) => f.code === 'web_redirect_out_of_scope');
      expect(outOfScope.length).toBeGreaterThan(0);
      expect(JSON.stringify(outOfScope)).toContain(`strict.${WEB_ZONE}`);
    });

    it('ACTIVE_DENY_CIDRS holds for every lane of an authorized lookup; a passive one still reads the host', async () => {
      const t = await activeTenant(WEB_ZONE);
      const before = web.requests.length;
      const accepted = await client(h.app, t.key).post(WEB, { url: webUrl('denied'), authorized: true });
      const done = await pollTerminal(t.key, accepted.body.jobRef);
      expect(web.requests.slice(before).filter((r) => r.address === webLabAddress('denied'))).toEqual([]);
      for (const lane of ['http', 'tls', 'tls_protocols'])
        expect(done.body.result.lanes.find((l: { lane: string }) => l.lane === lane).status, lane).toBe('unavailable');
      // The deny list is active work's: the same host looked up passively is read.
      const passive = await client(h.app, t.key).post(WEB, { url: webUrl('denied') });
      const read = await pollTerminal(t.key, passive.body.jobRef);
      expect(read.body.result.lanes.find((l: { lane: string }) => l.lane === 'http').status).toBe('completed');
      expect(web.requests.slice(before).some((r) => r.address === webLabAddress('denied'))).toBe(true);
    });
  });

  describe('bad input: 400 invalid_request before anything is reserved', () => {
    it.each([
      [{ url: 'ftp://strict.weblab.test/' }],
      [{ url: 'https://user:pw@strict.weblab.test/' }],
      [{ url: 'http://2130706433/' }],
      [{ url: 'http://0x7f.1/' }],
      [{ url: 'http://017700000001/' }],
      [{ url: 'http://127.1/' }],
      [{ url: `https://strict.weblab.test/${'a'.repeat(2048)}` }],
      [{ url: 'https:///nohost' }],
      [{ url: 'https://' }],
      [{}],
      [{ url: webUrl('strict'), authorized: 'true' }],
      [{ url: webUrl('strict'), authorized: 1 }],
    ])('%j', async (input) => {
      const t = await tenant(20, {
        acceptResponsibleUse: h.config.RESPONSIBLE_USE_VERSION,
        active: true,
        approveScopes: [WEB_ZONE],
      });
      const res = await client(h.app, t.key).post(WEB, input, { 'Idempotency-Key': idemKey() });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(await balance(h.deps.db, t.wsId)).toMatchObject({ reserved: 0, available: 20 });
      expect(await jobsOf(t.wsId)).toBe(0);
    });
  });
});
