// GET /v2/jobs/{ref}/export and /report (CONTRACT §17) on jobs written into the run's MySQL: the
// pages' items exactly (JSONL equals the pages followed to their end, across several export
// pages), CSV that no cell of a hostile TXT can turn into a formula, SARIF valid against the
// OASIS schema, and the admission: scopes per what, terminal jobs only, another tenant's job,
// bad queries. The lab's real scan and its report in Chromium are in exports-lab.test.ts.
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import supertest from 'supertest';
import { LssClient } from '../../src/client/client.ts';
import { LssApiError } from '../../src/client/errors.ts';
import { root } from '../helpers/processes.ts';
import { client, createTenant, startHarness, type Harness, type Tenant } from '../helpers/harness.ts';
import { createKey, workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { HOSTILE_TXT, insertSyntheticJob, type SyntheticJob, type SyntheticOwner } from '../helpers/synthetic-job.ts';
import { sarifSchemaErrors } from '../helpers/sarif-schema.ts';
import { FINDING_COLUMNS, OBJECT_COLUMNS } from '../../src/jobs/exports/csv-writer.ts';
import { REPORT_CSP } from '../../src/contract/export-schemas.ts';

const LIMITS = { app: { perMinute: 1_000_000, burst: 100_000 } };

async function ownerOf(h: Harness, t: Tenant): Promise<SyntheticOwner> {
  const key = await h.deps.db
    .selectFrom('api_keys')
    .select('id')
    .where('public_id', '=', t.keyId)
    .executeTakeFirstOrThrow();
  return { workspaceId: await workspaceInternalId(h.deps.db, t.workspaceId), keyId: Number(key.id) };
}

/** The raw body as text, whatever the media type (supertest parses only JSON). */
function text(res: supertest.Response): string {
  return typeof res.text === 'string' && res.text.length > 0 ? res.text : Buffer.from(res.body ?? '').toString('utf8');
}

function rawGet(h: Harness, key: string, path: string) {
  return supertest(h.app)
    .get(path)
    .set('Authorization', `Bearer ${key}`)
    .buffer(true)
    .parse((res, cb) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        data += c;
      });
      res.on('end', () => cb(null, data));
    });
}

describe('exports and the report', () => {
  let h: Harness;
  let full: Tenant;
  let scanOnly: Tenant;
  let other: Tenant;
  let job: SyntheticJob;
  let running: SyntheticJob;

  beforeAll(async () => {
    h = await startHarness();
    full = await createTenant(h, { limits: LIMITS });
    scanOnly = await createTenant(h, { limits: LIMITS, scopes: ['scan:read'] });
    other = await createTenant(h, { limits: LIMITS });
    const owner = await ownerOf(h, full);
    // 1,200 objects and 1,300 findings: three export pages of each, with the page boundary inside.
    job = await insertSyntheticJob(h.deps.db, owner, { objects: 1200, findingEvery: 12, findingsPerObject: 13 });
    running = await insertSyntheticJob(h.deps.db, owner, { objects: 3, status: 'running' });
    // The scan-only key's workspace is another tenant: give it its own terminal job.
  }, 120_000);
  let server: http.Server;
  let base: string;
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await h?.close();
  });

  async function pages(key: string, path: string): Promise<unknown[]> {
    const out: unknown[] = [];
    let cursor: string | null = null;
    do {
      const res = await client(h.app, key).get(
        `${path}?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      out.push(...res.body.items);
      cursor = res.body.page.nextCursor;
    } while (cursor);
    return out;
  }

  it("JSONL is the pages' items, one a line, in page order, findings and objects", async () => {
    const res = await rawGet(h, full.key, `/v2/jobs/${job.ref}/export?format=jsonl`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/x-ndjson/);
    expect(res.headers['content-disposition']).toBe(`attachment; filename="lss-${job.ref}-findings.jsonl"`);
    const lines = (res.body as string).split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toHaveLength(job.findings);
    expect(lines.map((l) => JSON.parse(l))).toEqual(await pages(full.key, `/v2/jobs/${job.ref}/findings`));
    const objects = await rawGet(h, full.key, `/v2/jobs/${job.ref}/export?format=jsonl&what=objects`);
    expect(objects.headers['content-disposition']).toBe(`attachment; filename="lss-${job.ref}-objects.jsonl"`);
    const objectLines = (objects.body as string)
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(objectLines).toEqual(await pages(full.key, `/v2/jobs/${job.ref}/results`));
  });

  it('CSV has the header row and one row per item, and the hostile TXT starts no cell', async () => {
    const res = await rawGet(h, full.key, `/v2/jobs/${job.ref}/export?format=csv`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8; header=present');
    const body = res.body as string;
    expect(body.startsWith(`${FINDING_COLUMNS.join(',')}\r\n`)).toBe(true);
    // Each record ends in CRLF; the cells' own line breaks are bare LF inside quotes.
    expect(body.split('\r\n').length - 2).toBe(job.findings);
    expect(body).toContain(`"'${HOSTILE_TXT.replaceAll('"', '""')}"`);
    expect(body).not.toMatch(/(^|,|\r\n)"?=HYPERLINK/);
    const objects = text(await rawGet(h, full.key, `/v2/jobs/${job.ref}/export?format=csv&what=objects`));
    expect(objects.startsWith(`${OBJECT_COLUMNS.join(',')}\r\n`)).toBe(true);
    expect(objects.split('\r\n').length - 2).toBe(job.objects);
    expect(objects).not.toMatch(/(^|,|\r\n)"?=HYPERLINK/);
  });

  it('SARIF holds every finding and is valid against the OASIS schema', async () => {
    const res = await rawGet(h, full.key, `/v2/jobs/${job.ref}/export?format=sarif`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/sarif+json');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="lss-${job.ref}-findings.sarif"`);
    const log = JSON.parse(res.body as string);
    expect(sarifSchemaErrors(log)).toEqual([]);
    expect(log.runs[0].results).toHaveLength(job.findings);
    expect(log.runs[0].invocations[0].executionSuccessful).toBe(true);
    const help = log.runs[0].tool.driver.rules[0].helpUri as string;
    expect(help).toMatch(/^http:\/\/127\.0\.0\.1(:\d+)?\/docs\/findings#/);
    // The help page is served, with an anchor for the rule.
    const page = await supertest(h.app).get('/docs/findings');
    expect(page.status).toBe(200);
    expect(page.text).toContain(`id="${log.runs[0].tool.driver.rules[0].id}"`);
    expect(page.headers['content-security-policy']).toBe(REPORT_CSP);
  });

  it('findings need finding:read; objects do not', async () => {
    const denied = await client(h.app, scanOnly.key).get(`/v2/jobs/${job.ref}/export?format=csv`);
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('insufficient_scope');
    expect(denied.body.error.details.requiredScopes).toEqual(['finding:read']);
    // Another workspace's job, whatever the scopes: not found.
    const objects = await client(h.app, scanOnly.key).get(`/v2/jobs/${job.ref}/export?format=csv&what=objects`);
    expect(objects.status).toBe(404);
    expect(objects.body.error.code).toBe('job_not_found');
  });

  it("a running job is 409 job_not_terminal; another tenant's is job_not_found; bad queries are 400", async () => {
    const r = await client(h.app, full.key).get(`/v2/jobs/${running.ref}/export?format=jsonl`);
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('job_not_terminal');
    const rep = await client(h.app, full.key).get(`/v2/jobs/${running.ref}/report`);
    expect(rep.status).toBe(409);
    expect(rep.body.error.code).toBe('job_not_terminal');
    const foreign = await client(h.app, other.key).get(`/v2/jobs/${job.ref}/export?format=jsonl`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('job_not_found');
    for (const q of ['', '?format=xml', '?format=sarif&what=objects', '?format=csv&what=everything']) {
      const bad = await client(h.app, full.key).get(`/v2/jobs/${job.ref}/export${q}`);
      expect(bad.status, q).toBe(400);
      expect(bad.body.error.code).toBe('invalid_request');
    }
  });

  it('the report is one HTML page under the strict CSP; without finding:read it says findings are omitted', async () => {
    const res = await rawGet(h, full.key, `/v2/jobs/${job.ref}/report`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['content-security-policy']).toBe("default-src 'none'; style-src 'unsafe-inline'; img-src data:");
    const html = res.body as string;
    expect(html).toContain('Findings by severity');
    expect(html).not.toMatch(/<script/i);
    expect(html).toContain(HOSTILE_TXT.replaceAll('"', '&quot;'));
    // A scan:read key of the same workspace.
    const readOnly = await createKey(h.deps.db, h.config.KEY_PEPPER, {
      workspace: full.workspaceId,
      scopes: ['scan:read'],
    });
    const omitted = await rawGet(h, readOnly.key, `/v2/jobs/${job.ref}/report`);
    expect(omitted.status).toBe(200);
    expect(omitted.body as string).toContain('Findings omitted');
    expect(omitted.body as string).not.toContain(HOSTILE_TXT.replaceAll('"', '&quot;'));
  });

  describe('the SDK and lss', () => {
    beforeAll(async () => {
      server = http.createServer(h.app);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });

    it('exportJob streams the file; a running job is refused with job_not_terminal', async () => {
      const sdk = new LssClient({ apiKey: full.key, baseUrl: base });
      const stream = await sdk.exportJob(job.ref, 'jsonl');
      let chunks = 0;
      let text = '';
      for await (const c of stream) {
        chunks += 1;
        text += c.toString('utf8');
      }
      expect(chunks).toBeGreaterThan(1);
      expect(text.trimEnd().split('\n')).toHaveLength(job.findings);
      const objects = await sdk.exportJob(job.ref, 'csv', { what: 'objects' });
      let csv = '';
      for await (const c of objects) csv += c.toString('utf8');
      expect(csv.split('\r\n').length - 2).toBe(job.objects);
      const refused = await sdk.exportJob(running.ref, 'sarif').catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(LssApiError);
      expect((refused as LssApiError).code).toBe('job_not_terminal');
      expect(await sdk.jobReport(job.ref)).toContain('<!doctype html>');
    });

    const lss = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [path.join(root, 'src/client/cli/main.ts'), ...args],
          { cwd: root, env: { ...process.env, LSS_API_KEY: full.key, LSS_BASE_URL: base }, maxBuffer: 64 << 20 },
          (err, stdout, stderr) =>
            resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
        );
      });

    it('lss job export writes the file to stdout; lss job report the page; refusals exit 3', async () => {
      const sarif = await lss(['job', 'export', job.ref, '--format', 'sarif']);
      expect(sarif.code, sarif.stderr).toBe(0);
      expect(JSON.parse(sarif.stdout).runs[0].results).toHaveLength(job.findings);
      const csv = await lss(['job', 'export', job.ref, '--format', 'csv', '--what', 'objects']);
      expect(csv.code, csv.stderr).toBe(0);
      expect(csv.stdout.startsWith(`${OBJECT_COLUMNS.join(',')}\r\n`)).toBe(true);
      const report = await lss(['job', 'report', job.ref]);
      expect(report.code, report.stderr).toBe(0);
      expect(report.stdout).toContain('Coverage per lane');
      const refused = await lss(['job', 'export', running.ref, '--format', 'jsonl']);
      expect(refused.code).toBe(3);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toContain('job_not_terminal');
      const usage = await lss(['job', 'export', job.ref]);
      expect(usage.code).toBe(64);
    });
  });

  it('respects backpressure: a client that stops reading stops the export, which holds a page or two meanwhile', async () => {
    // ~16 MB of SARIF: more than loopback's socket buffers take, so the writer must wait.
    const big = await insertSyntheticJob(h.deps.db, await ownerOf(h, full), { objects: 20_000 });
    let response: http.ServerResponse | undefined;
    const s = http.createServer(h.app);
    s.on('request', (_req, res) => {
      response = res;
    });
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = s.address() as AddressInfo;
      const res = await new Promise<http.IncomingMessage>((resolve, reject) =>
        http
          .get(
            {
              host: '127.0.0.1',
              port,
              path: `/v2/jobs/${big.ref}/export?format=sarif`,
              headers: { authorization: `Bearer ${full.key}` },
            },
            resolve,
          )
          .on('error', reject),
      );
      expect(res.statusCode).toBe(200);
      res.pause();
      // Wait until the server has filled what the socket takes and stopped.
      let before = -1;
      for (let i = 0; i < 100; i++) {
        await new Promise((r) => setTimeout(r, 200));
        const written = response!.socket?.bytesWritten ?? 0;
        if (written === before && response!.writableNeedDrain) break;
        before = written;
      }
      expect(response!.writableNeedDrain).toBe(true);
      expect(response!.writableFinished).toBe(false);
      // What waits in the process: about one chunk (a page of ~1,000 results), not the rest of the file.
      expect(response!.writableLength).toBeLessThan(4 * 2 ** 20);
      const stalledAt = response!.socket!.bytesWritten;
      await new Promise((r) => setTimeout(r, 1000));
      expect(response!.socket!.bytesWritten).toBe(stalledAt);
      // Reading again finishes it, whole.
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.resume();
      await new Promise((resolve) => res.on('end', resolve));
      expect(stalledAt).toBeLessThan(Buffer.byteLength(body));
      expect(JSON.parse(body).runs[0].results).toHaveLength(big.findings);
    } finally {
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    }
  }, 120_000);
});
