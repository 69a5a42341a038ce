// CONTRACT §5: the application and product limits (GCRA in one atomic Redis script), their
// headers, exact Retry-After, their place in the §2 order, and failing closed without Redis.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../src/auth/tenancy-repo.ts';
import { RateLimiter } from '../../src/ratelimit/limiter.ts';
import type { RatePolicy } from '../../src/ratelimit/policies.ts';
import { closeRedis, createRedis, redisReady, type RedisClient } from '../../src/redis/client.ts';
import { IdempotencyLeases, leaseFound } from '../../src/idempotency/lease.ts';
import { client, createTenant, idemKey, startHarness, type Harness } from '../helpers/harness.ts';
import { deadRedisEnv, testRedis, testRedisTarget } from '../helpers/redis.ts';

const MAC = '/v2/lookups/mac';
const MAC_BODY = { value: 'F4:F5:E8:12:34:56' };

function parseRateLimit(header: string | undefined): { name: string; r: number; t: number } {
  const m = /^"([^"]+)";r=(\d+);t=(\d+)$/.exec(header ?? '');
  if (!m) throw new Error(`not a RateLimit header: ${header}`);
  return { name: m[1]!, r: Number(m[2]), t: Number(m[3]) };
}

describe('rate limits over HTTP', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());

  describe('application limit', () => {
    it('perMinute 60, burst 3: three pass, the fourth is 429 with an exact Retry-After', async () => {
      const t = await createTenant(h, { limits: { app: { perMinute: 60, burst: 3 } } });
      const c = client(h.app, t.key);
      const remaining: number[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await c.get('/v2/products');
        expect(res.status).toBe(200);
        expect(res.headers['ratelimit-policy']).toBe('"app";q=60;w=60');
        const rl = parseRateLimit(res.headers.ratelimit);
        expect(rl.name).toBe('app');
        expect(rl.t).toBeGreaterThanOrEqual(1);
        remaining.push(rl.r);
      }
      expect(remaining).toEqual([2, 1, 0]);

      const refused = await c.get('/v2/products');
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('rate_limit_exceeded');
      expect(refused.body.error.retryable).toBe(true);
      expect(refused.body.error.requestId).toBe(refused.headers['x-request-id']);
      const retryAfter = Number(refused.headers['retry-after']);
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(1); // one emission interval (60 s / 60) at most
      expect(refused.headers['ratelimit-policy']).toBe('"app";q=60;w=60');
      const rl = parseRateLimit(refused.headers.ratelimit);
      expect(rl).toMatchObject({ name: 'app', r: 0 });
      expect(retryAfter).toBeGreaterThanOrEqual(rl.t); // never earlier than t

      // The one wait in these tests: Retry-After is exact, so a retry at that moment succeeds.
      await sleep(retryAfter * 1000);
      const retry = await c.get('/v2/products');
      expect(retry.status).toBe(200);
      expect(parseRateLimit(retry.headers.ratelimit).r).toBe(0);
    });

    it('applies to writes too (rate_limit_exceeded although the product quota is untouched)', async () => {
      const t = await createTenant(h, { limits: { app: { perMinute: 1, burst: 2 } } });
      const c = client(h.app, t.key);
      expect((await c.post(MAC, MAC_BODY)).status).toBe(200);
      expect((await c.post(MAC, MAC_BODY)).status).toBe(200);
      const res = await c.post(MAC, MAC_BODY);
      expect(res.status).toBe(429);
      expect(res.body.error.code).toBe('rate_limit_exceeded');
      expect(Number(res.headers['retry-after'])).toBe(60);
      expect(res.headers['ratelimit-policy']).toBe('"app";q=1;w=60');
    });

    it('is per application: another application is not affected, another key of the same one is', async () => {
      const t = await createTenant(h, { limits: { app: { perMinute: 1, burst: 1 } } });
      const sibling = await createKey(h.deps.db, h.config.KEY_PEPPER, { workspace: t.workspaceId });
      const other = await createTenant(h, { limits: { app: { perMinute: 1, burst: 1 } } });
      expect((await client(h.app, t.key).get('/v2/products')).status).toBe(200);
      expect((await client(h.app, sibling.key).get('/v2/products')).body.error.code).toBe('rate_limit_exceeded');
      expect((await client(h.app, other.key).get('/v2/products')).status).toBe(200);
    });

    it('comes after authentication and scope, before Idempotency-Key and body (CONTRACT §2 steps 1-5)', async () => {
      const t = await createTenant(h, { limits: { app: { perMinute: 1, burst: 1 } } });
      const reader = await createKey(h.deps.db, h.config.KEY_PEPPER, {
        workspace: t.workspaceId,
        scopes: ['scan:read'],
      });
      expect((await client(h.app, t.key).get('/v2/products')).status).toBe(200);
      // exhausted now
      expect((await client(h.app).post(MAC, MAC_BODY)).body.error.code).toBe('authentication_required');
      expect((await client(h.app, reader.key).post(MAC, MAC_BODY)).body.error.code).toBe('insufficient_scope');
      const noKey = await client(h.app, t.key).post(MAC, { bad: 1 }, { 'Idempotency-Key': '' });
      expect(noKey.status).toBe(429);
      expect(noKey.body.error.code).toBe('rate_limit_exceeded');
      expect((await client(h.app, t.key).post(MAC, '{"value":')).body.error.code).toBe('rate_limit_exceeded');
    });
  });

  describe('product limit', () => {
    it('mac perMinute 2 → capability_rate_limit_exceeded, and that refusal consumed no app quota', async () => {
      // App: 3 requests, no refill worth mentioning during the test (1 per minute).
      const t = await createTenant(h, {
        limits: { app: { perMinute: 1, burst: 3 }, products: { 'lookup.mac.v1': { perMinute: 2 } } },
      });
      const c = client(h.app, t.key);
      expect((await c.post(MAC, MAC_BODY)).status).toBe(200);
      const second = await c.post(MAC, MAC_BODY);
      expect(second.status).toBe(200);
      expect(second.headers['ratelimit-policy']).toBe('"mac-minute";q=2;w=60');
      expect(parseRateLimit(second.headers.ratelimit)).toMatchObject({ name: 'mac-minute', r: 0 });

      const refused = await c.post(MAC, MAC_BODY);
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('capability_rate_limit_exceeded');
      expect(refused.body.error.retryable).toBe(true);
      expect(refused.body.error.details).toMatchObject({ policy: 'mac-minute', limit: 2, windowSeconds: 60 });
      // GCRA: 2 per minute with a burst of 2 → one more conforms 30 s after the burst.
      expect(Number(refused.headers['retry-after'])).toBe(30);
      expect(refused.headers['ratelimit-policy']).toBe('"mac-minute";q=2;w=60');
      expect(parseRateLimit(refused.headers.ratelimit)).toEqual({ name: 'mac-minute', r: 0, t: 30 });

      // The app quota of 3 had 1 left before the refusal and still has it.
      const read = await c.get('/v2/products');
      expect(read.status).toBe(200);
      expect(read.headers['ratelimit-policy']).toBe('"app";q=1;w=60');
      expect(parseRateLimit(read.headers.ratelimit).r).toBe(0);
      const over = await c.get('/v2/products');
      expect(over.body.error.code).toBe('rate_limit_exceeded');
    });

    it('is reported after Idempotency-Key, body validation and the active gates (steps 4-6 before 7)', async () => {
      const t = await createTenant(h, {
        limits: { products: { 'lookup.mac.v1': { perMinute: 1 }, 'scan.recursive.v1': { perMinute: 1 } } },
        acceptResponsibleUse: h.config.RESPONSIBLE_USE_VERSION,
      });
      const c = client(h.app, t.key);
      expect((await c.post(MAC, MAC_BODY)).status).toBe(200);
      expect((await c.post(MAC, MAC_BODY, { 'Idempotency-Key': '' })).body.error.code).toBe('idempotency_key_required');
      const invalid = await c.post(MAC, { value: 'not-a-mac' });
      expect(invalid.status).toBe(400);
      expect(invalid.body.error.code).toBe('invalid_request');
      expect((await c.post(MAC, { ...MAC_BODY, extra: 1 })).body.error.code).toBe('invalid_request');
      expect((await c.post(MAC, MAC_BODY)).body.error.code).toBe('capability_rate_limit_exceeded');

      const scan = (profile: string, active: boolean, maxCredits = 100) => ({
        profile,
        target: { type: 'domain_name', value: 'example.com' },
        options: { active, maxCredits },
      });
      expect((await c.post('/v2/scans', scan('quick', false))).body.error.code).toBe('scan_profile_unavailable');
      expect((await c.post('/v2/scans', scan('quick', false, 1))).body.error.code).toBe('scan_credit_budget_invalid');
      expect((await c.post('/v2/scans', scan('advanced', false))).body.error.code).toBe(
        'active_authorization_required',
      );
      expect((await c.post('/v2/scans', scan('advanced', true))).body.error.code).toBe('active_permission_required');
      const limited = await c.post('/v2/scans', scan('quick', false));
      expect(limited.status).toBe(429);
      expect(limited.body.error.code).toBe('capability_rate_limit_exceeded');
      expect(limited.body.error.details.policy).toBe('scan-minute');
    });

    it('comes before the idempotency state: a retry of a committed request waits like any other (step 7 before 8)', async () => {
      const t = await createTenant(h, { limits: { products: { 'lookup.mac.v1': { perMinute: 1 } } } });
      const key = idemKey();
      expect((await client(h.app, t.key).post(MAC, MAC_BODY, { 'Idempotency-Key': key })).status).toBe(200);
      const retry = await client(h.app, t.key).post(MAC, MAC_BODY, { 'Idempotency-Key': key });
      expect(retry.body.error.code).toBe('capability_rate_limit_exceeded');
      expect(retry.headers['idempotent-replayed']).toBeUndefined();
    });

    it('is per product: another product of the same application still has its quota', async () => {
      const t = await createTenant(h, { limits: { products: { 'lookup.mac.v1': { perMinute: 1 } } } });
      const c = client(h.app, t.key);
      expect((await c.post(MAC, MAC_BODY)).status).toBe(200);
      expect((await c.post(MAC, MAC_BODY)).body.error.code).toBe('capability_rate_limit_exceeded');
      expect((await c.post('/v2/lookups/phone', { value: '+14155552671' })).status).toBe(200);
    });

    it('the hour limit refuses too', async () => {
      const t = await createTenant(h, { limits: { products: { 'lookup.mac.v1': { perMinute: 100, perHour: 2 } } } });
      const c = client(h.app, t.key);
      expect((await c.post(MAC, MAC_BODY)).status).toBe(200);
      expect((await c.post(MAC, MAC_BODY)).status).toBe(200);
      const res = await c.post(MAC, MAC_BODY);
      expect(res.body.error.code).toBe('capability_rate_limit_exceeded');
      expect(res.body.error.details.policy).toBe('mac-hour');
      expect(Number(res.headers['retry-after'])).toBe(1800);
      expect(res.headers['ratelimit-policy']).toBe('"mac-hour";q=2;w=3600');
    });

    it('reads (GET /v2/products) are not product limited', async () => {
      const t = await createTenant(h, {
        limits: {
          products: Object.fromEntries(
            [
              'lookup.mac.v1',
              'lookup.phone.v1',
              'lookup.ip.v1',
              'lookup.dns.v1',
              'lookup.domain.v1',
              'lookup.mail.v1',
              'lookup.web.v1',
              'scan.recursive.v1',
            ].map((id) => [id, { perMinute: 1, perHour: 1 }]),
          ),
        },
      });
      const c = client(h.app, t.key);
      expect((await c.post(MAC, MAC_BODY)).status).toBe(200);
      expect((await c.post(MAC, MAC_BODY)).body.error.code).toBe('capability_rate_limit_exceeded');
      for (let i = 0; i < 5; i++) {
        const res = await c.get('/v2/products');
        expect(res.status).toBe(200);
        expect(res.headers['ratelimit-policy']).toMatch(/^"app";/);
      }
    });
  });

  describe('fails closed without Redis', () => {
    let dead: Harness;
    beforeAll(async () => {
      dead = await startHarness(deadRedisEnv());
    });
    afterAll(() => dead.close());

    it('answers 503 service_unavailable, never a 500 and never unlimited', async () => {
      const t = await createTenant(dead);
      const c = client(dead.app, t.key);
      for (let i = 0; i < 5; i++) {
        const read = await c.get('/v2/products');
        expect(read.status).toBe(503);
        expect(read.body.error.code).toBe('service_unavailable');
        expect(read.body.error.retryable).toBe(true);
        expect(Number(read.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(read.text).not.toMatch(/redis|ECONNREFUSED|127\.0\.0\.1|Stream isn't writeable/i);
        const key = idemKey();
        const write = await c.post(MAC, MAC_BODY, { 'Idempotency-Key': key });
        expect(write.status).toBe(503);
        expect(write.body.error.code).toBe('service_unavailable');
        const rows = await dead.deps.db
          .selectFrom('idempotency_records')
          .select('id')
          .where('idem_key', '=', key)
          .execute();
        expect(rows).toHaveLength(0);
      }
      // Checks that need no Redis still answer as before.
      expect((await client(dead.app).get('/v2/products')).body.error.code).toBe('authentication_required');
      expect((await client(dead.app).get('/v2/openapi.json')).status).toBe(200);
    });

    it('also when Redis goes away under a running service', async () => {
      const live = await startHarness();
      try {
        // A running service: its client connected (a harness, unlike the server, does not wait
        // for it, and a Redis Cluster client under load can take longer than the tenant's set-up).
        await redisReady(live.deps.redis);
        const t = await createTenant(live);
        expect((await client(live.app, t.key).get('/v2/products')).status).toBe(200);
        live.deps.redis.disconnect();
        const res = await client(live.app, t.key).post(MAC, MAC_BODY);
        expect(res.status).toBe(503);
        expect(res.body.error.code).toBe('service_unavailable');
      } finally {
        await live.close();
      }
    });
  });
});

describe('consume-limits.lua through RateLimiter.consume (real Redis)', () => {
  let redis: RedisClient;
  let limiter: RateLimiter;
  // Under the run's prefix, so ops/test.ts deletes these keys with the rest.
  const prefix = `${process.env.REDIS_KEY_PREFIX}rl-unit-${randomBytes(4).toString('hex')}:`;
  const policy = (name: string, limit: number, windowSeconds: number, burst: number): RatePolicy => ({
    name,
    limit,
    windowSeconds,
    burst,
    scope: 'product',
  });
  const tatKey = (subject: string, p: RatePolicy) =>
    `{lss:rl:${subject}}:${p.name}:${p.limit}:${p.windowSeconds}:${p.burst}`;
  const subject = () => `s-${randomBytes(6).toString('hex')}`;

  beforeAll(async () => {
    if (!process.env.REDIS_KEY_PREFIX) throw new Error('run with `npm test` (REDIS_KEY_PREFIX)');
    redis = await testRedis(prefix);
    limiter = new RateLimiter(redis);
  });
  afterAll(async () => {
    await redis.quit();
  });

  it('all or nothing: a refusal by one policy consumes none of the others', async () => {
    const s = subject();
    const a = policy('a', 60, 60, 5);
    const b = policy('b', 1, 3600, 1);
    const first = await limiter.consume(s, [a, b]);
    expect(first.allowed).toBe(true);
    expect(first.states.map((x) => x.remaining)).toEqual([4, 0]);
    const tatA = await redis.get(tatKey(s, a));
    const tatB = await redis.get(tatKey(s, b));
    expect(tatA).not.toBeNull();
    expect(tatB).not.toBeNull();

    const refused = await limiter.consume(s, [a, b]);
    expect(refused.allowed).toBe(false);
    expect(refused.refusedBy).toBe(b);
    expect(refused.retryAfterSeconds).toBe(3600);
    // Reported as they stand, not as if this request had been counted.
    expect(refused.states.map((x) => x.remaining)).toEqual([4, 0]);
    expect(await redis.get(tatKey(s, a))).toBe(tatA);
    expect(await redis.get(tatKey(s, b))).toBe(tatB);

    const aAlone = await limiter.consume(s, [a]);
    expect(aAlone.allowed).toBe(true);
    expect(aAlone.states[0]!.remaining).toBe(3); // the second consumption of a, not the third
  });

  it('claims the Idempotency-Key lease in the same call only when every limit conforms', async () => {
    const s = subject();
    const a = policy('a', 60, 60, 2);
    const lease = (fingerprint: string, token: string) => ({
      keys: [`{lss:rl:${s}}:idem:1:lease:k`, `{lss:rl:${s}}:idem:1:done:k`] as [string, string],
      args: [fingerprint, token, 60_000] as [string, string, number],
    });
    const found = (d: { tail?: [string, number, string] }) => leaseFound(d.tail!);
    const first = await limiter.consume(s, [a], lease('fp1', 't1'));
    expect(found(first)).toEqual({ state: 'claimed', sameFingerprint: true });
    expect(await redis.get(`{lss:rl:${s}}:idem:1:lease:k`)).toBe('fp1:t1');
    const twin = await limiter.consume(s, [a], lease('fp1', 't2'));
    expect(found(twin)).toEqual({ state: 'in_progress', sameFingerprint: true });
    // The limit is exhausted now: nothing is claimed or read for the refused request.
    await redis.del(`{lss:rl:${s}}:idem:1:lease:k`);
    const refused = await limiter.consume(s, [a], lease('fp2', 't3'));
    expect(refused.allowed).toBe(false);
    expect(found(refused)).toEqual({ state: 'none', sameFingerprint: false });
    expect(await redis.get(`{lss:rl:${s}}:idem:1:lease:k`)).toBeNull();
    // A committed marker answers 'done', with whether the fingerprint matches.
    const s2 = subject();
    await redis.set(`{lss:rl:${s2}}:idem:1:done:k`, 'fp9');
    const done = await limiter.consume(s2, [a], {
      ...lease('fp8', 't4'),
      keys: [`{lss:rl:${s2}}:idem:1:lease:k`, `{lss:rl:${s2}}:idem:1:done:k`],
    });
    expect(found(done)).toEqual({ state: 'done', sameFingerprint: false });
  });

  it('reports the first refusing policy in the order given', async () => {
    const s = subject();
    const b = policy('b', 1, 3600, 1);
    const c = policy('c', 1, 60, 1);
    expect((await limiter.consume(s, [b])).allowed).toBe(true);
    expect((await limiter.consume(s, [c])).allowed).toBe(true);
    const bc = await limiter.consume(s, [b, c]);
    expect(bc.refusedBy).toBe(b);
    expect(bc.retryAfterSeconds).toBe(3600);
    const cb = await limiter.consume(s, [c, b]);
    expect(cb.refusedBy).toBe(c);
    expect(cb.retryAfterSeconds).toBe(60);
  });

  it('is atomic under concurrency: exactly the burst passes, and only the passing requests consume', async () => {
    const s = subject();
    const wide = policy('wide', 60, 60, 10);
    const narrow = policy('narrow', 60, 60, 3);
    const results = await Promise.all(Array.from({ length: 25 }, () => limiter.consume(s, [wide, narrow])));
    expect(results.filter((r) => r.allowed)).toHaveLength(3);
    expect(results.filter((r) => !r.allowed).every((r) => r.refusedBy === narrow)).toBe(true);
    // wide saw 3 consumptions, so 7 more pass alone and then it refuses.
    const alone = await Promise.all(Array.from({ length: 12 }, () => limiter.consume(s, [wide])));
    expect(alone.filter((r) => r.allowed)).toHaveLength(7);
  });

  it("many applications at once on the web role's client (coalesced writes; auto-pipelining on a cluster): each call answers for its own keys", async () => {
    // Regression (Redis Cluster): ioredis' auto-pipelining routes a command by its first argument,
    // which for these scripts is the key count; batched together, calls for applications on
    // different shards failed with "All keys in the pipeline should belong to the same slots
    // allocation group". One call per application and tick, as concurrent requests do.
    const piped = createRedis(testRedisTarget(), prefix, { coalesceWrites: true, commandTimeoutMs: 2000 });
    try {
      await redisReady(piped);
      const pipedLimiter = new RateLimiter(piped);
      const leases = new IdempotencyLeases(piped, { leaseMs: 60_000, ttlHours: 1 });
      const subjects = Array.from({ length: 40 }, () => String(1_000_000 + Math.floor(Math.random() * 1e9)));
      const p = policy('piped', 60, 60, 2);
      const asked = subjects.map((s) => leases.request(Number(s), 1, 'k', 'fp'));
      const decisions = await Promise.all(subjects.map((s, i) => pipedLimiter.consume(s, [p], asked[i]!.tail)));
      expect(decisions.map((d) => [d.allowed, d.states[0]!.remaining, d.tail && leaseFound(d.tail).state])).toEqual(
        subjects.map(() => [true, 1, 'claimed']),
      );
      const held = await Promise.all(
        subjects.map((s, i) =>
          leases.finish(
            { applicationId: Number(s), apiKeyId: 1, key: 'k', fingerprint: 'fp', token: asked[i]!.token },
            true,
          ),
        ),
      );
      expect(held).toEqual(subjects.map(() => true));
    } finally {
      await closeRedis(piped);
    }
  });

  it('keys expire once the policy is full again (no unbounded key growth)', async () => {
    const s = subject();
    const p = policy('ttl', 60, 60, 5);
    await limiter.consume(s, [p]);
    const ttl = await redis.pttl(tatKey(s, p));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(1001); // PX = time until the TAT is in the past, + 1 ms
  });

  it('keeps microsecond precision of the theoretical arrival time', async () => {
    const s = subject();
    const p = policy('precise', 3, 1, 1); // interval 333333 µs
    const t0 = (await redis.time()).map(Number);
    await limiter.consume(s, [p]);
    const tat = Number(await redis.get(tatKey(s, p)));
    const nowUs = t0[0]! * 1e6 + t0[1]!;
    expect(Number.isInteger(tat)).toBe(true);
    expect(tat - nowUs).toBeGreaterThanOrEqual(333_333);
    expect(tat - nowUs).toBeLessThan(333_333 + 1_000_000);
  });
});
