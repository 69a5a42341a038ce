// redisScript (src/redis/client.ts): a Lua script sent as a plain EVALSHA, and as EVAL when Redis
// does not know it yet, with the client's key prefix on its keys; single node and cluster alike.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { closeRedis, redisScript, type RedisClient } from '../../src/redis/client.ts';
import { testPrefix, testRedis } from '../helpers/redis.ts';

const opened: RedisClient[] = [];
afterAll(async () => {
  await Promise.all(opened.map((c) => closeRedis(c).catch(() => {})));
});

describe('redisScript', () => {
  it('runs a script Redis has never seen (NOSCRIPT, then EVAL), then by its digest', async () => {
    const prefix = testPrefix('script');
    const redis = await testRedis(prefix);
    opened.push(redis);
    // A script no Redis has loaded: its digest is new, so the first EVALSHA meets NOSCRIPT.
    const lua = `-- ${randomBytes(8).toString('hex')}\nredis.call('INCR', KEYS[1]); return {KEYS[1], ARGV[1], redis.call('GET', KEYS[1])}`;
    const run = redisScript(redis, lua);
    const tag = `{t${randomBytes(3).toString('hex')}}`;
    expect(await run(1, `${tag}:n`, 'a')).toEqual([`${prefix}${tag}:n`, 'a', '1']);
    expect(await run(1, `${tag}:n`, 2)).toEqual([`${prefix}${tag}:n`, '2', '2']);
    expect(await redis.get(`${tag}:n`)).toBe('2');
  });

  it('rejects with the script error, once', async () => {
    const redis = await testRedis(testPrefix('script'));
    opened.push(redis);
    const run = redisScript(redis, `return redis.error_reply('ERR no such thing ${randomBytes(4).toString('hex')}')`);
    await expect(run(0)).rejects.toThrow(/no such thing/);
  });
});
