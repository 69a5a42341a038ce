// GET /docs in headless Chromium: the reference renders from /v2/openapi.json with the bundled
// renderer, shows every route and error code of SERVICE.md, the products and the client rules,
// asks for no key and offers no "try it", and the browser reaches nothing but the service.
import http from 'node:http';
import { mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../helpers/chromium.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { errorCodes } from '../../src/contract/errors.ts';
import { products } from '../../src/products/registry.ts';

// Copied verbatim from SERVICE.md (the customer's document, which lives outside this repository):
// its "Product routes" and "Retained-job routes" tables and its "Errors" table.
const SERVICE_ROUTES = [
  'POST /v2/lookups/dns',
  'POST /v2/lookups/domain',
  'POST /v2/lookups/ip',
  'POST /v2/lookups/mac',
  'POST /v2/lookups/mail',
  'POST /v2/lookups/phone',
  'POST /v2/lookups/web',
  'POST /v2/scans',
  'GET /v2/jobs/{job_ref}',
  'POST /v2/jobs/{job_ref}/cancel',
  'GET /v2/jobs/{job_ref}/findings',
  'GET /v2/jobs/{job_ref}/objects/{object_id}',
  'GET /v2/jobs/{job_ref}/results',
];
const SERVICE_CODES = [
  'active_authorization_required',
  'active_permission_required',
  'approved_target_scope_required',
  'authentication_required',
  'capability_rate_limit_exceeded',
  'capability_unavailable',
  'idempotency_key_conflict',
  'idempotency_key_required',
  'idempotency_request_in_progress',
  'insufficient_credits',
  'insufficient_scope',
  'job_not_found',
  'monthly_credit_limit_exceeded',
  'object_not_found',
  'rate_limit_exceeded',
  'responsible_use_required',
  'scan_credit_budget_invalid',
  'scan_profile_unavailable',
  'service_unavailable',
];

describe('GET /docs: the API reference page', () => {
  let h: Harness;
  let server: http.Server;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    h = await startHarness();
    server = http.createServer(h.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
  }, 900_000); // the first run on a machine may install chromium

  afterAll(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await h?.close();
  });

  it('is served by the service itself with a policy that allows nothing else, and refuses other methods', async () => {
    const page = await supertest(h.app).get('/docs');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
    expect(page.text).toContain('src="/docs/redoc.standalone.js"');
    expect(page.text).not.toMatch(/https?:\/\//); // no CDN, no external font
    const bundle = await supertest(h.app).get('/docs/redoc.standalone.js');
    expect(bundle.status).toBe(200);
    expect(bundle.text.length).toBeGreaterThan(500_000);
    const post = await supertest(h.app).post('/docs').send({});
    expect(post.status).toBe(405);
    expect(post.body.error.code).toBe('method_not_allowed');
  });

  it('renders every SERVICE.md route and error code, the products and the client rules, with no key field and no console', async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    const page = await context.newPage();
    const requested: string[] = [];
    page.on('request', (r) => requested.push(r.url()));
    const consoleErrors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    await page.goto(`${base}/docs`, { waitUntil: 'networkidle' });
    await page.getByRole('heading', { name: 'Error codes' }).first().waitFor({ timeout: 20_000 });
    const text = await page.locator('body').innerText();

    const doc = (await supertest(h.app).get('/v2/openapi.json')).body as {
      paths: Record<string, Record<string, unknown>>;
    };
    for (const route of SERVICE_ROUTES) {
      const [method, routePath] = route.split(' ') as [string, string];
      // Redoc shows each operation's path in its request panel, from the document's operation.
      expect(text.includes(routePath), `${route} not shown`).toBe(true);
      expect(doc.paths[routePath]?.[method.toLowerCase()], route).toBeDefined();
    }
    for (const p of products) expect(text, p.id).toContain(p.id);
    for (const code of SERVICE_CODES) expect(text, code).toContain(code);
    for (const code of errorCodes) expect(text, code).toContain(code); // the documented extensions too
    expect(text).toContain('Client rules');
    expect(text).toContain('Idempotency-Key');
    expect(text).toContain('pollAfterMs');
    expect(text).toContain('nextCursor');
    expect(text).toContain('$LSS_API_KEY');

    // Read-only: nothing to type a key into, nothing that sends a request from the page.
    expect(await page.locator('input[type=password], input[name*=key i], textarea').count()).toBe(0);
    expect(await page.getByRole('button', { name: /try it|send|authorize|execute/i }).count()).toBe(0);
    expect(text).not.toMatch(/lsk_[A-Za-z0-9]{32}/);

    // The page reached only the service: the HTML, the bundled renderer and the document.
    const hosts = new Set(
      requested.filter((u) => !u.startsWith('data:') && !u.startsWith('blob:')).map((u) => new URL(u).origin),
    );
    expect([...hosts]).toEqual([base]);
    expect(requested).toContain(`${base}/v2/openapi.json`);
    expect(consoleErrors.filter((e) => /Content Security Policy|Refused/.test(e))).toEqual([]);

    // A picture for people, kept out of the repository.
    const shots = mkdtempSync(path.join(os.tmpdir(), 'lss-docs-'));
    await page.screenshot({ path: path.join(shots, 'docs.png') });
    await context.close();
  });
});
