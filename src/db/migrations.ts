// Forward-only migrations: numbered .sql files under sql/migrations, applied in order under a
// MySQL advisory lock so that concurrent `release` processes cannot both apply one.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createConnection } from 'mysql2/promise';

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../sql/migrations/', import.meta.url));

export interface MigrationFile {
  version: string;
  name: string;
  sql: string;
  checksum: string;
}

export async function listMigrations(dir = MIGRATIONS_DIR): Promise<MigrationFile[]> {
  const names = (await readdir(dir)).filter((f) => /^\d{3,}_[a-z0-9_]+\.sql$/.test(f)).sort();
  return Promise.all(
    names.map(async (file) => {
      const sql = await readFile(path.join(dir, file), 'utf8');
      return {
        version: file.split('_')[0]!,
        name: file.replace(/\.sql$/, ''),
        sql,
        checksum: createHash('sha256').update(sql).digest('hex'),
      };
    }),
  );
}

const BOOKKEEPING = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version VARCHAR(16) CHARACTER SET ascii PRIMARY KEY,
  name VARCHAR(200) NOT NULL,
  checksum CHAR(64) CHARACTER SET ascii NOT NULL,
  applied_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
) ENGINE=InnoDB`;

export async function migrate(url: string, log: (msg: string) => void = () => {}): Promise<string[]> {
  const conn = await createConnection({ uri: url, multipleStatements: true, timezone: 'Z' });
  try {
    const [lockRows] = await conn.query("SELECT GET_LOCK('lss_migrate', 60) AS got");
    if ((lockRows as Array<{ got: number }>)[0]?.got !== 1) throw new Error('could not take the migration lock');
    await conn.query(BOOKKEEPING);
    const [rows] = await conn.query('SELECT version, checksum FROM schema_migrations');
    const applied = new Map((rows as Array<{ version: string; checksum: string }>).map((r) => [r.version, r.checksum]));
    const done: string[] = [];
    for (const m of await listMigrations()) {
      const seen = applied.get(m.version);
      if (seen) {
        if (seen !== m.checksum)
          throw new Error(`migration ${m.name} was edited after it was applied; add a new one instead`);
        continue;
      }
      log(`applying ${m.name}`);
      await conn.query(m.sql);
      await conn.query('INSERT INTO schema_migrations (version, name, checksum) VALUES (?, ?, ?)', [
        m.version,
        m.name,
        m.checksum,
      ]);
      done.push(m.name);
    }
    await conn.query("SELECT RELEASE_LOCK('lss_migrate')");
    return done;
  } finally {
    await conn.end();
  }
}
