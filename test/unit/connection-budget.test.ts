// One budget of database connections split across roles and processes (src/config/connection-budget.ts),
// validated at start; a refused connection (1040 too many connections, the account's limit) is our
// shortage: classified local, retried, never a task's outcome or a request's 500.
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config/config.ts';
import {
  connectionPlan,
  connectionShare,
  describePlan,
  parseLaneProcesses,
  type BudgetSettings,
} from '../../src/config/connection-budget.ts';
import { budgetProblems } from '../../src/db/connection-budget-check.ts';
import { retryWhileShort } from '../../src/db/retry-shortage.ts';
import { isConnectionError } from '../../src/db/transaction.ts';
import { localFailure } from '../../src/net/local-failures.ts';
import { dependencyCause, isDependencyDown } from '../../src/resilience/dependency-errors.ts';

const valid = {
  DATABASE_URL: 'mysql://root@127.0.0.1:3306/lss',
  REDIS_URL: 'redis://127.0.0.1:6379',
  KEY_PEPPER: 'p'.repeat(32),
  CURSOR_SECRET: 'c'.repeat(32),
  WEBHOOK_SECRET_KEY: 'w'.repeat(32),
};

const oneOfEach = (over: Partial<BudgetSettings> = {}): BudgetSettings => ({
  DATABASE_MAX_CONNECTIONS: 151,
  DATABASE_RESERVED_CONNECTIONS: 10,
  WEB_PROCESSES: 1,
  WEB_CONCURRENCY: 2,
  ORCHESTRATOR_PROCESSES: 1,
  LANE_PROCESSES: { dns: 1, mail: 1, web: 1, domain: 1, active: 1 },
  ...over,
});

/** What mysql2 hands over for a refused handshake. */
const mysqlError = (code: string, errno: number) =>
  Object.assign(new Error(code === 'ER_CON_COUNT_ERROR' ? 'Too many connections' : code), {
    code,
    errno,
    sqlState: '08004',
    fatal: true,
  });

describe('connectionPlan', () => {
  it('gives every pool what it asks for when the budget covers it', () => {
    const p = connectionPlan(oneOfEach({ DATABASE_MAX_CONNECTIONS: 1000 }));
    expect(p.share).toEqual({ web: 20, orchestrator: 10, lane: 50 });
    expect(p.used).toBe(2 * 20 + 10 + 5 * 50);
    expect(p.fits).toBe(true);
  });

  it("scales every ask down in one proportion within MySQL's default 151, the reserve kept", () => {
    // The Procfile's roles, 2 web workers: 300 asked (issue 48: "over 300 against 151").
    const p = connectionPlan(oneOfEach());
    expect(p.available).toBe(141);
    expect(p.share).toEqual({ web: 9, orchestrator: 10, lane: 22 });
    expect(p.used).toBe(2 * 9 + 10 + 5 * 22);
    expect(p.used + p.reserved).toBeLessThanOrEqual(151);
  });

  it('two of every role still fit in 151', () => {
    const p = connectionPlan(
      oneOfEach({
        WEB_PROCESSES: 2,
        ORCHESTRATOR_PROCESSES: 2,
        LANE_PROCESSES: { dns: 2, mail: 2, web: 2, domain: 2, active: 2 },
      }),
    );
    expect(p.pools).toEqual({ web: 4, orchestrator: 2, lane: 10 });
    expect(p.fits).toBe(true);
    expect(p.used).toBeLessThanOrEqual(141);
    expect(p.share.lane).toBeGreaterThanOrEqual(2);
    expect(describePlan(p)).toBe(
      `web workers 4×${p.share.web} + orchestrators 2×${p.share.orchestrator} + lane processes 10×${p.share.lane} = ${p.used}, 10 reserved, of DATABASE_MAX_CONNECTIONS=151`,
    );
  });

  it('keeps each kind at its floor, and says when even the floors do not fit', () => {
    const tight = connectionPlan(oneOfEach({ DATABASE_MAX_CONNECTIONS: 30, DATABASE_RESERVED_CONNECTIONS: 4 }));
    // The floors lift the web workers and the orchestrator above their proportion: the lanes get
    // what is left within the budget, not their proportion of it.
    expect(tight.share).toEqual({ web: 2, orchestrator: 10, lane: 2 });
    expect(tight.used).toBe(24);
    expect(tight.fits).toBe(true);
    const tooSmall = connectionPlan(oneOfEach({ DATABASE_MAX_CONNECTIONS: 27, DATABASE_RESERVED_CONNECTIONS: 4 }));
    expect(tooSmall.fits).toBe(false);
  });

  it('counts only the lanes that run, and a role of no process takes nothing', () => {
    const p = connectionPlan(
      oneOfEach({
        DATABASE_MAX_CONNECTIONS: 30,
        DATABASE_RESERVED_CONNECTIONS: 4,
        WEB_PROCESSES: 2,
        WEB_CONCURRENCY: 1,
        LANE_PROCESSES: { dns: 0, mail: 0, web: 0, domain: 2, active: 0 },
      }),
    );
    expect(p.pools).toEqual({ web: 2, orchestrator: 1, lane: 2 });
    expect(p.share).toEqual({ web: 2, orchestrator: 10, lane: 6 });
    expect(p.used).toBe(26);
  });

  it('connectionShare is the line of the plan for the role', () => {
    const s = oneOfEach();
    expect(connectionShare(s, 'web')).toBe(9);
    expect(connectionShare(s, 'orchestrator')).toBe(10);
    expect(connectionShare(s, 'lane-dns')).toBe(22);
    expect(connectionShare(s, 'lane-web')).toBe(22);
  });
});

describe('LANE_PROCESSES', () => {
  it('takes a count for every lane, or lane=count entries with an optional count for the rest', () => {
    expect(parseLaneProcesses('2')).toEqual({ dns: 2, mail: 2, web: 2, domain: 2, active: 2 });
    expect(parseLaneProcesses('web=3')).toEqual({ dns: 1, mail: 1, web: 3, domain: 1, active: 1 });
    expect(parseLaneProcesses('0, domain=2')).toEqual({ dns: 0, mail: 0, web: 0, domain: 2, active: 0 });
    for (const bad of ['', 'x', 'smtp=1', 'web=1,web=2', '1,2', 'web=-1', 'web=99999'])
      expect(parseLaneProcesses(bad), bad).toBeNull();
  });
});

describe('the budget in the config', () => {
  it('has the documented defaults', () => {
    const c = parseConfig(valid);
    expect(c).toMatchObject({
      DATABASE_MAX_CONNECTIONS: 151,
      DATABASE_RESERVED_CONNECTIONS: 10,
      DATABASE_BUDGET_STRICT: false,
      DATABASE_CONNECTION_WAIT_MS: 15_000,
      WEB_PROCESSES: 1,
      ORCHESTRATOR_PROCESSES: 1,
      LANE_PROCESSES: { dns: 1, mail: 1, web: 1, domain: 1, active: 1 },
    });
  });

  it('refuses a budget that cannot give every process its floor, saying the plan', () => {
    let problems: string[] = [];
    try {
      parseConfig({ ...valid, DATABASE_MAX_CONNECTIONS: '40', WEB_CONCURRENCY: '4', WEB_PROCESSES: '4' });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      problems = (err as ConfigError).problems;
    }
    expect(problems).toEqual([
      expect.stringMatching(
        /^DATABASE_MAX_CONNECTIONS: .*web workers 16×2 .*= 52, 10 reserved, of DATABASE_MAX_CONNECTIONS=40/,
      ),
    ]);
  });

  it('refuses a LANE_PROCESSES it cannot read', () => {
    expect(() => parseConfig({ ...valid, LANE_PROCESSES: 'smtp=2' })).toThrow(/LANE_PROCESSES: must be/);
  });
});

describe("the server's limit at start", () => {
  const plan = connectionPlan(oneOfEach());
  it('a budget within max_connections (or the account limit) is no problem', () => {
    expect(budgetProblems(plan, { maxConnections: 151, maxUserConnections: 0, limit: 151 })).toEqual([]);
  });
  it('a budget above it says which limit and what to set', () => {
    expect(budgetProblems(plan, { maxConnections: 100, maxUserConnections: 0, limit: 100 })).toEqual([
      expect.stringMatching(
        /^DATABASE_MAX_CONNECTIONS=151 is more than the server allows \(max_connections is 100\).*at most 100/,
      ),
    ]);
    expect(budgetProblems(plan, { maxConnections: 1000, maxUserConnections: 30, limit: 30 })).toEqual([
      expect.stringMatching(/this account's max_user_connections is 30/),
    ]);
  });
});

describe('a refused connection is our shortage', () => {
  const tooMany = mysqlError('ER_CON_COUNT_ERROR', 1040);
  const userLimit = mysqlError('ER_USER_LIMIT_REACHED', 1226);
  const waitedOut = Object.assign(new Error('no database connection within 15000 ms'), { code: 'POOL_WAIT_TIMEOUT' });

  it('1040, 1226 and a pool wait run out are local failures: a 503 for a request, kept pending for a result', () => {
    for (const err of [tooMany, userLimit, waitedOut]) {
      expect(localFailure(err)).toBe(err.code);
      expect(isDependencyDown(err)).toBe(true);
      expect(isConnectionError(err)).toBe(true);
      expect(dependencyCause(err)).toMatch(/^mysql: /);
    }
    // A statement's own error is not one.
    expect(localFailure(Object.assign(new Error('dup'), { code: 'ER_DUP_ENTRY', errno: 1062 }))).toBeNull();
  });

  it('a statement that met 1040 is retried until it runs; any other error is thrown at once', async () => {
    let calls = 0;
    const seen: string[] = [];
    const value = await retryWhileShort(
      async () => {
        calls++;
        if (calls < 3) throw tooMany;
        return 'ran';
      },
      { signal: new AbortController().signal, onShortage: (code) => seen.push(code) },
    );
    expect(value).toBe('ran');
    expect(seen).toEqual(['ER_CON_COUNT_ERROR', 'ER_CON_COUNT_ERROR']);

    const dup = Object.assign(new Error('dup'), { code: 'ER_DUP_ENTRY' });
    let dupCalls = 0;
    await expect(
      retryWhileShort(
        async () => {
          dupCalls++;
          throw dup;
        },
        { signal: new AbortController().signal },
      ),
    ).rejects.toBe(dup);
    expect(dupCalls).toBe(1);
  });

  it('a shutdown ends the retries with the shortage (the entry is given back)', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 150);
    await expect(
      retryWhileShort(
        async () => {
          throw tooMany;
        },
        { signal: ac.signal },
      ),
    ).rejects.toBe(tooMany);
  });
});
