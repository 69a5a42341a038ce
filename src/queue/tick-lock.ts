// One orchestrator instance per tick for the periodic jobs (relay, reconciler, sweeper, purge).
// The lock is not released: it expires just before the next tick, so across N instances each
// job runs about once per interval. Every periodic job is idempotent, so an overrun (a tick longer
// than the lock) costs duplicate work, never a wrong result.
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../redis/client.ts';
import { queueKeys } from './streams.ts';

export async function tryTickLock(redis: RedisClient, name: string, ttlMs: number): Promise<boolean> {
  const token = randomBytes(8).toString('hex');
  const ok = await redis.set(queueKeys.tickLock(name), token, 'PX', Math.max(1, Math.floor(ttlMs)), 'NX');
  return ok === 'OK';
}
