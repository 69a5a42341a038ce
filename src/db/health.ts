// What /readyz asks MySQL: does it answer, and which migrations are applied.
import { sql } from 'kysely';
import type { Db } from './database.ts';

export async function pingDatabase(db: Db): Promise<void> {
  await sql`SELECT 1`.execute(db);
}

/** The applied migration versions; null when they cannot be read. */
export async function appliedMigrations(db: Db): Promise<string[] | null> {
  return db
    .selectFrom('schema_migrations')
    .select('version')
    .execute()
    .then(
      (r) => r.map((x) => x.version),
      () => null,
    );
}
