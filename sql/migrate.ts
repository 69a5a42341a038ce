// The Procfile `release` role: apply pending migrations, then remove approved scopes the public
// suffix list says approve nothing (src/auth/scope-prune.ts), then exit.
import { migrate } from '../src/db/migrations.ts';
import { createDb } from '../src/db/database.ts';
import { pruneUnapprovableScopes } from '../src/auth/scope-prune.ts';

const url = process.env.DATABASE_URL;
if (!url) {
  process.stderr.write('DATABASE_URL is required\n');
  process.exit(78);
}
const applied = await migrate(url, (m) => process.stdout.write(`${JSON.stringify({ msg: m })}\n`));
process.stdout.write(`${JSON.stringify({ msg: 'migrations current', applied })}\n`);
const handle = createDb(url, { connectionLimit: 1 });
try {
  const pruned = await pruneUnapprovableScopes(handle.db);
  for (const p of pruned)
    process.stdout.write(
      `${JSON.stringify({ msg: 'approved scope removed: it approves nothing (public suffix)', ...p })}\n`,
    );
} finally {
  await handle.close();
}
