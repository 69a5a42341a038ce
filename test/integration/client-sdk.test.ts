// The SDK (src/client) against the real service on 127.0.0.1, through a recording loopback proxy:
// an uncertain write retried with the same key executes once, a 429 is waited out for exactly its
// Retry-After, an in-progress 409 is retried, a partial lookup stays partial, cursors yield every
// item once, a cancelled job reports cancelled, and failures arrive as typed errors.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LssApiError, LssClient, LssPartialError, LssTransportError, type RetryEvent } from '../../src/client/index.ts';
import { balance } from '../../src/credits/ledger.ts';
import { freePort } from '../helpers/processes.ts';
import { startLoopbackProxy, type LoopbackProxy } from '../helpers/loopback-proxy.ts';
import { startServiceStack, type ServiceStack } from '../helpers/service-stack.ts';

describe('client SDK against the real service', () => {
  let stack: ServiceStack;
  let proxy: LoopbackProxy;

  beforeAll(async () => {
    stack = await startServiceStack({ DNS_TIMEOUT_MS: '1500' });
    proxy = await startLoopbackProxy(stack.url);
  });
  afterAll(async () => {
    await proxy?.close();
    await stack?.close();
  });

  function sdk(
    key: string,
    retries: RetryEvent[] = [],
    opts: Partial<ConstructorParameters<typeof LssClient>[0]> = {},
  ) {
    return new LssClient({
      apiKey: key,
      baseUrl: proxy.url,
      onRetry: (e) => retries.push(e),
      retry: { backoffBaseMs: 20, backoffMaxMs: 100 },
      ...opts,
    });
  }
  const sent = (path: string, method = 'POST') =>
    proxy.requests.filter((r) => r.method === method && r.path.split('?')[0] === path);

  it('a write whose reply was lost is retried with the same Idempotency-Key and executes once', async () => {
    const t = await stack.tenant({ credits: 10 });
    const retries: RetryEvent[] = [];
    const before = sent('/v2/lookups/domain').length;
    proxy.dropNextReply(
      (r) => r.method === 'POST' && r.path === '/v2/lookups/domain' && r.headers.authorization === `Bearer ${t.key}`,
    );
    const accepted = await sdk(t.key, retries).submit('domain', { value: 'lab.test' });

    const attempts = sent('/v2/lookups/domain').slice(before);
    expect(attempts).toHaveLength(2);
    expect(attempts[0]!.dropped).toBe(true);
    expect(attempts[0]!.status).toBe(202); // the server did execute the first one
    expect(attempts[1]!.headers['idempotency-key']).toBe(attempts[0]!.headers['idempotency-key']);
    expect(accepted.idempotencyKey).toBe(attempts[0]!.headers['idempotency-key']);
    expect(accepted.replayed).toBe(true);
    expect(retries).toMatchObject([
      { reason: 'connection_failed', attempt: 1, idempotencyKey: accepted.idempotencyKey },
    ]);

    const jobs = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM jobs WHERE workspace_id = ${t.wsId}`.execute(
      stack.h.deps.db,
    );
    expect(Number(jobs.rows[0]!.n)).toBe(1);
    const b = await balance(stack.h.deps.db, t.wsId);
    expect(b.reserved + b.captured).toBe(2); // one reservation of 2 credits, not two
  });

  it('a secret rotation whose reply was lost is retried with the same Idempotency-Key and returns the same secret', async () => {
    const t = await stack.tenant();
    const client = sdk(t.key);
    const { monitor } = await client.createMonitor({
      product: 'lookup.domain.v1',
      request: { value: 'lab.test' },
      schedule: { intervalSeconds: 3600 },
      webhook: { url: 'https://127.0.0.1/hook' },
      paused: true,
    });
    const path = `/v2/monitors/${monitor.monitorId}`;
    proxy.dropNextReply((r) => r.method === 'PATCH' && r.path === path);
    const rotated = await client.updateMonitor(monitor.monitorId, { webhook: { rotateSecret: true } });
    const attempts = sent(path, 'PATCH');
    expect(attempts).toHaveLength(2);
    expect(attempts[0]!.dropped).toBe(true);
    expect(attempts[0]!.status).toBe(200); // the server did rotate
    expect(attempts[1]!.headers['idempotency-key']).toBe(attempts[0]!.headers['idempotency-key']);
    expect(rotated.webhook?.secret).toMatch(/^whsec_/);
    // The one rotation: the secret the caller got is the one that signs, the original beside it.
    const row = await sql<{ id: number }>`SELECT id FROM monitors WHERE public_id = ${monitor.monitorId}
      AND webhook_prev_secret IS NOT NULL`.execute(stack.h.deps.db);
    expect(row.rows).toHaveLength(1);
    const again = await client
      .updateMonitor(monitor.monitorId, { webhook: { rotateSecret: true } })
      .catch((e: unknown) => e);
    expect(again).toBeInstanceOf(LssApiError);
    expect((again as LssApiError).code).toBe('invalid_request');
  });

  it("a caller's own Idempotency-Key wins and is the one sent", async () => {
    const t = await stack.tenant();
    const res = await sdk(t.key).lookup('mac', { value: 'F4:F5:E8:12:34:56' }, { idempotencyKey: 'caller-key-1' });
    expect(res.idempotencyKey).toBe('caller-key-1');
    expect(sent('/v2/lookups/mac').at(-1)!.headers['idempotency-key']).toBe('caller-key-1');
    expect(res.complete).toBe(true);
  });

  it('a 429 is waited out for exactly its Retry-After, then the same request succeeds', async () => {
    const t = await stack.tenant({ limits: { app: { perMinute: 60, burst: 1 } } });
    const retries: RetryEvent[] = [];
    const client = sdk(t.key, retries);
    await client.lookup('mac', { value: 'F4:F5:E8:12:34:56' }); // takes the one token of the burst
    const before = sent('/v2/lookups/mac').length;
    const res = await client.lookup('mac', { value: '00:1A:2B:3C:4D:5E' });
    expect(res.status).toBe('completed');

    const [refused, retried] = sent('/v2/lookups/mac').slice(before);
    expect(refused!.status).toBe(429);
    const retryAfterMs = Number(refused!.retryAfter) * 1000;
    expect(retryAfterMs).toBeGreaterThanOrEqual(1000);
    expect(retries).toMatchObject([{ reason: 'rate_limit_exceeded', delayMs: retryAfterMs }]);
    const waited = retried!.at - refused!.answeredAt!;
    expect(waited).toBeGreaterThanOrEqual(retryAfterMs - 5); // timer granularity
    expect(waited).toBeLessThan(retryAfterMs + 500);
    expect(retried!.status).toBe(200);
    expect(retried!.headers['idempotency-key']).toBe(refused!.headers['idempotency-key']);
  });

  it("409 idempotency_request_in_progress is retried until the running request's reply is replayed", async () => {
    const t = await stack.tenant();
    const key = `in-progress-${Date.now()}`;
    // partial.lab.test answers TXT and CAA never: the lookup runs for the full DNS timeout.
    const first = fetch(`${stack.url}/v2/lookups/dns`, {
      method: 'POST',
      body: JSON.stringify({ value: 'partial.lab.test' }),
      headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json', 'idempotency-key': key },
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as { requestId: string } }));
    await new Promise((r) => setTimeout(r, 300));
    const retries: RetryEvent[] = [];
    const res = await sdk(t.key, retries).lookup('dns', { value: 'partial.lab.test' }, { idempotencyKey: key });
    const original = await first;

    expect(original.status).toBe(200);
    expect(retries.length).toBeGreaterThanOrEqual(1);
    expect(retries.every((e) => e.reason === 'idempotency_request_in_progress' && e.idempotencyKey === key)).toBe(true);
    expect(res.replayed).toBe(true);
    expect(res.requestId).toBe(original.body.requestId); // one execution, its reply replayed
  });

  it('a partial lookup stays partial: complete false, limitations kept, requireComplete throws', async () => {
    const t = await stack.tenant();
    const client = sdk(t.key);
    const res = await client.lookup('dns', { value: 'partial.lab.test' });
    expect(res.complete).toBe(false);
    expect(res.status).toBe('partial');
    expect(res.coverage.complete).toBe(false);
    expect(res.limitations.map((l) => l.code)).toContain('dns_indeterminate');
    expect(res.lanes.find((l) => l.lane === 'record_types')?.status).toBe('partial');

    // Same key: the stored partial reply, which requireComplete refuses to pass off as complete.
    const err = await client
      .lookup('dns', { value: 'partial.lab.test' }, { idempotencyKey: res.idempotencyKey, requireComplete: true })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LssPartialError);
    expect((err as LssPartialError).envelope.status).toBe('partial');
    expect((err as LssPartialError).code).toBe('partial_coverage');
  });

  it('cursor iteration yields every result and finding once, read while the job runs and after', async () => {
    const t = await stack.tenant({ credits: 10 });
    const client = sdk(t.key);
    const accepted = await client.submit('domain', { value: 'lab-expired.test' });
    // Started at once: the first pages are read while the job is queued or running.
    const live: string[] = [];
    let pages = 0;
    for await (const page of client.resultPages(accepted.jobRef, { limit: 1, wait: true, pollMs: 100 })) {
      pages++;
      live.push(...page.items.map((i) => i.objectId));
    }
    const outcome = await client.waitForJob(accepted.jobRef);
    expect(outcome.status).toBe('completed');

    const all = await client.collectResults(accepted.jobRef, { limit: 500 });
    expect(all.terminal).toBe(true);
    expect(all.nextCursor).toBeNull();
    expect(all.items.length).toBeGreaterThan(3);
    expect(live).toEqual(all.items.map((i) => i.objectId));
    expect(new Set(live).size).toBe(live.length);
    expect(pages).toBeGreaterThanOrEqual(all.items.length);

    const findings: string[] = [];
    for await (const f of client.findings(accepted.jobRef, { limit: 1 })) findings.push(f.findingId);
    const allFindings = await client.collectFindings(accepted.jobRef, { limit: 500 });
    expect(findings).toEqual(allFindings.items.map((f) => f.findingId));
    expect(findings.length).toBeGreaterThan(0);
    expect(allFindings.items.map((f) => f.code)).toContain('domain_expired');
  });

  it('a cancelled job reports cancelled, not success, with its ledger', async () => {
    const t = await stack.tenant({ credits: 10 });
    const client = sdk(t.key);
    const accepted = await client.submit('domain', { value: 'lab-rdap-slow.test' });
    const after = await client.cancelJob(accepted.jobRef, { reason: 'sdk test' });
    expect(['cancelling', 'cancelled']).toContain(after.status);
    const outcome = await client.waitForJob(accepted.jobRef, { timeoutMs: 15_000 });
    expect(outcome.status).toBe('cancelled');
    expect(outcome.complete).toBe(false);
    expect(outcome.job.terminal).toBe(true);
    expect(outcome.job.ledger!.released).toBe(2 - outcome.job.ledger!.captured);
  });

  it('refusals are typed errors carrying code, status, retryable and requestId', async () => {
    const t = await stack.tenant({ credits: 10 });
    const client = sdk(t.key);
    const notFound = await client.getJob('job_00000000000000000000000000').catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(LssApiError);
    expect(notFound).toMatchObject({
      code: 'job_not_found',
      status: 404,
      retryable: false,
      refused: true,
      attempts: 1,
    });
    expect((notFound as LssApiError).requestId).toMatch(/^req_/);

    const budget = await client
      .submit('scan', {
        profile: 'quick',
        target: { type: 'domain_name', value: 'lab.test' },
        options: { active: false, maxCredits: 1 },
      })
      .catch((e: unknown) => e);
    expect(budget).toMatchObject({
      code: 'scan_credit_budget_invalid',
      status: 400,
      details: { bounds: { min: 5, max: 100 } },
    });

    // Mail is not built yet: a retryable 503, retried, then handed to the caller.
    const retries: RetryEvent[] = [];
    const unavailable = await sdk(t.key, retries, { retry: { maxRetries: 1, backoffBaseMs: 10, backoffMaxMs: 10 } })
      .submit('mail', { value: 'lab.test' })
      .catch((e: unknown) => e);
    expect(unavailable).toMatchObject({
      code: 'capability_unavailable',
      status: 503,
      retryable: true,
      refused: false,
      attempts: 2,
    });
    expect(retries).toHaveLength(1);
  });

  it('no reply at all is a transport error after the bounded retries', async () => {
    const port = await freePort();
    const client = new LssClient({
      apiKey: 'lsk_unused',
      baseUrl: `http://127.0.0.1:${port}`,
      retry: { maxRetries: 2, backoffBaseMs: 5, backoffMaxMs: 10 },
    });
    const err = await client.products().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LssTransportError);
    expect(err).toMatchObject({ code: 'connection_failed', status: 0, retryable: true, attempts: 3 });
    expect(String((err as Error).message)).not.toContain('lsk_unused');
  });
});
