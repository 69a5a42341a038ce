// Issue 48, item 1 at scan level: a deep scan of a generated zone (a link tree of GEN hosts, see
// test/lab/scan-zones.ts) straight to a zone server that rate-limits as NSD does by default (RRL:
// ~200 replies a second to one client, the excess dropped; test/lab/dns-server.ts `rateLimit`),
// with the per-zone backoff on as in production. Before the congestion windows the drops were
// read as a dead zone: the backoff answered the rest of the scan `timeout` unasked and the scan
// ended with hosts missing. Now the resolver slows down to what the zone answers
// (src/dns/congestion.ts), a reply the zone dropped is asked again (not-asked-retry.ts), and the
// scan covers every host with every DNS question answered. (A generated zone's scan never ends
// `completed`: its hosts serve HTTP only, so the web lane is partial by design; see scan-zones.ts.)
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startHarness, type Harness } from '../helpers/harness.ts';
import { fundedTenant, pollTerminal } from '../helpers/jobs.ts';
import { labEnv } from '../helpers/lab-runtime.ts';
import { startLab, type RunningLab } from '../lab/serve.ts';
import { scanLabPart } from '../lab/scan-lab.ts';
import { webLabPart } from '../lab/web-lab.ts';
import { mailLabPart } from '../lab/mail-lab.ts';
import { genZoneName } from '../lab/scan-zones.ts';
import { startOrchestrator, type OrchestratorHandle } from '../../src/jobs/orchestration/orchestrator.ts';
import { startLaneWorker, type LaneWorkerHandle } from '../../workers/start-lane-worker.ts';
import type { LaneHealth } from '../../src/queue/lane-health.ts';
import type { LaneName } from '../../src/queue/streams.ts';

const GEN = 300;
const RRL_PER_SECOND = 200;

describe('a deep scan of a zone whose server rate-limits (NSD RRL)', () => {
  let lab: RunningLab;
  let h: Harness;
  let orchestrator: OrchestratorHandle;
  const workers: LaneWorkerHandle[] = [];

  beforeAll(async () => {
    lab = await startLab({
      parts: [webLabPart(), mailLabPart, scanLabPart({ generated: [GEN] })],
      dnsRateLimit: { responsesPerSecond: RRL_PER_SECOND },
    });
    h = await startHarness({
      ...labEnv(lab.env),
      // As in production: the per-zone backoff on (the harness turns it off by default), the
      // default DNS timeout.
      DNS_ZONE_BACKOFF_MS: '10000',
      DNS_TIMEOUT_MS: '2000',
    });
    const log = pino({ level: 'silent' });
    orchestrator = await startOrchestrator({
      config: h.config,
      log,
      timing: { relayEveryMs: 200, relayAfterMs: 300, reconcileEveryMs: 500, sweepEveryMs: 300 },
    });
    for (const lane of ['dns', 'mail', 'web', 'domain', 'active'] as LaneName[])
      workers.push(
        await startLaneWorker(lane, {
          config: h.config,
          log,
          blockMs: 100,
          // The lanes' default capacity (256 checks at once): a level of the link tree arrives as
          // one burst of dns checks, seven questions each, as in the issue's bench.
          settings: { LANE_POOL_THREADS: 1 },
        }),
      );
    await (h.deps.runtime.services.laneHealth as LaneHealth).refresh();
  }, 60_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.close()));
    await orchestrator?.close();
    await h?.close();
    await lab?.close();
  });

  it('covers every host with every DNS question answered: the zone is slowed down to, never backed off as dead', async () => {
    const t = await fundedTenant(h, 100_000, {
      limits: {
        app: { perMinute: 100_000, burst: 10_000 },
        products: { 'scan.recursive.v1': { perMinute: 100_000, perHour: 1_000_000 } },
      },
      acceptResponsibleUse: h.config.RESPONSIBLE_USE_VERSION,
    });
    const zone = genZoneName(GEN);
    const res = await client(h.app, t.key).post('/v2/scans', {
      profile: 'deep',
      target: { type: 'domain_name', value: zone },
      options: { active: false, maxCredits: 20_000 },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const job = (await pollTerminal(h, t.key, res.body.jobRef, 240_000)).body;
    const codes = (job.coverage.limitations ?? []).map((l: { code: string }) => l.code);
    expect(['completed', 'partial']).toContain(job.status);
    // No DNS question of the scan ended without its answer: none timed out, none was answered
    // from a backoff, none given back unasked.
    for (const code of ['dns_timeout', 'dns_partial', 'dns_unavailable', 'dns_indeterminate', 'dead_lettered'])
      expect(codes, JSON.stringify(job.coverage)).not.toContain(code);
    // Every host of the zone was found and resolved: h1 … h(GEN-1) and the apex.
    const hosts = new Set<string>();
    let cursor: string | null = null;
    do {
      const page = await client(h.app, t.key).get(
        `/v2/jobs/${job.jobRef}/results?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(page.status).toBe(200);
      for (const item of page.body.items as Array<{ type: string; key: string }>)
        if ((item.type === 'host' || item.type === 'domain') && item.key.endsWith(zone)) hosts.add(item.key);
      cursor = page.body.page.nextCursor;
    } while (cursor);
    for (let i = 1; i < GEN; i++) expect(hosts.has(`h${i}.${zone}`), `h${i}.${zone}`).toBe(true);
    expect(hosts.has(zone)).toBe(true);
  }, 300_000);
});
