// The inventory's page cost (CONTRACT §16, issue 46: "a page 100,000 rows deep within 1.3× of the
// first; q and minSeverity pages under 50 ms").
//
//   npm run bench:estate [iterations]
//
// Creates its own throwaway database (dropped at the end, also on Ctrl-C), migrates it, and writes
// 1,000,000 synthetic inventory rows over four workspaces with INSERT … SELECT from MariaDB's
// sequence engine (the measured workspace holds 400,000; each other 200,000), ANALYZEd. Then, over a
// real listening server with keep-alive fetch: walks GET /v2/inventory to depth 100,000 (the cursor
// the bench times is one the API handed out) and times, interleaved, the first page and the page
// after 100,000 rows (limit 50), a `q` page (a name with ~4,000 rows below it), a `q` page deep in
// that range, and a `minSeverity=high` page (2 % of the rows). Prints median / p90, the ratio
// (target ≤ 1.3×) and the EXPLAIN of each query.
//
// Before the pages, the terminal work of a 20,000-host scan (80,000 objects, 100,000 findings), with
// and without 1,000 active suppressions, two rounds each: run in a child process started as the
// Procfile starts the orchestrator (its heap flags) plus --expose-gc, which makes the job's terminal
// transaction's estate share (suppressions, the inventory's marker) and then writes the inventory
// as the orchestrator does after the commit (drainInventoryOf). The child reports its times and its
// memory separately: the retained heap (heapUsed right after a forced full GC, at the start and
// every 250 ms during the work: its peak growth is what the work holds alive, garbage excluded) and
// RSS (sampled every 10 ms: what the process took from the system, garbage and allocator slack
// included). The issue's memory target is "no process grows more than 32 MB".
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
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
import { inTransaction } from '../../src/db/transaction.ts';
import { recordEstate } from '../../src/jobs/inventory/record-estate.ts';
import { drainInventoryOf } from '../../src/jobs/inventory/inventory-pending.ts';
import { createDb } from '../../src/db/database.ts';
import { scanChangeRules } from '../../src/products/scan/changes.ts';

const root = path.resolve(import.meta.dirname, '../..');
const MAIN_ROWS = 400_000;
const OTHER_ROWS = 200_000;
const OTHERS = 3;
const DEPTH = 100_000;
const PAGE = 50;
const ITERATIONS = Number(process.argv[2] ?? 300);
const WARMUP = 30;
/** A 20,000-host deep scan's outputs (docs/operations.md, "Change detection"). */
const SCAN_OBJECTS = 80_000;
const SUPPRESSIONS = 1_000;
/** That scan's wall on this machine class (the lead's bench:changes run, 1 GB buffer pool). */
const SCAN_WALL_S = 209;

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);

interface TerminalChildJob {
  databaseUrl: string;
  jobId: number;
  workspaceId: number;
  publicId: string;
}
interface TerminalChildResult {
  terminalMs: number;
  inventoryMs: number;
  heapBaseMb: number;
  /** Peak of heapUsed right after a forced GC, during the work, less the base. */
  heapRetainedGrowthMb: number;
  /** After the work and a forced GC, less the base. */
  heapAfterMb: number;
  rssBaseMb: number;
  rssGrowthMb: number;
  rssAfterMb: number;
  gcSamples: number;
}

// The child: the orchestrator role's share of a job's end, measured from inside.
if (process.argv[2] === '--terminal-child') {
  const job = JSON.parse(process.argv[3]!) as TerminalChildJob;
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('the terminal child needs --expose-gc');
  const dbh = createDb(job.databaseUrl, { connectionLimit: 4 });
  // The code and the pool warm before the base: a statement of each kind the work uses.
  await sql`SELECT 1`.execute(dbh.db);
  const mb = (n: number) => n / 1e6;
  gc();
  gc();
  const base = process.memoryUsage();
  let heapPeak = base.heapUsed;
  let rssPeak = base.rss;
  let gcSamples = 0;
  const rssTimer = setInterval(() => {
    rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
  }, 10);
  const gcTimer = setInterval(() => {
    gc();
    gcSamples++;
    heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
  }, 250);
  const t0 = performance.now();
  await inTransaction(dbh.db, (trx) =>
    recordEstate(trx, {
      id: job.jobId,
      workspaceId: job.workspaceId,
      product: 'scan.recursive.v1',
      publicId: job.publicId,
    }),
  );
  const t1 = performance.now();
  await drainInventoryOf(dbh.db, job.jobId, () => scanChangeRules);
  const t2 = performance.now();
  clearInterval(rssTimer);
  clearInterval(gcTimer);
  rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
  gc();
  gc();
  const end = process.memoryUsage();
  await dbh.close();
  const out: TerminalChildResult = {
    terminalMs: t1 - t0,
    inventoryMs: t2 - t1,
    heapBaseMb: mb(base.heapUsed),
    heapRetainedGrowthMb: mb(Math.max(heapPeak, end.heapUsed) - base.heapUsed),
    heapAfterMb: mb(end.heapUsed - base.heapUsed),
    rssBaseMb: mb(base.rss),
    rssGrowthMb: mb(rssPeak - base.rss),
    rssAfterMb: mb(end.rss - base.rss),
    gcSamples,
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
  process.exit(0);
}

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

/**
 * `rows` synthetic rows of one workspace in one INSERT … SELECT: n % 10 decides the type (6 hosts,
 * 2 URLs, 1 address, 1 domain), n % 97 the subdomain a host sits under, n % 50 = 0 an open high
 * finding, n % 7 = 0 an open low one; every 20th row gone, every 33rd unconfirmed.
 */
async function fill(db: Deps['db'], workspaceId: number, ws: number, rows: number): Promise<void> {
  const seq = sql.raw(`seq_1_to_${rows}`);
  await sql`INSERT INTO inventory (workspace_id, okey_hash, type, okey, rhost, state, first_seen_at, last_seen_at,
      last_checked_at, changed_at, last_job_id, last_job_ref, last_object_ref, products,
      open_critical, open_high, open_medium, open_low, open_info, max_open)
    SELECT ${workspaceId}, UNHEX(SHA2(CONCAT(t.type, CHAR(10), t.okey), 256)), t.type, t.okey, t.rhost,
      IF(t.n % 20 = 0, 'gone', IF(t.n % 33 = 0, 'unconfirmed', 'present')),
      NOW(3) - INTERVAL 30 DAY, NOW(3) - INTERVAL (t.n % 30) DAY, NOW(3) - INTERVAL (t.n % 30) DAY,
      NOW(3) - INTERVAL (t.n % 60) DAY, NULL, 'job_00000000000000000000000000', NULL, 'scan.recursive.v1',
      0, IF(t.n % 50 = 0, 1, 0), 0, IF(t.n % 7 = 0, 1, 0), 0, IF(t.n % 50 = 0, 3, IF(t.n % 7 = 0, 1, -1))
    FROM (
      SELECT s.seq AS n,
        ELT(1 + s.seq % 10, 'host', 'host', 'host', 'host', 'host', 'host', 'url', 'url', 'ip_address', 'domain') AS type,
        ELT(1 + s.seq % 10,
          CONCAT('h', s.seq, '.sub', s.seq % 97, '.example', ${ws}, '.com'),
          CONCAT('h', s.seq, '.sub', s.seq % 97, '.example', ${ws}, '.com'),
          CONCAT('h', s.seq, '.sub', s.seq % 97, '.example', ${ws}, '.com'),
          CONCAT('h', s.seq, '.sub', s.seq % 97, '.example', ${ws}, '.com'),
          CONCAT('h', s.seq, '.sub', s.seq % 97, '.example', ${ws}, '.com'),
          CONCAT('h', s.seq, '.sub', s.seq % 97, '.example', ${ws}, '.com'),
          CONCAT('https://h', s.seq, '.sub', s.seq % 97, '.example', ${ws}, '.com/'),
          CONCAT('https://h', s.seq, '.sub', s.seq % 97, '.example', ${ws}, '.com/'),
          CONCAT('10.', (s.seq >> 16) % 256, '.', (s.seq >> 8) % 256, '.', s.seq % 256),
          CONCAT('d', s.seq, '.example', ${ws}, '.com')) AS okey,
        ELT(1 + s.seq % 10,
          CONCAT('com.example', ${ws}, '.sub', s.seq % 97, '.h', s.seq, '.'),
          CONCAT('com.example', ${ws}, '.sub', s.seq % 97, '.h', s.seq, '.'),
          CONCAT('com.example', ${ws}, '.sub', s.seq % 97, '.h', s.seq, '.'),
          CONCAT('com.example', ${ws}, '.sub', s.seq % 97, '.h', s.seq, '.'),
          CONCAT('com.example', ${ws}, '.sub', s.seq % 97, '.h', s.seq, '.'),
          CONCAT('com.example', ${ws}, '.sub', s.seq % 97, '.h', s.seq, '.'),
          CONCAT('com.example', ${ws}, '.sub', s.seq % 97, '.h', s.seq, '.'),
          CONCAT('com.example', ${ws}, '.sub', s.seq % 97, '.h', s.seq, '.'),
          CONCAT('ip:10.', (s.seq >> 16) % 256, '.', (s.seq >> 8) % 256, '.', s.seq % 256, '.'),
          CONCAT('com.example', ${ws}, '.d', s.seq, '.')) AS rhost
      FROM ${seq} s
    ) t`.execute(db);
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

  const workspaces: number[] = [];
  let key = '';
  for (let w = 0; w <= OTHERS; w++) {
    const ws = await createWorkspace(db, { name: `bench-${w}` });
    workspaces.push(await workspaceInternalId(db, ws.workspaceId));
    if (w === 0) {
      await setLimits(db, ws.workspaceId, undefined, { app: { perMinute: 10_000_000, burst: 1_000_000 } });
      key = (await createKey(db, config.KEY_PEPPER, { workspace: ws.workspaceId, scopes: ['scan:read'] })).key;
    }
  }
  const t0 = performance.now();
  // Interleaved ids: the other workspaces' rows sit between the measured one's in every index.
  for (let w = 0; w <= OTHERS; w++) {
    log(
      `inserting ${(w === 0 ? MAIN_ROWS : OTHER_ROWS).toLocaleString('en')} rows of workspace ${w} (INSERT … SELECT)`,
    );
    await fill(db, workspaces[w]!, w, w === 0 ? MAIN_ROWS : OTHER_ROWS);
  }
  await sql`ANALYZE TABLE inventory`.execute(db);
  const total = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM inventory`.execute(db);
  log(`${Number(total.rows[0]!.n).toLocaleString('en')} rows in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  // ---- A 20,000-host scan's terminal work: suppressions and inventory, with and without 1,000
  // active suppressions, each in a transaction rolled back (both write the same rows first time).
  const keyRow = await sql<{ id: number }>`SELECT id FROM api_keys ORDER BY id LIMIT 1`.execute(db);
  const jobRes = await sql`INSERT INTO jobs (public_id, workspace_id, api_key_id, product, status, profile, target_type,
      target_value, input, request_id, credits_reserved, coverage, month, started_at, completed_at, deadline_at)
    VALUES ('job_BENCHESTATE000000000000000', ${workspaces[0]}, ${keyRow.rows[0]!.id}, 'scan.recursive.v1', 'running',
      'deep', 'domain_name', 'scan.test', '{}', 'req_BENCHESTATE000000000000000', 0, NULL, '2026-12', NOW(3), NULL,
      NOW(3) + INTERVAL 1 HOUR)`.execute(db);
  const jobId = Number(jobRes.insertId);
  const objSeq = sql.raw(`seq_1_to_${SCAN_OBJECTS}`);
  await sql`INSERT INTO objects (public_id, job_id, seq, workspace_id, type, okey, okey_hash, projection, lanes, evidence)
    SELECT CONCAT('obj_', LPAD(s.seq, 26, '0')), ${jobId}, s.seq, ${workspaces[0]}, 'host',
      CONCAT('t', s.seq, '.sub', s.seq % 97, '.scan.test'),
      UNHEX(SHA2(CONCAT('host', CHAR(10), 't', s.seq, '.sub', s.seq % 97, '.scan.test'), 256)), '{}', '[]', '[]'
    FROM ${objSeq} s`.execute(db);
  // 100,000 findings: every object one, every fourth a second.
  await sql`INSERT INTO findings (public_id, job_id, seq, workspace_id, object_id, code, severity, confidence, title,
      summary, evidence, sources)
    SELECT CONCAT('fnd_a', LPAD(o.seq, 25, '0')), ${jobId}, o.seq, ${workspaces[0]}, o.id, 'web_nosniff_missing', 1,
      'confirmed', 't', 's', '[]', '[]' FROM objects o WHERE o.job_id = ${jobId}`.execute(db);
  await sql`INSERT INTO findings (public_id, job_id, seq, workspace_id, object_id, code, severity, confidence, title,
      summary, evidence, sources)
    SELECT CONCAT('fnd_b', LPAD(o.seq, 25, '0')), ${jobId}, ${SCAN_OBJECTS} + o.seq, ${workspaces[0]}, o.id,
      'scan_dangling_cname', 2, 'confirmed', 't', 's', '[]', '[]' FROM objects o WHERE o.job_id = ${jobId} AND o.seq % 4 = 0`.execute(
    db,
  );
  // 1,000 active suppressions: 600 exact keys (one finding each), 390 patterns of other zones, 10
  // patterns that cover ten subdomains' hosts here (about 9 % of the findings in all).
  const supSeq = sql.raw(`seq_1_to_${SUPPRESSIONS}`);
  await sql`INSERT INTO suppressions (public_id, workspace_id, code, match_key, product, reason, note, expires_at,
      created_by, history)
    SELECT CONCAT('sup_', LPAD(s.seq, 26, '0')), ${workspaces[0]}, 'web_nosniff_missing',
      IF(s.seq <= 600, CONCAT('t', s.seq * 97, '.sub', (s.seq * 97) % 97, '.scan.test'),
        IF(s.seq <= 990, CONCAT('*.zone', s.seq, '.test'), CONCAT('*.sub', s.seq - 990, '.scan.test'))),
      NULL, 'accepted_risk', '', NOW(3) + INTERVAL 30 DAY, 'lsk_bench', '[]'
    FROM ${supSeq} s`.execute(db);
  // Each round from the same start: the job's marks, its inventory rows and the marker gone.
  const resetJob = async () => {
    await sql`DELETE FROM job_suppressions WHERE job_id = ${jobId}`.execute(db);
    await sql`UPDATE jobs SET findings_summary = NULL WHERE id = ${jobId}`.execute(db);
    await sql`DELETE FROM inventory_pending WHERE job_id = ${jobId}`.execute(db);
    await sql`DELETE FROM inventory WHERE workspace_id = ${workspaces[0]} AND last_job_id = ${jobId}`.execute(db);
    await sql`DELETE FROM inventory_findings WHERE workspace_id = ${workspaces[0]}
      AND job_ref = 'job_BENCHESTATE000000000000000'`.execute(db);
  };
  // The Procfile's orchestrator line, its flags and --expose-gc.
  const procfile = (await import('node:fs')).readFileSync(path.join(root, 'Procfile'), 'utf8');
  const orchestratorFlags = (/^orchestrator: node (.*) workers\/orchestrator\.ts$/m.exec(procfile)?.[1] ?? '')
    .split(/\s+/)
    .filter((f) => f.startsWith('--') && !f.startsWith('--import'));
  const terminalWork = async (withSuppressions: boolean) => {
    await resetJob();
    await sql`UPDATE suppressions SET revoked_at = ${withSuppressions ? null : sql`NOW(3)`}
      WHERE workspace_id = ${workspaces[0]}`.execute(db);
    const child: TerminalChildJob = {
      databaseUrl,
      jobId,
      workspaceId: workspaces[0]!,
      publicId: 'job_BENCHESTATE000000000000000',
    };
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        [
          ...orchestratorFlags,
          '--expose-gc',
          path.join(root, 'test/bench/estate.ts'),
          '--terminal-child',
          JSON.stringify(child),
        ],
        { cwd: root, maxBuffer: 1 << 20 },
        (err, out, errOut) => (err ? reject(new Error(`${err.message}\n${errOut}`)) : resolve(out)),
      ),
    );
    const r = JSON.parse(stdout.trim().split('\n').at(-1)!) as TerminalChildResult;
    const sup = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM job_suppressions WHERE job_id = ${jobId}`.execute(
      db,
    );
    const rows = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM inventory WHERE last_job_id = ${jobId}`.execute(db);
    return {
      ...r,
      ms: r.terminalMs + r.inventoryMs,
      suppressed: Number(sup.rows[0]!.n),
      rows: Number(rows.rows[0]!.n),
    };
  };
  log(
    `terminal work of a job with ${SCAN_OBJECTS.toLocaleString('en')} objects and 100,000 findings, in an orchestrator child (${orchestratorFlags.join(' ')} --expose-gc)`,
  );
  const terminal: Array<{ name: string } & Awaited<ReturnType<typeof terminalWork>>> = [];
  for (let round = 0; round < 2; round++)
    for (const withSup of [false, true]) {
      const r = await terminalWork(withSup);
      terminal.push({ name: withSup ? `${SUPPRESSIONS} suppressions` : 'no suppression', ...r });
      log(`  ${terminal.at(-1)!.name}: ${JSON.stringify(r)}`);
    }
  await resetJob();

  const app = createApp(deps);
  server = app.listen(0, '127.0.0.1');
  await new Promise<void>((r) => server!.once('listening', () => r()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const headers = { authorization: `Bearer ${key}` };
  const get = async (p: string) => {
    const res = await fetch(`${base}${p}`, { headers });
    const body = (await res.json()) as { items: Array<{ key: string }>; page: { nextCursor: string | null } };
    if (res.status !== 200) throw new Error(`${p} → ${res.status} ${JSON.stringify(body)}`);
    return body;
  };
  const walk = async (query: string, depth: number) => {
    let cursor: string | null = null;
    for (let seen = 0; seen < depth; seen += 500) {
      const body = await get(`/v2/inventory?limit=500${query}${cursor ? `&cursor=${cursor}` : ''}`);
      cursor = body.page.nextCursor;
      if (!cursor) throw new Error(`${query}: ended at ${seen + body.items.length}`);
    }
    return cursor!;
  };

  log(`walking to depth ${DEPTH.toLocaleString('en')} through the route`);
  const deepCursor = await walk('', DEPTH);
  const q = '&q=sub5.example0.com';
  const qDeepCursor = await walk(q, 2_000);
  const cases: Array<[string, string]> = [
    ['first page', `/v2/inventory?limit=${PAGE}`],
    ['page at depth 100,000', `/v2/inventory?limit=${PAGE}&cursor=${deepCursor}`],
    ['q (a name, ~4,000 below)', `/v2/inventory?limit=${PAGE}${q}`],
    ['q at depth 2,000', `/v2/inventory?limit=${PAGE}${q}&cursor=${qDeepCursor}`],
    ['minSeverity=high', `/v2/inventory?limit=${PAGE}&minSeverity=high`],
    ['minSeverity=low', `/v2/inventory?limit=${PAGE}&minSeverity=low`],
    ['state=unconfirmed', `/v2/inventory?limit=${PAGE}&state=unconfirmed`],
  ];
  for (const [name, p] of cases) {
    const body = await get(p);
    if (body.items.length !== PAGE) throw new Error(`${name}: ${body.items.length} items`);
  }
  for (const [name, query] of [
    [
      'deep',
      sql`SELECT id FROM inventory FORCE INDEX (ix_inventory_page) WHERE workspace_id = ${workspaces[0]} AND (type > 'host' OR (type = 'host' AND okey > 'h5.sub5')) ORDER BY type, okey LIMIT 51`,
    ],
    [
      'q',
      sql`SELECT id FROM inventory FORCE INDEX (ix_inventory_q) WHERE workspace_id = ${workspaces[0]} AND rhost >= 'com.example0.sub5.' AND rhost < 'com.example0.sub5/' ORDER BY rhost, type, okey LIMIT 51`,
    ],
    [
      'minSeverity',
      sql`SELECT id FROM inventory FORCE INDEX (ix_inventory_severity) WHERE workspace_id = ${workspaces[0]} AND max_open = 3 ORDER BY type, okey LIMIT 51`,
    ],
  ] as const) {
    const e = (await sql<Record<string, unknown>>`EXPLAIN ${query}`.execute(db)).rows[0]!;
    log(`EXPLAIN ${name}: type=${e.type} key=${e.key} rows=${e.rows} Extra=${e.Extra}`);
  }

  for (let i = 0; i < WARMUP; i++) for (const [, p] of cases) await get(p);
  const samples = new Map<string, number[]>(cases.map(([n]) => [n, []]));
  log(`timing ${ITERATIONS} iterations of each (interleaved, order rotated)`);
  for (let i = 0; i < ITERATIONS; i++) {
    for (let k = 0; k < cases.length; k++) {
      const [name, p] = cases[(i + k) % cases.length]!;
      const t = performance.now();
      await get(p);
      samples.get(name)!.push(performance.now() - t);
    }
  }
  const fmt = (x: number) => `${x.toFixed(2)} ms`;
  let out = `inventory rows: ${Number(total.rows[0]!.n).toLocaleString('en')} (${OTHERS + 1} workspaces; measured one ${MAIN_ROWS.toLocaleString('en')})\n`;
  out += `page size ${PAGE}, ${ITERATIONS} iterations each after ${WARMUP} warm-up\n`;
  for (const [name] of cases) {
    const s = stats(samples.get(name)!);
    out += `${name.padEnd(26)} median ${fmt(s.median).padStart(9)}  p90 ${fmt(s.p90).padStart(9)}  min ${fmt(s.min)}\n`;
  }
  const first = stats(samples.get('first page')!).median;
  const deep = stats(samples.get('page at depth 100,000')!).median;
  const ratio = deep / first;
  const slowFilter = Math.max(
    ...['q (a name, ~4,000 below)', 'q at depth 2,000', 'minSeverity=high'].map((n) => stats(samples.get(n)!).median),
  );
  const sign = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(1)}`;
  for (const t of terminal)
    out +=
      `terminal work, ${t.name.padEnd(17)} ${(t.ms / 1000).toFixed(2)} s (terminal transaction ${(t.terminalMs / 1000).toFixed(2)} s + inventory ${(t.inventoryMs / 1000).toFixed(2)} s; ` +
      `${t.suppressed} findings suppressed, ${t.rows} inventory rows; ${((100 * t.ms) / 1000 / SCAN_WALL_S).toFixed(1)} % of a ${SCAN_WALL_S} s scan wall)\n` +
      `    orchestrator child: retained heap ${sign(t.heapRetainedGrowthMb)} MB at peak (after a forced GC, ${t.gcSamples} samples; base ${t.heapBaseMb.toFixed(1)} MB), ${sign(t.heapAfterMb)} MB after; ` +
      `RSS ${sign(t.rssGrowthMb)} MB at peak (base ${t.rssBaseMb.toFixed(1)} MB), ${sign(t.rssAfterMb)} MB after\n`;
  const worstHeap = Math.max(...terminal.map((t) => t.heapRetainedGrowthMb));
  const worstRss = Math.max(...terminal.map((t) => t.rssGrowthMb));
  out += `terminal work memory: retained heap growth at most ${worstHeap.toFixed(1)} MB, RSS growth at most ${worstRss.toFixed(1)} MB (target: no process grows more than 32 MB) ${Math.max(worstHeap, worstRss) <= 32 ? 'OK' : worstHeap <= 32 ? 'HEAP OK, RSS OVER' : 'OVER TARGET'}\n`;
  out += `ratio deep/first: ${ratio.toFixed(3)}x (median; target <= 1.3x) ${ratio <= 1.3 ? 'OK' : 'OVER TARGET'}\n`;
  out += `q and minSeverity pages: slowest median ${fmt(slowFilter)} (target < 50 ms) ${slowFilter < 50 ? 'OK' : 'OVER TARGET'}\n`;
  process.stdout.write(out);
  process.exitCode = ratio <= 1.3 && slowFilter < 50 ? 0 : 1;
} catch (err) {
  log(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exitCode = 1;
} finally {
  await cleanup();
}
