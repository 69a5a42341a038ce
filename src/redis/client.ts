// ioredis with fail-fast settings: a command issued while Redis is down errors at once (the HTTP
// layer answers 503) instead of queueing until the client reconnects.
import { Redis, type Cluster } from 'ioredis';

/** What every module that talks to Redis accepts: a single node or ioredis' Cluster client. */
export type RedisClient = Redis | Cluster;

/**
 * commandTimeoutMs: for request-serving clients, so that a Redis that accepts but never answers
 * fails closed instead of hanging requests. Not for clients (or their duplicates) that issue
 * blocking reads.
 */
export function createRedis(url: string, keyPrefix: string, opts: { lazy?: boolean; commandTimeoutMs?: number; autoPipelining?: boolean } = {}): Redis {
  return new Redis(url, {
    keyPrefix,
    lazyConnect: opts.lazy ?? false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    ...(opts.commandTimeoutMs ? { commandTimeout: opts.commandTimeoutMs } : {}),
    // Commands issued in the same event-loop tick share one socket write: under concurrency
    // that is most of them, and a write is the dearest part of a round trip here.
    ...(opts.autoPipelining ? { enableAutoPipelining: true } : {}),
    retryStrategy: (times) => Math.min(100 * times, 2000),
  });
}

/** Resolves once the client is ready, or rejects after timeoutMs. */
export function redisReady(redis: Redis, timeoutMs = 5000): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error('Redis did not become ready in time'));
    }, timeoutMs);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      redis.off('ready', onReady);
    };
    redis.on('ready', onReady);
    if (redis.status === 'wait') redis.connect().catch(() => {});
  });
}
