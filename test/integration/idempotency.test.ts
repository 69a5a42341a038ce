import http from 'node:http';
import supertest from 'supertest';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../src/auth/tenancy-repo.ts';
import { IdempotencyLeases } from '../../src/idempotency/lease.ts';
import { requestFingerprint } from '../../src/idempotency/fingerprint.ts';
import { registry } from '../../src/metrics.ts';
import type { RateOverrides } from '../../src/ratelimit/policies.ts';
import { assertMatchesContract } from '../helpers/contract-check.ts';
import { client, createTenant, idemKey, startHarness, type Harness, type Tenant } from '../helpers/harness.ts';

const MAC = '/v2/lookups/mac';
const GENEROUS: RateOverrides = {
  app: { perMinute: 100_000, burst: 10_000 },
  products: Object.fromEntries(
    ['lookup.mac.v1', 'lookup.phone.v1', 'lookup.domain.v1', 'scan.recursive.v1'].map((id) => [
      id,
      { perMinute: 100_000, perHour: 1_000_000 },
    ]),
  ),
};

async function macExecutions(): Promise<number> {
  const metric = registry.getSingleMetric('lss_product_executions_total');
  if (!metric) throw new Error('lss_product_executions_total is not registered');
  const { values } = await metric.get();
  return values.filter((v) => v.labels.product === 'lookup.mac.v1').reduce((sum, v) => sum + v.value, 0);
}

async function checked(r: supertest.Test, method: 'get' | 'post', path: string): Promise<supertest.Response> {
  const res = await r;
  assertMatchesContract(method, path, res);
  return res;
}

describe('idempotency', () => {
  let h: Harness;
  let t: Tenant;
  let apiKeyId: number;
  let applicationId: number;

  const records = (key: string, id = apiKeyId) =>
    h.deps.db
      .selectFrom('idempotency_records')
      .selectAll()
      .where('api_key_id', '=', id)
      .where('idem_key', '=', key)
      .execute();
  /** A zero-credit lookup's committed reply: in the Redis done marker, not in MySQL. */
  const committed = (key: string, id = apiKeyId) => h.deps.idempotency.leases.storedReply(applicationId, id, key);

  async function internalKeyId(publicKeyId: string): Promise<number> {
    const row = await h.deps.db
      .selectFrom('api_keys')
      .select('id')
      .where('public_id', '=', publicKeyId)
      .executeTakeFirstOrThrow();
    return Number(row.id);
  }

  /** A committed reply as another process would have stored it. */
  async function insertCommittedRecord(opts: { key: string; path: string; body: unknown; expiresSeconds?: number }) {
    await h.deps.db
      .insertInto('idempotency_records')
      .values({
        api_key_id: apiKeyId,
        idem_key: opts.key,
        fingerprint: Buffer.from(requestFingerprint('POST', opts.path, opts.body), 'hex'),
        response_status: 200,
        response_body: '{"stored":true}',
        expires_at: sql<Date>`NOW(3) + INTERVAL ${(opts.expiresSeconds ?? 86_400) * 1_000_000} MICROSECOND`,
      })
      .execute();
  }

  /** A lease as another (possibly crashed) process holds it while executing. */
  async function holdLease(opts: { key: string; path: string; body: unknown; leaseMs: number }) {
    const leases = new IdempotencyLeases(h.deps.redis, { leaseMs: opts.leaseMs, ttlHours: 24 });
    const got = await leases.claim(applicationId, apiKeyId, opts.key, requestFingerprint('POST', opts.path, opts.body));
    expect(got.state).toBe('claimed');
  }

  beforeAll(async () => {
    h = await startHarness();
    t = await createTenant(h, { limits: GENEROUS });
    apiKeyId = await internalKeyId(t.keyId);
    applicationId = Number(
      (
        await h.deps.db
          .selectFrom('api_keys')
          .select('application_id')
          .where('id', '=', apiKeyId)
          .executeTakeFirstOrThrow()
      ).application_id,
    );
  });
  afterAll(() => h.close());

  describe('replay', () => {
    it('replays a committed 200 byte for byte with Idempotent-Replayed: true, without executing again', async () => {
      const key = idemKey();
      const first = await client(h.app, t.key).post(MAC, { value: 'F4:F5:E8:12:34:56' }, { 'Idempotency-Key': key });
      expect(first.status).toBe(200);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      const before = await macExecutions();
      for (let i = 0; i < 3; i++) {
        const again = await client(h.app, t.key).post(MAC, { value: 'F4:F5:E8:12:34:56' }, { 'Idempotency-Key': key });
        expect(again.status).toBe(200);
        expect(again.headers['idempotent-replayed']).toBe('true');
        expect(again.text).toBe(first.text);
        expect(again.headers['content-type']).toBe(first.headers['content-type']);
        expect(again.body.requestId).toBe(first.body.requestId);
        // The retry is a new HTTP request with its own id; the body is the stored one.
        expect(again.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
      }
      expect(await macExecutions()).toBe(before);
      expect(await committed(key)).toEqual({ status: 200, body: first.text });
      expect(await records(key)).toHaveLength(0); // inline replies never touch MySQL
    });

    it('same key, different body → 409 idempotency_key_conflict, and the original stays replayable', async () => {
      const key = idemKey();
      const first = await client(h.app, t.key).post(MAC, { value: 'F4:F5:E8:12:34:56' }, { 'Idempotency-Key': key });
      expect(first.status).toBe(200);
      const other = await client(h.app, t.key).post(MAC, { value: '00:1B:C5:00:00:01' }, { 'Idempotency-Key': key });
      expect(other.status).toBe(409);
      expect(other.body.error.code).toBe('idempotency_key_conflict');
      expect(other.body.error.retryable).toBe(false);
      expect(other.headers['retry-after']).toBeUndefined();
      const again = await client(h.app, t.key).post(MAC, { value: 'F4:F5:E8:12:34:56' }, { 'Idempotency-Key': key });
      expect(again.text).toBe(first.text);
    });

    it('same key, same body, different product route → conflict (the path is part of the fingerprint)', async () => {
      const key = idemKey();
      expect((await client(h.app, t.key).post(MAC, { value: '+14155552671' }, { 'Idempotency-Key': key })).status).toBe(
        400,
      );
      const phone = await client(h.app, t.key).post(
        '/v2/lookups/phone',
        { value: '+14155552671' },
        { 'Idempotency-Key': key },
      );
      expect(phone.status).toBe(200);
      // mac's 400 stored nothing; phone committed. mac with a valid body under the same key now conflicts.
      const mac = await client(h.app, t.key).post(MAC, { value: 'F4F5E8123456' }, { 'Idempotency-Key': key });
      expect(mac.status).toBe(409);
      expect(mac.body.error.code).toBe('idempotency_key_conflict');
    });

    it('key order and insignificant whitespace do not change the fingerprint', async () => {
      const key = idemKey();
      const first = await client(h.app, t.key).post(
        '/v2/lookups/phone',
        '{"value":"+14155552671","defaultRegion":"US"}',
        { 'Idempotency-Key': key },
      );
      expect(first.status).toBe(200);
      const reordered = await client(h.app, t.key).post(
        '/v2/lookups/phone',
        '{\n  "defaultRegion" : "US" ,\n\t"value":   "+14155552671"\n}\n',
        { 'Idempotency-Key': key },
      );
      expect(reordered.status).toBe(200);
      expect(reordered.headers['idempotent-replayed']).toBe('true');
      expect(reordered.text).toBe(first.text);

      const macKey = idemKey();
      const m1 = await client(h.app, t.key).post(MAC, '{"value":"F4F5E8123456"}', { 'Idempotency-Key': macKey });
      const m2 = await client(h.app, t.key).post(MAC, '  {  "value" :\r\n "F4F5E8123456"  }  ', {
        'Idempotency-Key': macKey,
      });
      expect(m2.headers['idempotent-replayed']).toBe('true');
      expect(m2.text).toBe(m1.text);
    });

    it('a different spelling of the same value is a different request (the body as sent, not normalised)', async () => {
      const key = idemKey();
      expect((await client(h.app, t.key).post(MAC, { value: 'F4F5E8123456' }, { 'Idempotency-Key': key })).status).toBe(
        200,
      );
      const res = await client(h.app, t.key).post(MAC, { value: 'f4:f5:e8:12:34:56' }, { 'Idempotency-Key': key });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('idempotency_key_conflict');
    });

    it('the same Idempotency-Key under two API keys of one workspace is independent', async () => {
      const second = await createKey(h.deps.db, h.config.KEY_PEPPER, { workspace: t.workspaceId });
      const key = idemKey();
      const a = await client(h.app, t.key).post(MAC, { value: 'F4:F5:E8:12:34:56' }, { 'Idempotency-Key': key });
      const b = await client(h.app, second.key).post(MAC, { value: '00:1B:C5:00:00:01' }, { 'Idempotency-Key': key });
      expect(a.status).toBe(200);
      expect(b.status).toBe(200);
      expect(b.headers['idempotent-replayed']).toBeUndefined();
      expect(b.body.result.normalized).toBe('00:1B:C5:00:00:01');
      // Same body under the second key: its own execution, not a replay of the first key's reply.
      const key2 = idemKey();
      const c = await client(h.app, t.key).post(MAC, { value: 'F4:F5:E8:12:34:56' }, { 'Idempotency-Key': key2 });
      const d = await client(h.app, second.key).post(MAC, { value: 'F4:F5:E8:12:34:56' }, { 'Idempotency-Key': key2 });
      expect(d.headers['idempotent-replayed']).toBeUndefined();
      expect(d.body.requestId).not.toBe(c.body.requestId);
      expect((await committed(key2, await internalKeyId(second.keyId)))?.body).toBe(d.text);
      expect((await committed(key2))?.body).toBe(c.text);
    });
  });

  describe('exactly one execution under concurrency', () => {
    it('50 concurrent identical requests with one key execute once', async () => {
      const key = idemKey();
      const body = { value: 'F4:F5:E8:AB:CD:EF' };
      const before = await macExecutions();
      const replies = await Promise.all(
        Array.from({ length: 50 }, () => client(h.app, t.key).post(MAC, body, { 'Idempotency-Key': key })),
      );
      expect(await macExecutions()).toBe(before + 1);

      const ok = replies.filter((r) => r.status === 200);
      const inProgress = replies.filter((r) => r.status === 409);
      expect(ok.length + inProgress.length).toBe(50);
      expect(ok.length).toBeGreaterThanOrEqual(1);
      expect(ok.filter((r) => r.headers['idempotent-replayed'] !== 'true')).toHaveLength(1);
      const requestIds = new Set(ok.map((r) => r.body.requestId));
      expect(requestIds.size).toBe(1);
      const texts = new Set(ok.map((r) => r.text));
      expect(texts.size).toBe(1);
      for (const r of inProgress) {
        expect(r.body.error.code).toBe('idempotency_request_in_progress');
        expect(r.body.error.retryable).toBe(true);
        expect(r.headers['retry-after']).toBe('1');
      }
      expect((await committed(key))?.status).toBe(200);
      // After the dust settles every retry is a replay of that one execution.
      const late = await client(h.app, t.key).post(MAC, body, { 'Idempotency-Key': key });
      expect(late.headers['idempotent-replayed']).toBe('true');
      expect(late.body.requestId).toBe([...requestIds][0]);
    });

    it('concurrent identical requests whose execution fails never answer 500 (claim/release races)', async () => {
      // Each winner claims, fails at readiness (503) and releases its lease while the others race
      // for the same key. One listening server (not one per request) so the requests truly overlap.
      const server = http.createServer(h.app).listen(0);
      try {
        for (let round = 0; round < 5; round++) {
          const key = idemKey();
          const replies = await Promise.all(
            Array.from({ length: 150 }, () =>
              checked(
                supertest(server)
                  .post('/v2/lookups/domain')
                  .set('Authorization', `Bearer ${t.key}`)
                  .set('Idempotency-Key', key)
                  .send({ value: 'example.com' }),
                'post',
                '/v2/lookups/domain',
              ),
            ),
          );
          const codes = replies.map((r) => r.body.error?.code);
          expect(codes).toContain('capability_unavailable');
          for (const c of new Set(codes))
            expect(['capability_unavailable', 'idempotency_request_in_progress']).toContain(c);
          expect(await records(key)).toHaveLength(0);
        }
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    });
  });

  describe('a failure stores nothing', () => {
    it('503 capability_unavailable (domain) leaves no record; the key then serves a valid request', async () => {
      const key = idemKey();
      const res = await client(h.app, t.key).post(
        '/v2/lookups/domain',
        { value: 'example.com' },
        { 'Idempotency-Key': key },
      );
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('capability_unavailable');
      expect(await records(key)).toHaveLength(0);
      const again = await client(h.app, t.key).post(
        '/v2/lookups/domain',
        { value: 'example.com' },
        { 'Idempotency-Key': key },
      );
      expect(again.body.error.code).toBe('capability_unavailable'); // not a replay, not in progress
      expect(await records(key)).toHaveLength(0);
      const ok = await client(h.app, t.key).post(MAC, { value: 'F4F5E8123456' }, { 'Idempotency-Key': key });
      expect(ok.status).toBe(200);
      expect(ok.headers['idempotent-replayed']).toBeUndefined();
    });

    it('400 invalid_request leaves no record; the corrected request with the same key succeeds', async () => {
      const key = idemKey();
      const bad = await client(h.app, t.key).post(MAC, { value: 'not-a-mac' }, { 'Idempotency-Key': key });
      expect(bad.status).toBe(400);
      expect(await committed(key)).toBeNull();
      const malformed = await client(h.app, t.key).post(MAC, '{"value":', { 'Idempotency-Key': key });
      expect(malformed.status).toBe(400);
      expect(await committed(key)).toBeNull();
      const ok = await client(h.app, t.key).post(MAC, { value: 'F4F5E8123456' }, { 'Idempotency-Key': key });
      expect(ok.status).toBe(200);
      expect(ok.headers['idempotent-replayed']).toBeUndefined();
      expect((await committed(key))?.body).toBe(ok.text);
    });

    it('403 gate refusals leave no record', async () => {
      const key = idemKey();
      const res = await client(h.app, t.key).post(
        '/v2/scans',
        {
          profile: 'quick',
          target: { type: 'domain_name', value: 'example.com' },
          options: { active: false, maxCredits: 10 },
        },
        { 'Idempotency-Key': key },
      );
      expect(res.body.error.code).toBe('responsible_use_required');
      expect(await records(key)).toHaveLength(0);
    });
  });

  describe('recovery of abandoned claims', () => {
    it('a lease left by a crashed process expires and the key then executes and completes', async () => {
      const key = idemKey();
      const body = { value: 'F4:F5:E8:00:00:01' };
      await holdLease({ key, path: MAC, body, leaseMs: 150 });
      const during = await client(h.app, t.key).post(MAC, body, { 'Idempotency-Key': key });
      expect(during.body.error.code).toBe('idempotency_request_in_progress');
      await new Promise((r) => setTimeout(r, 250));
      const before = await macExecutions();
      const res = await client(h.app, t.key).post(MAC, body, { 'Idempotency-Key': key });
      expect(res.status).toBe(200);
      expect(res.headers['idempotent-replayed']).toBeUndefined();
      expect(res.body.result.normalized).toBe('F4:F5:E8:00:00:01');
      expect(await macExecutions()).toBe(before + 1);
      expect(await committed(key)).toEqual({ status: 200, body: res.text });
      const replay = await client(h.app, t.key).post(MAC, body, { 'Idempotency-Key': key });
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.text).toBe(res.text);
    });

    it('a live lease → 409 idempotency_request_in_progress with Retry-After, and nothing executes', async () => {
      const key = idemKey();
      const body = { value: 'F4:F5:E8:00:00:02' };
      await holdLease({ key, path: MAC, body, leaseMs: 60_000 });
      const before = await macExecutions();
      const res = await client(h.app, t.key).post(MAC, body, { 'Idempotency-Key': key });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('idempotency_request_in_progress');
      expect(res.headers['retry-after']).toBe('1');
      expect(await macExecutions()).toBe(before);
      expect(await committed(key)).toBeNull();
    });

    it('a live lease with a different fingerprint → conflict, not in progress', async () => {
      const key = idemKey();
      await holdLease({ key, path: MAC, body: { value: 'F4:F5:E8:00:00:03' }, leaseMs: 60_000 });
      const res = await client(h.app, t.key).post(MAC, { value: 'F4:F5:E8:00:00:04' }, { 'Idempotency-Key': key });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('idempotency_key_conflict');
    });

    it('a zero-credit reply whose Redis marker was lost: the identical retry runs again (the documented trade)', async () => {
      const key = idemKey();
      const body = { value: 'F4:F5:E8:00:00:05' };
      const first = await client(h.app, t.key).post(MAC, body, { 'Idempotency-Key': key });
      expect(first.status).toBe(200);
      // Lose every Redis trace of the key, as a Redis flush would.
      await new IdempotencyLeases(h.deps.redis, { leaseMs: 1000, ttlHours: 24 }).forget(applicationId, apiKeyId, key);
      const before = await macExecutions();
      const again = await client(h.app, t.key).post(MAC, body, { 'Idempotency-Key': key });
      expect(again.status).toBe(200);
      expect(again.headers['idempotent-replayed']).toBeUndefined();
      expect(again.body.result).toEqual(first.body.result); // same answer, a second (harmless) execution
      expect(await macExecutions()).toBe(before + 1);
    });

    it('a MySQL-committed reply (cancel, paid work) whose Redis marker was lost is still replayed, never executed twice', async () => {
      const { acceptJob } = await import('../../src/jobs/jobs-repo.ts');
      const { Authenticator } = await import('../../src/auth/authenticator.ts');
      const principal = (await new Authenticator(h.deps.db, h.config.KEY_PEPPER, 0).verify(t.key))!;
      const job = await acceptJob(h.deps.db, {
        principal,
        product: 'lookup.domain.v1',
        target: { type: 'domain_name', value: 'lab.test' },
        profile: null,
        input: { value: 'lab.test' },
        price: 0,
        deadlineMs: 60_000,
        requestId: 'req_idemtest',
        claim: undefined,
      });
      const key = idemKey();
      const path = `/v2/jobs/${job.jobRef}/cancel`;
      const first = await client(h.app, t.key).post(path, {}, { 'Idempotency-Key': key });
      expect(first.status).toBe(202);
      expect(await records(key)).toHaveLength(1);
      await new IdempotencyLeases(h.deps.redis, { leaseMs: 1000, ttlHours: 24 }).forget(applicationId, apiKeyId, key);
      const again = await client(h.app, t.key).post(path, {}, { 'Idempotency-Key': key });
      expect(again.status).toBe(202);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.text).toBe(first.text);
      const other = await client(h.app, t.key).post(path, { reason: 'other' }, { 'Idempotency-Key': key });
      expect(other.body.error.code).toBe('idempotency_key_conflict');
    });

    it('a record past its retention frees the key for a new request', async () => {
      const key = idemKey();
      await insertCommittedRecord({ key, path: MAC, body: { value: 'F4:F5:E8:00:00:07' }, expiresSeconds: -1 });
      const res = await client(h.app, t.key).post(MAC, { value: 'F4:F5:E8:00:00:08' }, { 'Idempotency-Key': key });
      expect(res.status).toBe(200);
      expect(res.headers['idempotent-replayed']).toBeUndefined();
      expect((await committed(key))?.body).toBe(res.text);
    });

    it('idempotency state is checked before readiness (step 8 before 9)', async () => {
      const body = { value: 'example.com' };
      const busy = idemKey();
      await holdLease({ key: busy, path: '/v2/lookups/domain', body, leaseMs: 60_000 });
      const inProgress = await client(h.app, t.key).post('/v2/lookups/domain', body, { 'Idempotency-Key': busy });
      expect(inProgress.body.error.code).toBe('idempotency_request_in_progress');
      const done = idemKey();
      await insertCommittedRecord({ key: done, path: MAC, body: { value: 'F4F5E8123456' } });
      // No Redis marker (as after a flush): the conflict comes from the committed record.
      const conflict = await client(h.app, t.key).post('/v2/lookups/domain', body, { 'Idempotency-Key': done });
      expect(conflict.body.error.code).toBe('idempotency_key_conflict');
    });
  });
});
