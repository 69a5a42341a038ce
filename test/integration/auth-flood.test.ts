// Issue 18 item 5 through HTTP, on the real MariaDB: 1,000 random well-formed keys from one client
// address cost a handful of key reads (the burst of the per-address limiter of failed
// authentications), the rest are answered 429 rate_limit_exceeded with Retry-After and
// details.scope client_address, and a real key keeps working from the cache without a read.
// Key reads are counted by a kysely plugin on the authenticator's own database handle.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Express } from 'express';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult } from 'kysely';
import { generateApiKey } from '../../src/auth/api-key.ts';
import { Authenticator } from '../../src/auth/authenticator.ts';
import { AUTH_FAILURES } from '../../src/auth/failure-limiter.ts';
import { createApp } from '../../src/app.ts';
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
