// Page cost vs depth (CONTRACT §10: "page cost does not grow with depth").
//
//   sh ops/bootstrap.sh test/bench/results-depth.ts [iterations]
//
// Creates its own throwaway database (dropped at the end, also on Ctrl-C), migrates it, writes one
// completed job with 100,500 objects in bulk multi-row INSERTs, walks the real route to depth
// 100,000 with limit 500 (the cursor the bench then uses is one the API itself handed out), and
// times GET /v2/jobs/{ref}/results?limit=50 for the first page and for the page after 100,000
// objects, over a real listening server with keep-alive fetch, interleaved, many iterations.
// Prints median / p90 of both and the ratio (target ≤ 1.3×), plus the EXPLAIN of the deep query.
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { sql } from 'kysely';
import { createDatabase, deletePrefixedKeys, dropDatabase, ensureServices } from '../../ops/services.ts';
import { migrate } from '../../src/db/migrations.ts';
import { parseConfig } from '../../src/config/config.ts';
import { createDeps, type Deps } from '../../src/bootstrap.ts';
import { createApp } from '../../src/app.ts';
import { createKey, createWorkspace, setLimits, workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { publicId } from '../../src/contract/ids.ts';

const root = path.resolve(import.meta.dirname, '../..');
const OBJECTS = 100_500;
const DEPTH = 100_000;
const PAGE = 50;
const BATCH = 1_000;
const ITERATIONS = Number(process.argv[2] ?? 400);
const WARMUP = 50;

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);

const { databaseUrl: serverUrl, redisUrl } = await ensureServices({ root });
const suffix = `${new Date().toISOString().replace(/\D/g, '').slice(0, 14)}_${randomBytes(3).toString('hex')}`;
const dbName = `lss_bench_${suffix}`;
const keyPrefix = `lssbench:${suffix}:`;

let deps: Deps | undefined;
let server: import('node:http').Server | undefined;
let cleaned = false;
async function cleanup(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server?.closeAllConnections();
  await deps?.close().catch(() => {});
  await dropDatabase(serverUrl, dbName).then(
    () => log(`dropped ${dbName}`),
    (e) => log(`could not drop ${dbName}: ${String(e)}`),
  );
  await deletePrefixedKeys(redisUrl, keyPrefix).catch((e) =>
    log(`could not delete Redis keys ${keyPrefix}*: ${String(e)}`),
  );
}
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    log(`${sig}: cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}

function stats(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return { median: q(0.5), p90: q(0.9), min: s[0]!, n: s.length };
}

try {
  const databaseUrl = await createDatabase(serverUrl, dbName);
  log(`database ${dbName}; migrating`);
  await migrate(databaseUrl);

  const config = parseConfig({
    ...process.env,
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: keyPrefix,
    LOG_LEVEL: 'silent',
    KEY_PEPPER: process.env.KEY_PEPPER || 'lss-bench-key-pepper-0123456789abcdefghijklmnopq',
    CURSOR_SECRET: process.env.CURSOR_SECRET || 'lss-bench-cursor-secret-0123456789abcdefghijklmn',
    WEBHOOK_SECRET_KEY: process.env.WEBHOOK_SECRET_KEY || 'lss-bench-webhook-secret-key-0123456789abcdefgh',
  });
  deps = await createDeps(config, pino({ level: 'silent' }));
  const db = deps.db;

  const ws = await createWorkspace(db, { name: 'bench' });
  await setLimits(db, ws.workspaceId, undefined, { app: { perMinute: 10_000_000, burst: 1_000_000 } });
  const key = await createKey(db, config.KEY_PEPPER, { workspace: ws.workspaceId, scopes: ['scan:read'] });
  const workspaceId = await workspaceInternalId(db, ws.workspaceId);
  const keyRow = await db
    .selectFrom('api_keys')
    .select('id')
    .where('public_id', '=', key.keyId)
    .executeTakeFirstOrThrow();

  const jobRef = publicId('job');
  const job = await db
    .insertInto('jobs')
    .values({
      public_id: jobRef,
      workspace_id: workspaceId,
      api_key_id: Number(keyRow.id),
      product: 'scan.recursive.v1',
      status: 'completed',
      profile: 'deep',
      target_type: 'domain_name',
      target_value: 'example.com',
      input: '{}',
      request_id: publicId('req'),
      credits_reserved: 0,
      credits_released: null,
      settled_at: null,
      result: null,
      coverage: JSON.stringify({ complete: true, limitations: [] }),
      month: '2026-11',
      started_at: new Date(),
      completed_at: new Date(),
      cancel_requested_at: null,
      deadline_at: new Date(Date.now() + 3_600_000),
    })
    .executeTakeFirstOrThrow();
  const jobId = Number(job.insertId);

  log(`inserting ${OBJECTS.toLocaleString('en')} objects in multi-row INSERTs of ${BATCH}`);
  const t0 = performance.now();
  const ids: string[] = [];
  for (let start = 1; start <= OBJECTS; start += BATCH) {
    const rows = [];
    for (let seq = start; seq < Math.min(start + BATCH, OBJECTS + 1); seq++) {
      const name = `h${seq}.sub${seq % 97}.example.com`;
      const id = publicId('obj');
      ids.push(id);
      rows.push({
        public_id: id,
        job_id: jobId,
        seq,
        workspace_id: workspaceId,
        type: 'host',
        okey: name,
        okey_hash: createHash('sha256').update(name).digest(),
        distance: seq % 4,
        projection: JSON.stringify({
          name,
          addresses: [`192.0.2.${seq % 250}`, `2001:db8::${(seq % 65535).toString(16)}`],
          cname: null,
          zone: 'example.com',
        }),
        lanes: JSON.stringify([
          { lane: 'dns', status: 'completed' },
          { lane: 'web', status: 'completed' },
        ]),
        evidence: JSON.stringify([
          { summary: `A/AAAA of ${name}` },
          { summary: `discovered via SAN of www.example.com` },
        ]),
      });
    }
    await db.insertInto('objects').values(rows).execute();
  }
  await db.updateTable('jobs').set({ object_seq: OBJECTS }).where('id', '=', jobId).execute();
  await sql`ANALYZE TABLE objects`.execute(db);
  log(`inserted in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const app = createApp(deps);
  server = app.listen(0, '127.0.0.1');
  await new Promise<void>((r) => server!.once('listening', () => r()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const headers = { authorization: `Bearer ${key.key}` };
  const get = async (p: string) => {
    const res = await fetch(`${base}${p}`, { headers });
    const body = (await res.json()) as { items: Array<{ objectId: string }>; page: { nextCursor: string | null } };
    if (res.status !== 200) throw new Error(`${p} → ${res.status} ${JSON.stringify(body)}`);
    return body;
  };

  // Reach depth 100,000 through the API itself (200 pages of 500).
  log(`walking to depth ${DEPTH.toLocaleString('en')} through the route`);
  let cursor: string | null = null;
  for (let seen = 0; seen < DEPTH; seen += 500) {
    const body = await get(`/v2/jobs/${jobRef}/results?limit=500${cursor ? `&cursor=${cursor}` : ''}`);
    if (body.items[0]?.objectId !== ids[seen]) throw new Error(`walk out of order at ${seen}`);
    cursor = body.page.nextCursor;
  }
  const firstPath = `/v2/jobs/${jobRef}/results?limit=${PAGE}`;
  const deepPath = `/v2/jobs/${jobRef}/results?limit=${PAGE}&cursor=${cursor}`;
  const deep = await get(deepPath);
  if (deep.items.length !== PAGE || deep.items[0]!.objectId !== ids[DEPTH])
    throw new Error('deep page is not objects 100,001..100,050');

  const explain = await sql<
    Record<string, unknown>
  >`EXPLAIN SELECT id, seq FROM objects WHERE job_id = ${jobId} AND seq > ${DEPTH} ORDER BY seq LIMIT ${PAGE + 1}`.execute(
    db,
  );
  const e = explain.rows[0]!;
  log(`EXPLAIN deep page: type=${e.type} key=${e.key} rows=${e.rows} Extra=${e.Extra}`);

  for (let i = 0; i < WARMUP; i++) {
    await get(firstPath);
    await get(deepPath);
  }
  const first: number[] = [];
  const deepT: number[] = [];
  const time = async (p: string, into: number[]) => {
    const t = performance.now();
    await get(p);
    into.push(performance.now() - t);
  };
  log(`timing ${ITERATIONS} iterations each (interleaved)`);
  for (let i = 0; i < ITERATIONS; i++) {
    if (i % 2 === 0) {
      await time(firstPath, first);
      await time(deepPath, deepT);
    } else {
      await time(deepPath, deepT);
      await time(firstPath, first);
    }
  }
  const f = stats(first);
  const d = stats(deepT);
  const fmt = (x: number) => `${x.toFixed(3)} ms`;
  const ratio = d.median / f.median;
  process.stdout.write(
    `objects in job:        ${OBJECTS.toLocaleString('en')}\n` +
      `page size:             ${PAGE}\n` +
      `iterations:            ${f.n} each (after ${WARMUP} warm-up)\n` +
      `first page:            median ${fmt(f.median)}  p90 ${fmt(f.p90)}  min ${fmt(f.min)}\n` +
      `page at depth 100,000: median ${fmt(d.median)}  p90 ${fmt(d.p90)}  min ${fmt(d.min)}\n` +
      `ratio deep/first:      ${ratio.toFixed(3)}x (median; target <= 1.3x) ${ratio <= 1.3 ? 'OK' : 'OVER TARGET'}\n`,
  );
  process.exitCode = ratio <= 1.3 ? 0 : 1;
} catch (err) {
  log(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exitCode = 1;
} finally {
  await cleanup();
}
