// lookup.mail.v1 end to end: HTTP admission with credits → job → orchestrator → mail lane worker
// (in process, real Redis streams, MySQL and piscina pool) → the mail lab (DNS zones, SMTP
// servers, MTA-STS hosts on loopback) → terminal job, ledger, results, findings (including the
// cross-lane ones derived at finalize).
import { pino } from 'pino';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, idemKey, startHarness, type Harness, type Tenant } from '../helpers/harness.ts';
import { fundedTenant as funded, pollTerminal as poll } from '../helpers/jobs.ts';
import { assertMatchesSchema } from '../helpers/contract-check.ts';
import { mailLabPart } from '../lab/mail-lab.ts';
import { mailLab as L } from '../lab/mail-zones.ts';
import { startLab, type RunningLab } from '../lab/serve.ts';
import { balance } from '../../src/credits/ledger.ts';
import { startOrchestrator, type OrchestratorHandle } from '../../src/jobs/orchestration/orchestrator.ts';
import { createMailChecks } from '../../src/products/mail/checks.ts';
import { mailLanes } from '../../src/products/mail/lanes.ts';
import type { LaneHealth } from '../../src/queue/lane-health.ts';
import { startLaneWorker, type LaneWorkerHandle } from '../../workers/start-lane-worker.ts';

const MAIL = '/v2/lookups/mail';
const GENEROUS = {
  app: { perMinute: 100_000, burst: 10_000 },
  products: { 'lookup.mail.v1': { perMinute: 100_000, perHour: 1_000_000 } },
};
const cost = (lanes: string[]) => lanes.reduce((s, l) => s + mailLanes[l as keyof typeof mailLanes].unitCost, 0);

describe('lookup.mail.v1 as a job', () => {
  let lab: RunningLab;
  let h: Harness;
  let orchestrator: OrchestratorHandle;
  let worker: LaneWorkerHandle;

  const fundedTenant = (credits: number) => funded(h, credits, { limits: GENEROUS });
  const pollTerminal = (key: string, jobRef: string) => poll(h, key, jobRef, 30_000);

  async function run(t: Tenant, domain: string) {
    const accepted = await client(h.app, t.key).post(MAIL, { value: domain });
    expect(accepted.status).toBe(202);
    return pollTerminal(t.key, accepted.body.jobRef);
  }

  const laneStatus = (body: { result: { lanes: Array<{ lane: string; status: string }> } }, lane: string) =>
    body.result.lanes.find((l) => l.lane === lane)?.status;

  beforeAll(async () => {
    lab = await startLab({ parts: [mailLabPart] });
    h = await startHarness({
      DNS_SERVERS: lab.env.DNS_SERVERS,
      OUTBOUND_PORT_MAP: lab.env.OUTBOUND_PORT_MAP,
      ALLOW_PRIVATE_TARGETS: lab.env.ALLOW_PRIVATE_TARGETS,
      ALLOW_SPECIAL_USE_DOMAINS: lab.env.ALLOW_SPECIAL_USE_DOMAINS,
      DNS_TIMEOUT_MS: '500',
      DNS_RESOLVER_VALIDATES: lab.env.DNS_RESOLVER_VALIDATES,
      BIMI_TRUST_ANCHORS: lab.env.BIMI_TRUST_ANCHORS,
    });
    const log = pino({ level: 'silent' });
    orchestrator = await startOrchestrator({
      config: h.config,
      log,
      timing: { relayEveryMs: 200, relayAfterMs: 300, reconcileEveryMs: 500, sweepEveryMs: 300 },
    });
    // Hostile peers meet short phase deadlines here, so the file stays quick.
    const checks = new Map(
      createMailChecks({
        smtpLimits: { connectMs: 1000, bannerMs: 1000, commandMs: 1000, tlsMs: 2000, quitMs: 300 },
        mtaStsFetchTimeoutMs: 1500,
      }).map((c) => [c.name, c]),
    );
    worker = await startLaneWorker('mail', {
      config: h.config,
      log,
      blockMs: 200,
      checks: (name) => checks.get(name),
      settings: { LANE_POOL_THREADS: 1 },
    });
    await (h.deps.runtime.services.laneHealth as LaneHealth).refresh();
  }, 60_000);
  afterAll(async () => {
    await worker?.close();
    await orchestrator?.close();
    await h?.close();
    await lab?.close();
  });

  it('is available in /v2/products while a mail lane worker runs', async () => {
    const t = await fundedTenant(0);
    const res = await client(h.app, t.key).get('/v2/products');
    const mail = res.body.products.find((p: { product: string }) => p.product === 'lookup.mail.v1');
    expect(mail.readiness).toBe('available');
  });

  it('good posture: 202, ten lanes, partial only because DKIM selectors cannot be listed, 4 credits captured', async () => {
    const t = await fundedTenant(10);
    const key = idemKey();
    const accepted = await client(h.app, t.key).post(MAIL, { value: 'Good-Mail.TEST.' }, { 'Idempotency-Key': key });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({
      product: 'lookup.mail.v1',
      status: 'queued',
      target: { type: 'domain_name', value: L.good },
    });
    expect(await balance(h.deps.db, t.wsId)).toMatchObject({ reserved: 4, available: 6 });
    const done = await pollTerminal(t.key, accepted.body.jobRef);
    expect(done.body.status).toBe('partial');
    expect(done.body.result.lanes.map((l: { lane: string; status: string }) => `${l.lane}=${l.status}`)).toEqual([
      'mx=completed',
      'spf=completed',
      'dmarc=completed',
      'mta_sts=completed',
      'tls_rpt=completed',
      'dkim=partial',
      'bimi=completed',
      'dane=completed',
      'smtp_starttls=completed',
      'zone=completed',
    ]);
    expect(done.body.coverage.limitations.map((l: { code: string }) => l.code)).toContain(
      'dkim_selectors_not_enumerable',
    );
    assertMatchesSchema('LookupMailEnvelope', done.body.result);
    expect(done.body.result.result.dane.hosts[0].match).toBe('matched');
    expect(done.body.ledger).toMatchObject({ reserved: 4, captured: 4, released: 0 });
    expect(done.body.result.credits.charged).toBe(4);
    expect(await balance(h.deps.db, t.wsId)).toEqual({ granted: 10, reserved: 0, captured: 4, available: 6 });

    const results = await client(h.app, t.key).get(`/v2/jobs/${accepted.body.jobRef}/results?limit=100`);
    const types = new Set(results.body.items.map((i: { type: string }) => i.type));
    for (const type of ['domain', 'mx_host', 'ip_address', 'mail_posture', 'certificate', 'host', 'url'])
      expect(types).toContain(type);
    const mx = results.body.items.find((i: { type: string }) => i.type === 'mx_host');
    const detail = await client(h.app, t.key).get(`/v2/jobs/${accepted.body.jobRef}/objects/${mx.objectId}`);
    expect(detail.body.relations).toContainEqual(expect.objectContaining({ relation: 'mx_of', direction: 'outgoing' }));
    const findings = await client(h.app, t.key).get(`/v2/jobs/${accepted.body.jobRef}/findings`);
    expect(findings.body.items).toEqual([]);
  });

  it('null MX: the receiving lanes are skipped and not captured', async () => {
    const t = await fundedTenant(10);
    const done = await run(t, L.nullMx);
    expect(done.body.status).toBe('partial'); // dkim
    expect(laneStatus(done.body, 'smtp_starttls')).toBe('skipped');
    const captured = cost(['mx', 'spf', 'dmarc']);
    expect(done.body.ledger).toMatchObject({ reserved: 4, captured, released: 4 - captured });
    const findings = await client(h.app, t.key).get(`/v2/jobs/${done.body.jobRef}/findings`);
    expect(findings.body.items.map((f: { code: string }) => f.code)).toEqual(['mx_null']);
  });

  it('MX SERVFAIL: the required lane is unavailable, the job is partial with what SPF and DMARC measured, nothing reads as missing', async () => {
    const t = await fundedTenant(10);
    const done = await run(t, L.mxServfail);
    // SPF and DMARC answered: facts about the target, kept in the envelope (CONTRACT §7, §9).
    expect(done.body.status).toBe('partial');
    assertMatchesSchema('LookupMailEnvelope', done.body.result);
    expect(done.body.result.status).toBe('partial');
    expect(laneStatus(done.body, 'mx')).toBe('unavailable');
    expect(done.body.result.result.mx).toBeNull();
    expect(done.body.result.result.spf).not.toBeNull();
    expect(done.body.result.result.dmarc).not.toBeNull();
    const captured = cost(['spf', 'dmarc']); // the lanes that ran and answered
    expect(done.body.ledger).toMatchObject({ reserved: 4, captured, released: 4 - captured });
    const findings = await client(h.app, t.key).get(`/v2/jobs/${done.body.jobRef}/findings`);
    const codes = findings.body.items.map((f: { code: string }) => f.code);
    expect(codes).not.toContain('mx_missing');
    expect(codes).not.toContain('smtp_starttls_missing');
    const b = await balance(h.deps.db, t.wsId);
    expect(b).toMatchObject({ reserved: 0, captured });
  });

  it('MX timeout: partial; mx null with its reason, SPF absent and DMARC kept', async () => {
    const t = await fundedTenant(10);
    const done = await run(t, L.mxTimeout);
    expect(done.body.status).toBe('partial');
    const env = done.body.result;
    expect(env.status).toBe('partial');
    expect(laneStatus(done.body, 'mx')).toBe('timeout');
    expect(env.result.mx).toBeNull();
    expect(env.limitations.map((l: { code: string }) => l.code)).toContain('mx_unknown');
    expect(env.result.spf).toMatchObject({ state: 'absent' });
    expect(env.result.dmarc).not.toBeNull();
    const captured = cost(['spf', 'dmarc']);
    expect(done.body.ledger).toMatchObject({ reserved: 4, captured, released: 4 - captured });
    const findings = await client(h.app, t.key).get(`/v2/jobs/${done.body.jobRef}/findings`);
    const codes = findings.body.items.map((f: { code: string }) => f.code);
    expect(codes).not.toContain('mx_missing');
    expect(codes).not.toContain('smtp_starttls_missing');
  });

  it('a zone where every question goes unanswered: unavailable (no lane learnt anything), nothing captured', async () => {
    const t = await fundedTenant(10);
    const done = await run(t, L.silentZone);
    expect(done.body.status).toBe('unavailable');
    assertMatchesSchema('LookupMailEnvelope', done.body.result);
    expect(done.body.result.status).toBe('unavailable');
    expect(done.body.result.result.spf).toBeNull();
    expect(done.body.ledger).toMatchObject({ reserved: 4, captured: 0, released: 4 });
    const findings = await client(h.app, t.key).get(`/v2/jobs/${done.body.jobRef}/findings`);
    expect(findings.body.items).toEqual([]);
  });

  it('hostile peers end in a lane timeout / failed and a terminal job; the worker keeps working', async () => {
    const t = await fundedTenant(20);
    const [silent, endless, policy] = await Promise.all([
      run(t, L.smtpSilent),
      run(t, L.smtpEndless),
      run(t, L.stsEndless),
    ]);
    expect(laneStatus(silent.body, 'smtp_starttls')).toBe('timeout');
    expect(laneStatus(endless.body, 'smtp_starttls')).toBe('failed');
    expect(laneStatus(policy.body, 'mta_sts')).toBe('partial');
    for (const j of [silent, endless]) {
      expect(j.body.status).toBe('partial');
      const captured = cost(['mx', 'spf', 'dmarc']); // smtp_starttls timed out / failed: not captured
      expect(j.body.ledger).toMatchObject({ captured, released: 4 - captured });
    }
    const after = await run(t, L.good);
    expect(laneStatus(after.body, 'smtp_starttls')).toBe('completed');
  });

  it('findings derived across lanes are persisted with the job (DANE mismatch, MTA-STS enforce)', async () => {
    const t = await fundedTenant(20);
    const [dane, sts] = await Promise.all([run(t, L.daneBad), run(t, L.stsEnforceBad)]);
    const codesOf = async (jobRef: string) =>
      (await client(h.app, t.key).get(`/v2/jobs/${jobRef}/findings?limit=100`)).body.items.map(
        (f: { code: string; sources: Array<{ lane: string }> }) => `${f.code}@${f.sources[0]?.lane}`,
      );
    expect(await codesOf(dane.body.jobRef)).toEqual(
      expect.arrayContaining(['dane_tlsa_mismatch@dane', 'dane_tlsa_unusable@dane']),
    );
    expect(await codesOf(sts.body.jobRef)).toEqual(
      expect.arrayContaining([
        'mta_sts_enforce_certificate_invalid@mta_sts',
        'smtp_tls_certificate_name_mismatch@smtp_starttls',
      ]),
    );
  });

  it('a value that is not a domain name is 400 invalid_request before anything is reserved', async () => {
    const t = await fundedTenant(10);
    for (const value of [
      'https://good-mail.test/',
      '127.0.1.1',
      '[::1]',
      'a..b.test',
      '.test',
      `${['a', 'b', 'c', 'd', 'e'].map((c) => c.repeat(60)).join('.')}.test`,
      '',
      'user@good-mail.test',
    ]) {
      const res = await client(h.app, t.key).post(MAIL, { value });
      expect(res.status, value).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
    const extra = await client(h.app, t.key).post(MAIL, { value: L.good, selectors: ['s1'] });
    expect(extra.status).toBe(400);
    expect(await balance(h.deps.db, t.wsId)).toEqual({ granted: 10, reserved: 0, captured: 0, available: 10 });
    const jobs = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM jobs WHERE workspace_id = ${t.wsId}`.execute(
      h.deps.db,
    );
    expect(Number(jobs.rows[0]!.n)).toBe(0);
  });

  it('402 insufficient_credits dispatches nothing', async () => {
    const t = await fundedTenant(3);
    const res = await client(h.app, t.key).post(MAIL, { value: L.good });
    expect(res.status).toBe(402);
    expect(res.body.error.code).toBe('insufficient_credits');
    const jobs = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM jobs WHERE workspace_id = ${t.wsId}`.execute(
      h.deps.db,
    );
    expect(Number(jobs.rows[0]!.n)).toBe(0);
  });
});
