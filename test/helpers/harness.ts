// Integration harness: the real app over the run's throwaway MySQL database and Redis prefix,
// plus fixtures that create tenants through the same repository functions the admin CLI uses.
import { randomBytes } from 'node:crypto';
import supertest from 'supertest';
import { pino } from 'pino';
import { parseConfig, type Config } from '../../src/config/config.ts';
import { createDeps, type Deps } from '../../src/bootstrap.ts';
import { createApp } from '../../src/app.ts';
import { createKey, createWorkspace, setLimits, type CreateWorkspaceInput } from '../../src/auth/tenancy-repo.ts';
import type { Scope } from '../../src/auth/principal.ts';
import { specialUsePolicy } from '../../src/net/special-use.ts';
import type { RateOverrides } from '../../src/ratelimit/policies.ts';
import { assertMatchesContract } from './contract-check.ts';
import { hasRedis } from './redis.ts';
import type { Express } from 'express';

export function testEnv(overrides: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  if (!process.env.DATABASE_URL || !hasRedis()) {
    throw new Error(
      'integration tests need DATABASE_URL and REDIS_URL (or REDIS_CLUSTER_NODES): run them with `npm test`',
    );
  }
  // No restart grace unless a test asks for it: test files share the run's key prefix, and a lane
  // another file stopped a moment ago must not count as restarting here.
  // No per-zone DNS backoff unless a test asks for it (dead-zone.test.ts): the tests' DNS timeouts
  // are short, and on a loaded machine a few late lab answers in a row backed the lab zone off for
  // the rest of a file (scan.test.ts failed so, issue 31's backoff being per process).
  return {
    ...process.env,
    LOG_LEVEL: 'silent',
    AUTH_CACHE_TTL_MS: '0',
    LANE_RESTART_GRACE_MS: '0',
    DNS_ZONE_BACKOFF_MS: '0',
    ...overrides,
  };
}

export interface Harness {
  config: Config;
  deps: Deps;
  app: Express;
  close(): Promise<void>;
}

export async function startHarness(overrides: Record<string, string | undefined> = {}): Promise<Harness> {
  const config = parseConfig(testEnv(overrides));
  const deps = await createDeps(config, pino({ level: 'silent' }));
  const app = createApp(deps);
  return { config, deps, app, close: () => deps.close() };
}

export interface Tenant {
  workspaceId: string;
  applicationId: string;
  key: string;
  keyId: string;
}

export async function createTenant(
  h: Harness,
  opts: Partial<CreateWorkspaceInput> & { scopes?: Scope[]; limits?: RateOverrides } = {},
): Promise<Tenant> {
  // Scopes are checked as the admin CLI checks them, with the run's ALLOW_SPECIAL_USE_DOMAINS (the lab's `test`).
  const ws = await createWorkspace(h.deps.db, {
    name: `t-${randomBytes(4).toString('hex')}`,
    scopePolicy: specialUsePolicy(h.config),
    ...opts,
  });
  const key = await createKey(h.deps.db, h.config.KEY_PEPPER, { workspace: ws.workspaceId, scopes: opts.scopes });
  if (opts.limits) await setLimits(h.deps.db, ws.workspaceId, undefined, opts.limits);
  return { workspaceId: ws.workspaceId, applicationId: ws.applicationId, key: key.key, keyId: key.keyId };
}

export function idemKey(): string {
  return `idem-${randomBytes(8).toString('hex')}`;
}

type Res = supertest.Response;

/** A supertest client whose every response is checked against the OpenAPI document. */
export function client(app: Express, key?: string) {
  const auth = (r: supertest.Test) => (key ? r.set('Authorization', `Bearer ${key}`) : r);
  const check = async (r: supertest.Test, method: string, path: string): Promise<Res> => {
    const res = await r;
    assertMatchesContract(method, path, res);
    return res;
  };
  return {
    post(path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res> {
      let r = auth(supertest(app).post(path));
      if (!('Idempotency-Key' in headers)) r = r.set('Idempotency-Key', idemKey());
      for (const [k, v] of Object.entries(headers)) if (v !== '') r = r.set(k, v);
      if (body !== undefined)
        r = typeof body === 'string' ? r.set('Content-Type', 'application/json').send(body) : r.send(body as object);
      return check(r, 'post', path);
    },
    get(path: string, headers: Record<string, string> = {}): Promise<Res> {
      let r = auth(supertest(app).get(path));
      for (const [k, v] of Object.entries(headers)) r = r.set(k, v);
      return check(r, 'get', path);
    },
  };
}
