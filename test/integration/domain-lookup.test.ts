// lookup.domain.v1 end to end: HTTP admission with credits → job → orchestrator → domain lane
// worker (in process, real Redis streams and MySQL) → DNS and RDAP labs → terminal job, ledger,
// results and findings pages.
import http from 'node:http';
import supertest from 'supertest';
import { pino } from 'pino';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createTenant, idemKey, startHarness, type Harness } from '../helpers/harness.ts';
import { fundedTenant as fundTenant, pollTerminal as pollJob } from '../helpers/jobs.ts';
import { assertMatchesContract, assertMatchesSchema } from '../helpers/contract-check.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { startLabRdap, type LabRdap } from '../lab/rdap-server.ts';
import { labZones } from '../lab/zones.ts';
import { domainLabNames, domainZones } from '../lab/domain-zones.ts';
import { balance } from '../../src/credits/ledger.ts';
import { startOrchestrator, type OrchestratorHandle } from '../../src/jobs/orchestration/orchestrator.ts';
import { startLaneWorker, type LaneWorkerHandle } from '../../workers/start-lane-worker.ts';
import type { LaneHealth } from '../../src/queue/lane-health.ts';
import { LAB_SPECIAL_USE } from '../lab/addresses.ts';

const DOMAIN = '/v2/lookups/domain';
const GENEROUS = {
  app: { perMinute: 100_000, burst: 10_000 },
  products: { 'lookup.domain.v1': { perMinute: 100_000, perHour: 1_000_000 } },
};

describe('lookup.domain.v1 as a job', () => {
  let dns: LabDns;
  let rdap: LabRdap;
  let h: Harness;
  let orchestrator: OrchestratorHandle;
  let worker: LaneWorkerHandle;

  const fundedTenant = (credits: number) => fundTenant(h, credits, { limits: GENEROUS });
  const pollTerminal = (key: string, jobRef: string, timeoutMs?: number) => pollJob(h, key, jobRef, timeoutMs);

  beforeAll(async () => {
    dns = await startLabDns({ zones: [...labZones, ...domainZones] });
    rdap = await startLabRdap();
    h = await startHarness({
      DNS_SERVERS: dns.address,
      DNS_TIMEOUT_MS: '500',
      RDAP_BASE_URL: rdap.baseUrl,
      ALLOW_PRIVATE_TARGETS: '127.0.0.0/8',
      ALLOW_SPECIAL_USE_DOMAINS: LAB_SPECIAL_USE,
      CANCEL_GRACE_MS: '1000',
    });
    const log = pino({ level: 'silent' });
    orchestrator = await startOrchestrator({
      config: h.config,
      log,
      timing: { relayEveryMs: 200, relayAfterMs: 300, reconcileEveryMs: 500, sweepEveryMs: 300 },
    });
    worker = await startLaneWorker('domain', { config: h.config, log, blockMs: 200 });
    await (h.deps.runtime.services.laneHealth as LaneHealth).refresh();
  });
  afterAll(async () => {
    await worker?.close();
    await orchestrator?.close();
    await h?.close();
    await Promise.all([dns?.close(), rdap?.close()]);
  });

  it('is available in /v2/products while a domain lane worker runs', async () => {
    const t = await fundedTenant(0);
    const res = await client(h.app, t.key).get('/v2/products');
    const domain = res.body.products.find((p: { product: string }) => p.product === 'lookup.domain.v1');
    expect(domain.readiness).toBe('available');
  });

  it('accepts with 202, runs to completion, captures what ran and releases the rest once', async () => {
    const t = await fundedTenant(10);
    const key = idemKey();
    const accepted = await client(h.app, t.key).post(DOMAIN, { value: 'lab.test' }, { 'Idempotency-Key': key });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({
      product: 'lookup.domain.v1',
      status: 'queued',
      terminal: false,
      target: { type: 'domain_name', value: 'lab.test' },
    });
    expect(accepted.body.jobRef).toMatch(/^job_[0-9A-Z]{26}$/);
    expect(await balance(h.deps.db, t.wsId)).toMatchObject({ reserved: 2, available: 8 });

    const replay = await client(h.app, t.key).post(DOMAIN, { value: 'lab.test' }, { 'Idempotency-Key': key });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.jobRef).toBe(accepted.body.jobRef);

    const done = await pollTerminal(t.key, accepted.body.jobRef);
    expect(done.body.status).toBe('completed');
    expect(done.body.result.product).toBe('lookup.domain.v1');
    expect(done.body.result.result.registrableDomain).toBe('lab.test');
    expect(done.body.result.result.registration).toMatchObject({ registrar: { name: 'Lab Registrar, Inc.' } });
    expect(done.body.coverage.complete).toBe(true);
    assertMatchesSchema('LookupDomainEnvelope', done.body.result);
    expect(done.body.ledger).toMatchObject({ reserved: 2, captured: 2, released: 0 });
    expect(await balance(h.deps.db, t.wsId)).toEqual({ granted: 10, reserved: 0, captured: 2, available: 8 });

    const results = await client(h.app, t.key).get(`/v2/jobs/${accepted.body.jobRef}/results?limit=100`);
    expect(results.status).toBe(200);
    expect(results.body.terminal).toBe(true);
    expect(results.body.page.nextCursor).toBeNull();
    const types = results.body.items.map((i: { type: string }) => i.type);
    expect(types).toContain('domain');
    expect(types).toContain('ns_host');
    expect(types).toContain('registration');
    const domainObj = results.body.items.find((i: { type: string }) => i.type === 'domain');
    const detail = await client(h.app, t.key).get(`/v2/jobs/${accepted.body.jobRef}/objects/${domainObj.objectId}`);
    expect(detail.status).toBe(200);
    expect(detail.body.relations.length).toBeGreaterThan(0);
  });

  it('a job whose registration source is unreachable ends partial, capturing only what ran', async () => {
    const t = await fundedTenant(10);
    const accepted = await client(h.app, t.key).post(DOMAIN, { value: 'lab-rdap-error.test' });
    expect(accepted.status).toBe(202);
    const done = await pollTerminal(t.key, accepted.body.jobRef);
    expect(done.body.status).toBe('partial');
    expect(done.body.coverage.complete).toBe(false);
    expect(done.body.ledger).toMatchObject({ reserved: 2, captured: 1, released: 1 });
    expect(await balance(h.deps.db, t.wsId)).toEqual({ granted: 10, reserved: 0, captured: 1, available: 9 });
  });

  it('a delegation that cannot be read (every question SERVFAIL) next to an RDAP answer: partial, registration kept', async () => {
    const t = await fundedTenant(10);
    const accepted = await client(h.app, t.key).post(DOMAIN, { value: domainLabNames.servfail });
    const done = await pollTerminal(t.key, accepted.body.jobRef);
    // The registry said something about the name: a fact, so not `unavailable` (CONTRACT §9).
    expect(done.body.status).toBe('partial');
    assertMatchesSchema('LookupDomainEnvelope', done.body.result);
    const env = done.body.result;
    expect(env.status).toBe('partial');
    expect(env.lanes.find((l: { lane: string }) => l.lane === 'dns_delegation')).toMatchObject({
      required: true,
      status: 'unavailable',
    });
    expect(env.result.delegation).toBeNull();
    expect(env.result.registration).not.toBeNull();
    expect(env.limitations.map((l: { code: string }) => l.code)).toContain('dns_delegation_unavailable');
  });

  it('raises the expiry finding, readable only with finding:read', async () => {
    const t = await fundedTenant(10);
    const accepted = await client(h.app, t.key).post(DOMAIN, { value: 'lab-expired.test' });
    await pollTerminal(t.key, accepted.body.jobRef);
    const findings = await client(h.app, t.key).get(`/v2/jobs/${accepted.body.jobRef}/findings`);
    expect(findings.status).toBe(200);
    expect(findings.body.items.map((f: { code: string }) => f.code)).toContain('domain_expired');
    const readOnly = await createTenant(h, { scopes: ['scan:read'] });
    const other = await client(h.app, readOnly.key).get(`/v2/jobs/${accepted.body.jobRef}/findings`);
    expect(other.status).toBe(403);
  });

  it('402 insufficient_credits dispatches nothing and stores no idempotency record', async () => {
    const t = await fundedTenant(1);
    const key = idemKey();
    const res = await client(h.app, t.key).post(DOMAIN, { value: 'lab.test' }, { 'Idempotency-Key': key });
    expect(res.status).toBe(402);
    expect(res.body.error.code).toBe('insufficient_credits');
    const jobs = await h.deps.db.selectFrom('jobs').select('id').where('workspace_id', '=', t.wsId).execute();
    expect(jobs).toEqual([]);
    const rec = await h.deps.db.selectFrom('idempotency_records').select('id').where('idem_key', '=', key).execute();
    expect(rec).toEqual([]);
  });

  it('200 concurrent paid requests on a balance for 50 accept exactly 50', async () => {
    const t = await fundedTenant(100); // 50 jobs of 2 credits
    const server = http.createServer(h.app).listen(0);
    try {
      const replies = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          supertest(server)
            .post(DOMAIN)
            .set('Authorization', `Bearer ${t.key}`)
            .set('Idempotency-Key', `conc-${i}`)
            .send({ value: 'lab.test' })
            .then((r) => {
              assertMatchesContract('post', DOMAIN, r);
              return r;
            }),
        ),
      );
      const statuses = replies.map((r) => r.status);
      expect(statuses.filter((s) => s === 202)).toHaveLength(50);
      expect(statuses.filter((s) => s === 402)).toHaveLength(150);
      const jobs = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM jobs WHERE workspace_id = ${t.wsId}`.execute(
        h.deps.db,
      );
      expect(Number(jobs.rows[0]!.n)).toBe(50);
      const b = await balance(h.deps.db, t.wsId);
      expect(b.granted).toBe(b.available + b.reserved + b.captured);
      expect(b.reserved + b.captured).toBe(100);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('cancel: a running job goes cancelling → cancelled, releases once; cancel of a terminal job changes nothing', async () => {
    const t = await fundedTenant(10);
    const accepted = await client(h.app, t.key).post(DOMAIN, { value: 'lab-rdap-slow.test' });
    expect(accepted.status).toBe(202);
    const c1 = await client(h.app, t.key).post(`/v2/jobs/${accepted.body.jobRef}/cancel`, {});
    expect(c1.status).toBe(202);
    expect(['cancelling', 'cancelled']).toContain(c1.body.status);
    const done = await pollTerminal(t.key, accepted.body.jobRef);
    expect(done.body.status).toBe('cancelled');
    expect(done.body.ledger.released).toBe(2 - done.body.ledger.captured);
    const c2 = await client(h.app, t.key).post(`/v2/jobs/${accepted.body.jobRef}/cancel`, { reason: 'again' });
    expect(c2.status).toBe(202);
    expect(c2.body.status).toBe('cancelled');
    expect(c2.body.completedAt).toBe(done.body.completedAt);
    const releases = await sql<{
      n: number;
    }>`SELECT COUNT(*) AS n FROM credit_entries WHERE workspace_id = ${t.wsId} AND kind = 'release'`.execute(h.deps.db);
    expect(Number(releases.rows[0]!.n)).toBeLessThanOrEqual(1);
    const b = await balance(h.deps.db, t.wsId);
    expect(b.reserved).toBe(0);
  });

  it('another tenant sees job_not_found for the job, its pages, its objects and its cancel', async () => {
    const owner = await fundedTenant(10);
    const accepted = await client(h.app, owner.key).post(DOMAIN, { value: 'lab.test' });
    const stranger = await fundedTenant(0);
    const ref = accepted.body.jobRef;
    for (const res of [
      await client(h.app, stranger.key).get(`/v2/jobs/${ref}`),
      await client(h.app, stranger.key).get(`/v2/jobs/${ref}/results`),
      await client(h.app, stranger.key).get(`/v2/jobs/${ref}/findings`),
      await client(h.app, stranger.key).post(`/v2/jobs/${ref}/cancel`, {}),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('job_not_found');
    }
    const never = await client(h.app, stranger.key).get('/v2/jobs/job_00000000000000000000000000');
    expect(never.body.error.code).toBe('job_not_found');
  });
});
