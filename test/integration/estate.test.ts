// The estate end to end (CONTRACT §15-16, issue 46): real MySQL, Redis, orchestrator, every lane
// worker and the change lab (test/lab/changes-lab.ts), its zone served in two states. Suppressions:
// the routes (scopes, Idempotency-Key, validation, history, revocation, tenancy, the cap), a
// finding suppressed when its job ends and marked on every read, the counts split by it, and the
// same finding resurfaced in the next job once its suppression is revoked. The inventory: the
// scan's names present, gone (NXDOMAIN observed) and unconfirmed (SERVFAIL), never touched by
// another workspace's jobs.
import { pino } from 'pino';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startHarness, type Harness } from '../helpers/harness.ts';
import { assertMatchesContract } from '../helpers/contract-check.ts';
import { fundedTenant, pollTerminal } from '../helpers/jobs.ts';
import { labEnv } from '../helpers/lab-runtime.ts';
import { rdapPart, startLab, type RunningLab } from '../lab/serve.ts';
import { scanLabPart } from '../lab/scan-lab.ts';
import { mailLabPart } from '../lab/mail-lab.ts';
import { CHANGES_ZONE, changesLabPart, changesNames, type ChangesLab } from '../lab/changes-lab.ts';
import { startOrchestrator, type OrchestratorHandle } from '../../src/jobs/orchestration/orchestrator.ts';
import { startLaneWorker, type LaneWorkerHandle } from '../../workers/start-lane-worker.ts';
import type { LaneHealth } from '../../src/queue/lane-health.ts';
import type { LaneName } from '../../src/queue/streams.ts';
import { LssClient } from '../../src/client/client.ts';
import { sql } from 'kysely';
import { inTransaction } from '../../src/db/transaction.ts';
import { readEstateJobState } from '../../src/jobs/inventory/estate-job.ts';
import { updateInventory } from '../../src/jobs/inventory/update-inventory.ts';
import { scanChangeRules } from '../../src/products/scan/changes.ts';
import { root, until } from '../helpers/processes.ts';
import { writeInventoryPage } from '../../src/jobs/inventory/inventory-pending.ts';
import { execFile } from 'node:child_process';
import type { AddressInfo, Server } from 'node:net';
import path from 'node:path';

const GENEROUS = {
  app: { perMinute: 100_000, burst: 10_000 },
  products: {
    'scan.recursive.v1': { perMinute: 100_000, perHour: 1_000_000 },
    'lookup.mail.v1': { perMinute: 100_000, perHour: 1_000_000 },
    'lookup.web.v1': { perMinute: 100_000, perHour: 1_000_000 },
  },
};
const CAP = 5;
const DAY = 86_400_000;
const inDays = (d: number) => new Date(Date.now() + d * DAY).toISOString();

describe('the estate (CONTRACT §15-16)', () => {
  let lab: RunningLab;
  let changesLab: ChangesLab;
  let h: Harness;
  let orchestrator: OrchestratorHandle;
  const workers: LaneWorkerHandle[] = [];
  let server: Server;
  let baseUrl: string;

  /** `lss` as a child process with the key in its environment, against the app on loopback. */
  const lssAs = (key: string, ...args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const env = Object.fromEntries(
        Object.entries(process.env).filter(([k]) => !['NO_COLOR', 'FORCE_COLOR', 'CI'].includes(k)),
      );
      execFile(
        process.execPath,
        [path.join(root, 'src/client/cli/main.ts'), ...args],
        { cwd: root, env: { ...env, LSS_API_KEY: key, LSS_BASE_URL: baseUrl }, timeout: 120_000 },
        (err, stdout, stderr) =>
          resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      );
    });

  const tenant = (opts: Parameters<typeof fundedTenant>[2] = {}) =>
    fundedTenant(h, 100_000, { limits: GENEROUS, acceptResponsibleUse: h.config.RESPONSIBLE_USE_VERSION, ...opts });

  function api(key: string) {
    const c = client(h.app, key);
    const checked = async (r: supertest.Test, method: string, path: string) => {
      const res = await r;
      assertMatchesContract(method, path, res);
      return res;
    };
    return {
      post: c.post,
      get: c.get,
      patch: (path: string, body: unknown) =>
        checked(
          supertest(h.app)
            .patch(path)
            .set('Authorization', `Bearer ${key}`)
            .send(body as object),
          'patch',
          path,
        ),
      delete: (path: string) =>
        checked(supertest(h.app).delete(path).set('Authorization', `Bearer ${key}`), 'delete', path),
    };
  }

  async function run(key: string, path: string, body: unknown): Promise<Record<string, any>> {
    const res = await client(h.app, key).post(path, body);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const job = (await pollTerminal(h, key, res.body.jobRef, 120_000)).body;
    // The inventory is written right after the terminal commit (step 4 of finalize-job.ts).
    await until(
      'the inventory of the job written',
      async () =>
        Number(
          (
            await sql<{ n: number }>`SELECT COUNT(*) AS n FROM inventory_pending p JOIN jobs j ON j.id = p.job_id
              WHERE j.public_id = ${res.body.jobRef}`.execute(h.deps.db)
          ).rows[0]!.n,
        ) === 0,
      30_000,
      50,
    );
    return job;
  }

  async function pages<T>(key: string, path: string, query = ''): Promise<T[]> {
    const out: T[] = [];
    let cursor: string | null = null;
    do {
      const sep = path.includes('?') ? '&' : '?';
      const res = await client(h.app, key).get(
        `${path}${sep}limit=500${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      out.push(...res.body.items);
      cursor = res.body.page.nextCursor;
    } while (cursor);
    return out;
  }

  beforeAll(async () => {
    lab = await startLab({
      parts: [
        rdapPart,
        mailLabPart,
        scanLabPart({ generated: [] }),
        changesLabPart({ onReady: (l) => (changesLab = l) }),
      ],
    });
    h = await startHarness({
      ...labEnv(lab.env),
      DNS_TIMEOUT_MS: '700',
      CANCEL_GRACE_MS: '1000',
      SUPPRESSIONS_PER_WORKSPACE: String(CAP),
    });
    const log = pino({ level: 'silent' });
    orchestrator = await startOrchestrator({
      config: h.config,
      log,
      timing: {
        relayEveryMs: 200,
        relayAfterMs: 300,
        reconcileEveryMs: 500,
        sweepEveryMs: 300,
        inventoryStaleAfterMs: 1000,
      },
    });
    for (const lane of ['dns', 'mail', 'web', 'domain'] as LaneName[]) {
      workers.push(
        await startLaneWorker(lane, {
          config: h.config,
          log,
          blockMs: 100,
          settings: { LANE_POOL_THREADS: 1, LANE_CONCURRENCY: 16 },
        }),
      );
    }
    await (h.deps.runtime.services.laneHealth as LaneHealth).refresh();
    server = await new Promise<Server>((resolve) => {
      const srv = h.app.listen(0, '127.0.0.1', () => resolve(srv));
    });
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 120_000);

  afterAll(async () => {
    await new Promise((r) => (server ? server.close(r) : r(undefined)));
    await Promise.all(workers.map((w) => w.close()));
    await orchestrator?.close();
    await h?.close();
    await lab?.close();
  });

  describe('the suppression routes', () => {
    const body = (over: Record<string, unknown> = {}) => ({
      code: 'dmarc_policy_none',
      key: 'Example.COM.',
      product: null,
      reason: 'accepted_risk',
      note: 'monitoring only, on purpose',
      expiresAt: inDays(30),
      ...over,
    });

    it('creates with Idempotency-Key (a retry replays), normalizes the key and records who did it', async () => {
      const t = await tenant();
      const idem = { 'Idempotency-Key': 'sup-create-1' };
      const same = body();
      const first = await api(t.key).post('/v2/suppressions', same, idem);
      expect(first.status, JSON.stringify(first.body)).toBe(201);
      expect(first.body).toMatchObject({
        suppressionId: expect.stringMatching(/^sup_/),
        code: 'dmarc_policy_none',
        key: 'example.com',
        reason: 'accepted_risk',
        revokedAt: null,
        active: true,
        createdBy: expect.stringMatching(/^lsk_/),
        history: [{ action: 'created', by: expect.stringMatching(/^lsk_/) }],
      });
      const again = await api(t.key).post('/v2/suppressions', same, idem);
      expect(again.status).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.suppressionId).toBe(first.body.suppressionId);
      const none = await api(t.key).post('/v2/suppressions', body(), { 'Idempotency-Key': '' });
      expect(none.body.error.code).toBe('idempotency_key_required');
    });

    it('refuses an unknown code, a malformed key, an expiry past 365 days, and null unless false_positive', async () => {
      const t = await tenant();
      const refused = async (over: Record<string, unknown>, reason: string) => {
        const res = await api(t.key).post('/v2/suppressions', body(over));
        expect(res.status, JSON.stringify(res.body)).toBe(400);
        expect(res.body.error).toMatchObject({ code: 'invalid_request' });
        if (reason) expect(res.body.error.details.reason).toBe(reason);
      };
      await refused({ code: 'no_such_finding' }, 'unknown_code');
      await refused({ key: 'not a key!' }, 'malformed_key');
      await refused({ key: '*.com..' }, 'malformed_key');
      await refused({ product: 'lookup.nothing.v9' }, 'unknown_product');
      await refused({ expiresAt: inDays(366) }, 'expiry_out_of_range');
      await refused({ expiresAt: inDays(-1) }, 'expiry_out_of_range');
      await refused({ expiresAt: null }, 'expiry_required');
      await refused({ extra: 1 }, '');
      const fp = await api(t.key).post('/v2/suppressions', body({ reason: 'false_positive', expiresAt: null }));
      expect(fp.status).toBe(201);
      expect(fp.body.expiresAt).toBeNull();
      for (const key of ['*.example.com', 'https://WWW.example.com/a', '192.0.2.7', 'www.example.com:443/tcp']) {
        const ok = await api(t.key).post('/v2/suppressions', body({ key, code: 'web_nosniff_missing' }));
        expect(ok.status, `${key} ${JSON.stringify(ok.body)}`).toBe(201);
      }
      // The cap counts active ones: four made, the fifth refused.
      const over = await api(t.key).post('/v2/suppressions', body());
      expect(over.body.error.details.reason).toBe('suppressions_per_workspace');
    });

    it('scopes: creating needs scan:create and finding:read; reading needs scan:read and finding:read', async () => {
      const t = await tenant({ scopes: ['scan:create', 'scan:read'] });
      const res = await api(t.key).post('/v2/suppressions', body());
      expect(res.status).toBe(403);
      expect(res.body.error.details.requiredScopes).toContain('finding:read');
      expect((await api(t.key).get('/v2/suppressions')).status).toBe(403);
    });

    it('patch, revoke (kept with revokedAt and its history), list with active=, and another tenant sees none', async () => {
      const t = await tenant();
      const a = (await api(t.key).post('/v2/suppressions', body())).body;
      const b = (await api(t.key).post('/v2/suppressions', body({ code: 'web_nosniff_missing' }))).body;
      const patched = await api(t.key).patch(`/v2/suppressions/${a.suppressionId}`, {
        note: 'until the migration',
        expiresAt: inDays(10),
      });
      expect(patched.status, JSON.stringify(patched.body)).toBe(200);
      expect(patched.body.note).toBe('until the migration');
      expect(patched.body.history.map((x: { action: string }) => x.action)).toEqual(['created', 'updated']);
      const tooFar = await api(t.key).patch(`/v2/suppressions/${a.suppressionId}`, { expiresAt: inDays(400) });
      expect(tooFar.status).toBe(400);
      expect((await api(t.key).delete(`/v2/suppressions/${b.suppressionId}`)).status).toBe(204);
      const revoked = (await api(t.key).get(`/v2/suppressions/${b.suppressionId}`)).body;
      expect(revoked).toMatchObject({ active: false, revokedAt: expect.any(String) });
      expect(revoked.history.map((x: { action: string }) => x.action)).toEqual(['created', 'revoked']);
      const ids = (q: string) =>
        pages<{ suppressionId: string }>(t.key, '/v2/suppressions', q).then((l) => l.map((s) => s.suppressionId));
      expect(await ids('')).toEqual([a.suppressionId, b.suppressionId]);
      expect(await ids('&active=true')).toEqual([a.suppressionId]);
      expect(await ids('&active=false')).toEqual([b.suppressionId]);
      // Paged one at a time: every one once.
      const one = await client(h.app, t.key).get('/v2/suppressions?limit=1');
      expect(one.body.items).toHaveLength(1);
      const two = await client(h.app, t.key).get(`/v2/suppressions?limit=1&cursor=${one.body.page.nextCursor}`);
      expect(two.body.items[0].suppressionId).toBe(b.suppressionId);
      const bad = await client(h.app, t.key).get(
        `/v2/suppressions?limit=1&active=true&cursor=${one.body.page.nextCursor}`,
      );
      expect(bad.body.error.code).toBe('invalid_cursor');
      const other = await tenant();
      for (const res of [
        await api(other.key).get(`/v2/suppressions/${a.suppressionId}`),
        await api(other.key).patch(`/v2/suppressions/${a.suppressionId}`, { note: 'x' }),
        await api(other.key).delete(`/v2/suppressions/${a.suppressionId}`),
        await api(t.key).get('/v2/suppressions/sup_00000000000000000000000000'),
      ])
        expect(res.body.error.code).toBe('suppression_not_found');
      expect(await pages(other.key, '/v2/suppressions')).toEqual([]);
    });
  });

  describe('applied when a job ends: suppressed, then resurfaced', () => {
    let key: string;
    let suppressionId: string;
    const jobs: Record<string, any>[] = [];
    let otherJob: Record<string, any>;
    const mail = ['/v2/lookups/mail', { value: CHANGES_ZONE }] as const;
    const dmarc = (list: Array<{ code: string }>) => list.find((f) => f.code === 'dmarc_policy_none') as any;

    beforeAll(async () => {
      const t = await tenant();
      key = t.key;
      changesLab.setState(1);
      const made = await api(key).post('/v2/suppressions', {
        code: 'dmarc_policy_none',
        key: `*.${CHANGES_ZONE}`,
        product: null,
        reason: 'compensating_control',
        note: 'a pattern covers names below the zone, never the zone itself',
        expiresAt: inDays(30),
      });
      expect(made.status).toBe(201);
      const exact = await api(key).post('/v2/suppressions', {
        code: 'dmarc_policy_none',
        key: CHANGES_ZONE,
        product: 'lookup.mail.v1',
        reason: 'accepted_risk',
        note: 'p=none while reports are read',
        expiresAt: inDays(30),
      });
      expect(exact.status).toBe(201);
      suppressionId = exact.body.suppressionId;
      jobs.push(await run(key, ...mail));
      otherJob = await run((await tenant()).key, ...mail);
      expect((await api(key).delete(`/v2/suppressions/${suppressionId}`)).status).toBe(204);
      jobs.push(await run(key, ...mail));
    }, 300_000);

    it('the first job: the finding carries its suppression on the findings page, object detail and filters', async () => {
      const job = jobs[0]!;
      const all = await pages<any>(key, `/v2/jobs/${job.jobRef}/findings`);
      const f = dmarc(all);
      expect(f.suppressed).toEqual({ suppressionId, reason: 'accepted_risk', expiresAt: expect.any(String) });
      for (const other of all.filter((x) => x !== f)) expect(other.suppressed).toBeNull();
      const only = await pages<any>(key, `/v2/jobs/${job.jobRef}/findings`, '&suppressed=only');
      expect(only.map((x) => x.findingId)).toEqual([f.findingId]);
      const open = await pages<any>(key, `/v2/jobs/${job.jobRef}/findings`, '&suppressed=exclude');
      expect(open.map((x) => x.findingId)).not.toContain(f.findingId);
      expect(open.length + only.length).toBe(all.length);
      const detail = await api(key).get(`/v2/jobs/${job.jobRef}/objects/${f.objectId}`);
      expect(detail.body.suppressedFindings).toEqual([{ findingId: f.findingId, ...f.suppressed }]);
      // The summary: the suppressed one apart, every other finding open by severity.
      const open0 = Object.values(job.findingsSummary.open as Record<string, number>).reduce((a, b) => a + b, 0);
      expect(job.findingsSummary.suppressed).toBe(1);
      expect(open0).toBe(all.length - 1);
    });

    it("another workspace's suppressions never touch its job", async () => {
      const f = dmarc(await pages<any>(key, `/v2/jobs/${jobs[0]!.jobRef}/findings`));
      expect(f.suppressed).not.toBeNull();
      expect(otherJob.findingsSummary.suppressed).toBe(0);
    });

    it('the next job, its suppression revoked: resurfaced in the counts and on the changes route', async () => {
      const job = jobs[1]!;
      expect(job.baseline.jobRef).toBe(jobs[0]!.jobRef);
      expect(job.changes.findings).toMatchObject({ resurfaced: 1, suppressed: 0 });
      expect(job.findingsSummary.suppressed).toBe(0);
      const changes = await pages<any>(key, `/v2/jobs/${job.jobRef}/changes`);
      const item = changes.find((c) => c.kind === 'finding' && c.type === 'dmarc_policy_none');
      expect(item).toMatchObject({ change: 'resurfaced', key: CHANGES_ZONE, suppressed: null });
      const only = await pages<any>(key, `/v2/jobs/${job.jobRef}/changes`, '&change=resurfaced');
      expect(only).toHaveLength(1);
      expect(dmarc(await pages<any>(key, `/v2/jobs/${job.jobRef}/findings`)).suppressed).toBeNull();
      // The first job keeps what its end made of it: a report stays reproducible.
      expect(dmarc(await pages<any>(key, `/v2/jobs/${jobs[0]!.jobRef}/findings`)).suppressed).not.toBeNull();
    });

    it('lss job show|findings --fail-on-open: exit 1 for an open finding at the severity, never for a suppressed one', async () => {
      // The first job's dmarc_policy_none (medium) is suppressed; the second's resurfaced (open).
      const rank = ['info', 'low', 'medium', 'high', 'critical'];
      const openAtOrAbove = async (jobRef: string, severity: string) =>
        (await pages<any>(key, `/v2/jobs/${jobRef}/findings`)).filter(
          (f) => f.suppressed === null && rank.indexOf(f.severity) >= rank.indexOf(severity),
        );
      expect(await openAtOrAbove(jobs[0]!.jobRef, 'medium')).toEqual([]);
      expect((await openAtOrAbove(jobs[1]!.jobRef, 'medium')).map((f) => f.code)).toContain('dmarc_policy_none');

      // Without a gate the job's own verdict (this lab's mail lookup is partial: exit 2).
      const plain = await lssAs(key, '--json', 'job', 'show', jobs[0]!.jobRef);
      expect([0, 2]).toContain(plain.code);
      const suppressed = await lssAs(key, '--json', 'job', 'show', jobs[0]!.jobRef, '--fail-on-open', 'medium');
      expect(suppressed.code, suppressed.stderr).toBe(plain.code);
      const doc = JSON.parse(suppressed.stdout);
      expect(doc).toMatchObject({ outcome: JSON.parse(plain.stdout).outcome, exitCode: plain.code });
      // The verdict was given on the findings read (not skipped): the suppressed one is among them.
      expect(dmarc(doc.findings.items).suppressed).toMatchObject({ suppressionId });
      // --fail-on counts every finding, suppressed or not: the same job fails it.
      expect((await lssAs(key, '--json', 'job', 'show', jobs[0]!.jobRef, '--fail-on', 'medium')).code).toBe(1);

      const resurfaced = await lssAs(key, '--json', 'job', 'show', jobs[1]!.jobRef, '--fail-on-open', 'medium');
      expect(resurfaced.code, resurfaced.stderr).toBe(1);
      expect(JSON.parse(resurfaced.stdout)).toMatchObject({ outcome: 'fail_on', exitCode: 1 });
      // Above every open finding's severity: no verdict against the job.
      expect(await openAtOrAbove(jobs[1]!.jobRef, 'critical')).toEqual([]);
      expect((await lssAs(key, 'job', 'show', jobs[1]!.jobRef, '--fail-on-open', 'critical')).code).toBe(
        (await lssAs(key, 'job', 'show', jobs[1]!.jobRef)).code,
      );
      // The findings command gives the same verdicts.
      expect((await lssAs(key, 'job', 'findings', jobs[0]!.jobRef, '--fail-on-open', 'medium')).code).toBe(plain.code);
      expect((await lssAs(key, 'job', 'findings', jobs[1]!.jobRef, '--fail-on-open', 'medium')).code).toBe(1);
    }, 120_000);

    it('issue 44 item 14: suppressed in the baseline and now: unchanged, suppressed, and no row stored for it', async () => {
      const made = await api(key).post('/v2/suppressions', {
        code: 'dmarc_policy_none',
        key: CHANGES_ZONE,
        product: 'lookup.mail.v1',
        reason: 'accepted_risk',
        note: 'p=none again while reports are read',
        expiresAt: inDays(30),
      });
      expect(made.status).toBe(201);
      // Suppressed here (its baseline, jobs[1], had it open), then suppressed in both.
      const third = await run(key, ...mail);
      expect(third.changes.findings).toMatchObject({ resurfaced: 0, suppressed: 1 });
      const fourth = await run(key, ...mail);
      expect(fourth.baseline.jobRef).toBe(third.jobRef);
      const all = await pages<any>(key, `/v2/jobs/${fourth.jobRef}/findings`);
      expect(fourth.changes.findings).toMatchObject({
        new: 0,
        resurfaced: 0,
        suppressed: 1,
        unchanged: all.length - 1,
      });
      const f = dmarc(all);
      expect(f).toMatchObject({
        change: 'unchanged',
        suppressed: expect.objectContaining({ reason: 'accepted_risk' }),
      });
      // The comparison stored it as a resurfaced candidate; the terminal work removed it again.
      const stored = await sql<{ n: number }>`
        SELECT COUNT(*) AS n FROM job_changes jc JOIN jobs j ON j.id = jc.job_id
        WHERE j.public_id = ${fourth.jobRef} AND jc.finding_ref = ${f.findingId}`.execute(h.deps.db);
      expect(Number(stored.rows[0]!.n)).toBe(0);
      const unchanged = await pages<any>(key, `/v2/jobs/${fourth.jobRef}/changes`, '&change=unchanged&kind=finding');
      expect(unchanged).toHaveLength(all.length);
      expect(unchanged.find((c) => c.findingId === f.findingId)).toMatchObject({
        change: 'unchanged',
        baselineFindingId: dmarc(await pages<any>(key, `/v2/jobs/${third.jobRef}/findings`)).findingId,
        suppressed: expect.objectContaining({ reason: 'accepted_risk' }),
      });
      expect(await pages<any>(key, `/v2/jobs/${fourth.jobRef}/changes`, '&change=resurfaced')).toEqual([]);
    });
  });

  describe('the inventory, from two scans of the zone in two states', () => {
    let key: string;
    let otherKey: string;
    const scans: Record<string, any>[] = [];
    const scan = [
      '/v2/scans',
      {
        profile: 'balanced',
        target: { type: 'domain_name', value: CHANGES_ZONE },
        options: { active: false, maxCredits: 500 },
      },
    ] as const;
    type Row = {
      type: string;
      key: string;
      state: string;
      lastSeenAt: string;
      lastCheckedAt: string | null;
      changedAt: string | null;
      lastJobRef: string;
      lastObjectId: string | null;
      products: string[];
      openFindings: Record<string, number>;
    };
    const rows = (q = '') => pages<Row>(key, '/v2/inventory', q);
    const row = (list: Row[], type: string, k: string) => list.find((r) => r.type === type && r.key === k);

    beforeAll(async () => {
      key = (await tenant()).key;
      otherKey = (await tenant()).key;
      changesLab.setState(1);
      scans.push(await run(key, ...scan));
      changesLab.setState(2);
      scans.push(await run(key, ...scan));
      // Another workspace scans the zone in its second state only: it never touches the first's rows.
      await run(otherKey, ...scan);
    }, 300_000);

    it('present / gone (NXDOMAIN observed) / unconfirmed (SERVFAIL): never gone for what could not be checked', async () => {
      const all = await rows();
      const stays = row(all, 'host', changesNames.stays)!;
      expect(stays).toMatchObject({ state: 'present', lastJobRef: scans[1]!.jobRef, products: ['scan.recursive.v1'] });
      expect(stays.lastObjectId).toMatch(/^obj_/);
      expect(row(all, 'host', changesNames.added)).toMatchObject({ state: 'present', changedAt: expect.any(String) });
      expect(row(all, 'host', changesNames.removed)).toMatchObject({ state: 'gone', lastJobRef: scans[0]!.jobRef });
      const flaky = row(all, 'host', changesNames.flaky)!;
      expect(flaky).toMatchObject({ state: 'unconfirmed', lastJobRef: scans[0]!.jobRef });
      // Not advanced: the last check that found anything was the first scan's.
      expect(Date.parse(flaky.lastCheckedAt!)).toBeLessThanOrEqual(Date.parse(scans[0]!.completedAt) + 1000);
      expect(Date.parse(stays.lastCheckedAt!)).toBeGreaterThanOrEqual(Date.parse(scans[1]!.completedAt) - 1000);
      // One row per identity.
      const ids = all.map((r) => `${r.type} ${r.key}`);
      expect(new Set(ids).size).toBe(ids.length);
    });

    it('a job asked to cancel adds what it held, never an absence', async () => {
      // The second scan's terminal work again, as if it had been asked to cancel: with the removed
      // name back to present, nothing of its comparison's gone or unconfirmed may touch the rows.
      const job = await sql<{ id: number; workspace_id: number; public_id: string }>`
        SELECT id, workspace_id, public_id FROM jobs WHERE public_id = ${scans[1]!.jobRef}`.execute(h.deps.db);
      const j = job.rows[0]!;
      const rolledBack = new Error('rolled back');
      const seen = await inTransaction(h.deps.db, async (trx) => {
        await sql`UPDATE jobs SET cancel_requested_at = NOW(3) WHERE id = ${j.id}`.execute(trx);
        await sql`UPDATE inventory SET state = 'present' WHERE workspace_id = ${j.workspace_id}
          AND okey IN (${changesNames.removed}, ${changesNames.flaky})`.execute(trx);
        const out = await updateInventory(
          trx,
          {
            id: Number(j.id),
            workspaceId: Number(j.workspace_id),
            product: 'scan.recursive.v1',
            publicId: j.public_id,
          },
          scanChangeRules,
          (await readEstateJobState(trx, Number(j.id)))!,
        );
        const rows = await sql<{ okey: string; state: string }>`SELECT okey, state FROM inventory
          WHERE workspace_id = ${j.workspace_id} AND okey IN (${changesNames.removed}, ${changesNames.flaky}, ${changesNames.stays})
            AND type = 'host'`.execute(trx);
        throw Object.assign(rolledBack, { out, rows: rows.rows });
      }).catch(
        (err) =>
          err as typeof rolledBack & {
            out: { gone: number; unconfirmed: number; present: number };
            rows: Array<{ okey: string; state: string }>;
          },
      );
      expect(seen.out).toMatchObject({ gone: 0, unconfirmed: 0 });
      expect(seen.out.present).toBeGreaterThan(0);
      expect(Object.fromEntries(seen.rows.map((r) => [r.okey, r.state]))).toEqual({
        [changesNames.removed]: 'present',
        [changesNames.flaky]: 'present',
        [changesNames.stays]: 'present',
      });
    });

    it('filters: state, type, q (a name and every key below it, URLs by host), minSeverity; pages of one', async () => {
      const gone = await rows('&state=gone');
      expect(gone.map((r) => r.key)).toContain(changesNames.removed);
      for (const r of gone) expect(r.state).toBe('gone');
      for (const r of await rows('&type=host')) expect(r.type).toBe('host');
      const below = await rows(`&q=${CHANGES_ZONE}`);
      expect(below.map((r) => r.key)).toEqual(
        expect.arrayContaining([CHANGES_ZONE, changesNames.stays, `https://${CHANGES_ZONE}/`]),
      );
      const one = await rows(`&q=${changesNames.stays}`);
      expect(one.map((r) => r.key)).toContain(changesNames.stays);
      expect(one.map((r) => r.key)).not.toContain(CHANGES_ZONE);
      for (const r of await rows('&minSeverity=low')) {
        const { info: _info, ...above } = r.openFindings;
        expect(
          Object.values(above).some((n) => n > 0),
          `${r.type} ${r.key}`,
        ).toBe(true);
      }
      const all = await rows();
      const oneByOne: Row[] = [];
      let cursor: string | null = null;
      do {
        const res = await client(h.app, key).get(`/v2/inventory?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
        expect(res.status).toBe(200);
        oneByOne.push(...res.body.items);
        cursor = res.body.page.nextCursor;
      } while (cursor);
      expect(oneByOne.map((r) => `${r.type} ${r.key}`)).toEqual(all.map((r) => `${r.type} ${r.key}`));
      const types = all.map((r) => r.type);
      expect([...types].sort()).toEqual(types);
      const stale = await client(h.app, key).get(
        `/v2/inventory?limit=1&state=gone&cursor=${(await client(h.app, key).get('/v2/inventory?limit=1')).body.page.nextCursor}`,
      );
      expect(stale.body.error.code).toBe('invalid_cursor');
    });

    it('open findings across the estate: resolved ones leave, new ones arrive; another workspace sees only its own', async () => {
      const findings = await pages<any>(key, '/v2/inventory/findings');
      const codes = findings.map((f) => `${f.code} ${f.objectKey}`);
      expect(codes).not.toContain(`dmarc_policy_none ${CHANGES_ZONE}`);
      expect(codes).toContain(`web_nosniff_missing https://${CHANGES_ZONE}/`);
      for (const f of findings) expect(f.suppressed).toBeNull();
      const other = await pages<Row>(otherKey, '/v2/inventory');
      expect(row(other, 'host', changesNames.removed)).toBeUndefined();
      expect(row(other, 'host', changesNames.flaky)).toBeUndefined();
      expect(row(other, 'host', changesNames.stays)?.lastJobRef).not.toBe(scans[1]!.jobRef);
    });

    it('a crash between the terminal commit and the inventory: the reconciler writes it once, from where it stopped', async () => {
      // Two scans of a fresh workspace (the zone in state 1, then 2: present, gone, unconfirmed),
      // written as usual: the inventory they make is the reference.
      const t = await tenant();
      changesLab.setState(1);
      const a = await run(t.key, ...scan);
      changesLab.setState(2);
      const b = await run(t.key, ...scan);
      const ids = await sql<{ id: number; workspace_id: number }>`
        SELECT id, workspace_id FROM jobs WHERE public_id IN (${a.jobRef}, ${b.jobRef}) ORDER BY id`.execute(h.deps.db);
      const [jobA, jobB] = ids.rows.map((r) => Number(r.id));
      const ws = Number(ids.rows[0]!.workspace_id);
      const snapshot = async () => ({
        rows: (
          await sql`SELECT type, okey, state, last_job_ref, last_object_ref, products, open_critical, open_high,
              open_medium, open_low, open_info, max_open FROM inventory WHERE workspace_id = ${ws}
            ORDER BY type, okey`.execute(h.deps.db)
        ).rows,
        findings: (
          await sql`SELECT code, object_type, object_key, severity, job_ref, finding_ref, suppression_ref
            FROM inventory_findings WHERE workspace_id = ${ws} ORDER BY code, object_type, object_key`.execute(
            h.deps.db,
          )
        ).rows,
      });
      const reference = await snapshot();
      expect(reference.rows.map((r: any) => r.state)).toEqual(
        expect.arrayContaining(['present', 'gone', 'unconfirmed']),
      );

      // As if the orchestrator had died right after each job's terminal commit: both markers left
      // (in commit order), nothing of the inventory written. Marked as touched in the future, so
      // the reconciler leaves them be until the first writer has died.
      await sql`DELETE FROM inventory WHERE workspace_id = ${ws}`.execute(h.deps.db);
      await sql`DELETE FROM inventory_findings WHERE workspace_id = ${ws}`.execute(h.deps.db);
      for (const id of [jobA, jobB])
        await sql`INSERT INTO inventory_pending (job_id, workspace_id, touched_at)
          VALUES (${id}, ${ws}, NOW(3) + INTERVAL 1 HOUR)`.execute(h.deps.db);
      const markers = async () =>
        (
          await sql<{ id: number; job_id: number; after_seq: number }>`SELECT id, job_id, after_seq
            FROM inventory_pending WHERE workspace_id = ${ws} ORDER BY id`.execute(h.deps.db)
        ).rows;
      const first = (await markers())[0]!;
      expect(Number(first.job_id)).toBe(jobA);
      // The first writer gets one page of two objects in, then dies.
      const rulesOf = (product: string) => orchestrator.context.catalog.get(product)?.job?.changes;
      const page = await writeInventoryPage(h.deps.db, Number(first.id), rulesOf, 2);
      expect(page).toMatchObject({ step: 'more', present: 2 });
      expect(Number((await markers())[0]!.after_seq)).toBeGreaterThan(0);
      expect((await snapshot()).rows).toHaveLength(2);
      // Its marker now stale (nobody touches it): the reconciler resumes at its cursor, then the
      // later job's, oldest first.
      await sql`UPDATE inventory_pending SET touched_at = NOW(3) - INTERVAL 1 MINUTE
        WHERE workspace_id = ${ws}`.execute(h.deps.db);
      await until('the reconciler wrote both', async () => (await markers()).length === 0, 30_000, 100);
      // Exactly the inventory the two jobs made the first time: no page lost, none applied twice,
      // the later job's sightings last.
      expect(await snapshot()).toEqual(reference);
    }, 300_000);

    describe('the SDK and lss', () => {
      const lss = (...args: string[]) => lssAs(key, ...args);

      it('the SDK pages the inventory with its filters', async () => {
        const sdk = new LssClient({ apiKey: key, baseUrl });
        const gone: string[] = [];
        for await (const r of sdk.inventory({ state: 'gone', type: 'host', limit: 1 })) gone.push(r.key);
        expect(gone).toContain(changesNames.removed);
        const open: string[] = [];
        for await (const f of sdk.inventoryFindings({ q: CHANGES_ZONE })) open.push(f.code);
        expect(open).toContain('web_nosniff_missing');
      });

      it('lss suppress add|list|show|delete and lss inventory [findings]', async () => {
        const add = await lss(
          '--json',
          'suppress',
          'add',
          'web_nosniff_missing',
          '--key',
          `*.${CHANGES_ZONE}`,
          '--reason',
          'accepted_risk',
          '--expires',
          '30d',
          '--note',
          'cdn sets it',
        );
        expect(add.code, add.stderr).toBe(0);
        const made = JSON.parse(add.stdout).suppression;
        expect(made).toMatchObject({ code: 'web_nosniff_missing', key: `*.${CHANGES_ZONE}`, active: true });
        const list = await lss('--json', 'suppress', 'list', '--active');
        expect(JSON.parse(list.stdout).suppressions.map((x: { suppressionId: string }) => x.suppressionId)).toContain(
          made.suppressionId,
        );
        const show = await lss('suppress', 'show', made.suppressionId);
        expect(show.code).toBe(0);
        expect(show.stdout).toContain('created');
        expect((await lss('--json', 'suppress', 'delete', made.suppressionId)).code).toBe(0);
        const after = JSON.parse((await lss('--json', 'suppress', 'show', made.suppressionId)).stdout).suppression;
        expect(after.revokedAt).not.toBeNull();
        const missing = await lss('--json', 'suppress', 'show', 'sup_00000000000000000000000000');
        expect(missing.code).toBe(3);
        const inv = await lss('--json', 'inventory', '--q', CHANGES_ZONE, '--state', 'unconfirmed', '--type', 'host');
        expect(inv.code, inv.stderr).toBe(0);
        // deep's own questions SERVFAIL in state 2 (the changes lab's level case): unconfirmed as flaky.
        expect(JSON.parse(inv.stdout).inventory.map((r: { key: string }) => r.key)).toEqual([
          changesNames.deep,
          changesNames.flaky,
        ]);
        const human = await lss('inventory', '--q', CHANGES_ZONE);
        expect(human.stdout).toContain(changesNames.removed);
        const findings = await lss('--json', 'inventory', 'findings', '--code', 'web_nosniff_missing');
        const listed = JSON.parse(findings.stdout).findings as Array<{ code: string; objectKey: string }>;
        for (const f of listed) expect(f.code).toBe('web_nosniff_missing');
        expect(listed.map((f) => f.objectKey)).toContain(`https://${CHANGES_ZONE}/`);
      }, 180_000);
    });
  });
});
