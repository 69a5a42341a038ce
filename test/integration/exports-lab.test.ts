// Exports of a real scan of the lab (CONTRACT §17): a balanced scan through every lane worker
// against the lab's DNS, web and mail servers on loopback, then its SARIF checked by the OASIS
// schema and by Microsoft's SARIF validator with GitHub's ingestion rules, and its report rendered
// by headless Chromium: a page that is not blank, with no script in its DOM, that reached nothing
// but the service. LSS_UPDATE_DOCS=1 writes the screenshot shown in docs/api.md (docs/report-lab.png).
import http from 'node:http';
import { copyFileSync, mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import type { Browser } from 'playwright-core';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startHarness, type Harness } from '../helpers/harness.ts';
import { fundedTenant, pollTerminal } from '../helpers/jobs.ts';
import { labEnv } from '../helpers/lab-runtime.ts';
import { launchChromium } from '../helpers/chromium.ts';
import { multitoolValidate, sarifSchemaErrors } from '../helpers/sarif-schema.ts';
import { startLab, type RunningLab } from '../lab/serve.ts';
import { scanLabPart } from '../lab/scan-lab.ts';
import { webLabPart } from '../lab/web-lab.ts';
import { mailLabPart } from '../lab/mail-lab.ts';
import { SCAN_ZONE } from '../lab/scan-zones.ts';
import { startOrchestrator, type OrchestratorHandle } from '../../src/jobs/orchestration/orchestrator.ts';
import { startLaneWorker, type LaneWorkerHandle } from '../../workers/start-lane-worker.ts';
import type { LaneHealth } from '../../src/queue/lane-health.ts';
import type { LaneName } from '../../src/queue/streams.ts';
import { root } from '../helpers/processes.ts';

const GENEROUS = {
  app: { perMinute: 100_000, burst: 10_000 },
  products: { 'scan.recursive.v1': { perMinute: 100_000, perHour: 1_000_000 } },
};

describe('exports of a lab scan', () => {
  let lab: RunningLab;
  let h: Harness;
  let orchestrator: OrchestratorHandle;
  const workers: LaneWorkerHandle[] = [];
  let server: http.Server;
  let base: string;
  let browser: Browser;
  let key: string;
  let job: Record<string, any>;

  beforeAll(async () => {
    lab = await startLab({ parts: [webLabPart(), mailLabPart, scanLabPart({ generated: [] })] });
    h = await startHarness({ ...labEnv(lab.env), DNS_TIMEOUT_MS: '700', CANCEL_GRACE_MS: '1000' });
    const log = pino({ level: 'silent' });
    orchestrator = await startOrchestrator({
      config: h.config,
      log,
      timing: { relayEveryMs: 200, relayAfterMs: 300, reconcileEveryMs: 500, sweepEveryMs: 300 },
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
    server = http.createServer(h.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    const t = await fundedTenant(h, 1000, { limits: GENEROUS, acceptResponsibleUse: h.config.RESPONSIBLE_USE_VERSION });
    key = t.key;
    const res = await client(h.app, key).post('/v2/scans', {
      profile: 'balanced',
      target: { type: 'domain_name', value: SCAN_ZONE },
      options: { active: false, maxCredits: 200 },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    job = (await pollTerminal(h, key, res.body.jobRef, 120_000)).body;
    browser = await launchChromium();
  }, 900_000); // the first run on a machine may install chromium

  afterAll(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await Promise.all(workers.map((w) => w.close()));
    await orchestrator?.close();
    await h?.close();
    await lab?.close();
  });

  async function exportText(format: string): Promise<string> {
    const res = await fetch(`${base}/v2/jobs/${job.jobRef}/export?format=${format}`, {
      headers: { Authorization: `Bearer ${key}` },
    });
    expect(res.status).toBe(200);
    return res.text();
  }

  it('SARIF of the lab scan: valid against the OASIS schema, and no error from the SARIF validator with GitHub rules', async () => {
    expect(job.progress.findings).toBeGreaterThan(0);
    const text = await exportText('sarif');
    const log = JSON.parse(text);
    expect(sarifSchemaErrors(log)).toEqual([]);
    expect(log.runs[0].results).toHaveLength(job.progress.findings);
    // Coverage kept: the run is unsuccessful exactly when the job says a lane did not complete.
    const incomplete = (job.lanes as Array<{ lane: string; status: string }>).filter((l) => l.status !== 'completed');
    const inv = log.runs[0].invocations[0];
    expect(inv.executionSuccessful).toBe(
      job.status === 'completed' && job.coverage.complete && incomplete.length === 0,
    );
    for (const l of incomplete)
      expect(inv.toolExecutionNotifications.map((n: any) => n.descriptor.id)).toContain(`lane/${l.lane}`);
    const result = await multitoolValidate(text);
    expect(result.errors, result.output.slice(-3000)).toEqual([]);
    expect(result.exitCode).toBe(0);
  }, 180_000);

  it('the report renders in headless Chromium: not blank, no script in the DOM, nothing fetched but the page', async () => {
    const context = await browser.newContext({
      viewport: { width: 1200, height: 1600 },
      extraHTTPHeaders: { Authorization: `Bearer ${key}` },
    });
    const page = await context.newPage();
    const requested: string[] = [];
    page.on('request', (r) => requested.push(r.url()));
    const res = await page.goto(`${base}/v2/jobs/${job.jobRef}/report`, { waitUntil: 'load' });
    expect(res?.status()).toBe(200);
    expect(res?.headers()['content-security-policy']).toBe(
      "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
    );
    // Browser-side code as source text: the project's TypeScript has no DOM library.
    const dom = (await page.evaluate(`({
      scripts: document.querySelectorAll('script').length,
      handlers: [...document.querySelectorAll('*')].flatMap((el) =>
        [...el.attributes].filter((a) => a.name.toLowerCase().startsWith('on')).map((a) => a.name)),
      text: document.body.innerText,
      bars: document.querySelectorAll('.lanes .bar .seg').length,
    })`)) as { scripts: number; handlers: string[]; text: string; bars: number };
    expect(dom.scripts).toBe(0);
    expect(dom.handlers).toEqual([]);
    expect(dom.text).toContain(SCAN_ZONE);
    expect(dom.text).toContain('Coverage per lane');
    expect(dom.text).toContain('Findings by severity');
    expect(dom.bars).toBeGreaterThan(0);
    expect(requested).toEqual([`${base}/v2/jobs/${job.jobRef}/report`]);

    const dir = mkdtempSync(path.join(os.tmpdir(), 'lss-report-'));
    const shot = path.join(dir, 'report.png');
    const png = await page.screenshot({ path: shot, fullPage: true });
    await context.close();
    // Not blank: decode the PNG in a page of its own and count the pixels that are not background.
    const probe = await browser.newPage();
    const stats = (await probe.evaluate(`(async (b64) => {
      const img = new Image();
      img.src = 'data:image/png;base64,' + b64;
      await img.decode();
      const canvas = document.createElement('canvas');
      canvas.width = img.width;
      canvas.height = img.height;
      const ctx = canvas.getContext('2d');
      ctx.drawImage(img, 0, 0);
      const data = ctx.getImageData(0, 0, img.width, img.height).data;
      let inked = 0;
      const colours = new Set();
      for (let i = 0; i < data.length; i += 4 * 7) {
        if (data[i] < 235 || data[i + 1] < 235 || data[i + 2] < 235) inked++;
        colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
      }
      return { inked, colours: colours.size, sampled: data.length / (4 * 7) };
    })(${JSON.stringify(png.toString('base64'))})`)) as { inked: number; colours: number; sampled: number };
    await probe.close();
    expect(stats.inked / stats.sampled).toBeGreaterThan(0.01);
    expect(stats.colours).toBeGreaterThan(8);
    if (process.env.LSS_UPDATE_DOCS === '1') copyFileSync(shot, path.join(root, 'docs', 'report-lab.png'));

    // Printed ("Save as PDF"): Chromium lays it out with the print stylesheet.
    const printing = await browser.newContext({ extraHTTPHeaders: { Authorization: `Bearer ${key}` } });
    const printPage = await printing.newPage();
    await printPage.goto(`${base}/v2/jobs/${job.jobRef}/report`);
    const pdf = await printPage.pdf({ format: 'A4' });
    expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
    await printing.close();
  }, 180_000);

  it('is the same job through supertest: the report escapes what the lab wrote', async () => {
    const res = await supertest(h.app).get(`/v2/jobs/${job.jobRef}/report`).set('Authorization', `Bearer ${key}`);
    expect(res.status).toBe(200);
    expect(res.text).not.toMatch(/<script/i);
  });
});
