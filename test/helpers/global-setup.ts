// Migrates the throwaway database that ops/test.ts created for this run. Unit-only runs without
// DATABASE_URL skip it; integration suites then fail loudly in their own setup, never silently pass.
import { migrate } from '../../src/db/migrations.ts';

export default async function setup(): Promise<void> {
  const url = process.env.DATABASE_URL;
  if (url) await migrate(url);
}
