// parseConfig: every problem in one ConfigError, the documented defaults, list parsing; and the
// entry point's behaviour on a bad environment (exit 78, every problem on stderr).
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config/config.ts';
import { redisTarget } from '../../src/redis/client.ts';

const root = path.resolve(import.meta.dirname, '../..');

const valid = {
  DATABASE_URL: 'mysql://root@127.0.0.1:3306/lss',
  REDIS_URL: 'redis://127.0.0.1:6379',
  KEY_PEPPER: 'p'.repeat(32),
  CURSOR_SECRET: 'c'.repeat(32),
  WEBHOOK_SECRET_KEY: 'w'.repeat(32),
};

function problemsOf(env: NodeJS.ProcessEnv): string[] {
  try {
    parseConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('parseConfig accepted the environment');
}

/** The variable (first path segment) each problem names. */
const variablesOf = (problems: string[]) => [...new Set(problems.map((p) => p.split(/[.:]/)[0]))].sort();

describe('parseConfig', () => {
  it('reports every problem at once, each naming its variable', () => {
    const problems = problemsOf({
      REDIS_URL: valid.REDIS_URL,
      CURSOR_SECRET: valid.CURSOR_SECRET,
      WEBHOOK_SECRET_KEY: valid.WEBHOOK_SECRET_KEY,
      // DATABASE_URL missing
      KEY_PEPPER: 'too-short',
      DNS_SERVERS: '1.1.1.1, not-an-ip:53',
      ALLOW_PRIVATE_TARGETS: '127.0.0.0/8,10.0.0.0/33',
    });
    expect(variablesOf(problems)).toEqual(['ALLOW_PRIVATE_TARGETS', 'DATABASE_URL', 'DNS_SERVERS', 'KEY_PEPPER']);
    expect(problems).toHaveLength(4);
    expect(problems.find((p) => p.startsWith('KEY_PEPPER:'))).toMatch(/at least 32/);
    // List problems point at the bad entry, not at the whole list.
    expect(problems).toContainEqual(expect.stringMatching(/^DNS_SERVERS\.1: must be ip or ip:port/));
    expect(problems).toContainEqual(expect.stringMatching(/^ALLOW_PRIVATE_TARGETS\.1: must be a CIDR/));
  });

  it('needs WEBHOOK_SECRET_KEY of at least 32 characters (CONTRACT §14), like KEY_PEPPER', () => {
    const { WEBHOOK_SECRET_KEY: _, ...without } = valid;
    expect(problemsOf(without)).toEqual([expect.stringMatching(/^WEBHOOK_SECRET_KEY: /)]);
    expect(problemsOf({ ...valid, WEBHOOK_SECRET_KEY: 'short' })).toEqual([
      expect.stringMatching(/^WEBHOOK_SECRET_KEY: .*at least 32/),
    ]);
    expect(parseConfig(valid).MONITOR_MIN_INTERVAL_SECONDS).toBe(3600);
    expect(parseConfig(valid).MONITORS_PER_WORKSPACE).toBe(100);
  });

  it('takes a shortened webhook retry schedule in tests only, never in production', () => {
    const test = { ...valid, WEBHOOK_RETRY_SCHEDULE_SECONDS: '1,2', WEBHOOK_RETRY_WINDOW_SECONDS: '10' };
    expect(parseConfig(test).WEBHOOK_RETRY_SCHEDULE_SECONDS).toEqual([1, 2]);
    expect(problemsOf({ ...test, NODE_ENV: 'production' })).toEqual([
      expect.stringMatching(/^WEBHOOK_RETRY_SCHEDULE_SECONDS: .*production keeps CONTRACT §14/),
    ]);
    expect(problemsOf({ ...valid, WEBHOOK_RETRY_SCHEDULE_SECONDS: '0,x' })).not.toHaveLength(0);
  });

  it('puts every problem in the error message, one per line', () => {
    try {
      parseConfig({});
      expect.unreachable();
    } catch (err) {
      const e = err as ConfigError;
      expect(variablesOf(e.problems)).toEqual([
        'CURSOR_SECRET',
        'DATABASE_URL',
        'KEY_PEPPER',
        'REDIS_URL',
        'WEBHOOK_SECRET_KEY',
      ]);
      for (const p of e.problems) expect(e.message).toContain(`  - ${p}`);
    }
  });

  it('REDIS_CLUSTER_NODES replaces REDIS_URL: seeds as host:port or redis(s) URLs, credentials and TLS shared', () => {
    const { REDIS_URL: _url, ...noUrl } = valid;
    const c = parseConfig({ ...noUrl, REDIS_CLUSTER_NODES: '10.0.0.1:7000, redis-a.internal:7001,[::1]:7002' });
    expect(c.REDIS_URL).toBeUndefined();
    expect(c.REDIS_CLUSTER_NODES).toEqual({
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: 'redis-a.internal', port: 7001 },
        { host: '::1', port: 7002 },
      ],
      tls: false,
    });
    expect(redisTarget(c)).toEqual({ cluster: c.REDIS_CLUSTER_NODES });
    const tls = parseConfig({
      ...noUrl,
      REDIS_CLUSTER_NODES: 'rediss://default:s%3Acret@a.example:6380,rediss://default:s%3Acret@b.example',
    });
    expect(tls.REDIS_CLUSTER_NODES).toEqual({
      nodes: [
        { host: 'a.example', port: 6380 },
        { host: 'b.example', port: 6379 },
      ],
      username: 'default',
      password: 's:cret',
      tls: true,
    });
    // Both set: the cluster wins.
    expect(redisTarget(parseConfig({ ...valid, REDIS_CLUSTER_NODES: '10.0.0.1:7000' }))).toEqual({
      cluster: expect.anything(),
    });
    expect(redisTarget(parseConfig(valid))).toEqual({ url: valid.REDIS_URL });
  });

  it('refuses a bad REDIS_CLUSTER_NODES, neither Redis variable, and braces in REDIS_KEY_PREFIX', () => {
    const { REDIS_URL: _url, ...noUrl } = valid;
    for (const bad of ['10.0.0.1', '10.0.0.1:0', 'a:1,b', 'http://a:1', 'rediss://u:p@a:1,redis://a:2', ' , ']) {
      expect(
        problemsOf({ ...noUrl, REDIS_CLUSTER_NODES: bad }).map((p) => p.split(':')[0]),
        bad,
      ).toContain('REDIS_CLUSTER_NODES');
    }
    expect(problemsOf(noUrl)).toEqual([expect.stringMatching(/^REDIS_URL: set REDIS_URL .* or REDIS_CLUSTER_NODES/)]);
    expect(problemsOf({ ...valid, REDIS_KEY_PREFIX: 'run{1}:' })).toEqual([
      expect.stringMatching(/^REDIS_KEY_PREFIX: must not contain \{ or \}/),
    ]);
  });

  it('rejects wrong URL schemes, enums, numbers out of range and bad booleans', () => {
    const problems = problemsOf({
      ...valid,
      DATABASE_URL: 'postgres://x/y',
      REDIS_URL: 'http://127.0.0.1:6379',
      LOG_LEVEL: 'verbose',
      PORT: '70000',
      WEB_CONCURRENCY: '0',
      DNS_TIMEOUT_MS: 'soon',
      TRUST_PROXY: 'maybe',
      RDAP_BASE_URL: 'not a url',
    });
    expect(variablesOf(problems)).toEqual([
      'DATABASE_URL',
      'DNS_TIMEOUT_MS',
      'LOG_LEVEL',
      'PORT',
      'RDAP_BASE_URL',
      'REDIS_URL',
      'TRUST_PROXY',
      'WEB_CONCURRENCY',
    ]);
  });

  it('fills in the documented defaults', () => {
    const c = parseConfig(valid);
    expect(c).toMatchObject({
      NODE_ENV: 'development',
      REDIS_KEY_PREFIX: '',
      PORT: 8080,
      WEB_CONCURRENCY: Math.min(os.availableParallelism(), 4),
      LOG_LEVEL: 'info',
      DNS_TIMEOUT_MS: 2000,
      ALLOW_PRIVATE_TARGETS: [],
      RESPONSIBLE_USE_VERSION: '2026-01',
      AUTH_CACHE_TTL_MS: 5000,
      IDEMPOTENCY_TTL_HOURS: 24,
      IDEMPOTENCY_LOCK_MS: 60_000,
      JOB_RETENTION_DAYS: 30,
      CANCEL_GRACE_MS: 30_000,
      SHUTDOWN_TIMEOUT_MS: 15_000,
      TRUST_PROXY: false,
    });
    // Unset optional values stay unset (DNS: the system resolvers; metrics: the role's default).
    expect(c.DNS_SERVERS).toBeUndefined();
    expect(c.METRICS_PORT).toBeUndefined();
    expect(c.OUI_EXTRA_CSV_DIR).toBeUndefined();
    expect(c.IP_CONTEXT_DB).toBeUndefined();
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('SCOPE_REPROVE_HOURS: 24 by default, whole hours from 1 to 720 (issue 45)', () => {
    expect(parseConfig(valid).SCOPE_REPROVE_HOURS).toBe(24);
    expect(parseConfig({ ...valid, SCOPE_REPROVE_HOURS: '6' }).SCOPE_REPROVE_HOURS).toBe(6);
    for (const bad of ['0', '-1', '1.5', '721', 'daily'])
      expect(variablesOf(problemsOf({ ...valid, SCOPE_REPROVE_HOURS: bad })), bad).toEqual(['SCOPE_REPROVE_HOURS']);
  });

  it('coerces numbers and booleans', () => {
    const c = parseConfig({ ...valid, PORT: '9000', WEB_CONCURRENCY: '3', METRICS_PORT: '9999' });
    expect(c.PORT).toBe(9000);
    expect(c.WEB_CONCURRENCY).toBe(3);
    expect(c.METRICS_PORT).toBe(9999);
  });

  it("TRUST_PROXY takes Express's hop count or address list, never a bare true (issue 30)", () => {
    expect(parseConfig({ ...valid, TRUST_PROXY: 'false' }).TRUST_PROXY).toBe(false);
    expect(parseConfig({ ...valid, TRUST_PROXY: '0' }).TRUST_PROXY).toBe(false);
    expect(parseConfig({ ...valid, TRUST_PROXY: '1' }).TRUST_PROXY).toBe(1);
    expect(parseConfig({ ...valid, TRUST_PROXY: '2' }).TRUST_PROXY).toBe(2);
    expect(parseConfig({ ...valid, TRUST_PROXY: 'loopback, 10.0.0.0/8,fd00::/8, 192.0.2.7' }).TRUST_PROXY).toEqual([
      'loopback',
      '10.0.0.0/8',
      'fd00::/8',
      '192.0.2.7',
    ]);
    // Trusting every hop lets each client name its own address (the per-address limits): refused,
    // saying what to set instead.
    for (const bad of ['true', 'yes', 'TRUE']) {
      const [problem] = problemsOf({ ...valid, TRUST_PROXY: bad });
      expect(problem).toMatch(/^TRUST_PROXY: .*X-Forwarded-For/);
      expect(problem).toMatch(/Heroku.*1/);
    }
    expect(variablesOf(problemsOf({ ...valid, TRUST_PROXY: '10.0.0.0/33' }))).toEqual(['TRUST_PROXY']);
    expect(variablesOf(problemsOf({ ...valid, TRUST_PROXY: '-1' }))).toEqual(['TRUST_PROXY']);
    expect(variablesOf(problemsOf({ ...valid, TRUST_PROXY: '1.5' }))).toEqual(['TRUST_PROXY']);
    expect(variablesOf(problemsOf({ ...valid, TRUST_PROXY: 'everyone' }))).toEqual(['TRUST_PROXY']);
  });

  it('parses comma lists, trimming blanks and dropping empty entries', () => {
    const c = parseConfig({
      ...valid,
      DNS_SERVERS: ' 127.0.0.1:5353, 1.1.1.1 ,,[::1]:53,2001:db8::1 ',
      ALLOW_PRIVATE_TARGETS: '127.0.0.0/8, 10.0.0.0/8,fd00::/8,',
    });
    expect(c.DNS_SERVERS).toEqual(['127.0.0.1:5353', '1.1.1.1', '[::1]:53', '2001:db8::1']);
    expect(c.ALLOW_PRIVATE_TARGETS).toEqual(['127.0.0.0/8', '10.0.0.0/8', 'fd00::/8']);
    expect(parseConfig({ ...valid, ALLOW_PRIVATE_TARGETS: '' }).ALLOW_PRIVATE_TARGETS).toEqual([]);
  });

  it('rejects DNS server ports above 65535 and CIDR prefixes beyond the address size', () => {
    const problems = problemsOf({ ...valid, DNS_SERVERS: '1.1.1.1:65536', ALLOW_PRIVATE_TARGETS: '::/129' });
    expect(variablesOf(problems)).toEqual(['ALLOW_PRIVATE_TARGETS', 'DNS_SERVERS']);
  });
});

/** Runs src/server.ts on this very node with exactly `env`; it must exit on its own. */
async function runServer(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['src/server.ts'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

// These run the real entry point on plain Node: vitest's CommonJS interop can hide module-format
// mistakes (e.g. a namespace import of a CommonJS package) that only the real process shows.
describe('src/server.ts with a bad environment', () => {
  it('reports only the real problem when the list variables are valid', async () => {
    const { code, stderr } = await runServer({
      PATH: process.env.PATH,
      REDIS_URL: valid.REDIS_URL,
      KEY_PEPPER: valid.KEY_PEPPER,
      CURSOR_SECRET: valid.CURSOR_SECRET,
      WEBHOOK_SECRET_KEY: valid.WEBHOOK_SECRET_KEY,
      DNS_SERVERS: '127.0.0.1:5353,[::1]:53,9.9.9.9',
      ALLOW_PRIVATE_TARGETS: '127.0.0.0/8,10.0.0.0/8',
      METRICS_PORT: '0',
    });
    expect({ code, stderr }).toMatchObject({ code: 78 });
    expect(stderr.trim().split('\n')).toEqual([
      'invalid configuration:',
      expect.stringMatching(/^ {2}- DATABASE_URL: /),
    ]);
  });

  it('exits 78 (EX_CONFIG) and prints every problem on stderr', async () => {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      // DATABASE_URL missing
      REDIS_URL: valid.REDIS_URL,
      KEY_PEPPER: 'short',
      CURSOR_SECRET: valid.CURSOR_SECRET,
      DNS_SERVERS: '1.1.1.1,bogus',
      ALLOW_PRIVATE_TARGETS: '300.0.0.0/8',
      METRICS_PORT: '0',
    };
    const { code, stdout, stderr } = await runServer(env);
    expect({ code, stderr }).toMatchObject({ code: 78 });
    expect(stderr).toMatch(/invalid configuration/);
    expect(stderr).toMatch(/^ {2}- DATABASE_URL: /m);
    expect(stderr).toMatch(/^ {2}- KEY_PEPPER: .*at least 32/m);
    expect(stderr).toMatch(/^ {2}- DNS_SERVERS\.1: /m);
    expect(stderr).toMatch(/^ {2}- ALLOW_PRIVATE_TARGETS\.0: /m);
    expect(stdout).toBe('');
  });
});
