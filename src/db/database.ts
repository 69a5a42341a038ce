// The kysely instance over a mysql2 pool. Plain SQL through kysely keeps a managed MySQL or a
// MySQL-compatible distributed SQL a drop-in replacement.
import { Kysely, MysqlDialect } from 'kysely';
import { createPool, type Pool } from 'mysql2';
import type { Database } from './schema.ts';

export type Db = Kysely<Database>;

export interface DbHandle {
  db: Db;
  pool: Pool;
  close(): Promise<void>;
}

export function createDb(url: string, opts: { connectionLimit?: number } = {}): DbHandle {
  const pool = createPool({
    uri: url,
    connectionLimit: opts.connectionLimit ?? 10,
    // Datetimes are UTC everywhere; the driver must not shift them into the process time zone.
    timezone: 'Z',
    dateStrings: false,
    supportBigNumbers: true,
    bigNumberStrings: false,
    connectTimeout: 5000,
    enableKeepAlive: true,
  });
  // Every session in UTC, whatever the server's default, so NOW(3) and JS Dates agree; and READ
  // COMMITTED by default, so a write transaction (inTransaction) needs no statement of its own to
  // set it (one round trip fewer per transaction, issue 32).
  pool.on('connection', (conn) => {
    conn.query("SET time_zone = '+00:00'");
    conn.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
  });
  const db = new Kysely<Database>({ dialect: new MysqlDialect({ pool }) });
  let closing: Promise<void> | undefined;
  return {
    db,
    pool,
    close() {
      closing ??= db.destroy();
      return closing;
    },
  };
}
