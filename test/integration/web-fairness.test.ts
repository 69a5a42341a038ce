// Issue 18: one workspace's hostile pages must not stall another workspace's web lookups. Tenant A
// looks up three copies of the lab's `cspmegabyte` page (a 60,000-blank CSP header and a 1 MiB
// <meta> policy of blanks: before the fix each parse took tens of minutes on a pool thread that
// nothing stopped); tenant B's ordinary lookup, posted while A's pages are being parsed, must
// finish promptly with its http lane complete.
//   1. The real pool: the pages now parse in milliseconds (the <meta> policy is over its cap: a
//      limitation) and B is not held up. On the code before the fix, B waited behind three
//      spinning threads until its check timed out.
//   2. A pool worker that never finishes those pages (test/helpers/runaway-parse-worker.ts) stands
//      in for a parser that still runs away: the pool's deadline stops and replaces the threads,
//      A's http lanes end `timeout` with `parse_deadline_exceeded`, and B is served meanwhile.
// Real MySQL, Redis streams, orchestrator, lane worker and piscina threads; the loopback web lab.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startHarness, type Harness } from '../helpers/harness.ts';
import { fundedTenant, pollTerminal } from '../helpers/jobs.ts';
import { labEnv } from '../helpers/lab-runtime.ts';
import { startLab, type RunningLab } from '../lab/serve.ts';
import { webLabPart } from '../lab/web-lab.ts';
import { webUrl } from '../lab/web-hosts.ts';
import { startOrchestrator, type OrchestratorHandle } from '../../src/jobs/orchestration/orchestrator.ts';
import { startLaneWorker, type LaneWorkerHandle } from '../../workers/start-lane-worker.ts';
import { createWebChecks } from '../../src/products/web/index.ts';
import type { LaneHealth } from '../../src/queue/lane-health.ts';

const WEB = '/v2/lookups/web';
const GENEROUS = {
  app: { perMinute: 100_000, burst: 10_000 },
  products: { 'lookup.web.v1': { perMinute: 100_000, perHour: 1_000_000 } },
};
// A chain's budget of 4 s: the http check's own timeout is then 22 s, so what bounds B's wait
// below is the pool, not the check's timeout.
const checks = createWebChecks({ fetchTimeoutMs: 4000, handshakeTimeoutMs: 2000 });
/** "Promptly": an ordinary lookup takes well under a second here; this leaves room for a loaded machine. */
const PROMPT_MS = 10_000;

interface Lane {
  lane: string;
  status: string;
}

describe('another workspace is served while one looks up hostile pages', () => {
  let lab: RunningLab;
  let h: Harness;
  let orchestrator: OrchestratorHandle;
  let worker: LaneWorkerHandle | undefined;

  beforeAll(async () => {
    lab = await startLab({ parts: [webLabPart()] });
    h = await startHarness({ ...labEnv(lab.env), DNS_TIMEOUT_MS: '1000' });
    orchestrator = await startOrchestrator({
      config: h.config,
      log: pino({ level: 'silent' }),
      timing: { relayEveryMs: 200, relayAfterMs: 300, reconcileEveryMs: 500, sweepEveryMs: 300 },
    });
  });
  afterAll(async () => {
    await worker?.close();
    await orchestrator?.close();
    await h?.close();
    await lab?.close();
  });

  async function startWebLane(opts: { deadlineMs?: number; poolWorker?: string } = {}) {
    await worker?.close();
    worker = await startLaneWorker('web', {
      config: h.config,
      log: pino({ level: 'silent' }),
      blockMs: 200,
      settings: { LANE_POOL_THREADS: 2, ...(opts.deadlineMs ? { LANE_POOL_DEADLINE_MS: opts.deadlineMs } : {}) },
      checks: (name) => checks.find((c) => c.name === name),
      ...(opts.poolWorker ? { poolWorker: opts.poolWorker } : {}),
    });
    await (h.deps.runtime.services.laneHealth as LaneHealth).refresh();
  }

  /** A posts three hostile lookups; once their pages are in the pool, B posts an ordinary one. */
  async function race() {
    const a = await fundedTenant(h, 30, { limits: GENEROUS });
    const b = await fundedTenant(h, 10, { limits: GENEROUS });
    const aJobs: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await client(h.app, a.key).post(WEB, { url: webUrl('cspmegabyte') });
      expect(res.status).toBe(202);
      aJobs.push(res.body.jobRef);
    }
    // Long enough for A's checks to fetch their pages and hand them to the pool's two threads.
    await new Promise((r) => setTimeout(r, 2500));
    const t0 = Date.now();
    const posted = await client(h.app, b.key).post(WEB, { url: webUrl('strict') });
    expect(posted.status).toBe(202);
    const bDone = await pollTerminal(h, b.key, posted.body.jobRef, 60_000);
    const bMs = Date.now() - t0;
    const aDone = await Promise.all(aJobs.map((ref) => pollTerminal(h, a.key, ref, 60_000)));
    process.stdout.write(`web fairness: tenant B's lookup took ${bMs} ms with three hostile pages in flight\n`);
    return { bDone, bMs, aDone };
  }

  const httpOf = (done: { body: { result: { lanes: Lane[] } } }) =>
    done.body.result.lanes.find((l) => l.lane === 'http')?.status;
  const limitationCodes = (done: { body: { coverage: { limitations: Array<{ code: string }> } } }) =>
    done.body.coverage.limitations.map((l) => l.code);

  it('the real pool: the hostile pages parse at once (the megabyte <meta> policy is over its cap) and B is prompt', async () => {
    await startWebLane();
    const { bDone, bMs, aDone } = await race();
    expect(httpOf(bDone)).toBe('completed');
    expect(bMs).toBeLessThan(PROMPT_MS);
    for (const done of aDone) {
      expect(httpOf(done)).toBe('completed');
      expect(limitationCodes(done)).toContain('csp_meta_not_assessed');
    }
  }, 120_000);

  it('a parser that still ran away: the deadline stops it, A ends timeout with the limitation, B is prompt', async () => {
    await startWebLane({
      deadlineMs: 2000,
      poolWorker: new URL('../helpers/runaway-parse-worker.ts', import.meta.url).href,
    });
    const { bDone, bMs, aDone } = await race();
    expect(httpOf(bDone)).toBe('completed');
    expect(bMs).toBeLessThan(PROMPT_MS);
    for (const done of aDone) {
      expect(httpOf(done)).toBe('timeout');
      expect(limitationCodes(done)).toContain('parse_deadline_exceeded');
    }
    const metrics = await worker!.metrics.metrics();
    expect(metrics).toMatch(/lss_pool_thread_replacements_total\{lane="web",task="assessWebEvidence"\} 3/);
  }, 120_000);
});
