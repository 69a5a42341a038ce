// Issue 18 item 5: random well-formed keys (the checksum is public) must neither cost a database
// read each nor push real keys out of the cache. Unknown keys have a negative cache of their own,
// and reads for unknown keys are limited per client address before they happen. The database is
// a stand-in that answers the authenticator's one query and counts it; the real query against
// MariaDB is covered by test/integration/auth-flood.test.ts.
import { describe, expect, it } from 'vitest';
import { generateApiKey, hashApiKey } from '../../src/auth/api-key.ts';
import { AuthThrottledError, Authenticator, NEGATIVE_CACHE } from '../../src/auth/authenticator.ts';
import { AUTH_FAILURES, FailureLimiter, RecentlyValidKeys, clientBlock } from '../../src/auth/failure-limiter.ts';
import type { Db } from '../../src/db/database.ts';

const PEPPER = 'pepper-0123456789abcdefghijklmnopqrstuvwxyz';

/**
 * A query builder stand-in: every builder method returns itself; the key-hash `where` is noted;
 * executeTakeFirst answers the api_keys read (a row for a known hash) and counts it; execute
 * answers the approved-scopes read with none.
 */
function fakeDb(known: Buffer[]): { db: Db; reads: () => number } {
  let reads = 0;
  const make = (): unknown => {
    let hash: Buffer | null = null;
    const builder: Record<string, unknown> = {};
    const proxy: unknown = new Proxy(builder, {
      get(_t, prop) {
        if (prop === 'then') return undefined;
        if (prop === 'where')
          return (col: string, _op: string, value: unknown) => {
            if (col === 'k.key_hash') hash = value as Buffer;
            return proxy;
          };
        if (prop === 'executeTakeFirst')
          return async () => {
            reads++;
            if (!hash || !known.some((k) => k.equals(hash!))) return undefined;
            return {
              keyId: 1,
              scopes: 'scan:create,scan:read',
              monthly_credit_limit: null,
              revoked_at: null,
              applicationId: 1,
              applicationPublicId: 'app_x',
              rate_limits: null,
              workspaceId: 1,
              active_capability: 0,
              responsible_use_version: null,
            };
          };
        if (prop === 'execute') return async () => [];
        return () => proxy;
      },
    });
    return proxy;
  };
  const db = new Proxy({}, { get: (_t, prop) => (prop === 'selectFrom' ? () => make() : undefined) }) as Db;
  return { db, reads: () => reads };
}

describe('Authenticator caches', () => {
  it('a real key stays cached however many unknown keys are tried (they have their own cache)', async () => {
    const real = generateApiKey().key;
    const { db, reads } = fakeDb([hashApiKey(real, PEPPER)]);
    const auth = new Authenticator(db, PEPPER, 60_000);
    expect(await auth.verify(real)).toMatchObject({ workspaceId: 1 });
    const afterReal = reads();
    // More unknown keys than either cache holds.
    for (let i = 0; i < NEGATIVE_CACHE.entries + 50; i++) expect(await auth.verify(generateApiKey().key)).toBeNull();
    const before = reads();
    expect(await auth.verify(real)).toMatchObject({ workspaceId: 1 });
    expect(reads() - before, 'the real key was answered from the cache').toBe(0);
    expect(before - afterReal).toBe(NEGATIVE_CACHE.entries + 50);
  });

  it('an unknown key is read once, then answered from the negative cache', async () => {
    const { db, reads } = fakeDb([]);
    const auth = new Authenticator(db, PEPPER, 0); // even with the positive cache off
    const key = generateApiKey().key;
    for (let i = 0; i < 100; i++) expect(await auth.verify(key, '192.0.2.7')).toBeNull();
    expect(reads()).toBe(1);
  });

  it('1,000 random well-formed keys from one address cost at most the burst in reads; the rest are throttled with Retry-After', async () => {
    const real = generateApiKey().key;
    const { db, reads } = fakeDb([hashApiKey(real, PEPPER)]);
    const auth = new Authenticator(db, PEPPER, 60_000);
    expect(await auth.verify(real, '198.51.100.1')).not.toBeNull();
    const base = reads();
    let refused = 0;
    let retryAfter = 0;
    // Concurrently, in batches: a read in flight already holds its unit.
    for (let b = 0; b < 20; b++) {
      const outcomes = await Promise.allSettled(
        Array.from({ length: 50 }, () => auth.verify(generateApiKey().key, '198.51.100.1')),
      );
      for (const o of outcomes) {
        if (o.status === 'fulfilled') expect(o.value).toBeNull();
        else {
          expect(o.reason).toBeInstanceOf(AuthThrottledError);
          refused++;
          retryAfter = (o.reason as AuthThrottledError).retryAfterSeconds;
        }
      }
    }
    expect(reads() - base).toBeLessThanOrEqual(AUTH_FAILURES.burst + 1);
    expect(refused).toBeGreaterThanOrEqual(1000 - AUTH_FAILURES.burst - 1);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    // The real key is still answered (from the cache: no read, no throttle), from the same address.
    expect(await auth.verify(real, '198.51.100.1')).toMatchObject({ workspaceId: 1 });
    // Another address is not affected.
    expect(await auth.verify(generateApiKey().key, '198.51.100.2')).toBeNull();
  });

  it('valid keys never use up the allowance (their unit is given back)', async () => {
    const keys = Array.from({ length: 40 }, () => generateApiKey().key);
    const { db } = fakeDb(keys.map((k) => hashApiKey(k, PEPPER)));
    const auth = new Authenticator(db, PEPPER, 0); // every verify reads
    for (let round = 0; round < 3; round++)
      for (const k of keys) expect(await auth.verify(k, '203.0.113.9')).not.toBeNull();
  });
});

describe('client addresses: IPv6 by its /64 (issue 45 item 6)', () => {
  it('clientBlock: IPv4 as it is (mapped too), IPv6 by its /64 however it is written', () => {
    expect(clientBlock('198.51.100.7')).toBe('198.51.100.7');
    expect(clientBlock('::ffff:198.51.100.7')).toBe('198.51.100.7');
    expect(clientBlock('2001:db8:0:1::1')).toBe('2001:db8:0:1::/64');
    expect(clientBlock('2001:DB8:0000:0001:ffff:1:2:3')).toBe('2001:db8:0:1::/64');
    expect(clientBlock('[2001:db8::1%eth0]')).toBe('2001:db8:0:0::/64');
    expect(clientBlock('::1')).toBe('0:0:0:0::/64');
  });

  it('rotating addresses inside one /64 gets no fresh allowance; another /64 is not affected', async () => {
    const { db, reads } = fakeDb([]);
    const auth = new Authenticator(db, PEPPER, 0);
    let refused = 0;
    for (let i = 1; i <= 200; i++) {
      try {
        await auth.verify(generateApiKey().key, `2001:db8:0:1::${i.toString(16)}`);
      } catch (err) {
        expect(err).toBeInstanceOf(AuthThrottledError);
        refused++;
      }
    }
    expect(reads()).toBeLessThanOrEqual(AUTH_FAILURES.burst + 1);
    expect(refused).toBeGreaterThanOrEqual(200 - AUTH_FAILURES.burst - 1);
    expect(await auth.verify(generateApiKey().key, '2001:db8:0:2::1')).toBeNull();
  });
});

describe('FailureLimiter (GCRA)', () => {
  it(`allows a burst of ${AUTH_FAILURES.burst}, then ${AUTH_FAILURES.perMinute} a minute, with an exact Retry-After`, () => {
    const l = new FailureLimiter();
    const t0 = 1_000_000;
    for (let i = 0; i < AUTH_FAILURES.burst; i++) expect(l.take('a', t0).allowed).toBe(true);
    expect(l.take('a', t0)).toEqual({ allowed: false, retryAfterSeconds: 3 });
    expect(l.take('a', t0 + 2999).allowed).toBe(false);
    expect(l.take('a', t0 + 3000).allowed).toBe(true);
    expect(l.take('a', t0 + 3000).allowed).toBe(false);
    // A refund gives exactly one unit back.
    l.refund('a', t0 + 3000);
    expect(l.take('a', t0 + 3000).allowed).toBe(true);
  });

  it('tracks at most `addresses` addresses, least recently used out first', () => {
    const l = new FailureLimiter({ addresses: 100 });
    for (let i = 0; i < 1000; i++) l.take(`10.0.${i >> 8}.${i & 255}`, 0);
    expect(l.size).toBe(100);
  });
});

describe('RecentlyValidKeys: keys the per-address limit never throttles (issue 30)', () => {
  it('remembers a valid key for its time, at most `entries` keys, and forgets a key found revoked', () => {
    const v = new RecentlyValidKeys({ entries: 3, ttlMs: 1000 });
    v.add('k1', 0);
    expect(v.has('k1', 999)).toBe(true);
    expect(v.has('k1', 1000)).toBe(false);
    for (const k of ['a', 'b', 'c', 'd']) v.add(k, 2000);
    expect([v.size, v.has('a', 2000), v.has('d', 2000)]).toEqual([3, false, true]);
    v.delete('d');
    expect(v.has('d', 2000)).toBe(false);
  });

  it('an exhausted address still reads a known valid key, and forgets it once it is found revoked', async () => {
    const good = generateApiKey().key;
    const known = [hashApiKey(good, PEPPER)];
    const { db, reads } = fakeDb(known);
    const auth = new Authenticator(db, PEPPER, 0);
    expect(await auth.verify(good, '198.51.100.1')).not.toBeNull();
    for (let i = 0; i < AUTH_FAILURES.burst; i++) await auth.verify(generateApiKey().key, '198.51.100.1');
    await expect(auth.verify(generateApiKey().key, '198.51.100.1')).rejects.toBeInstanceOf(AuthThrottledError);
    const before = reads();
    expect(await auth.verify(good, '198.51.100.1')).not.toBeNull();
    expect(reads() - before).toBe(1);
    known.length = 0; // revoked
    expect(await auth.verify(good, '198.51.100.1')).toBeNull();
  });
});
