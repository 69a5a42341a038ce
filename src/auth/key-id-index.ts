// Which key ids were ever issued, known without a database read. A key's id is its public part,
// the first 8 of its 32 random characters (CONTRACT §2: the display hint, stored with every key
// since the first one, so every existing key has one). A well-formed key whose id was never issued
// is refused here, at memory speed, without a MySQL read and without spending any client
// address's allowance of failed reads (failure-limiter.ts): a flood of random keys from an
// address shared with real clients (a NAT, a proxy) then throttles nobody. Random ids collide with
// an issued one once in 62^8 / (keys issued) tries.
//
// The index: every web worker holds the ids in memory; Redis holds them for all workers, in a
// sorted set scored by the key's row id ({lss:auth}:key-ids), beside the Redis TIME at which the
// last scan of MySQL started ({lss:auth}:key-ids:scanned). A scan reads only rows above the
// highest id in the set (`api_keys` by primary key, at most SCAN_PAGE rows a read), so a worker
// that starts, or finds the set gone (a flushed Redis), rebuilds it with the same code. One
// worker of the whole deployment scans at a time, and at most once per SCAN_INTERVAL_MS (a lock
// left to expire): whatever the flood, MySQL sees a few indexed reads a second.
//
// An id this worker does not know is decided by a scan that started after it was asked: a key the
// admin CLI created a moment ago is found, never refused for being new; a random one waits for
// that scan (a few hundred milliseconds) and is refused. Revoked keys stay in the index: their id
// was issued, and the database says revoked.
import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { RedisClient } from '../redis/client.ts';

/** The public part of a key (CONTRACT §2's display hint): its first 8 random characters. */
export function keyIdOf(key: string): string {
  return key.slice(4, 12);
}

const KEYS = {
  ids: '{lss:auth}:key-ids',
  scanned: '{lss:auth}:key-ids:scanned',
  lock: '{lss:auth}:key-ids:lock',
} as const;

export const KEY_INDEX = {
  /** Least time between two scans of MySQL, deployment-wide. */
  scanIntervalMs: 100,
  /** A scan that takes longer than this no longer holds the lock. */
  scanLockMs: 5000,
  /** Rows per read of a scan. */
  scanPage: 5000,
  /**
   * A scan starts this many ids below the highest in the set: two keys created at once may commit
   * out of id order, and the later id must not hide the earlier one (adding an id twice is a no-op).
   */
  scanOverlap: 100,
  /** How long an asker waits for a scan that started after it asked, polling every pollMs. */
  waitMs: 10_000,
  pollMs: 25,
} as const;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const READ_LUA = readFileSync(new URL('./readKeyIds-2.lua', import.meta.url), 'utf8');
type WithRead = RedisClient & {
  readKeyIds(ids: string, scanned: string, after: number): Promise<Array<string | number>>;
};

export class KeyIdIndex {
  readonly #db: Db;
  readonly #redis: RedisClient;
  readonly #known = new Set<string>();
  /** Highest row id this worker has read from the set. */
  #maxId = 0;

  constructor(db: Db, redis: RedisClient) {
    this.#db = db;
    this.#redis = redis;
    // defineCommand caches the script by SHA (EVALSHA, falling back to EVAL) and applies keyPrefix.
    if (!('readKeyIds' in redis)) redis.defineCommand('readKeyIds', { numberOfKeys: 2, lua: READ_LUA });
  }

  /** Ids known to this worker (tests, diagnostics). */
  get size(): number {
    return this.#known.size;
  }

  /** At start: the set brought up to date with MySQL (rebuilt when gone) and read into memory. */
  async start(): Promise<void> {
    const { now, scanned } = await this.#sync();
    if (scanned < now) await this.#scanAfter(now);
  }

  /** Whether `id` was ever issued; throws when neither Redis nor MySQL can say. */
  async issued(id: string): Promise<boolean> {
    if (this.#known.has(id)) return true;
    const { now } = await this.#sync();
    if (this.#known.has(id)) return true;
    return this.#scanAfter(now, id);
  }

  /**
   * Waits for a scan that started at or after `asked` (Redis time, ms), making it when the lock
   * is free; then whether `id` (if given) is known.
   */
  async #scanAfter(asked: number, id?: string): Promise<boolean> {
    const deadline = Date.now() + KEY_INDEX.waitMs;
    for (;;) {
      const got = await this.#redis.set(KEYS.lock, '1', 'PX', KEY_INDEX.scanLockMs, 'NX');
      if (got === 'OK') await this.#scan();
      const { scanned } = await this.#sync();
      if (id !== undefined && this.#known.has(id)) return true;
      if (scanned >= asked) return false;
      if (Date.now() > deadline) throw new Error('key id index: no scan of the keys table completed in time');
      await sleep(KEY_INDEX.pollMs);
    }
  }

  /** One scan of MySQL: rows above the set's highest id, added; then the lock expires soon. */
  async #scan(): Promise<void> {
    try {
      const startedAt = await this.#redisTime();
      let from = Math.max(0, (await this.#setMaxId()) - KEY_INDEX.scanOverlap);
      for (;;) {
        const rows = await sql<{ id: number; hint: string }>`
          SELECT id, hint FROM api_keys WHERE id > ${from} ORDER BY id LIMIT ${KEY_INDEX.scanPage}`.execute(this.#db);
        if (rows.rows.length === 0) break;
        const args: Array<string | number> = [];
        for (const r of rows.rows) args.push(Number(r.id), r.hint);
        await this.#redis.zadd(KEYS.ids, ...args);
        from = Number(rows.rows.at(-1)!.id);
        if (rows.rows.length < KEY_INDEX.scanPage) break;
      }
      await this.#redis.set(KEYS.scanned, String(startedAt));
    } finally {
      await this.#redis.pexpire(KEYS.lock, KEY_INDEX.scanIntervalMs).catch(() => {});
    }
  }

  /**
   * New ids of the set into memory, in one round trip (readKeyIds-2.lua) with Redis's time (ms)
   * at the read and when the last completed scan started.
   */
  async #sync(): Promise<{ now: number; scanned: number }> {
    const out = await (this.#redis as WithRead).readKeyIds(KEYS.ids, KEYS.scanned, this.#maxId);
    for (let i = 2; i < out.length; i += 2) {
      this.#known.add(String(out[i]));
      this.#maxId = Math.max(this.#maxId, Number(out[i + 1]));
    }
    return { now: Number(out[0]), scanned: Number(out[1]) };
  }

  async #setMaxId(): Promise<number> {
    const top = await this.#redis.zrange(KEYS.ids, '-1', '-1', 'WITHSCORES');
    return top.length === 2 ? Number(top[1]) : 0;
  }

  /** TIME of the node that holds the index (a Redis Cluster's nodes keep their own clocks). */
  async #redisTime(): Promise<number> {
    const [s, us] = (await this.#redis.eval("return redis.call('TIME')", 1, KEYS.scanned)) as [string, string];
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  }
}
