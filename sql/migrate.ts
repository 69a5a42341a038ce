// The Procfile `release` role: apply pending migrations, then exit.
import { migrate } from '../src/db/migrations.ts';

const url = process.env.DATABASE_URL;
if (!url) {
  process.stderr.write('DATABASE_URL is required\n');
  process.exit(78);
}
const applied = await migrate(url, (m) => process.stdout.write(`${JSON.stringify({ msg: m })}\n`));
process.stdout.write(`${JSON.stringify({ msg: 'migrations current', applied })}\n`);
