// Monitors in the hard cases (issue 44, its monitor items): a rotation retried after its reply was
// lost, a secret no key opens, a revoked key, a 410 beside another worker's attempt, many monitors
// behind one endpoint, stale claims of another orchestrator's product, the due-event scan and the
// deleted-monitor purge on their indexes, and a run refused for a retryable reason. Each part runs
// the real app over a scratch database of its own (an orchestrator or a scheduler claims every due
// monitor of its database); the scheduler and the delivery worker are driven here, round by round,
// except for the deferred run, which an orchestrator decides. Webhook receivers are on loopback.
import { createCipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { pino } from 'pino';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { fundedTenant } from '../helpers/jobs.ts';
import { assertMatchesContract } from '../helpers/contract-check.ts';
import { createScratchDatabase, until, type ScratchDatabase } from '../helpers/processes.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { startLabRdap, type LabRdap } from '../lab/rdap-server.ts';
import { labZones, zoneApex, type Zone } from '../lab/zones.ts';
import { domainZones } from '../lab/domain-zones.ts';
import { rdapNames } from '../lab/rdap-fixtures.ts';
import { LAB_ALLOW, LAB_SPECIAL_USE } from '../lab/addresses.ts';
import { createKey, revokeKey } from '../../src/auth/tenancy-repo.ts';
import type { OutboundGuard } from '../../src/net/outbound-guard.ts';
import { DeliveryWorker } from '../../src/jobs/monitors/delivery-worker.ts';
import { disableGone, dueMonitorsQuery, type ClaimedEvent } from '../../src/jobs/monitors/deliveries-repo.ts';
import { purgeMonitorHistory } from '../../src/jobs/monitors/monitor-retention.ts';
import { staleClaims } from '../../src/jobs/monitors/monitor-runs.ts';
import { rekeyWebhookSecrets } from '../../src/jobs/monitors/rekey-secrets.ts';
import { MonitorScheduler } from '../../src/jobs/monitors/scheduler.ts';
import { SecretBox, generateSecret } from '../../src/jobs/monitors/webhook-secrets.ts';
import { startOrchestrator, type OrchestratorHandle } from '../../src/jobs/orchestration/orchestrator.ts';
import { startLaneWorker, type LaneWorkerHandle } from '../../workers/start-lane-worker.ts';
import type { LaneHealth } from '../../src/queue/lane-health.ts';

const log = pino({ level: 'silent' });
const GENEROUS = {
  app: { perMinute: 100_000, burst: 10_000 },
  products: { 'lookup.domain.v1': { perMinute: 100_000, perHour: 1_000_000 } },
};
const RETIRED_KEY = 'r'.repeat(40);

const hookZone: Zone = {
  origin: 'monitor.test',
  ttl: 0,
  records: [...zoneApex('monitor.test'), { name: 'hooks', type: 'A', data: '127.0.0.1' }],
};

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
    OUTBOUND_PORT_MAP: receiver.portMap,
    MONITOR_MIN_INTERVAL_SECONDS: '1',
    WEBHOOK_RETRY_SCHEDULE_SECONDS: '1',
    WEBHOOK_RETRY_WINDOW_SECONDS: '600',
    WEBHOOK_ENDPOINT_CONCURRENCY: '2',
    CANCEL_GRACE_MS: '1000',
    SHUTDOWN_TIMEOUT_MS: '3000',
    LANE_POOL_THREADS: '0',
  };
}

function api(h: Harness, key: string) {
  const checked = async (r: supertest.Test, method: string, path: string) => {
    const res = await r;
    assertMatchesContract(method, path, res);
    return res;
  };
  return {
    post: (path: string, body: unknown, idem = `idem-${randomBytes(6).toString('hex')}`) =>
      checked(
        supertest(h.app)
          .post(path)
          .set('Authorization', `Bearer ${key}`)
          .set('Idempotency-Key', idem)
          .send(body as object),
        'post',
        path,
      ),
    get: (path: string) => checked(supertest(h.app).get(path).set('Authorization', `Bearer ${key}`), 'get', path),
    patch: (path: string, body: unknown, idem?: string) => {
      let r = supertest(h.app).patch(path).set('Authorization', `Bearer ${key}`);
      if (idem) r = r.set('Idempotency-Key', idem);
      return checked(r.send(body as object), 'patch', path);
    },
  };
}

interface MonitorRowBits {
  id: number;
  public_id: string;
  workspace_id: number;
  webhook_secret: Buffer | null;
  webhook_prev_secret: Buffer | null;
  paused: number;
  paused_reason: string | null;
  api_key_id: number;
  next_run_at: Date | null;
}

async function row(h: Harness, ref: string): Promise<MonitorRowBits> {
  const res = await sql<MonitorRowBits>`SELECT * FROM monitors WHERE public_id = ${ref}`.execute(h.deps.db);
  return res.rows[0]!;
}

/** A pending event of the monitor, due now (or `windowAgoSeconds` into its retry window). */
async function dueEvent(h: Harness, m: MonitorRowBits, windowAgoSeconds = 0, claimedByOther = false): Promise<string> {
  const ref = `msg_${randomBytes(13)
    .toString('hex')
    .toUpperCase()
    .replace(/[ILOU]/g, '0')
    .slice(0, 26)}`;
  await sql`INSERT INTO monitor_events (public_id, monitor_id, workspace_id, type, body, status, next_attempt_at,
      window_started_at, claim_token)
    VALUES (${ref}, ${m.id}, ${m.workspace_id}, 'monitor.run_skipped', '{"type":"monitor.run_skipped"}', 'pending',
      ${claimedByOther ? sql`NOW(3) + INTERVAL 60 SECOND` : sql`NOW(3) - INTERVAL 1 SECOND`},
      NOW(3) - INTERVAL ${windowAgoSeconds} SECOND, ${claimedByOther ? 'aaaaaaaaaaaaaaaa' : null})`.execute(h.deps.db);
  return ref;
}

async function eventRow(h: Harness, ref: string) {
  const res = await sql<{
    status: string;
    attempts: number;
    last_error: string | null;
    next_attempt_at: Date | null;
    claim_token: string | null;
  }>`SELECT status, attempts, last_error, next_attempt_at, claim_token FROM monitor_events WHERE public_id = ${ref}`.execute(
    h.deps.db,
  );
  return res.rows[0]!;
}

/** Only these monitors' events are due: a worker round of one test never takes another test's events. */
async function onlyDue(h: Harness, monitorIds: number[]): Promise<void> {
  await sql`UPDATE monitor_events SET status = 'failed', next_attempt_at = NULL
    WHERE status = 'pending' AND monitor_id NOT IN (${sql.join(monitorIds)})`.execute(h.deps.db);
}

/** The format-1 sealing of before issue 44 (no monitor bound), as stored rows still hold it. */
function sealUnbound(material: string, secret: string): Buffer {
  const salt = Buffer.from('lss-webhook-secret', 'utf8');
  const ikm = Buffer.from(material, 'utf8');
  const id = Buffer.from(hkdfSync('sha256', ikm, salt, 'lss webhook key id v1', 4));
  const key = Buffer.from(hkdfSync('sha256', ikm, salt, 'lss webhook aes-256-gcm v1', 32));
  const header = Buffer.concat([Buffer.of(1), id]);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: 16 });
  cipher.setAAD(header);
  const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return Buffer.concat([header, iv, body, cipher.getAuthTag()]);
}

beforeAll(async () => {
  dns = await startLabDns({ zones: [...labZones, ...domainZones, hookZone] });
  rdap = await startLabRdap();
  receiver = await startWebhookReceiver({ names: ['hooks.monitor.test'] });
});

afterAll(async () => {
  await Promise.allSettled([receiver?.close(), dns?.close(), rdap?.close()]);
});

describe('monitors driven round by round (no orchestrator)', () => {
  let db: ScratchDatabase;
  let h: Harness;
  let box: SecretBox;

  beforeAll(async () => {
    db = await createScratchDatabase('monhard');
    h = await startHarness(groupEnv(db, 'monhard'));
    box = new SecretBox(h.config.WEBHOOK_SECRET_KEY, h.config.WEBHOOK_SECRET_KEY_PREVIOUS);
  }, 60_000);

  afterAll(async () => {
    await h?.close();
    await db?.drop();
  });

  const create = async (key: string, body: Record<string, unknown> = {}) => {
    const res = await api(h, key).post('/v2/monitors', {
      product: 'lookup.domain.v1',
      request: { value: rdapNames.registered },
      schedule: { intervalSeconds: 3600 },
      paused: true,
      ...body,
    });
    expect(res.status).toBe(201);
    return res.body as { monitorId: string; webhook: { secret: string } | null };
  };

  const worker = (endpointIdleMs?: number) =>
    new DeliveryWorker(
      {
        db: h.deps.db,
        log,
        config: h.config,
        guard: h.deps.runtime.services.outbound as OutboundGuard,
        secrets: box,
      },
      endpointIdleMs === undefined ? {} : { endpointIdleMs },
    );

  it('rotation: needs an Idempotency-Key, a retry returns the same secret, and a second rotation within the overlap is refused (rotation_overlap)', async () => {
    const t = await fundedTenant(h, 0, { limits: GENEROUS });
    const m = await create(t.key, { webhook: { url: receiver.url('/rotate') } });
    const path = `/v2/monitors/${m.monitorId}`;
    const original = m.webhook!.secret;

    const keyless = await api(h, t.key).patch(path, { webhook: { rotateSecret: true } });
    expect(keyless.status).toBe(400);
    expect(keyless.body.error.code).toBe('idempotency_key_required');
    expect(box.open((await row(h, m.monitorId)).webhook_secret!, m.monitorId)).toBe(original);

    // The reply is lost; the client retries with the same key: the same secret, replayed.
    const idem = `rot-${randomBytes(6).toString('hex')}`;
    const first = await api(h, t.key).patch(path, { webhook: { rotateSecret: true } }, idem);
    expect(first.status).toBe(200);
    const fresh: string = first.body.webhook.secret;
    expect(fresh).toMatch(/^whsec_/);
    const retry = await api(h, t.key).patch(path, { webhook: { rotateSecret: true } }, idem);
    expect(retry.status).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body.webhook.secret).toBe(fresh);
    let r = await row(h, m.monitorId);
    expect(box.open(r.webhook_secret!, m.monitorId)).toBe(fresh);
    expect(box.open(r.webhook_prev_secret!, m.monitorId)).toBe(original);
    const stored = await sql<{ response_body: string }>`SELECT response_body FROM idempotency_records
      WHERE idem_key = ${idem}`.execute(h.deps.db);
    expect(stored.rows[0]!.response_body).not.toContain(fresh.slice(6));

    // A new key within the overlap would push `original` (what receivers still hold) out: refused.
    const again = await api(h, t.key).patch(
      path,
      { webhook: { rotateSecret: true } },
      `rot-${randomBytes(6).toString('hex')}`,
    );
    expect(again.status).toBe(400);
    expect(again.body.error.details.reason).toBe('rotation_overlap');
    r = await row(h, m.monitorId);
    expect(box.open(r.webhook_secret!, m.monitorId)).toBe(fresh);
    expect(box.open(r.webhook_prev_secret!, m.monitorId)).toBe(original);

    // Once the overlap is over, a rotation goes through; the secret it replaces signs beside it.
    await sql`UPDATE monitors SET webhook_prev_secret_until = NOW(3) - INTERVAL 1 SECOND WHERE public_id = ${m.monitorId}`.execute(
      h.deps.db,
    );
    const later = await api(h, t.key).patch(
      path,
      { webhook: { rotateSecret: true } },
      `rot-${randomBytes(6).toString('hex')}`,
    );
    expect(later.status).toBe(200);
    r = await row(h, m.monitorId);
    expect(box.open(r.webhook_secret!, m.monitorId)).toBe(later.body.webhook.secret);
    expect(box.open(r.webhook_prev_secret!, m.monitorId)).toBe(fresh);

    // Other PATCHes honour a key too (a replay answers the stored reply) but do not need one.
    expect((await api(h, t.key).patch(path, { schedule: { intervalSeconds: 7200 } })).status).toBe(200);
  }, 30_000);

  it('a secret no key opens (a retired WEBHOOK_SECRET_KEY, or a row copied from another monitor): attempts fail as secret_unreadable and the event fails when its window closes', async () => {
    const t = await fundedTenant(h, 0, { limits: GENEROUS });
    const retired = await create(t.key, { webhook: { url: receiver.url('/unreadable') } });
    const copied = await create(t.key, { webhook: { url: receiver.url('/copied') } });
    const source = await create(t.key, { webhook: { url: receiver.url('/source') } });
    await sql`UPDATE monitors SET webhook_secret = ${new SecretBox(RETIRED_KEY).seal(generateSecret(), retired.monitorId)}
      WHERE public_id = ${retired.monitorId}`.execute(h.deps.db);
    // Monitor `source`'s sealed secret, copied into `copied`'s row: bound to `source`, it does not open there.
    await sql`UPDATE monitors SET webhook_secret = ${(await row(h, source.monitorId)).webhook_secret}
      WHERE public_id = ${copied.monitorId}`.execute(h.deps.db);
    const a = await row(h, retired.monitorId);
    const b = await row(h, copied.monitorId);
    await onlyDue(h, [a.id, b.id]);
    const fresh = await dueEvent(h, a);
    const closing = await dueEvent(h, a, 700);
    const copiedEvent = await dueEvent(h, b);

    const w = worker();
    try {
      // Rounds until each was attempted once (the two monitors share an endpoint, and its slots).
      await until('the three attempts recorded', async () => {
        await w.round();
        const rows = await Promise.all([fresh, closing, copiedEvent].map((ref) => eventRow(h, ref)));
        return rows.every((e) => e.attempts >= 1);
      });
      for (const ref of [fresh, copiedEvent]) {
        const e = await eventRow(h, ref);
        expect(e).toMatchObject({ status: 'pending', attempts: 1, last_error: 'secret_unreadable', claim_token: null });
        expect(e.next_attempt_at!.getTime()).toBeGreaterThan(Date.now() - 5000);
      }
      // Its 24 h window (600 s here) was over: failed, never claimed again.
      expect(await eventRow(h, closing)).toMatchObject({
        status: 'failed',
        last_error: 'secret_unreadable',
        next_attempt_at: null,
      });
      // An unreadable secret is the monitor's fault, not the endpoint's: a monitor with a readable
      // one posting there still gets the endpoint's two slots, not a failing endpoint's one.
      const healthy = await row(h, (await create(t.key, { webhook: { url: receiver.url('/readable') } })).monitorId);
      await onlyDue(h, [healthy.id]);
      await dueEvent(h, healthy);
      await dueEvent(h, healthy);
      expect(await w.round()).toBe(2);
    } finally {
      await w.close();
    }
    expect(receiver.received('/unreadable')).toHaveLength(0);
    expect(receiver.received('/copied')).toHaveLength(0);
  }, 30_000);

  it('webhooks rekey: re-seals every secret under the current key, bound to its monitor (legacy unbound rows too), so the previous key can be retired', async () => {
    const t = await fundedTenant(h, 0, { limits: GENEROUS });
    const oldKey = 'o'.repeat(40);
    const newKey = 'n'.repeat(40);
    const underOld = await create(t.key, { webhook: { url: receiver.url('/rekey-a') } });
    const legacy = await create(t.key, { webhook: { url: receiver.url('/rekey-b') } });
    const lost = await create(t.key, { webhook: { url: receiver.url('/rekey-c') } });
    const s1 = generateSecret();
    const s2 = generateSecret();
    const s3 = generateSecret();
    await sql`UPDATE monitors SET webhook_secret = ${new SecretBox(oldKey).seal(s1, underOld.monitorId)},
        webhook_prev_secret = ${new SecretBox(oldKey).seal(s3, underOld.monitorId)},
        webhook_prev_secret_until = NOW(3) + INTERVAL 1 HOUR
      WHERE public_id = ${underOld.monitorId}`.execute(h.deps.db);
    await sql`UPDATE monitors SET webhook_secret = ${sealUnbound(oldKey, s2)} WHERE public_id = ${legacy.monitorId}`.execute(
      h.deps.db,
    );
    await sql`UPDATE monitors SET webhook_secret = ${new SecretBox(RETIRED_KEY).seal(generateSecret(), lost.monitorId)}
      WHERE public_id = ${lost.monitorId}`.execute(h.deps.db);
    // A legacy row still opens before the rekey (deliveries go on through the upgrade), with any monitor.
    const rotating = new SecretBox(newKey, oldKey);
    expect(rotating.open((await row(h, legacy.monitorId)).webhook_secret!, legacy.monitorId)).toBe(s2);

    const report = await rekeyWebhookSecrets(h.deps.db, rotating, 2);
    expect(report.unreadable).toContain(lost.monitorId);
    expect(report.resealed).toBeGreaterThanOrEqual(3);
    const retiredOld = new SecretBox(newKey);
    const a = await row(h, underOld.monitorId);
    const b = await row(h, legacy.monitorId);
    expect(retiredOld.open(a.webhook_secret!, underOld.monitorId)).toBe(s1);
    expect(retiredOld.open(a.webhook_prev_secret!, underOld.monitorId)).toBe(s3);
    expect(retiredOld.open(b.webhook_secret!, legacy.monitorId)).toBe(s2);
    expect(b.webhook_secret![0]).toBe(2);
    expect(retiredOld.open(b.webhook_secret!, underOld.monitorId)).toBeNull();
    // Run again: nothing left to do for these.
    const again = await rekeyWebhookSecrets(h.deps.db, rotating);
    expect(again.resealed).toBe(0);
  }, 30_000);

  it('retention purges a pending event whose retry window has closed, and keeps one still being delivered', async () => {
    const t = await fundedTenant(h, 0, { limits: GENEROUS });
    const m = await row(h, (await create(t.key, { webhook: { url: receiver.url('/old') } })).monitorId);
    const event = (ref: string, windowDays: number) => sql`INSERT INTO monitor_events
      (public_id, monitor_id, workspace_id, type, body, status, next_attempt_at, window_started_at, created_at)
      VALUES (${ref}, ${m.id}, ${m.workspace_id}, 'monitor.run_skipped', '{}', 'pending', NOW(3) + INTERVAL 1 DAY,
        NOW(3) - INTERVAL ${windowDays} DAY, NOW(3) - INTERVAL 40 DAY)`;
    const stuck = `msg_${'4'.repeat(26)}`;
    const live = `msg_${'5'.repeat(26)}`;
    await event(stuck, 40).execute(h.deps.db);
    await event(live, 0).execute(h.deps.db);
    await purgeMonitorHistory(h.deps.db, 30, 5000, 600);
    const left = await sql<{
      public_id: string;
    }>`SELECT public_id FROM monitor_events WHERE monitor_id = ${m.id}`.execute(h.deps.db);
    expect(left.rows.map((r) => r.public_id)).toEqual([live]);
  }, 30_000);

  it('a revoked key: its monitor is paused (pausedReason key_revoked) with one run_skipped event and none after; resuming binds it to the resuming key', async () => {
    const t = await fundedTenant(h, 100, { limits: GENEROUS });
    const m = await create(t.key, {
      paused: false,
      schedule: { intervalSeconds: 1 },
      webhook: { url: receiver.url('/revoked') },
    });
    const other = await createKey(h.deps.db, h.config.KEY_PEPPER, { workspace: t.workspaceId });
    await revokeKey(h.deps.db, t.keyId);
    const scheduler = new MonitorScheduler(
      {
        db: h.deps.db,
        redis: h.deps.redis,
        log,
        config: h.config,
        runtime: h.deps.runtime,
        limiter: h.deps.limiter,
        products: new Map(h.deps.products.filter((p) => p.job).map((p) => [p.id, p])),
      },
      { perSecond: 1000 },
    );
    await scheduler.tick();
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 1100));
      await scheduler.tick();
    }
    const shown = await api(h, other.key).get(`/v2/monitors/${m.monitorId}`);
    expect(shown.body).toMatchObject({ paused: true, pausedReason: 'key_revoked', nextRunAt: null });
    expect(shown.body.lastRuns).toEqual([expect.objectContaining({ outcome: 'skipped', code: 'key_revoked' })]);
    const events = await sql<{
      body: string;
    }>`SELECT e.body FROM monitor_events e JOIN monitors m ON m.id = e.monitor_id
      WHERE m.public_id = ${m.monitorId}`.execute(h.deps.db);
    expect(events.rows).toHaveLength(1);
    expect(JSON.parse(events.rows[0]!.body)).toMatchObject({
      type: 'monitor.run_skipped',
      data: { code: 'key_revoked' },
    });

    const resumed = await api(h, other.key).patch(`/v2/monitors/${m.monitorId}`, { paused: false });
    expect(resumed.body).toMatchObject({ paused: false, pausedReason: null });
    const r = await row(h, m.monitorId);
    expect(r.paused_reason).toBeNull();
    const keyRow = await sql<{ id: number }>`SELECT id FROM api_keys WHERE public_id = ${other.keyId}`.execute(
      h.deps.db,
    );
    expect(Number(r.api_key_id)).toBe(Number(keyRow.rows[0]!.id));
    await api(h, other.key).patch(`/v2/monitors/${m.monitorId}`, { paused: true });
  }, 30_000);

  it('a 410 fails the pending events nobody is sending, and leaves the one another worker holds to that worker', async () => {
    const t = await fundedTenant(h, 0, { limits: GENEROUS });
    const m = await row(h, (await create(t.key, { webhook: { url: receiver.url('/gone') } })).monitorId);
    const answered = await dueEvent(h, m);
    const waiting = await dueEvent(h, m);
    const inFlight = await dueEvent(h, m, 0, true);
    const idOf = async (ref: string) =>
      Number(
        (await sql<{ id: number }>`SELECT id FROM monitor_events WHERE public_id = ${ref}`.execute(h.deps.db)).rows[0]!
          .id,
      );
    const ev: ClaimedEvent = {
      id: await idOf(answered),
      publicId: answered,
      monitorId: m.id,
      body: '{}',
      attempts: 0,
      dueAt: new Date(),
      windowStartedAt: new Date(),
      token: 'bbbbbbbbbbbbbbbb',
    };
    await disableGone(h.deps.db, ev);
    expect(await eventRow(h, waiting)).toMatchObject({ status: 'failed' });
    expect(await eventRow(h, inFlight)).toMatchObject({ status: 'pending', claim_token: 'aaaaaaaaaaaaaaaa' });
  }, 30_000);

  it('many monitors behind one endpoint share its WEBHOOK_ENDPOINT_CONCURRENCY slots, and an idle endpoint is forgotten', async () => {
    const t = await fundedTenant(h, 0, { limits: GENEROUS });
    receiver.on('/hang', () => 'hang');
    const rows: MonitorRowBits[] = [];
    for (let i = 0; i < 5; i++) {
      rows.push(await row(h, (await create(t.key, { webhook: { url: receiver.url('/hang') } })).monitorId));
    }
    await onlyDue(
      h,
      rows.map((r) => r.id),
    );
    for (const r of rows) {
      await dueEvent(h, r);
      await dueEvent(h, r);
    }
    const w = worker(200);
    try {
      // WEBHOOK_ENDPOINT_CONCURRENCY=2: two attempts at the endpoint, whatever the five monitors' ten events.
      expect(await w.round()).toBe(2);
      expect(await w.round()).toBe(0);
      await until('both attempts at the receiver', async () => receiver.received('/hang').length === 2);
      expect(w.endpointsRemembered).toBe(1);
    } finally {
      await w.close();
    }
    expect(receiver.received('/hang')).toHaveLength(2);
    // Idle past endpointIdleMs (200 ms here; a minute by default): forgotten.
    await new Promise((r) => setTimeout(r, 300));
    expect(w.endpointsRemembered).toBe(0);
  }, 30_000);

  it("stale claims are recovered only by an orchestrator that owns the monitor's product", async () => {
    const t = await fundedTenant(h, 0, { limits: GENEROUS });
    const m = await row(h, (await create(t.key)).monitorId);
    await sql`UPDATE monitors SET product = 'lookup.elsewhere.v1' WHERE id = ${m.id}`.execute(h.deps.db);
    await sql`INSERT INTO monitor_runs (monitor_id, due_at, outcome, claimed_at, reclaim_at)
      VALUES (${m.id}, NOW(3) - INTERVAL 5 MINUTE, 'claimed', NOW(3) - INTERVAL 5 MINUTE, NOW(3) - INTERVAL 4 MINUTE)`.execute(
      h.deps.db,
    );
    const mine = (runs: Array<{ monitorId: number }>) => runs.filter((r) => r.monitorId === m.id);
    expect(mine(await staleClaims(h.deps.db, 100, ['lookup.domain.v1', 'scan.recursive.v1']))).toEqual([]);
    expect(mine(await staleClaims(h.deps.db, 100, ['lookup.elsewhere.v1']))).toHaveLength(1);
  }, 30_000);

  it('indexes: the idle due-event scan reads no event of 2,000 idle monitors, and the purge of deleted monitors reads its index', async () => {
    const t = await fundedTenant(h, 0, { limits: GENEROUS });
    const ws = t.wsId;
    await sql`INSERT INTO monitors (public_id, workspace_id, api_key_id, product, request, interval_seconds, paused)
      SELECT CONCAT('mon_IDX', LPAD(seq, 23, '0')), ${ws}, 1, 'lookup.domain.v1', '{}', 3600, 1 FROM seq_1_to_2000`.execute(
      h.deps.db,
    );
    await sql`INSERT INTO monitor_events (public_id, monitor_id, workspace_id, type, body, status, delivered_at)
      SELECT CONCAT('msg_IDX', LPAD(m.id, 23, '0')), m.id, ${ws}, 'monitor.run_skipped', '{}', 'delivered', NOW(3)
      FROM monitors m WHERE m.public_id LIKE 'mon_IDX%'`.execute(h.deps.db);
    await onlyDue(h, [0]);
    await sql`ANALYZE TABLE monitor_events, monitors`.execute(h.deps.db);
    const analyzed = await sql<Record<string, string>>`ANALYZE FORMAT=JSON ${dueMonitorsQuery(0, 500)}`.execute(
      h.deps.db,
    );
    const plan = String(Object.values(analyzed.rows[0]!)[0]);
    const read = [...plan.matchAll(/"r_rows":\s*([\d.]+)/g)].reduce((n, x) => n + Number(x[1]), 0);
    expect(read).toBeLessThan(10);

    const explained = await sql<Record<string, string>>`EXPLAIN FORMAT=JSON
      DELETE FROM monitors WHERE deleted_at IS NOT NULL AND deleted_at < NOW(3) - INTERVAL 30 DAY LIMIT 5000`.execute(
      h.deps.db,
    );
    expect(String(Object.values(explained.rows[0]!)[0])).toContain('ix_monitors_deleted');
  }, 60_000);
});

describe('a run refused for a retryable reason (an orchestrator)', () => {
  let db: ScratchDatabase;
  let h: Harness;
  let orchestrator: OrchestratorHandle;
  let lane: LaneWorkerHandle | undefined;

  beforeAll(async () => {
    db = await createScratchDatabase('mondefer');
    h = await startHarness(groupEnv(db, 'mondefer'));
    orchestrator = await startOrchestrator({
      config: h.config,
      log,
      timing: { relayEveryMs: 200, relayAfterMs: 300, reconcileEveryMs: 500, sweepEveryMs: 300, monitorEveryMs: 300 },
      delivery: { idleMs: 100 },
    });
  }, 60_000);

  afterAll(async () => {
    await lane?.close();
    await orchestrator?.close();
    await h?.close();
    await db?.drop();
  });

  it('is deferred (capability_unavailable while no domain worker is alive), not skipped, starts once the lane is up, and its monitor keeps the later phase', async () => {
    const t = await fundedTenant(h, 100, { limits: GENEROUS });
    const created = await api(h, t.key).post('/v2/monitors', {
      product: 'lookup.domain.v1',
      request: { value: rdapNames.registered },
      schedule: { intervalSeconds: 3600 },
    });
    expect(created.status).toBe(201);
    const ref: string = created.body.monitorId;
    const runs = async () =>
      (
        await sql<{ outcome: string; code: string | null; deferrals: number; due_at: Date; run_at: Date | null }>`
        SELECT r.outcome, r.code, r.deferrals, r.due_at, r.run_at FROM monitor_runs r JOIN monitors m ON m.id = r.monitor_id
        WHERE m.public_id = ${ref}`.execute(h.deps.db)
      ).rows;
    const deferred = await until(
      'the run deferred',
      async () => {
        const r = await runs();
        return r.length === 1 && Number(r[0]!.deferrals) >= 1 ? r[0]! : null;
      },
      20_000,
      100,
    );
    expect(deferred).toMatchObject({ outcome: 'claimed', code: 'capability_unavailable' });
    lane = await startLaneWorker('domain', { config: h.config, log, blockMs: 200 });
    const started = await until(
      'the deferred run started',
      async () => {
        const r = await runs();
        return r.some((x) => x.outcome === 'started') ? r : null;
      },
      60_000,
      200,
    );
    expect(started).toHaveLength(1);
    expect(started[0]!.code).toBeNull();
    expect(Number(started[0]!.deferrals)).toBeGreaterThanOrEqual(1);
    // The phase moved to the late start: the next due time is an interval after it, not after the due time.
    const m = await row(h, ref);
    const startedAt = started[0]!.run_at!.getTime();
    expect(Math.abs(m.next_run_at!.getTime() - (startedAt + 3600_000))).toBeLessThan(2000);
    expect(m.next_run_at!.getTime() - (started[0]!.due_at.getTime() + 3600_000)).toBeGreaterThan(1000);
  }, 90_000);

  it('monitors created together under a product limit all run: the refused ones are deferred past its Retry-After, and their phases spread', async () => {
    lane ??= await startLaneWorker('domain', { config: h.config, log, blockMs: 200 });
    await until('the domain lane alive', async () => {
      const health = h.deps.runtime.services.laneHealth as LaneHealth;
      await health.refresh();
      return health.alive('domain');
    });
    // 6 a minute, the whole minute's quota at once: six start at the due time, the other two
    // are refused (capability_rate_limit_exceeded, Retry-After ~10 s) and deferred.
    const t = await fundedTenant(h, 100, {
      limits: { ...GENEROUS, products: { 'lookup.domain.v1': { perMinute: 6, perHour: 1000 } } },
    });
    const refs: string[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await api(h, t.key).post('/v2/monitors', {
        product: 'lookup.domain.v1',
        request: { value: rdapNames.registered },
        schedule: { intervalSeconds: 3600 },
        paused: true,
      });
      refs.push(res.body.monitorId);
    }
    // The orchestrator's own view of the lane catches up (its heartbeat reads are periodic).
    await new Promise((r) => setTimeout(r, 3000));
    // Resumed in one statement: all due at the same instant.
    await sql`UPDATE monitors SET paused = 0, next_run_at = NOW(3) WHERE public_id IN (${sql.join(refs)})`.execute(
      h.deps.db,
    );
    const runs = async () =>
      (
        await sql<{ outcome: string; code: string | null; deferrals: number; next_run_at: Date }>`
        SELECT r.outcome, r.code, r.deferrals, m.next_run_at FROM monitor_runs r JOIN monitors m ON m.id = r.monitor_id
        WHERE m.public_id IN (${sql.join(refs)})`.execute(h.deps.db)
      ).rows;
    const done = await until(
      'every run started',
      async () => {
        const r = await runs();
        return r.length === 8 && r.every((x) => x.outcome !== 'claimed') ? r : null;
      },
      100_000,
      500,
    );
    expect(done.map((r) => [r.outcome, r.code])).toEqual(Array(8).fill(['started', null]));
    const deferred = done.filter((r) => Number(r.deferrals) > 0);
    expect(deferred.length).toBeGreaterThanOrEqual(2);
    // The deferred monitors' next runs are due later than the others': their phases moved apart.
    const onTime = done.filter((r) => Number(r.deferrals) === 0).map((r) => r.next_run_at.getTime());
    for (const r of deferred) expect(r.next_run_at.getTime()).toBeGreaterThan(Math.max(...onTime) + 5000);
  }, 120_000);
});
