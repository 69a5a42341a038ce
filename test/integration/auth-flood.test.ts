// Issue 18 item 5 through HTTP, on the real MariaDB: 1,000 random well-formed keys from one client
// address cost a handful of key reads (the burst of the per-address limiter of failed
// authentications), the rest are answered 429 rate_limit_exceeded with Retry-After and
// details.scope client_address, and a real key keeps working from the cache without a read.
// Key reads are counted by a kysely plugin on the authenticator's own database handle.
//
// Issue 30 item 2: the client address is the one the trusted proxies saw (TRUST_PROXY is a hop
// count or an address list, never `true`), and a key seen valid recently is never throttled by the
// per-address limit. The tests play the PaaS router's part: it appends the address it saw to
// X-Forwarded-For, after whatever the client sent.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Express } from 'express';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult } from 'kysely';
import { generateApiKey } from '../../src/auth/api-key.ts';
import { Authenticator } from '../../src/auth/authenticator.ts';
import { AUTH_FAILURES } from '../../src/auth/failure-limiter.ts';
import { createApp } from '../../src/app.ts';
import { parseConfig } from '../../src/config/config.ts';
import { KeyIdIndex } from '../../src/auth/key-id-index.ts';
import { client, createTenant, startHarness, testEnv, type Harness } from '../helpers/harness.ts';
import { freePort } from '../helpers/processes.ts';

const MAC = { path: '/v2/lookups/mac', body: { value: 'F4:F5:E8:12:34:56' } };

/** Counts the queries that read api_keys. */
class KeyReads implements KyselyPlugin {
  count = 0;
  transformQuery(args: PluginTransformQueryArgs) {
    if (JSON.stringify(args.node).includes('"api_keys"')) this.count++;
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<Record<string, unknown>>> {
    return args.result;
  }
}

let h: Harness;
let app: Express;
const reads = new KeyReads();

beforeAll(async () => {
  h = await startHarness();
  // The app as deployed, but with a key cache (the harness turns it off) long enough to outlast the
  // flood on a loaded machine (the 5 s default did not: the real key was read again, then limited),
  // and counted reads.
  app = createApp({ ...h.deps, auth: new Authenticator(h.deps.db.withPlugin(reads), h.config.KEY_PEPPER, 120_000) });
});

afterAll(async () => {
  await h?.close();
});

describe('a flood of random well-formed keys from one address', () => {
  it('costs at most the burst in key reads; the rest are 429 with Retry-After; a real key stays cached', async () => {
    const t = await createTenant(h, {
      limits: {
        app: { perMinute: 100_000, burst: 10_000 },
        products: { 'lookup.mac.v1': { perMinute: 100_000, perHour: 1_000_000 } },
      },
    });
    expect((await client(app, t.key).post(MAC.path, MAC.body)).status).toBe(200);
    const base = reads.count;

    const statuses = new Map<number, number>();
    let throttled: { headers: Record<string, string>; body: { error: Record<string, unknown> } } | undefined;
    for (let batch = 0; batch < 20; batch++) {
      const replies = await Promise.all(
        Array.from({ length: 50 }, () => client(app, generateApiKey().key).post(MAC.path, MAC.body)),
      );
      for (const r of replies) {
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        if (r.status === 429) throttled = r;
      }
    }
    const unknownReads = reads.count - base;
    expect(unknownReads).toBeLessThanOrEqual(AUTH_FAILURES.burst + 2);
    expect([...statuses.keys()].sort()).toEqual([401, 429]);
    expect(statuses.get(429)).toBeGreaterThanOrEqual(1000 - AUTH_FAILURES.burst - 2);
    expect(throttled!.body.error).toMatchObject({
      code: 'rate_limit_exceeded',
      status: 429,
      retryable: true,
      details: { scope: 'client_address', policy: 'auth_failures' },
    });
    expect(Number(throttled!.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(throttled!.headers['x-request-id']).toMatch(/^req_/);

    // The real key, from the same address: answered from the cache, no read, no 429.
    const again = await client(app, t.key).post(MAC.path, MAC.body);
    expect(again.status).toBe(200);
    expect(reads.count - base).toBe(unknownReads);
    // A malformed key is still a plain 401 (no read was ever at stake).
    expect((await client(app, 'lsk_nope').post(MAC.path, MAC.body)).status).toBe(401);
  }, 60_000);
});

describe("behind one proxy (TRUST_PROXY=1, as behind Heroku's router)", () => {
  const behindRouter = () => {
    const config = { ...h.config, TRUST_PROXY: parseConfig({ ...process.env, TRUST_PROXY: '1' }).TRUST_PROXY };
    // No key cache: every request of a valid key reads, so only the limiter's own rule can spare it.
    return createApp({
      ...h.deps,
      config,
      auth: new Authenticator(h.deps.db.withPlugin(reads), h.config.KEY_PEPPER, 0),
    });
  };
  /** A request as the router forwards it: what the client sent in X-Forwarded-For, then the client's address. */
  const viaRouter = (a: Express, key: string, clientSays: string, clientIs: string) =>
    client(a, key).post(MAC.path, MAC.body, { 'X-Forwarded-For': `${clientSays}, ${clientIs}` });

  it('rotating X-Forwarded-For does not get around the limit: the address is the one the router saw', async () => {
    const a = behindRouter();
    const base = reads.count;
    const statuses: number[] = [];
    for (let batch = 0; batch < 4; batch++) {
      const replies = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          viaRouter(a, generateApiKey().key, `198.51.100.${(batch * 50 + i) % 250}`, '127.0.0.41'),
        ),
      );
      statuses.push(...replies.map((r) => r.status));
    }
    // With TRUST_PROXY=true each rotated address had its own allowance: 200 reads, no 429.
    expect(reads.count - base).toBeLessThanOrEqual(AUTH_FAILURES.burst + 2);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(200 - AUTH_FAILURES.burst - 2);
  }, 60_000);

  it("a flood from the victim's address (spoofed, or the same NAT) does not lock out the victim's valid key", async () => {
    const a = behindRouter();
    const victim = await createTenant(h);
    // The victim's key is used once: seen valid.
    expect((await viaRouter(a, victim.key, '10.1.2.3', '127.0.0.42')).status).toBe(200);
    // The attacker sends random keys that reach the service as from the victim's address.
    for (let batch = 0; batch < 3; batch++) {
      const replies = await Promise.all(
        Array.from({ length: 20 }, () => viaRouter(a, generateApiKey().key, '127.0.0.42', '127.0.0.42')),
      );
      expect(replies.every((r) => r.status === 401 || r.status === 429)).toBe(true);
    }
    const denied = await viaRouter(a, generateApiKey().key, '127.0.0.42', '127.0.0.42');
    expect(denied.status).toBe(429);
    // The victim's key, from that exhausted address, with no cache to hide behind: still served.
    const before = reads.count;
    const mine = await viaRouter(a, victim.key, '127.0.0.42', '127.0.0.42');
    expect(mine.status).toBe(200);
    expect(reads.count - before).toBe(1);
    // And a key never seen valid from that address is still throttled: the rule spares known keys only.
    expect((await viaRouter(a, generateApiKey().key, '127.0.0.42', '127.0.0.42')).status).toBe(429);
  }, 60_000);
});

// Issue 45 item 3: a fuzz of invalid keys from 127.0.0.1 was followed by 429 "Too many failed
// authentications from this client address" for a valid key of another workspace on its first
// uses (the cache of recently valid keys is per process and empty after a deploy). A key's public
// id (its first 8 random characters) must be one that was issued (src/auth/key-id-index.ts): an
// id never issued is refused without a read and spends no address's allowance; the allowance
// bounds reads of ids that exist.

/** A well-formed key (checksum right) whose first 8 random characters are `id`. */
function keyWithId(id: string): string {
  const rest = generateApiKey().key.slice(4 + id.length, 4 + 32);
  const body = `lsk_${id}${rest}`;
  let n = crc32(body);
  let sum = '';
  for (let i = 0; i < 6; i++) {
    sum = BASE62[n % 62]! + sum;
    n = Math.floor(n / 62);
  }
  return `${body}_${sum}`;
}
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

describe('issued key ids: a flood of never-issued keys throttles nobody (issue 45 item 3)', () => {
  it('never-issued ids: 401 without a read and no 429; a never-seen valid key then works at once', async () => {
    const idReads = new KeyReads();
    // As deployed (bootstrap.ts), with no key cache: every valid key's use is a read.
    const a = createApp({
      ...h.deps,
      auth: new Authenticator(h.deps.db.withPlugin(idReads), h.config.KEY_PEPPER, 0, {
        keyIds: new KeyIdIndex(h.deps.db, h.deps.redis),
      }),
    });
    const statuses = new Map<number, number>();
    for (let batch = 0; batch < 10; batch++) {
      const replies = await Promise.all(
        Array.from({ length: 50 }, () => client(a, generateApiKey().key).post(MAC.path, MAC.body)),
      );
      for (const r of replies) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    }
    expect(Object.fromEntries(statuses)).toEqual({ 401: 500 });
    expect(idReads.count).toBe(0);
    // A key created after the flood (never seen by this process), of another workspace.
    const other = await createTenant(h);
    for (let i = 0; i < 3; i++) expect((await client(a, other.key).post(MAC.path, MAC.body)).status).toBe(200);
    expect(idReads.count).toBe(3);
  }, 60_000);

  it("an issued id with a wrong rest costs reads, bounded per address and id; another id's valid key is not refused", async () => {
    const idReads = new KeyReads();
    const a = createApp({
      ...h.deps,
      auth: new Authenticator(h.deps.db.withPlugin(idReads), h.config.KEY_PEPPER, 0, {
        keyIds: new KeyIdIndex(h.deps.db, h.deps.redis),
      }),
    });
    const target = await createTenant(h);
    const id = target.key.slice(4, 12);
    const statuses: number[] = [];
    for (let batch = 0; batch < 3; batch++) {
      const replies = await Promise.all(
        Array.from({ length: 20 }, () => client(a, keyWithId(id)).post(MAC.path, MAC.body)),
      );
      statuses.push(...replies.map((r) => r.status));
    }
    expect(idReads.count).toBeLessThanOrEqual(AUTH_FAILURES.burst + 2);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(60 - AUTH_FAILURES.burst - 2);
    // From the same exhausted address: a valid key of another id is read and served.
    const other = await createTenant(h);
    expect((await client(a, other.key).post(MAC.path, MAC.body)).status).toBe(200);
  }, 60_000);

  it('the index is shared through Redis and rebuilt from MySQL when Redis lost it', async () => {
    const t = await createTenant(h);
    const first = new KeyIdIndex(h.deps.db, h.deps.redis);
    expect(await first.issued(t.key.slice(4, 12))).toBe(true);
    await h.deps.redis.del('{lss:auth}:key-ids', '{lss:auth}:key-ids:scanned');
    const restarted = new KeyIdIndex(h.deps.db, h.deps.redis);
    await restarted.start();
    expect(restarted.size).toBeGreaterThan(0);
    expect(await restarted.issued(t.key.slice(4, 12))).toBe(true);
    expect(await restarted.issued('zzzzzzzz')).toBe(false);
  }, 30_000);
});

/** One request on its own connection: the cluster primary hands each connection to the next worker. */
function post(port: number, key: string): Promise<number> {
  const body = JSON.stringify(MAC.body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: MAC.path,
        agent: false,
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'idempotency-key': `k-${Math.random().toString(36).slice(2)}`,
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.setTimeout(30_000, () => req.destroy(new Error('request timed out')));
    req.end(body);
  });
}

describe('the web role as deployed (2 workers): a flood, then a never-seen valid key through every worker', () => {
  let child: ChildProcess | undefined;
  let port = 0;
  let stdout = '';
  beforeAll(async () => {
    port = await freePort();
    let metricsPort: number;
    do metricsPort = await freePort();
    while (metricsPort === port);
    const env = testEnv({
      WEB_CONCURRENCY: '2',
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      LOG_LEVEL: 'info',
    });
    child = spawn(process.execPath, ['src/server.ts'], {
      cwd: path.resolve(import.meta.dirname, '../..'),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    const deadline = Date.now() + 90_000;
    while ((stdout.match(/web worker listening/g) ?? []).length < 2) {
      if (Date.now() > deadline) throw new Error(`web role did not start\n${stdout.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 100_000);
  afterAll(() => {
    if (child?.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });

  it('no 429 for the valid key on its first uses, on either worker', async () => {
    const flood: number[] = [];
    for (let batch = 0; batch < 6; batch++)
      flood.push(...(await Promise.all(Array.from({ length: 40 }, () => post(port, generateApiKey().key)))));
    expect(flood.every((s) => s === 401 || s === 429)).toBe(true);
    const victim = await createTenant(h, {
      limits: {
        app: { perMinute: 100_000, burst: 10_000 },
        products: { 'lookup.mac.v1': { perMinute: 100_000, perHour: 1_000_000 } },
      },
    });
    const mine: number[] = [];
    for (let i = 0; i < 6; i++) mine.push(await post(port, victim.key));
    expect(mine).toEqual([200, 200, 200, 200, 200, 200]);
  }, 60_000);
});
