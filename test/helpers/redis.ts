// The run's Redis as the tests see it: a single node (REDIS_URL) or a Redis Cluster
// (REDIS_CLUSTER_NODES, the cluster pass of ops/test.ts). Suites take everything Redis-shaped from
// here, so the same file runs unchanged against both.
import { randomBytes } from 'node:crypto';
import {
  createRedis,
  redisReady,
  redisTargetFromEnv,
  type RedisClient,
  type RedisTarget,
} from '../../src/redis/client.ts';

/** True in the cluster pass. */
export function onCluster(): boolean {
  return Boolean(process.env.REDIS_CLUSTER_NODES);
}

export function hasRedis(): boolean {
  return Boolean(process.env.REDIS_URL || process.env.REDIS_CLUSTER_NODES);
}

export function testRedisTarget(): RedisTarget {
  if (!hasRedis()) throw new Error('needs REDIS_URL or REDIS_CLUSTER_NODES: run with `npm test`');
  return redisTargetFromEnv(process.env);
}

/** A key prefix under the run's (ops/test.ts deletes those keys), unique to this caller. */
export function testPrefix(tag: string): string {
  return `${process.env.REDIS_KEY_PREFIX ?? ''}${tag}:${randomBytes(4).toString('hex')}:`;
}

/** A ready client of the run's Redis under `prefix`; errors are left to the commands. */
export async function testRedis(prefix: string): Promise<RedisClient> {
  const redis = createRedis(testRedisTarget(), prefix);
  redis.on('error', () => {});
  await redisReady(redis);
  return redis;
}

/** Environment overrides that point a service at a Redis where nothing listens, in this pass's form. */
export function deadRedisEnv(): Record<string, string | undefined> {
  return onCluster()
    ? { REDIS_CLUSTER_NODES: '127.0.0.1:1', REDIS_URL: undefined }
    : { REDIS_URL: 'redis://127.0.0.1:1' };
}

/** Environment for child processes that must use `target` (a private server or cluster of a suite). */
export function redisEnv(target: { url: string } | { seeds: string }): Record<string, string | undefined> {
  return 'url' in target
    ? { REDIS_URL: target.url, REDIS_CLUSTER_NODES: undefined }
    : { REDIS_CLUSTER_NODES: target.seeds, REDIS_URL: undefined };
}

/**
 * DEL of keys that may live in different slots: one command per key (a multi-key DEL across
 * slots is refused on a cluster).
 */
export async function delKeys(redis: RedisClient, ...keys: string[]): Promise<void> {
  await Promise.all(keys.map((k) => redis.del(k)));
}
