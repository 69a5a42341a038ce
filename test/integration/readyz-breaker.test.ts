// Issue 31, item 8: /readyz must not stick, and must not wait on MySQL past its breaker.
//   - The probe of the MySQL breaker allowed 1 s where the check that opened it allowed 2 s: a
//     MySQL answering in 1.3 s passes the check, but once a blip opened the breaker every probe
//     failed and /readyz answered 503 for as long as MySQL stayed that slow.
//   - The migrations read ran beside the MySQL check whatever the breaker said, unbounded: with
//     MySQL hanging, each /readyz poll waited on it although the breaker already said `down`.
// The real app over the run's MariaDB, reached through a loopback relay that can slow its answers.
//
// And a process just started: its Redis client is not ready before a few round trips (on a cluster
// the slots, then CLUSTER INFO), and until then commands fail at once (no offline queue). /readyz
// polled in that window read a healthy Redis as `down` (faults.test.ts failed so once in a full
// run's cluster pass). Its check now waits for the first connection, within the check's bound.
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { startLatencyRelay, type LatencyRelay } from '../helpers/latency-relay.ts';
import { CHECK_TIMEOUT_MS } from '../../src/routes/health.ts';

let relay: LatencyRelay;
let h: Harness;

beforeAll(async () => {
  if (!process.env.DATABASE_URL) throw new Error('needs DATABASE_URL: run with `npm test`');
  const db = new URL(process.env.DATABASE_URL);
  relay = await startLatencyRelay({ host: db.hostname, port: Number(db.port || 3306) });
  db.hostname = '127.0.0.1';
  db.port = String(relay.port);
  h = await startHarness({ DATABASE_URL: db.toString() });
});

afterAll(async () => {
  relay?.setDelay(0);
  await h?.close();
  await relay?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function within(ms: number, fn: () => boolean): Promise<number | null> {
  const t0 = performance.now();
  while (performance.now() - t0 < ms) {
    if (fn()) return performance.now() - t0;
    await sleep(25);
  }
  return null;
}

describe('/readyz and the MySQL breaker', () => {
  it('a MySQL that hangs: /readyz answers at once while the breaker is open (the migrations read waits behind it)', async () => {
    expect((await supertest(h.app).get('/readyz')).status).toBe(200);
    const breaker = h.deps.dependencies!.mysql;
    relay.setDelay(CHECK_TIMEOUT_MS + 3000); // MySQL accepts and answers far past the check's bound
    const first = await supertest(h.app).get('/readyz');
    expect(first.status).toBe(503);
    expect(first.body.checks).toMatchObject({ mysql: 'down', migrations: 'unknown' });
    expect(breaker.isOpen()).toBe(true);
    // Open: neither the ping nor the migrations read is waited on.
    const t0 = performance.now();
    const second = await supertest(h.app).get('/readyz');
    expect(second.status).toBe(503);
    expect(second.body.checks).toMatchObject({ mysql: 'down', migrations: 'unknown' });
    expect(performance.now() - t0, 'answered from the breaker').toBeLessThan(CHECK_TIMEOUT_MS / 2);
    // Let the delayed answers drain before the next test changes the delay.
    relay.setDelay(0);
  }, 60_000);

  it('a MySQL slower than 1 s but within the 2 s check: the breaker closes again on its own', async () => {
    const breaker = h.deps.dependencies!.mysql;
    // The hung answers of the test before drain; the pool's connections are then idle again.
    expect(await within(15_000, () => breaker.state === 'closed')).not.toBeNull();
    for (let i = 0; i < 3; i++) expect((await supertest(h.app).get('/readyz')).status).toBe(200);
    relay.setDelay(CHECK_TIMEOUT_MS + 1000); // a blip: the check fails, the breaker opens
    const blip = await supertest(h.app).get('/readyz');
    expect(blip.body.checks.mysql).toBe('down');
    expect(breaker.isOpen()).toBe(true);
    await sleep(CHECK_TIMEOUT_MS + 1500); // the blip's answers drain
    relay.setDelay(1300); // slow, but within the check's bound
    const closedAfter = await within(8000, () => breaker.state === 'closed');
    expect(closedAfter, 'the probe passes what the check passes').not.toBeNull();
    const ready = await supertest(h.app).get('/readyz');
    expect(ready.status, JSON.stringify(ready.body.checks)).toBe(200);
    expect(ready.body.checks).toEqual({ mysql: 'ok', redis: 'ok', migrations: 'current' });
  }, 60_000);
});

describe('/readyz and a Redis client still making its first connection', () => {
  let redisRelay: LatencyRelay | undefined;
  let fresh: Harness | undefined;

  afterAll(async () => {
    await fresh?.close();
    await redisRelay?.stop();
  });

  it('a process just started, its Redis answering 400 ms late: the first /readyz waits for the connection and says redis ok', async () => {
    if (!process.env.REDIS_URL) throw new Error('needs REDIS_URL (the single-Redis pass): run with `npm test`');
    const redis = new URL(process.env.REDIS_URL);
    redisRelay = await startLatencyRelay({ host: redis.hostname, port: Number(redis.port || 6379) });
    redisRelay.setDelay(400); // the client's ready check (INFO) comes back 400 ms after it connected
    redis.hostname = '127.0.0.1';
    redis.port = String(redisRelay.port);
    fresh = await startHarness({ REDIS_URL: redis.toString() });
    expect(fresh.deps.redis.status, 'polled before the client is ready').not.toBe('ready');
    const ready = await supertest(fresh.app).get('/readyz');
    expect(ready.body.checks).toEqual({ mysql: 'ok', redis: 'ok', migrations: 'current' });
    expect(ready.status).toBe(200);
    expect(fresh.deps.dependencies!.redis.state).toBe('closed');
  }, 30_000);
});
