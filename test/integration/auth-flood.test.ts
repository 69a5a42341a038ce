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
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Express } from 'express';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult } from 'kysely';
import { generateApiKey } from '../../src/auth/api-key.ts';
import { Authenticator } from '../../src/auth/authenticator.ts';
import { AUTH_FAILURES } from '../../src/auth/failure-limiter.ts';
import { createApp } from '../../src/app.ts';
import { parseConfig } from '../../src/config/config.ts';
import { client, createTenant, startHarness, type Harness } from '../helpers/harness.ts';

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
