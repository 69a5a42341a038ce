// Monitors and signed webhooks (CONTRACT §14), end to end on the lab: the real app, an orchestrator
// (scheduler and delivery worker) and a domain lane worker over a scratch database (an orchestrator
// claims every due monitor of its database, so other files' must not see these), the DNS and RDAP
// labs, and a webhook receiver on loopback https with a lab CA certificate. Refused webhook targets
// are loopback addresses outside the lab's allow-list (127.200.0.0/16) and names that resolve
// there; listeners on them count connections, which must stay 0.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { client, startHarness, type Harness } from '../helpers/harness.ts';
import { fundedTenant, pollTerminal } from '../helpers/jobs.ts';
import { assertMatchesContract } from '../helpers/contract-check.ts';
import { createScratchDatabase, ProcessGroup, until, type ScratchDatabase } from '../helpers/processes.ts';
import {
  countConnections,
  startWebhookReceiver,
  type Received,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { startLabRdap, type LabRdap } from '../lab/rdap-server.ts';
import { labZones, zoneApex, type Zone } from '../lab/zones.ts';
import { domainZones } from '../lab/domain-zones.ts';
import { rdapNames } from '../lab/rdap-fixtures.ts';
import { LAB_ALLOW, LAB_SPECIAL_USE } from '../lab/addresses.ts';
import { startOrchestrator, type OrchestratorHandle } from '../../src/jobs/orchestration/orchestrator.ts';
import { startLaneWorker, type LaneWorkerHandle } from '../../workers/start-lane-worker.ts';
import type { LaneHealth } from '../../src/queue/lane-health.ts';
import { LssWebhookError, verifyWebhook } from '../../src/client/webhooks.ts';
import { purgeMonitorHistory } from '../../src/jobs/monitors/monitor-retention.ts';
import type { MonitorEvent } from '../../src/client/types.ts';

const log = pino({ level: 'silent' });
const GENEROUS = {
  app: { perMinute: 100_000, burst: 10_000 },
  products: { 'lookup.domain.v1': { perMinute: 100_000, perHour: 1_000_000 } },
};
const REFUSED_HOOK = '127.200.0.9';
const REBOUND_TO = '127.200.0.7';

/** Names the webhooks use: one allowed, one that resolves outside the allow-list, one that rebinds. */
const hookZone: Zone = {
  origin: 'monitor.test',
  ttl: 0,
  records: [
    ...zoneApex('monitor.test'),
    { name: 'hooks', type: 'A', data: '127.0.0.1' },
    { name: 'refused', type: 'A', data: REFUSED_HOOK },
    { name: 'rebind', type: 'A', data: '127.0.0.1' },
  ],
  // The first A question (the creation's check) gets 127.0.0.1; every delivery attempt's, an address outside.
  behaviours: [{ name: 'rebind', types: ['A'], behaviour: { kind: 'rebind', after: 1, address: REBOUND_TO } }],
};

const procs = new ProcessGroup();
let dns: LabDns;
let rdap: LabRdap;
let receiver: WebhookReceiver;

function groupEnv(db: ScratchDatabase, tag: string): Record<string, string> {
  return {
    DATABASE_URL: db.url,
    REDIS_KEY_PREFIX: `${process.env.REDIS_KEY_PREFIX ?? ''}${tag}:${randomBytes(3).toString('hex')}:`,
    DNS_SERVERS: dns.address,
    DNS_TIMEOUT_MS: '1000',
    RDAP_BASE_URL: rdap.baseUrl,
    ALLOW_PRIVATE_TARGETS: LAB_ALLOW,
    ALLOW_SPECIAL_USE_DOMAINS: LAB_SPECIAL_USE,
    // Webhooks go to the web's ports only: 443 reaches the receiver.
    OUTBOUND_PORT_MAP: receiver.portMap,
    // Test-only: short schedules and a 1 s retry step (production keeps CONTRACT §14's).
    MONITOR_MIN_INTERVAL_SECONDS: '1',
    WEBHOOK_RETRY_SCHEDULE_SECONDS: '1',
    WEBHOOK_RETRY_WINDOW_SECONDS: '600',
    CANCEL_GRACE_MS: '1000',
    SHUTDOWN_TIMEOUT_MS: '3000',
    LANE_POOL_THREADS: '0',
  };
}

const FAST = { relayEveryMs: 200, relayAfterMs: 300, reconcileEveryMs: 500, sweepEveryMs: 300, monitorEveryMs: 300 };

async function domainLaneAlive(h: Harness): Promise<void> {
  const health = h.deps.runtime.services.laneHealth as LaneHealth;
  await until(
    'the domain lane and orchestrator heartbeats',
    async () => {
      await health.refresh();
      return health.alive('domain') && health.alive('orchestrator');
    },
    20_000,
  );
}

function api(h: Harness, key: string) {
  const c = client(h.app, key);
  const checked = async (r: supertest.Test, method: string, path: string) => {
    const res = await r;
    assertMatchesContract(method, path, res);
    return res;
  };
  return {
    post: c.post,
    get: c.get,
    patch: (path: string, body: unknown, idem?: string) => {
      let r = supertest(h.app).patch(path).set('Authorization', `Bearer ${key}`);
      if (idem) r = r.set('Idempotency-Key', idem);
      return checked(r.send(body as object), 'patch', path);
    },
    delete: (path: string) =>
      checked(supertest(h.app).delete(path).set('Authorization', `Bearer ${key}`), 'delete', path),
  };
}

function headersOf(r: Received): Record<string, string> {
  return { 'webhook-id': r.id, 'webhook-timestamp': r.timestamp, 'webhook-signature': r.signature };
}

function eventsAt(path: string, type?: MonitorEvent['type']): Array<Received & { event: MonitorEvent }> {
  return receiver
    .received(path)
    .map((r) => ({ ...r, event: JSON.parse(r.body) as MonitorEvent }))
    .filter((r) => !type || r.event.type === type);
}

async function deliveriesOf(h: Harness, key: string, monitorId: string) {
  const res = await api(h, key).get(`/v2/monitors/${monitorId}/deliveries`);
  expect(res.status).toBe(200);
  return res.body.items as Array<Record<string, unknown>>;
}

beforeAll(async () => {
  dns = await startLabDns({ zones: [...labZones, ...domainZones, hookZone] });
  rdap = await startLabRdap();
  receiver = await startWebhookReceiver({ names: ['hooks.monitor.test', 'rebind.monitor.test'] });
});

afterAll(async () => {
  await procs.killAll();
  await Promise.allSettled([receiver?.close(), dns?.close(), rdap?.close()]);
});

describe('monitors on one orchestrator', () => {
  let db: ScratchDatabase;
  let h: Harness;
  let orchestrator: OrchestratorHandle;
  let worker: LaneWorkerHandle;

  beforeAll(async () => {
    db = await createScratchDatabase('monitors');
    h = await startHarness(groupEnv(db, 'monitors'));
    orchestrator = await startOrchestrator({ config: h.config, log, timing: FAST, delivery: { idleMs: 100 } });
    worker = await startLaneWorker('domain', { config: h.config, log, blockMs: 200 });
    await domainLaneAlive(h);
  }, 60_000);

  afterAll(async () => {
    await worker?.close();
    await orchestrator?.close();
    await h?.close();
    await db?.drop();
  });

  const create = (key: string, body: Record<string, unknown>) =>
    api(h, key).post('/v2/monitors', {
      product: 'lookup.domain.v1',
      request: { value: rdapNames.registered },
      schedule: { intervalSeconds: 3600 },
      ...body,
    });

  it('two runs: two signed job_finished events that verify with the returned secret, and not with another or stale', async () => {
    const t = await fundedTenant(h, 100, { limits: GENEROUS });
    const created = await create(t.key, { schedule: { intervalSeconds: 4 }, webhook: { url: receiver.url('/two') } });
    expect(created.status).toBe(201);
    const m = created.body;
    expect(m.monitorId).toMatch(/^mon_/);
    const secret: string = m.webhook.secret;
    expect(secret).toMatch(/^whsec_/);
    // The secret is shown once: reads never carry it.
    const read = await api(h, t.key).get(`/v2/monitors/${m.monitorId}`);
    expect(read.body.webhook).toMatchObject({ url: receiver.url('/two'), status: 'active', disabled: null });
    expect(read.body.webhook.secret).toBeUndefined();

    const got = await until(
      'two job_finished events',
      async () => {
        const e = eventsAt('/two', 'monitor.job_finished');
        return e.length >= 2 ? e : null;
      },
      60_000,
      200,
    );
    await api(h, t.key).patch(`/v2/monitors/${m.monitorId}`, { paused: true });
    const [first, second] = got as [(typeof got)[0], (typeof got)[0]];
    for (const r of [first, second]) {
      const event = verifyWebhook(secret, headersOf(r), r.body);
      expect(event).toMatchObject({ type: 'monitor.job_finished', data: { monitorId: m.monitorId } });
      expect(event.data.jobRef).toMatch(/^job_/);
      expect(['completed', 'partial']).toContain(event.data.status);
      expect(r.id).toMatch(/^msg_/);
      expect(Math.abs(Number(r.timestamp) - Math.floor(r.at / 1000))).toBeLessThanOrEqual(5);
    }
    expect(first.id).not.toBe(second.id);
    expect(second.event.data.jobRef).not.toBe(first.event.data.jobRef);
    // The payload is a public projection: no internal id, nothing but the contract's fields.
    expect(Object.keys(first.event).sort()).toEqual(['data', 'timestamp', 'type']);
    expect(Object.keys(first.event.data).sort()).toEqual(['baseline', 'changes', 'jobRef', 'monitorId', 'status']);

    // Change detection (CONTRACT §13): the first run has no baseline; the second's is the first's
    // job, and it carries the counts of that comparison.
    expect(first.event.data.baseline).toBeNull();
    expect(first.event.data.changes).toBeNull();
    expect(second.event.data.baseline).toEqual({ jobRef: first.event.data.jobRef });
    expect(second.event.data.changes).toMatchObject({
      objects: { new: expect.any(Number), changed: expect.any(Number), gone: expect.any(Number) },
      findings: { new: expect.any(Number), resolved: expect.any(Number) },
    });
    // The same lookup twice, seconds apart, of a registration that did not change: nothing new,
    // changed or gone (the lab's RDAP dates are whole UTC days, test/lab/rdap-fixtures.ts).
    expect(second.event.data.changes!.objects).toMatchObject({ new: 0, changed: 0, gone: 0 });
    // Both as the job row and its status have them at the job's end.
    const status = await api(h, t.key).get(`/v2/jobs/${second.event.data.jobRef}`);
    expect(status.body.baseline?.jobRef).toBe(first.event.data.jobRef);
    expect(status.body.changes).toEqual(second.event.data.changes);
    for (const e of [first, second]) {
      const row = await h.deps.db
        .selectFrom('jobs')
        .select(['baseline_ref', 'changes'])
        .where('public_id', '=', e.event.data.jobRef!)
        .executeTakeFirstOrThrow();
      expect(e.event.data.baseline).toEqual(row.baseline_ref ? { jobRef: row.baseline_ref } : null);
      if (!row.baseline_ref) expect(e.event.data.changes).toBeNull();
    }

    const other = `whsec_${randomBytes(32).toString('base64')}`;
    expect(() => verifyWebhook(other, headersOf(first), first.body)).toThrow(LssWebhookError);
    expect(() => verifyWebhook(secret, headersOf(first), `${first.body} `)).toThrow(/signature/);
    const stale = (Number(first.timestamp) + 301) * 1000;
    expect(() => verifyWebhook(secret, headersOf(first), first.body, { now: stale })).toThrow(/more than 300 s/);
    expect(() =>
      verifyWebhook(secret, headersOf(first), first.body, { now: stale, toleranceSeconds: 400 }),
    ).not.toThrow();

    const shown = await api(h, t.key).get(`/v2/monitors/${m.monitorId}`);
    const started = shown.body.lastRuns.filter((r: { outcome: string }) => r.outcome === 'started');
    expect(started.map((r: { jobRef: string }) => r.jobRef)).toEqual(
      expect.arrayContaining([first.event.data.jobRef, second.event.data.jobRef]),
    );
    const deliveries = await deliveriesOf(h, t.key, m.monitorId);
    expect(deliveries.filter((d) => d.status === 'delivered').map((d) => d.eventId)).toEqual(
      expect.arrayContaining([first.id, second.id]),
    );
  }, 90_000);

  it('a receiver that fails twice then succeeds: three attempts, one webhook-id, delivered', async () => {
    const t = await fundedTenant(h, 100, { limits: GENEROUS });
    receiver.on('/flaky', (n) => ({ status: n < 2 ? 500 : 200 }));
    const m = (await create(t.key, { webhook: { url: receiver.url('/flaky') } })).body;
    const got = await until(
      'three attempts',
      async () => (receiver.received('/flaky').length >= 3 ? true : null),
      60_000,
      200,
    );
    expect(got).toBe(true);
    const attempts = receiver.received('/flaky');
    expect(new Set(attempts.map((a) => a.id)).size).toBe(1);
    for (const a of attempts)
      expect(verifyWebhook(m.webhook.secret, headersOf(a), a.body).type).toBe('monitor.job_finished');
    const d = await until('delivered', async () => {
      const [only] = await deliveriesOf(h, t.key, m.monitorId);
      return only?.status === 'delivered' ? only : null;
    });
    expect(d).toMatchObject({
      eventId: attempts[0]!.id,
      attempts: 3,
      lastStatusCode: 200,
      lastError: null,
      nextAttemptAt: null,
    });
    expect(receiver.received('/flaky')).toHaveLength(3);

    // Redeliver: the same event again, under the same webhook-id, as a fresh delivery.
    const again = await api(h, t.key).post(`/v2/monitors/${m.monitorId}/deliveries/${d.eventId}/redeliver`);
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ eventId: d.eventId, status: 'pending', attempts: 0 });
    await until('the redelivery', async () => (receiver.received('/flaky').length >= 4 ? true : null), 30_000, 200);
    expect(receiver.received('/flaky')[3]!.id).toBe(d.eventId);
    const redelivered = await until('delivered again', async () => {
      const [only] = await deliveriesOf(h, t.key, m.monitorId);
      return only?.status === 'delivered' ? only : null;
    });
    expect(redelivered).toMatchObject({ attempts: 1, lastStatusCode: 200 });
    const unknown = await api(h, t.key).post(
      `/v2/monitors/${m.monitorId}/deliveries/msg_00000000000000000000000000/redeliver`,
    );
    expect(unknown.body.error.code).toBe('monitor_not_found');
  }, 90_000);

  it('a receiver that redirects: the redirect is not followed, the attempt failed and is retried', async () => {
    const t = await fundedTenant(h, 100, { limits: GENEROUS });
    receiver.on('/redirect', () => ({ status: 302, headers: { location: receiver.url('/landing') } }));
    const m = (await create(t.key, { webhook: { url: receiver.url('/redirect') } })).body;
    const d = await until(
      'two failed attempts',
      async () => {
        const [only] = await deliveriesOf(h, t.key, m.monitorId);
        return only && Number(only.attempts) >= 2 ? only : null;
      },
      60_000,
      200,
    );
    expect(d).toMatchObject({ status: 'pending', lastStatusCode: 302, lastError: 'redirect not followed (302)' });
    expect(await api(h, t.key).delete(`/v2/monitors/${m.monitorId}`)).toMatchObject({ status: 204 });
    expect(receiver.received('/landing')).toHaveLength(0);
  }, 90_000);

  it('a receiver that hangs: the attempt ends at 10 s and the event is retried (same webhook-id)', async () => {
    const t = await fundedTenant(h, 100, { limits: GENEROUS });
    receiver.on('/hang', (n) => (n === 0 ? 'hang' : { status: 204 }));
    const m = (await create(t.key, { webhook: { url: receiver.url('/hang') } })).body;
    await until('two attempts', async () => (receiver.received('/hang').length >= 2 ? true : null), 60_000, 200);
    const [a, b] = receiver.received('/hang') as [Received, Received];
    expect(b.id).toBe(a.id);
    // The first attempt waited its 10 s before it was given up (then 1 s of test schedule).
    expect(b.at - a.at).toBeGreaterThanOrEqual(10_000);
    const d = await until('delivered', async () => {
      const [only] = await deliveriesOf(h, t.key, m.monitorId);
      return only?.status === 'delivered' ? only : null;
    });
    expect(d).toMatchObject({ attempts: 2, lastStatusCode: 204 });
  }, 90_000);

  it('SSRF: webhook URLs to refused addresses, names that resolve there, http outside the allow-list and user info are 400 and never receive a byte', async () => {
    const t = await fundedTenant(h, 100, { limits: GENEROUS });
    const port = receiver.port;
    // The port a refused connection would reach (443, mapped): a listener there counts them.
    const refusedListener = await countConnections(REFUSED_HOOK, port);
    try {
      const cases: Array<[string, string]> = [
        [`https://${REFUSED_HOOK}/x`, 'webhook_target_not_allowed'],
        [`https://refused.monitor.test/x`, 'webhook_target_not_allowed'],
        [`http://${REFUSED_HOOK}/x`, 'webhook_target_not_allowed'],
        [`https://user:secret@hooks.monitor.test/x`, 'webhook_url_invalid'],
        [`ftp://hooks.monitor.test/x`, 'webhook_scheme_not_allowed'],
        [`https://nowhere.monitor.test/x`, 'webhook_host_unresolvable'],
        // Any port but the web's own would make the deliveries log a port scanner.
        [`https://hooks.monitor.test:${port}/x`, 'webhook_port_not_allowed'],
      ];
      for (const [url, reason] of cases) {
        const res = await create(t.key, { webhook: { url } });
        expect(res.status, url).toBe(400);
        expect(res.body.error, url).toMatchObject({ code: 'invalid_request', details: { reason } });
      }
      // A PATCH to a refused URL is refused the same way.
      const m = (await create(t.key, { paused: true })).body;
      const patched = await api(h, t.key).patch(`/v2/monitors/${m.monitorId}`, {
        webhook: { url: 'https://refused.monitor.test/x' },
      });
      expect(patched.status).toBe(400);
      expect(patched.body.error.details.reason).toBe('webhook_target_not_allowed');
      // http is accepted only where every address is inside ALLOW_PRIVATE_TARGETS.
      expect((await create(t.key, { paused: true, webhook: { url: 'http://127.0.0.1/plain' } })).status).toBe(201);
      expect(refusedListener.connections()).toBe(0);
    } finally {
      await refusedListener.close();
    }
  }, 60_000);

  it('SSRF: a name rebound to a refused address between creation and delivery receives nothing', async () => {
    const t = await fundedTenant(h, 100, { limits: GENEROUS });
    const rebound = await countConnections(REBOUND_TO, receiver.port);
    try {
      const created = await create(t.key, { webhook: { url: receiver.url('/rebind', 'rebind.monitor.test') } });
      expect(created.status).toBe(201);
      const d = await until(
        'two refused attempts',
        async () => {
          const [only] = await deliveriesOf(h, t.key, created.body.monitorId);
          return only && Number(only.attempts) >= 2 ? only : null;
        },
        60_000,
        200,
      );
      expect(d).toMatchObject({ status: 'pending', lastStatusCode: null });
      expect(String(d.lastError)).toMatch(/^refused: /);
      expect(receiver.received('/rebind')).toHaveLength(0);
      expect(rebound.connections()).toBe(0);
      await api(h, t.key).delete(`/v2/monitors/${created.body.monitorId}`);
    } finally {
      await rebound.close();
    }
  }, 90_000);

  it('no credits: the run is skipped with insufficient_credits, no job, and a signed monitor.run_skipped event', async () => {
    const t = await fundedTenant(h, 0, { limits: GENEROUS });
    const m = (await create(t.key, { webhook: { url: receiver.url('/skips') } })).body;
    const [r] = await until(
      'a run_skipped event',
      async () => {
        const e = eventsAt('/skips', 'monitor.run_skipped');
        return e.length > 0 ? e : null;
      },
      30_000,
      200,
    );
    const event = verifyWebhook(m.webhook.secret, headersOf(r!), r!.body);
    expect(event.data).toEqual({
      monitorId: m.monitorId,
      jobRef: null,
      status: 'skipped',
      baseline: null,
      changes: null,
      code: 'insufficient_credits',
    });
    const shown = await api(h, t.key).get(`/v2/monitors/${m.monitorId}`);
    expect(shown.body.lastRuns).toEqual([
      expect.objectContaining({ outcome: 'skipped', code: 'insufficient_credits', jobRef: null }),
    ]);
    const jobs = await h.deps.db.selectFrom('jobs').select('id').where('workspace_id', '=', t.wsId).execute();
    expect(jobs).toEqual([]);
  }, 60_000);

  it('a run while the last job still runs is skipped (previous_run_active); deleted mid-run, nothing more runs or is sent', async () => {
    const t = await fundedTenant(h, 100, { limits: GENEROUS });
    // The RDAP lab never answers this name: the job runs until its registration lane times out (15 s).
    const m = (
      await create(t.key, {
        request: { value: rdapNames.slow },
        schedule: { intervalSeconds: 1 },
        webhook: { url: receiver.url('/slow') },
      })
    ).body;
    const runs = await until(
      'a started run and a previous_run_active skip',
      async () => {
        const r = (await api(h, t.key).get(`/v2/monitors/${m.monitorId}`)).body.lastRuns as Array<
          Record<string, string>
        >;
        return r.some((x) => x.outcome === 'started') && r.some((x) => x.code === 'previous_run_active') ? r : null;
      },
      30_000,
      200,
    );
    const started = runs.filter((x) => x.outcome === 'started');
    expect(started).toHaveLength(1);
    expect(await api(h, t.key).delete(`/v2/monitors/${m.monitorId}`)).toMatchObject({ status: 204 });
    const after = await api(h, t.key).get(`/v2/monitors/${m.monitorId}`);
    expect(after.status).toBe(404);
    expect(after.body.error.code).toBe('monitor_not_found');
    const count = async () =>
      Number(
        (
          await sql<{ n: number }>`SELECT COUNT(*) AS n FROM monitor_runs r JOIN monitors m ON m.id = r.monitor_id
          WHERE m.public_id = ${m.monitorId}`.execute(h.deps.db)
        ).rows[0]!.n,
      );
    const runsAtDelete = await count();
    await pollTerminal(h, t.key, started[0]!.jobRef!, 40_000);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await count()).toBe(runsAtDelete);
    expect(eventsAt('/slow', 'monitor.job_finished')).toHaveLength(0);
  }, 90_000);

  it('paused: no run; resumed: a run at once; another workspace sees monitor_not_found', async () => {
    const t = await fundedTenant(h, 100, { limits: GENEROUS });
    const m = (await create(t.key, { paused: true, schedule: { intervalSeconds: 1 } })).body;
    expect(m).toMatchObject({ paused: true, nextRunAt: null });
    await new Promise((r) => setTimeout(r, 2000));
    expect((await api(h, t.key).get(`/v2/monitors/${m.monitorId}`)).body.lastRuns).toEqual([]);
    const resumed = await api(h, t.key).patch(`/v2/monitors/${m.monitorId}`, {
      paused: false,
      schedule: { intervalSeconds: 3600 },
    });
    expect(resumed.status).toBe(200);
    expect(resumed.body.paused).toBe(false);
    const runs = await until('a run after resume', async () => {
      const r = (await api(h, t.key).get(`/v2/monitors/${m.monitorId}`)).body.lastRuns as unknown[];
      return r.length > 0 ? r : null;
    });
    expect(runs).toEqual([expect.objectContaining({ outcome: 'started' })]);
    const paused = await api(h, t.key).patch(`/v2/monitors/${m.monitorId}`, { paused: true });
    expect(paused.body).toMatchObject({ paused: true, nextRunAt: null });

    const stranger = await fundedTenant(h, 0, { limits: GENEROUS });
    for (const res of [
      await api(h, stranger.key).get(`/v2/monitors/${m.monitorId}`),
      await api(h, stranger.key).patch(`/v2/monitors/${m.monitorId}`, { paused: false }),
      await api(h, stranger.key).delete(`/v2/monitors/${m.monitorId}`),
      await api(h, stranger.key).get(`/v2/monitors/${m.monitorId}/deliveries`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('monitor_not_found');
    }
    expect((await api(h, stranger.key).get('/v2/monitors')).body.items).toEqual([]);
  }, 60_000);

  it('lists follow their cursors: monitors by creation, deliveries newest first; a foreign cursor is invalid_cursor', async () => {
    const t = await fundedTenant(h, 0, { limits: GENEROUS });
    const made = [];
    for (let i = 0; i < 3; i++) made.push((await create(t.key, { paused: true })).body.monitorId as string);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await api(h, t.key).get(
        `/v2/monitors?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(res.status).toBe(200);
      seen.push(...res.body.items.map((m: { monitorId: string }) => m.monitorId));
      cursor = res.body.page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(made);
    const first = await api(h, t.key).get('/v2/monitors?limit=1');
    const other = await fundedTenant(h, 0, { limits: GENEROUS });
    const foreign = await api(h, other.key).get(
      `/v2/monitors?cursor=${encodeURIComponent(first.body.page.nextCursor)}`,
    );
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.code).toBe('invalid_cursor');
    const deliveriesCursor = await api(h, t.key).get(
      `/v2/monitors/${made[0]}/deliveries?cursor=${encodeURIComponent(first.body.page.nextCursor)}`,
    );
    expect(deliveriesCursor.body.error.code).toBe('invalid_cursor');
  }, 30_000);

  it('history is purged after JOB_RETENTION_DAYS: old runs and finished events, monitors deleted long ago; pending events stay', async () => {
    const t = await fundedTenant(h, 0, { limits: GENEROUS });
    const m = (await create(t.key, { paused: true, webhook: { url: receiver.url('/old') } })).body;
    const gone = (await create(t.key, { paused: true })).body;
    await api(h, t.key).delete(`/v2/monitors/${gone.monitorId}`);
    const db = h.deps.db;
    const ids = await sql<{ id: number; public_id: string }>`SELECT id, public_id FROM monitors
      WHERE public_id IN (${m.monitorId}, ${gone.monitorId})`.execute(db);
    const idOf = (ref: string) => Number(ids.rows.find((r) => r.public_id === ref)!.id);
    const mid = idOf(m.monitorId);
    await sql`INSERT INTO monitor_runs (monitor_id, due_at, outcome, code) VALUES
      (${mid}, NOW(3) - INTERVAL 40 DAY, 'skipped', 'insufficient_credits'),
      (${mid}, NOW(3) - INTERVAL 1 DAY, 'skipped', 'insufficient_credits')`.execute(db);
    const event = (status: string, days: number, ref: string) => sql`INSERT INTO monitor_events
      (public_id, monitor_id, workspace_id, type, body, status, next_attempt_at, created_at)
      VALUES (${ref}, ${mid}, ${t.wsId}, 'monitor.run_skipped', '{}', ${status},
        ${status === 'pending' ? sql`NOW(3) + INTERVAL 1 DAY` : null}, NOW(3) - INTERVAL ${days} DAY)`;
    const refs = [`msg_${'1'.repeat(26)}`, `msg_${'2'.repeat(26)}`, `msg_${'3'.repeat(26)}`];
    await event('delivered', 40, refs[0]!).execute(db);
    await event('pending', 40, refs[1]!).execute(db);
    await event('failed', 1, refs[2]!).execute(db);
    await sql`UPDATE monitors SET deleted_at = NOW(3) - INTERVAL 40 DAY WHERE id = ${idOf(gone.monitorId)}`.execute(db);
    expect(await purgeMonitorHistory(db, 30)).toBeGreaterThanOrEqual(3);
    const runs = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM monitor_runs WHERE monitor_id = ${mid}`.execute(db);
    expect(Number(runs.rows[0]!.n)).toBe(1);
    const left = await sql<{
      public_id: string;
    }>`SELECT public_id FROM monitor_events WHERE monitor_id = ${mid}`.execute(db);
    expect(left.rows.map((r) => r.public_id).sort()).toEqual([refs[1], refs[2]].sort());
    const monitors = await sql<{ public_id: string }>`SELECT public_id FROM monitors
      WHERE public_id IN (${m.monitorId}, ${gone.monitorId})`.execute(db);
    expect(monitors.rows.map((r) => r.public_id)).toEqual([m.monitorId]);
  }, 30_000);

  it('create is idempotent (the replay carries the secret again) and validates the product request with its own schema', async () => {
    const t = await fundedTenant(h, 100, { limits: GENEROUS });
    const key = `idem-${randomBytes(6).toString('hex')}`;
    const body = {
      product: 'lookup.domain.v1',
      request: { value: rdapNames.registered },
      schedule: { intervalSeconds: 3600 },
      webhook: { url: receiver.url('/idem') },
      paused: true,
    };
    const a = await api(h, t.key).post('/v2/monitors', body, { 'Idempotency-Key': key });
    const b = await api(h, t.key).post('/v2/monitors', body, { 'Idempotency-Key': key });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.headers['idempotent-replayed']).toBe('true');
    expect(b.body).toEqual(a.body);
    // Kept for replay sealed, never in clear.
    const stored = await h.deps.db
      .selectFrom('idempotency_records')
      .select('response_body')
      .where('idem_key', '=', key)
      .executeTakeFirstOrThrow();
    expect(stored.response_body).not.toContain(a.body.webhook.secret);
    expect((await api(h, t.key).get('/v2/monitors')).body.items).toHaveLength(1);

    const bad = await api(h, t.key).post('/v2/monitors', { ...body, request: { value: 'not a domain!', extra: 1 } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.issues.map((i: { path: string }) => i.path)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^request/)]),
    );
    const short = await api(h, t.key).post('/v2/monitors', { ...body, schedule: { intervalSeconds: 0 } });
    expect(short.body.error).toMatchObject({ code: 'invalid_request', details: { reason: 'interval_out_of_range' } });
    const scanWithoutBudget = await api(h, t.key).post('/v2/monitors', {
      ...body,
      product: 'scan.recursive.v1',
      request: {
        profile: 'quick',
        target: { type: 'domain_name', value: 'lab.test' },
        options: { active: false, maxCredits: 1 },
      },
    });
    expect(scanWithoutBudget.body.error.code).toBe('scan_credit_budget_invalid');
  }, 30_000);

  it('rotation: the new secret is returned once and both sign for the overlap; a 410 disables the webhook until its URL is set again', async () => {
    const t = await fundedTenant(h, 100, { limits: GENEROUS });
    receiver.on('/gone', () => ({ status: 410 }));
    const m = (await create(t.key, { webhook: { url: receiver.url('/rotate') }, paused: true })).body;
    // A rotation needs an Idempotency-Key (monitors-hard.test.ts: its replay returns the same secret).
    const rotated = await api(h, t.key).patch(
      `/v2/monitors/${m.monitorId}`,
      { webhook: { rotateSecret: true } },
      `rot-${randomBytes(6).toString('hex')}`,
    );
    expect(rotated.status).toBe(200);
    const fresh: string = rotated.body.webhook.secret;
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(m.webhook.secret);
    await api(h, t.key).patch(`/v2/monitors/${m.monitorId}`, { paused: false });
    const [r] = await until(
      'an event',
      async () => {
        const e = eventsAt('/rotate');
        return e.length > 0 ? e : null;
      },
      30_000,
      200,
    );
    expect(r!.signature.split(' ')).toHaveLength(2);
    expect(verifyWebhook(fresh, headersOf(r!), r!.body).data.monitorId).toBe(m.monitorId);
    expect(verifyWebhook(m.webhook.secret, headersOf(r!), r!.body).data.monitorId).toBe(m.monitorId);

    await api(h, t.key).patch(`/v2/monitors/${m.monitorId}`, { paused: true, webhook: { url: receiver.url('/gone') } });
    await api(h, t.key).patch(`/v2/monitors/${m.monitorId}`, { paused: false });
    const disabled = await until(
      'webhook disabled',
      async () => {
        const b = (await api(h, t.key).get(`/v2/monitors/${m.monitorId}`)).body;
        return b.webhook?.disabled === 'gone' ? b : null;
      },
      30_000,
      200,
    );
    expect(disabled.webhook.status).toBe('disabled');
    expect(receiver.received('/gone')).toHaveLength(1);
    const reenabled = await api(h, t.key).patch(`/v2/monitors/${m.monitorId}`, {
      paused: true,
      webhook: { url: receiver.url('/gone') },
    });
    expect(reenabled.body.webhook).toMatchObject({ status: 'active', disabled: null });
  }, 60_000);

  it('exactly once: two orchestrators, runs due at the same moment start one job each', async () => {
    const second = await startOrchestrator({ config: h.config, log, timing: FAST, consumer: 'orchestrator-two' });
    try {
      const t = await fundedTenant(h, 1000, { limits: GENEROUS });
      const ms = await Promise.all(Array.from({ length: 12 }, () => create(t.key, { paused: true })));
      await Promise.all(ms.map((m) => api(h, t.key).patch(`/v2/monitors/${m.body.monitorId}`, { paused: false })));
      const ids = ms.map((m) => m.body.monitorId as string);
      const runsOf = async () =>
        (
          await sql<{ public_id: string; outcome: string; job_id: number | null }>`
          SELECT m.public_id, r.outcome, r.job_id FROM monitor_runs r JOIN monitors m ON m.id = r.monitor_id
          WHERE m.workspace_id = ${t.wsId}`.execute(h.deps.db)
        ).rows;
      await until(
        'a decided run for each monitor',
        async () => {
          const rows = await runsOf();
          return rows.filter((r) => r.outcome !== 'claimed').length >= ids.length;
        },
        30_000,
        200,
      );
      // Both orchestrators keep polling: still one run each a few of their ticks later.
      await new Promise((r) => setTimeout(r, 1500));
      const runs = await runsOf();
      expect(runs.map((r) => r.public_id).sort()).toEqual([...ids].sort());
      expect(runs.every((r) => r.outcome === 'started' && r.job_id !== null)).toBe(true);
      const jobs = await h.deps.db.selectFrom('jobs').select('id').where('workspace_id', '=', t.wsId).execute();
      expect(jobs).toHaveLength(ids.length);
    } finally {
      await second.close();
    }
  }, 60_000);
});

describe('an orchestrator killed between the job end and the delivery', () => {
  let db: ScratchDatabase;
  let h: Harness;
  let worker: LaneWorkerHandle;
  let survivor: OrchestratorHandle | undefined;

  beforeAll(async () => {
    db = await createScratchDatabase('monkill');
    h = await startHarness(groupEnv(db, 'monkill'));
    worker = await startLaneWorker('domain', { config: h.config, log, blockMs: 200 });
  }, 60_000);

  afterAll(async () => {
    await survivor?.close();
    await worker?.close();
    await h?.close();
    await db?.drop();
  });

  it('the event written with the job end is delivered by another orchestrator, under its webhook-id', async () => {
    // The first orchestrator ends jobs (and writes their events) but is killed before it delivers.
    const env = {
      ...groupEnv(db, 'unused'),
      REDIS_KEY_PREFIX: h.config.REDIS_KEY_PREFIX,
      LSS_FAULT_NO_WEBHOOK_DELIVERY: '1',
      LOG_LEVEL: 'info',
    };
    const doomed = procs.node('orchestrator (no delivery)', ['workers/orchestrator.ts'], env);
    await domainLaneAlive(h);
    const t = await fundedTenant(h, 100, { limits: GENEROUS });
    const created = await api(h, t.key).post('/v2/monitors', {
      product: 'lookup.domain.v1',
      request: { value: rdapNames.registered },
      schedule: { intervalSeconds: 3600 },
      webhook: { url: receiver.url('/killed') },
    });
    expect(created.status).toBe(201);
    const monitorId: string = created.body.monitorId;
    const pending = await until(
      'the job ended and its event pending',
      async () => {
        const [d] = await deliveriesOf(h, t.key, monitorId);
        return d?.type === 'monitor.job_finished' ? d : null;
      },
      60_000,
      200,
    ).catch(async (err: Error) => {
      const shown = await api(h, t.key).get(`/v2/monitors/${monitorId}`);
      throw new Error(`${err.message}\nmonitor: ${JSON.stringify(shown.body)}\n${procs.report()}`);
    });
    expect(pending).toMatchObject({ status: 'pending', attempts: 0 });
    expect(await doomed.stop('SIGKILL')).toBe(137);
    expect(receiver.received('/killed')).toHaveLength(0);

    survivor = await startOrchestrator({ config: h.config, log, timing: FAST, delivery: { idleMs: 100 } });
    const [r] = await until(
      'delivered by the survivor',
      async () => {
        const e = receiver.received('/killed');
        return e.length > 0 ? e : null;
      },
      30_000,
      200,
    );
    expect(r!.id).toBe(pending.eventId);
    expect(verifyWebhook(created.body.webhook.secret, headersOf(r!), r!.body).data.jobRef).toBe(pending.jobRef);
  }, 90_000);
});
