// The kysely instance over a mysql2 pool. Plain SQL through kysely keeps a managed MySQL or a
// MySQL-compatible distributed SQL a drop-in replacement.
//
// The pool is this process's share of the deployment's connection budget
// (src/config/connection-budget.ts). A statement waits for one of its connections; a connection the
// server refuses (1040 too many connections, or the account's max_user_connections) is retried
// with backoff, since one of our own may come free meanwhile, until `waitMs` has passed; only then
// does the statement fail, with a code that says it was our shortage (POOL_WAIT_TIMEOUT, or the
// server's refusal): src/resilience/dependency-errors.ts.
import { Kysely, MysqlDialect, type MysqlPool } from 'kysely';
import { createPool, type Pool, type PoolConnection } from 'mysql2';
import { connectionShortage } from '../resilience/dependency-errors.ts';
import type { Database } from './schema.ts';

export type Db = Kysely<Database>;

/** What the pool did, for the metrics (src/db/pool-metrics.ts) and the tests. */
export interface PoolStats {
  readonly limit: number;
  /** Connections open (in use or idle). */
  open(): number;
  /** Connections idle in the pool. */
  idle(): number;
  /** Statements waiting for a connection (queued in the pool, or between refused attempts). */
  waiting(): number;
  /** Connection attempts the server refused, by code (ER_CON_COUNT_ERROR…). */
  readonly refused: Map<string, number>;
  /** Statements that got no connection within the wait: failed as ours. */
  waitTimeouts: number;
}

export interface DbHandle {
  db: Db;
  pool: Pool;
  stats: PoolStats;
  close(): Promise<void>;
}

export interface DbOptions {
  connectionLimit?: number;
  /** How long a statement waits for a connection at most (DATABASE_CONNECTION_WAIT_MS). */
  waitMs?: number;
}

const RETRY_FIRST_MS = 25;

/** See getConnection: a pooled connection's later 'error' events, already reported once. */
const ignoreLateError = (): void => {};
const RETRY_MAX_MS = 1000;

/** mysql2's pool keeps its connections in queues with a length; these are not in its types. */
interface PoolQueues {
  _allConnections: { length: number; get(i: number): PoolConnection };
  _freeConnections: { length: number };
  _connectionQueue: { length: number };
}

export function createDb(url: string, opts: DbOptions = {}): DbHandle {
  const limit = opts.connectionLimit ?? 10;
  const waitMs = opts.waitMs ?? 15_000;
  const pool = createPool({
    uri: url,
    connectionLimit: limit,
    // Datetimes are UTC everywhere; the driver must not shift them into the process time zone.
    timezone: 'Z',
    dateStrings: false,
    supportBigNumbers: true,
    bigNumberStrings: false,
    connectTimeout: 5000,
    enableKeepAlive: true,
    // kysely sends every statement with `query`, never `execute`, so the prepared-statement cache
    // stays empty; at mysql2's default (16,000 slots) it still allocates four arrays of that size
    // per connection: 25.6 MB of lane-web's heap at 50 connections in a heap snapshot (issue 48).
    maxPreparedStatements: 1,
  });
  // Every session in UTC, whatever the server's default, so NOW(3) and JS Dates agree; and READ
  // COMMITTED by default, so a write transaction (inTransaction) needs no statement of its own to
  // set it (one round trip fewer per transaction, issue 32).
  pool.on('connection', (conn) => {
    conn.query("SET time_zone = '+00:00'");
    conn.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
  });
  const queues = pool as unknown as PoolQueues;
  let retrying = 0;
  const stats: PoolStats = {
    limit,
    open: () => queues._allConnections.length,
    idle: () => queues._freeConnections.length,
    waiting: () => queues._connectionQueue.length + retrying,
    refused: new Map(),
    waitTimeouts: 0,
  };

  /** A connection within `waitMs`, the server's refusals retried with backoff meanwhile. */
  const getConnection = (cb: (err: unknown, conn: PoolConnection) => void): void => {
    const started = Date.now();
    let settled = false;
    let lastRefusal: unknown = null;
    const settle = (err: unknown, conn?: PoolConnection) => {
      settled = true;
      clearTimeout(timer);
      cb(err, conn as PoolConnection);
    };
    const timer = setTimeout(() => {
      if (settled) return;
      stats.waitTimeouts++;
      settle(
        Object.assign(
          new Error(
            `no database connection within ${waitMs} ms (pool of ${limit}: ${stats.open()} open, ${stats.waiting()} waiting)`,
            { cause: lastRefusal ?? undefined },
          ),
          { code: 'POOL_WAIT_TIMEOUT' },
        ),
      );
    }, waitMs);
    const attempt = (n: number) => {
      const before = queues._allConnections.length;
      pool.getConnection((err, conn) => {
        if (settled) {
          // Given up on: a connection that arrives later goes back to the pool.
          if (!err) conn.release();
          return;
        }
        if (!err) return settle(null, conn);
        const code = connectionShortage(err);
        if (code === null || code === 'POOL_WAIT_TIMEOUT') return settle(err);
        stats.refused.set(code, (stats.refused.get(code) ?? 0) + 1);
        lastRefusal = err;
        const delay = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** Math.min(n, 6)) * (0.5 + Math.random() / 2);
        if (Date.now() - started + delay >= waitMs) return; // the timer ends it
        retrying++;
        setTimeout(() => {
          retrying--;
          if (!settled) attempt(n + 1);
        }, delay);
      });
      // A connection the pool opens for this call is pushed before its handshake ends. mysql2's
      // PoolConnection listens for 'error' only once; a refused handshake (1040) can emit twice
      // (the error packet, then the socket's own error), and a second emission with no listener
      // is an uncaught exception that would kill the role over our own shortage. The refusal
      // itself reaches the callback above.
      if (queues._allConnections.length > before) {
        queues._allConnections.get(queues._allConnections.length - 1).on('error', ignoreLateError);
      }
    };
    attempt(0);
  };
  const guarded: MysqlPool = {
    getConnection: getConnection as MysqlPool['getConnection'],
    end: (cb) => pool.end(cb),
  };
  const db = new Kysely<Database>({ dialect: new MysqlDialect({ pool: guarded }) });
  let closing: Promise<void> | undefined;
  return {
    db,
    pool,
    stats,
    close() {
      closing ??= db.destroy();
      return closing;
    },
  };
}
