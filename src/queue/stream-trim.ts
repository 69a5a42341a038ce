// Consumers trim their own streams, never past the oldest pending entry (trimToPending-1.lua).
import { readFileSync } from 'node:fs';
import type { RedisClient } from '../redis/client.ts';

const lua = readFileSync(new URL('./trimToPending-1.lua', import.meta.url), 'utf8');
const defined = new WeakSet<RedisClient>();

type WithTrim = RedisClient & { trimToPending(stream: string): Promise<number> };

/** Entries removed; -1 when the stream has no consumer group yet (then nothing is removed). */
export async function trimToPending(redis: RedisClient, stream: string): Promise<number> {
  if (!defined.has(redis)) {
    // defineCommand caches the script by SHA (EVALSHA, falling back to EVAL) and applies keyPrefix.
    redis.defineCommand('trimToPending', { numberOfKeys: 1, lua });
    defined.add(redis);
  }
  return Number(await (redis as WithTrim).trimToPending(stream));
}
