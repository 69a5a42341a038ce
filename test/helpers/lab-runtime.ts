// A product runtime (resolver + outbound guard) pointed at a running lab, for tests that call
// checks directly, below the job machinery.
import { pino } from 'pino';
import { parseConfig } from '../../src/config/config.ts';
import { createProductRuntime } from '../../src/products/kit/runtime.ts';
import type { ProductRuntime } from '../../src/products/kit/product-contract.ts';

/** The lab's env; DNS_SERVERS is bracketed because src/config/config.ts wants [ip]:port for an explicit port. */
export function labEnv(env: Record<string, string>): Record<string, string> {
  const [host, port] = env.DNS_SERVERS!.split(':');
  return { ...env, DNS_SERVERS: `[${host}]:${port}` };
}

export function runtimeFor(env: Record<string, string>, extra: Record<string, string> = {}): ProductRuntime {
  const config = parseConfig({
    DATABASE_URL: 'mysql://x',
    REDIS_URL: 'redis://x',
    KEY_PEPPER: 'x'.repeat(32),
    CURSOR_SECRET: 'y'.repeat(32),
    WEBHOOK_SECRET_KEY: 'w'.repeat(32),
    RDAP_BOOTSTRAP_URL: 'off', // never IANA's real file: the lab's RDAP_BASE_URL, or the snapshot
    ...labEnv(env),
    DNS_TIMEOUT_MS: '500',
    // As in harness.ts testEnv: a short timeout on a loaded machine must not back the lab zone off.
    DNS_ZONE_BACKOFF_MS: '0',
    ...extra,
  });
  return createProductRuntime(config, pino({ level: 'silent' }));
}
