// Concurrency that used to end in 503s or stalled jobs (issue 7 §2), through the real admission
// chain, orchestrator and domain lane worker over real MariaDB and Redis:
//   - a key with a monthly limit under 50 concurrent paid requests: every one that fits is
//     accepted, the rest are monthly_credit_limit_exceeded, no 503, the limit never exceeded;
//   - 50 concurrent domain jobs: every task runs once (no deadlock left to redelivery);
//   - acceptance while the orchestrator settles other jobs of the same key: no 503;
//   - every 503 the service gives is logged at warn with its cause.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createTenant, startHarness, type Harness, type Tenant } from '../helpers/harness.ts';
import { createApp } from '../../src/app.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { startLabRdap, type LabRdap } from '../lab/rdap-server.ts';
import { labZones } from '../lab/zones.ts';
import { domainZones } from '../lab/domain-zones.ts';
import { LAB_ALLOW, LAB_SPECIAL_USE } from '../lab/addresses.ts';
import { balance, grantCredits } from '../../src/credits/ledger.ts';
import { workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { createKey } from '../../src/auth/tenancy-repo.ts';
import { startOrchestrator, type OrchestratorHandle } from '../../src/jobs/orchestration/orchestrator.ts';
import { startLaneWorker, type LaneWorkerHandle } from '../../workers/start-lane-worker.ts';
import type { LaneHealth } from '../../src/queue/lane-health.ts';

const DOMAIN = '/v2/lookups/domain';
const GENEROUS = {
  app: { perMinute: 100_000, burst: 10_000 },
  products: { 'lookup.domain.v1': { perMinute: 100_000, perHour: 1_000_000 } },
};
const NAMES = ['lab.test', 'lab-expired.test', 'lab-expiring.test', 'lab-signed.test', 'lab-missing.test'];

let dns: LabDns;
let rdap: LabRdap;
let h: Harness;
let orchestrator: OrchestratorHandle;
let worker: LaneWorkerHandle;
const logLines: string[] = [];
let app: ReturnType<typeof createApp>;

async function funded(credits: number, opts: { monthlyLimit?: number } = {}): Promise<Tenant & { wsId: number }> {
  const t = await createTenant(h, { limits: GENEROUS });
  const wsId = await workspaceInternalId(h.deps.db, t.workspaceId);
  if (credits > 0) await grantCredits(h.deps.db, wsId, credits, `grant:test:${t.workspaceId}`);
  if (opts.monthlyLimit === undefined) return { ...t, wsId };
  const key = await createKey(h.deps.db, h.config.KEY_PEPPER, {
    workspace: t.workspaceId,
    monthlyCreditLimit: opts.monthlyLimit,
  });
  return { ...t, key: key.key, keyId: key.keyId, wsId };
}

async function pollTerminal(key: string, jobRef: string, timeoutMs = 30_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await client(app, key).get(`/v2/jobs/${jobRef}`);
    if (res.body.terminal) return res.body;
    if (Date.now() > until) throw new Error(`job ${jobRef} not terminal: ${JSON.stringify(res.body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const warn503 = () =>
  logLines
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.level === 40 && l.msg === 'request answered 503');

beforeAll(async () => {
  dns = await startLabDns({ zones: [...labZones, ...domainZones] });
  rdap = await startLabRdap();
  h = await startHarness({
    DNS_SERVERS: dns.address,
    DNS_TIMEOUT_MS: '500',
    RDAP_BASE_URL: rdap.baseUrl,
    ALLOW_PRIVATE_TARGETS: LAB_ALLOW,
    ALLOW_SPECIAL_USE_DOMAINS: LAB_SPECIAL_USE,
  });
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logLines.push(String(chunk));
      cb();
    },
  });
  app = createApp({ ...h.deps, log: pino({ level: 'info' }, sink) });
  const log = pino({ level: 'silent' });
  orchestrator = await startOrchestrator({
    config: h.config,
    log,
    timing: { relayEveryMs: 200, relayAfterMs: 300, reconcileEveryMs: 500, sweepEveryMs: 300 },
  });
  worker = await startLaneWorker('domain', {
    config: h.config,
    log,
    blockMs: 200,
    settings: { LANE_CONCURRENCY: 16 },
  });
  await (h.deps.runtime.services.laneHealth as LaneHealth).refresh();
});

afterAll(async () => {
  await worker?.close();
  await orchestrator?.close();
  await h?.close();
  await Promise.all([dns?.close(), rdap?.close()]);
});

describe('concurrency without 503s or stalls', () => {
  it('50 concurrent paid requests on a key with a monthly limit: the ones that fit are accepted, the rest refused, never a 503', async () => {
    // Price 2 each: a monthly limit of 40 admits exactly 20 of 50 (credits are plentiful).
    const t = await funded(1000, { monthlyLimit: 40 });
    const replies = await Promise.all(
      Array.from({ length: 50 }, (_, i) => client(app, t.key).post(DOMAIN, { value: NAMES[i % NAMES.length] })),
    );
    const statuses = replies.map((r) => r.status);
    expect(
      statuses.filter((s) => s >= 500),
      JSON.stringify(replies.filter((r) => r.status >= 500).map((r) => r.body)),
    ).toEqual([]);
    expect(statuses.filter((s) => s === 202)).toHaveLength(20);
    expect(
      replies.filter((r) => r.status === 402).every((r) => r.body.error.code === 'monthly_credit_limit_exceeded'),
    ).toBe(true);
    const used = await sql<{
      amount: number;
    }>`SELECT amount FROM key_month_usage WHERE api_key_id = (SELECT id FROM api_keys WHERE public_id = ${t.keyId})`.execute(
      h.deps.db,
    );
    expect(Number(used.rows[0]!.amount)).toBeLessThanOrEqual(40);
    for (const r of replies.filter((x) => x.status === 202)) await pollTerminal(t.key, r.body.jobRef);
    const b = await balance(h.deps.db, t.wsId);
    expect(b.granted).toBe(b.available + b.reserved + b.captured);
  });

  it('50 concurrent domain jobs: every task runs once and every job ends promptly', async () => {
    const t = await funded(1000);
    const started = Date.now();
    const replies = await Promise.all(
      Array.from({ length: 50 }, (_, i) => client(app, t.key).post(DOMAIN, { value: NAMES[i % NAMES.length] })),
    );
    expect(replies.map((r) => r.status).filter((s) => s !== 202)).toEqual([]);
    const done = await Promise.all(replies.map((r) => pollTerminal(t.key, r.body.jobRef)));
    const elapsed = Date.now() - started;
    expect(done.every((j) => j.terminal)).toBe(true);
    // A deadlock left to redelivery shows as a second attempt (and a job late by the visibility timeout).
    const attempts = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM tasks t JOIN jobs j ON j.id = t.job_id
      WHERE j.workspace_id = ${t.wsId} AND t.attempts > 1`.execute(h.deps.db);
    expect(Number(attempts.rows[0]!.n)).toBe(0);
    expect(elapsed).toBeLessThan(30_000);
  });

  it('acceptance while the orchestrator settles jobs of the same key: no 503', async () => {
    const t = await funded(10_000, { monthlyLimit: 5000 });
    const statuses: number[] = [];
    const bodies: unknown[] = [];
    // Waves of requests while earlier waves' jobs are captured and released.
    for (let wave = 0; wave < 6; wave++) {
      const replies = await Promise.all(
        Array.from({ length: 15 }, (_, i) =>
          client(app, t.key).post(DOMAIN, { value: NAMES[(wave + i) % NAMES.length] }),
        ),
      );
      for (const r of replies) {
        statuses.push(r.status);
        if (r.status >= 500) bodies.push(r.body);
      }
      await new Promise((r) => setTimeout(r, 150));
    }
    expect(bodies).toEqual([]);
    expect(statuses.every((s) => s === 202)).toBe(true);
  });

  it('every 503 is logged at warn with its cause and step', async () => {
    // Take the orchestrator away: the domain product becomes unavailable at the readiness step.
    const before = warn503().length;
    const t = await funded(10);
    await orchestrator.close();
    await h.deps.redis.del((await import('../../src/queue/streams.ts')).queueKeys.laneAlive('orchestrator'));
    await (h.deps.runtime.services.laneHealth as LaneHealth).refresh();
    const res = await client(app, t.key).post(DOMAIN, { value: 'lab.test' });
    expect(res.status).toBe(503);
    const lines = warn503().slice(before);
    expect(lines.length).toBeGreaterThan(0);
    const line = lines.at(-1)!;
    expect(line).toMatchObject({
      status: 503,
      code: 'capability_unavailable',
      step: 'readiness',
      requestId: res.headers['x-request-id'],
    });
    expect(String(line.cause)).toMatch(/orchestrator|lane/);
    orchestrator = await startOrchestrator({
      config: h.config,
      log: pino({ level: 'silent' }),
      timing: { relayEveryMs: 200, relayAfterMs: 300, reconcileEveryMs: 500, sweepEveryMs: 300 },
    });
  });
});
