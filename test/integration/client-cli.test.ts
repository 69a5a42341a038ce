// The `lss` CLI as a real child process against the real service on 127.0.0.1 (through the
// recording proxy, to see the requests it sends): --json output that parses and has no ANSI, the
// documented exit codes for complete, partial, --fail-on, refused, service error and usage, the
// bin shim on a PATH whose `node` is too old, and a pseudo-terminal (util-linux `script`) where the
// progress bar is drawn before the tables.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { root } from '../helpers/processes.ts';
import { startLoopbackProxy, type LoopbackProxy } from '../helpers/loopback-proxy.ts';
import { startServiceStack, type ServiceStack } from '../helpers/service-stack.ts';
import type { Tenant } from '../helpers/harness.ts';

const MAIN = path.join(root, 'src/client/cli/main.ts');
const ANSI = /\x1b\[/;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], env: Record<string, string | undefined>): Promise<Run> {
  return new Promise((resolve) => {
    // The parent's environment minus anything that would change colour decisions.
    const base = Object.fromEntries(
      Object.entries(process.env).filter(
        ([k]) => !['NO_COLOR', 'FORCE_COLOR', 'CI', 'LSS_API_KEY', 'LSS_BASE_URL'].includes(k),
      ),
    );
    execFile(file, args, { cwd: root, env: { ...base, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

describe('lss CLI', () => {
  let stack: ServiceStack;
  let proxy: LoopbackProxy;
  let t: Tenant;
  let env: Record<string, string>;
  const lss = (...args: string[]) => run(process.execPath, [MAIN, ...args], env);
  const lssJson = async (...args: string[]) => {
    const r = await lss('--json', ...args);
    expect(r.stdout, r.stderr).not.toMatch(ANSI);
    expect(r.stdout + r.stderr).not.toContain(t.key);
    return { ...r, doc: JSON.parse(r.stdout) as Record<string, any> };
  };

  beforeAll(async () => {
    stack = await startServiceStack();
    proxy = await startLoopbackProxy(stack.url);
    t = await stack.tenant({
      credits: 100,
      active: true,
      approveScopes: ['lab.test'],
      acceptResponsibleUse: stack.h.config.RESPONSIBLE_USE_VERSION,
    });
    env = { LSS_API_KEY: t.key, LSS_BASE_URL: proxy.url };
  });
  afterAll(async () => {
    await proxy?.close();
    await stack?.close();
  });

  it('--json: a complete inline lookup exits 0 with the envelope; a partial one exits 2', async () => {
    const mac = await lssJson('lookup', 'mac', 'F4:F5:E8:12:34:56');
    expect(mac.code).toBe(0);
    expect(mac.doc).toMatchObject({
      outcome: 'complete',
      exitCode: 0,
      envelope: { product: 'lookup.mac.v1', status: 'completed', coverage: { complete: true } },
    });

    const dns = await lssJson('lookup', 'dns', 'partial.lab.test');
    expect(dns.code).toBe(2);
    expect(dns.doc).toMatchObject({
      outcome: 'partial',
      exitCode: 2,
      envelope: { status: 'partial', coverage: { complete: false } },
    });
    expect(dns.doc.envelope.limitations.map((l: { code: string }) => l.code)).toContain('dns_indeterminate');
  });

  it('an async lookup waits for its job; --fail-on exits 1 at or above the severity, 0 below it', async () => {
    const high = await lssJson('lookup', 'domain', 'lab-expired.test', '--fail-on', 'high');
    expect(high.code).toBe(1);
    expect(high.doc.outcome).toBe('fail_on');
    expect(high.doc.job).toMatchObject({
      status: 'completed',
      terminal: true,
      result: { product: 'lookup.domain.v1' },
    });
    expect(high.doc.findings.items.map((f: { code: string }) => f.code)).toContain('domain_expired');

    const critical = await lssJson('lookup', 'domain', 'lab-expired.test', '--fail-on', 'critical');
    expect(critical.code).toBe(0);
    expect(critical.doc.outcome).toBe('complete');

    const noWait = await lssJson('lookup', 'domain', 'lab.test', '--no-wait');
    expect(noWait.code).toBe(0);
    expect(noWait.doc).toMatchObject({ outcome: 'accepted', job: { status: 'queued', terminal: false } });
    expect(noWait.stderr).toContain(`lss job show ${noWait.doc.job.jobRef}`);
  });

  it('job show, results, findings, object and cancel follow the job by its reference', async () => {
    const started = await lssJson('lookup', 'domain', 'lab.test', '--no-wait');
    const ref = started.doc.job.jobRef as string;
    const shown = await lssJson('job', 'show', ref, '--wait');
    expect(shown.code).toBe(0);
    expect(shown.doc.job).toMatchObject({ jobRef: ref, status: 'completed' });

    const results = await lssJson('job', 'results', ref, '--limit', '2');
    expect(results.code).toBe(0);
    const ids = results.doc.results.items.map((i: { objectId: string }) => i.objectId);
    expect(ids.length).toBeGreaterThan(2); // more than one page of 2, cursors followed
    expect(new Set(ids).size).toBe(ids.length);
    expect(results.doc.results).toMatchObject({ terminal: true, nextCursor: null, jobStatus: 'completed' });
    // Every page was read with limit=2 and the service's own cursors, never an invented offset.
    const pages = proxy.requests.filter((r) => r.path.startsWith(`/v2/jobs/${ref}/results`));
    expect(pages.length).toBe(Math.ceil(ids.length / 2));
    expect(pages.slice(1).every((r) => new URL(r.path, 'http://x').searchParams.has('cursor'))).toBe(true);

    const object = await lssJson('job', 'object', ref, ids[0]);
    expect(object.code).toBe(0);
    expect(object.doc.object.objectId).toBe(ids[0]);

    const findings = await lssJson('job', 'findings', ref, '--severity', 'info');
    expect(findings.code).toBe(0);
    expect(Array.isArray(findings.doc.findings.items)).toBe(true);

    const cancel = await lssJson('job', 'cancel', ref);
    expect(cancel.code).toBe(0); // a terminal job stays as it is
    expect(cancel.doc.job.status).toBe('completed');

    const missing = await lssJson('job', 'show', 'job_00000000000000000000000000');
    expect(missing.code).toBe(3);
    expect(missing.doc).toMatchObject({ outcome: 'refused', error: { code: 'job_not_found', status: 404 } });
  });

  it('scan and the lookups not built yet: request shapes, admission refusals (exit 3) and 503s (exit 4)', async () => {
    const before = proxy.requests.length;
    const budget = await lssJson('scan', 'lab.test', '--profile', 'quick', '--max-credits', '1');
    expect(budget.code).toBe(3);
    expect(budget.doc.error).toMatchObject({
      code: 'scan_credit_budget_invalid',
      details: { bounds: { min: 5, max: 100 } },
    });
    const scanReq = proxy.requests.slice(before).find((r) => r.path === '/v2/scans')!;
    expect(JSON.parse(scanReq.body)).toEqual({
      profile: 'quick',
      target: { type: 'domain_name', value: 'lab.test' },
      options: { active: false, maxCredits: 1 },
    });
    expect(scanReq.headers['idempotency-key']).toMatch(/^lss-/);

    expect((await lssJson('scan', 'lab.test', '--profile', 'advanced', '--max-credits', '100')).doc.error.code).toBe(
      'active_authorization_required',
    );
    expect(
      (await lssJson('scan', 'elsewhere.test', '--profile', 'advanced', '--max-credits', '100', '--active')).doc.error
        .code,
    ).toBe('approved_target_scope_required');
    const noActive = await stack.tenant({ acceptResponsibleUse: stack.h.config.RESPONSIBLE_USE_VERSION });
    const passiveOnly = await run(
      process.execPath,
      [MAIN, '--json', 'scan', 'lab.test', '--profile', 'advanced', '--max-credits', '100', '--active'],
      { ...env, LSS_API_KEY: noActive.key },
    );
    expect(passiveOnly.code).toBe(3);
    expect(JSON.parse(passiveOnly.stdout).error.code).toBe('active_permission_required');
    const noPolicy = await stack.tenant();
    const authorizedWeb = await run(
      process.execPath,
      [MAIN, '--json', 'lookup', 'web', 'https://www.lab.test/', '--authorized'],
      { ...env, LSS_API_KEY: noPolicy.key },
    );
    expect(authorizedWeb.code).toBe(3);
    expect(JSON.parse(authorizedWeb.stdout).error.code).toBe('responsible_use_required');
    const webReq = proxy.requests.filter((r) => r.path === '/v2/lookups/web').at(-1)!;
    expect(JSON.parse(webReq.body)).toEqual({ url: 'https://www.lab.test/', authorized: true });

    // Admitted, then refused at readiness: a service error, after the retries asked for.
    const scan = await lssJson(
      '--retries',
      '0',
      'scan',
      'lab.test',
      '--profile',
      'quick',
      '--max-credits',
      '10',
      '--wait',
    );
    expect(scan.code).toBe(4);
    expect(scan.doc.error).toMatchObject({ code: 'scan_profile_unavailable', status: 503, retryable: true });
    const mail = await lssJson('--retries', '1', 'lookup', 'mail', 'lab.test');
    expect(mail.code).toBe(4);
    expect(mail.doc.error).toMatchObject({ code: 'capability_unavailable', attempts: 2 });
    expect(mail.stderr).toContain('retrying');
    const mailReqs = proxy.requests.filter((r) => r.path === '/v2/lookups/mail').slice(-2);
    expect(mailReqs.map((r) => JSON.parse(r.body))).toEqual([{ value: 'lab.test' }, { value: 'lab.test' }]);
    expect(mailReqs[1]!.headers['idempotency-key']).toBe(mailReqs[0]!.headers['idempotency-key']);
    expect((await lssJson('--retries', '0', 'lookup', 'web', 'https://www.lab.test/')).code).toBe(4);
  });

  it('monitor create, list, show, pause, resume, deliveries and delete; the secret shown once', async () => {
    const webhook = 'https://127.0.0.1/hook';
    const human = await lss(
      'monitor',
      'create',
      'domain',
      'lab.test',
      '--every',
      '1h',
      '--paused',
      '--webhook',
      webhook,
    );
    expect(human.code, human.stderr).toBe(0);
    expect(human.stderr).toMatch(/webhook secret \(shown once.*\): whsec_/);
    expect(human.stdout).toContain('lookup.domain.v1');
    const created = await lssJson(
      'monitor',
      'create',
      'scan',
      'lab.test',
      '--every',
      '1d',
      '--profile',
      'quick',
      '--max-credits',
      '10',
      '--paused',
    );
    expect(created.code).toBe(0);
    expect(created.doc).toMatchObject({
      outcome: 'complete',
      monitor: { product: 'scan.recursive.v1', paused: true, schedule: { intervalSeconds: 86_400 }, webhook: null },
    });
    const id: string = created.doc.monitor.monitorId;
    const list = await lssJson('monitor', 'list');
    expect(list.doc.monitors.map((m: { monitorId: string }) => m.monitorId)).toContain(id);
    expect(JSON.stringify(list.doc)).not.toContain('whsec_');
    const resumed = await lssJson('monitor', 'resume', id);
    expect(resumed.doc.monitor).toMatchObject({ monitorId: id, paused: false });
    const paused = await lssJson('monitor', 'pause', id);
    expect(paused.doc.monitor).toMatchObject({ paused: true, nextRunAt: null });
    expect((await lssJson('monitor', 'show', id)).doc.monitor).toMatchObject({
      monitorId: id,
      lastRuns: expect.any(Array),
    });
    expect((await lssJson('monitor', 'deliveries', id)).doc).toMatchObject({ outcome: 'complete', deliveries: [] });
    expect((await lssJson('monitor', 'delete', id)).code).toBe(0);
    const gone = await lssJson('monitor', 'show', id);
    expect(gone.code).toBe(3);
    expect(gone.doc.error.code).toBe('monitor_not_found');
    const tooOften = await lssJson('monitor', 'create', 'domain', 'lab.test', '--every', '10s');
    expect(tooOften.code).toBe(3);
    expect(tooOften.doc.error).toMatchObject({ code: 'invalid_request', details: { reason: 'interval_out_of_range' } });
    expect((await lss('monitor', 'create', 'scan', 'lab.test', '--every', '1d')).code).toBe(64);
  });

  it('usage errors exit 64: no key, a missing required option, an unknown command', async () => {
    const noKey = await run(process.execPath, [MAIN, 'lookup', 'mac', 'F4:F5:E8:12:34:56'], {
      LSS_BASE_URL: proxy.url,
    });
    expect(noKey.code).toBe(64);
    expect(noKey.stderr).toContain('LSS_API_KEY');
    const noProfile = await lss('scan', 'lab.test', '--max-credits', '10');
    expect(noProfile.code).toBe(64);
    expect(noProfile.stderr).toContain('--profile');
    const unknown = await lssJson('lookup', 'nope', 'x');
    expect(unknown.code).toBe(64);
    expect(unknown.doc).toMatchObject({ outcome: 'usage', exitCode: 64 });
  });

  it("the bin shim runs on the project's Node 24 when the `node` on PATH is older", async () => {
    // npm links the bin as a symlink; the shim must find the project from its real path.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'lss-bin-'));
    try {
      const link = path.join(dir, 'lss');
      symlinkSync(path.join(root, 'src/client/bin/lss'), link);
      const oldNode = ['/usr/bin', '/bin'].join(path.delimiter); // the machine's node (20 here), if any
      const r = await run(link, ['--json', 'lookup', 'mac', '00:1A:2B:3C:4D:5E'], { ...env, PATH: oldNode });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).envelope.product).toBe('lookup.mac.v1');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('in a pseudo-terminal', () => {
    /** Runs lss under util-linux `script`, which gives it a real TTY of 120 columns. */
    const inPty = (args: string[], extra: Record<string, string> = {}) => {
      const cmd = `stty cols 120 rows 40; exec '${process.execPath}' '${MAIN}' ${args.map((a) => `'${a}'`).join(' ')}`;
      return run('script', ['-q', '-e', '-c', cmd, '/dev/null'], { ...env, TERM: 'xterm-256color', ...extra });
    };

    it('draws the progress bar on stderr while the job runs, then the tables, in colour', async () => {
      const r = await inPty(['lookup', 'domain', 'lab.test']);
      expect(r.code, r.stdout).toBe(0);
      const out = r.stdout;
      const firstFrame = out.indexOf('| queued | tasks 0/');
      const lastFrame = out.lastIndexOf('| completed | tasks ');
      const table = out.indexOf('┌');
      expect(firstFrame, out).toBeGreaterThanOrEqual(0);
      expect(lastFrame).toBeGreaterThan(firstFrame);
      expect(out).toMatch(
        /█+(\x1b\[39m)? 100% \| completed \| tasks (\d+)\/\2 \| objects \d+ \| findings \d+ \| credits 2\/2/,
      );
      expect(table).toBeGreaterThan(lastFrame);
      expect(out.slice(table)).toContain('lookup.domain.v1');
      expect(out.slice(table)).toMatch(/\x1b\[32mcompleted/); // colour on a terminal
    });

    it('NO_COLOR turns colour off; --json draws no bar and stays parseable on a terminal', async () => {
      const plain = await inPty(['lookup', 'mac', 'F4:F5:E8:12:34:56'], { NO_COLOR: '1' });
      expect(plain.code).toBe(0);
      expect(plain.stdout).toContain('lookup.mac.v1');
      expect(plain.stdout).not.toMatch(ANSI);

      const json = await inPty(['--json', 'lookup', 'domain', 'lab.test']);
      expect(json.code).toBe(0);
      expect(json.stdout).not.toMatch(ANSI);
      expect(JSON.parse(json.stdout).job.status).toBe('completed');
    });
  });
});
