// A throwaway service environment for scripts that are not `npm test` (fuzz, benchmarks): MySQL
// and Redis made available (ops/services.ts), a scratch database lss_<kind>_<time>_<hex>
// migrated, a Redis key prefix lss<kind>:<same>:, fresh secrets; all removed afterwards, also when
// the body throws.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { createDatabase, deletePrefixedKeys, dropDatabase, ensureServices, runTimestamp } from '../../ops/services.ts';
import { migrate } from '../../src/db/migrations.ts';
import { parseConfig, type Config } from '../../src/config/config.ts';

const root = path.resolve(import.meta.dirname, '../..');

export async function withScratchEnv<T>(
  kind: string,
  env: Record<string, string>,
  body: (config: Config) => Promise<T>,
  log: (m: string) => void = () => {},
): Promise<T> {
  const { databaseUrl: serverUrl, redisUrl } = await ensureServices({ root });
  const suffix = `${runTimestamp(new Date())}_${randomBytes(3).toString('hex')}`;
  const dbName = `lss_${kind}_${suffix}`;
  const keyPrefix = `lss${kind}:${suffix}:`;
  try {
    const databaseUrl = await createDatabase(serverUrl, dbName);
    log(`database ${dbName}; Redis ${redisUrl} prefix ${keyPrefix}`);
    await migrate(databaseUrl);
    const config = parseConfig({
      ...process.env,
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: keyPrefix,
      KEY_PEPPER: randomBytes(32).toString('base64url'),
      CURSOR_SECRET: randomBytes(32).toString('base64url'),
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64url'),
      // Scripts send traffic only to loopback unless told otherwise.
      DNS_SERVERS: process.env.DNS_SERVERS ?? '127.0.0.1:9',
      RDAP_BOOTSTRAP_URL: process.env.RDAP_BOOTSTRAP_URL ?? 'off', // never IANA's real file
      ...env,
    });
    return await body(config);
  } finally {
    await dropDatabase(serverUrl, dbName).catch((e: unknown) =>
      log(`could not drop ${dbName}: ${(e as Error).message}`),
    );
    await deletePrefixedKeys(redisUrl, keyPrefix).catch(() => 0);
  }
}
