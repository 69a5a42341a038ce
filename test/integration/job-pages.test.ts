import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createTenant, startHarness, type Harness, type Tenant } from '../helpers/harness.ts';
import { workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { publicId } from '../../src/contract/ids.ts';
import type { Db } from '../../src/db/database.ts';
import type { JobStatus } from '../../src/db/schema.ts';
import { SEVERITIES, type Severity } from '../../src/contract/tasks.ts';

// ---- Fixture writer: rows written directly, seqs taken the way the real writer takes them --------

interface Owner {
  tenant: Tenant;
  workspaceId: number;
  keyId: number;
}

interface JobFixture {
  id: number;
  ref: string;
  owner: Owner;
}

interface ObjFixture {
  id: number;
  publicId: string;
  seq: number;
  key: string;
}

async function owner(h: Harness, tenant: Tenant): Promise<Owner> {
  const key = await h.deps.db
    .selectFrom('api_keys')
    .select('id')
    .where('public_id', '=', tenant.keyId)
    .executeTakeFirstOrThrow();
  return { tenant, workspaceId: await workspaceInternalId(h.deps.db, tenant.workspaceId), keyId: Number(key.id) };
}

async function insertJob(
  db: Db,
  o: Owner,
  status: JobStatus = 'running',
  coverage: unknown = null,
): Promise<JobFixture> {
  const ref = publicId('job');
  const ins = await db
    .insertInto('jobs')
    .values({
      public_id: ref,
      workspace_id: o.workspaceId,
      api_key_id: o.keyId,
      product: 'scan.recursive.v1',
      status,
      profile: 'balanced',
      target_type: 'domain_name',
      target_value: 'example.com',
      input: '{}',
      request_id: publicId('req'),
      credits_reserved: 0,
      credits_released: null,
      settled_at: null,
      result: null,
      coverage: coverage === null ? null : JSON.stringify(coverage),
      month: '2026-11',
      started_at: new Date(),
      completed_at: null,
      cancel_requested_at: null,
      deadline_at: new Date(Date.now() + 3_600_000),
    })
    .executeTakeFirstOrThrow();
  return { id: Number(ins.insertId), ref, owner: o };
}

async function finishJob(
  db: Db,
  job: JobFixture,
  status: JobStatus = 'completed',
  coverage: unknown = { complete: true, limitations: [] },
): Promise<void> {
  await db
    .updateTable('jobs')
    .set({ status, coverage: JSON.stringify(coverage), completed_at: new Date() })
    .where('id', '=', job.id)
    .execute();
}

/** Takes n seqs under the job row lock (UPDATE … LAST_INSERT_ID), held until the caller commits. */
async function takeSeqs(trx: Db, jobId: number, column: 'object_seq' | 'finding_seq', n: number): Promise<number> {
  const r =
    await sql`UPDATE jobs SET ${sql.ref(column)} = LAST_INSERT_ID(${sql.ref(column)} + ${n}) WHERE id = ${jobId}`.execute(
      trx,
    );
  const last = Number(r.insertId ?? (await sql<{ v: number }>`SELECT LAST_INSERT_ID() AS v`.execute(trx)).rows[0]!.v);
  return last - n + 1;
}

let keyCounter = 0;

interface ObjSpec {
  type?: string;
  key?: string;
  evidence?: Array<{ summary: string }>;
}

function objectRow(job: JobFixture, seq: number, spec: ObjSpec) {
  const key = spec.key ?? `h${++keyCounter}-${randomBytes(3).toString('hex')}.example.com`;
  return {
    public_id: publicId('obj'),
    job_id: job.id,
    seq,
    workspace_id: job.owner.workspaceId,
    type: spec.type ?? 'host',
    okey: key,
    okey_hash: createHash('sha256').update(key).digest(),
    distance: 1,
    projection: JSON.stringify({ name: key }),
    lanes: JSON.stringify([
      { lane: 'dns', status: 'completed' },
      { lane: 'web', status: 'timeout', reason: 'deadline' },
    ]),
    evidence: JSON.stringify(spec.evidence ?? [{ summary: `A record of ${key}` }]),
  };
}

/** One object per transaction, like the lane writer; `holdMs` keeps the row lock a while. */
async function addObject(db: Db, job: JobFixture, spec: ObjSpec = {}, holdMs = 0): Promise<ObjFixture> {
  return db.transaction().execute(async (trx) => {
    const seq = await takeSeqs(trx, job.id, 'object_seq', 1);
    if (holdMs > 0) await sleep(holdMs);
    const row = objectRow(job, seq, spec);
    const ins = await trx.insertInto('objects').values(row).executeTakeFirstOrThrow();
    if (holdMs > 0) await sleep(holdMs);
    return { id: Number(ins.insertId), publicId: row.public_id, seq, key: row.okey };
  });
}

/** Many objects in one transaction (bulk fixture); returns them in seq order. */
async function addObjects(db: Db, job: JobFixture, n: number): Promise<ObjFixture[]> {
  return db.transaction().execute(async (trx) => {
    const first = await takeSeqs(trx, job.id, 'object_seq', n);
    const rows = Array.from({ length: n }, (_, i) => objectRow(job, first + i, {}));
    for (let i = 0; i < rows.length; i += 500)
      await trx
        .insertInto('objects')
        .values(rows.slice(i, i + 500))
        .execute();
    const ids = await trx
      .selectFrom('objects')
      .select(['id', 'public_id', 'seq', 'okey'])
      .where('job_id', '=', job.id)
      .where('seq', '>=', first)
      .orderBy('seq')
      .execute();
    return ids.map((r) => ({ id: Number(r.id), publicId: r.public_id, seq: Number(r.seq), key: r.okey }));
  });
}

async function addFinding(
  db: Db,
  job: JobFixture,
  obj: ObjFixture,
  severity: Severity,
  code = `code_${randomBytes(4).toString('hex')}`,
): Promise<string> {
  return db.transaction().execute(async (trx) => {
    const seq = await takeSeqs(trx, job.id, 'finding_seq', 1);
    const id = publicId('fnd');
    await trx
      .insertInto('findings')
      .values({
        public_id: id,
        job_id: job.id,
        seq,
        workspace_id: job.owner.workspaceId,
        object_id: obj.id,
        code,
        severity: SEVERITIES.indexOf(severity),
        confidence: 'firm',
        title: `${severity} finding`,
        summary: 'summary',
        evidence: JSON.stringify([{ summary: 'seen in TXT' }]),
        sources: JSON.stringify([{ lane: 'mail', source: 'dns' }]),
      })
      .execute();
    return id;
  });
}

async function relate(db: Db, job: JobFixture, from: ObjFixture, relation: string, to: ObjFixture): Promise<void> {
  await db
    .insertInto('relations')
    .values({ job_id: job.id, from_object_id: from.id, relation, to_object_id: to.id })
    .execute();
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const HIGH_LIMITS = { app: { perMinute: 1_000_000, burst: 100_000 } };

// ---- Tests -----------------------------------------------------------------------------------

describe('job pages, findings and objects', () => {
  let h: Harness;
  let a: Owner;
  let b: Owner;
  beforeAll(async () => {
    h = await startHarness();
    a = await owner(h, await createTenant(h, { limits: HIGH_LIMITS }));
    b = await owner(h, await createTenant(h, { limits: HIGH_LIMITS }));
  });
  afterAll(() => h.close());

  const get = (o: Owner, path: string) => client(h.app, o.tenant.key).get(path);

  /** Follows nextCursor until it is null (or maxPages); returns every item in order. */
  async function pageAll(o: Owner, base: string, limit: number, maxPages = 10_000) {
    const items: Array<Record<string, any>> = [];
    let cursor: string | null = null;
    let pages = 0;
    const sep = base.includes('?') ? '&' : '?';
    do {
      const res = await get(o, `${base}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.items.length).toBeLessThanOrEqual(limit);
      items.push(...res.body.items);
      cursor = res.body.page.nextCursor;
      pages++;
    } while (cursor && pages < maxPages);
    return { items, pages };
  }

  it('pages through 1,234 objects with limit 100: every object exactly once, in seq order', async () => {
    const job = await insertJob(h.deps.db, a);
    const objs = await addObjects(h.deps.db, job, 1234);
    await finishJob(h.deps.db, job);
    const { items, pages } = await pageAll(a, `/v2/jobs/${job.ref}/results`, 100);
    expect(pages).toBe(13);
    expect(items.map((i) => i.objectId)).toEqual(objs.map((o) => o.publicId));
    expect(new Set(items.map((i) => i.objectId)).size).toBe(1234);
    const first = items[0]!;
    expect(first).toEqual({
      objectId: objs[0]!.publicId,
      type: 'host',
      key: objs[0]!.key,
      distance: 1,
      firstSeenAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      lanes: [
        { lane: 'dns', status: 'completed' },
        { lane: 'web', status: 'timeout', reason: 'deadline' },
      ],
      projection: { name: objs[0]!.key },
      evidence: [{ ref: expect.stringMatching(/^ev_[0-9A-HJKMNP-TV-Z]{26}$/), summary: `A record of ${objs[0]!.key}` }],
      // No baseline (CONTRACT §13): not compared.
      change: null,
    });
  });

  it('a reader paging while several writers commit sees every object exactly once: no skip, no repeat', async () => {
    const job = await insertJob(h.deps.db, a, 'running');
    const WRITERS = 4;
    const PER_WRITER = 40;
    let writing = true;
    const written: string[] = [];
    const writers = Promise.all(
      Array.from({ length: WRITERS }, async () => {
        for (let i = 0; i < PER_WRITER; i++) {
          // Holding the row lock between taking the seq and committing is where a reader ordering by
          // anything but the locked seq would skip: a later seq must never commit first.
          const o = await addObject(h.deps.db, job, {}, Math.random() < 0.3 ? 5 : 0);
          written.push(o.publicId);
        }
      }),
    ).finally(() => {
      writing = false;
    });

    const seen: string[] = [];
    const seqOrder: number[] = [];
    let cursor: string | null = null;
    let pagesWhileRunning = 0;
    let nonEmptyPagesWhileRunning = 0;
    const readPage = async () => {
      const res = await get(a, `/v2/jobs/${job.ref}/results?limit=7${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      for (const it of res.body.items) seen.push(it.objectId);
      return res.body;
    };
    while (writing) {
      const body = await readPage();
      expect(body.terminal).toBe(false);
      expect(body.page.nextCursor, 'a running job always hands out a cursor').toEqual(expect.any(String));
      cursor = body.page.nextCursor;
      pagesWhileRunning++;
      if (body.items.length > 0) nonEmptyPagesWhileRunning++;
    }
    await writers;
    await finishJob(h.deps.db, job);
    for (;;) {
      const body = await readPage();
      if (body.page.nextCursor === null) {
        expect(body.terminal).toBe(true);
        break;
      }
      cursor = body.page.nextCursor;
    }

    expect(written.length).toBe(WRITERS * PER_WRITER);
    expect(pagesWhileRunning).toBeGreaterThan(5);
    expect(nonEmptyPagesWhileRunning).toBeGreaterThan(2);
    expect(new Set(seen).size, 'no repeats').toBe(seen.length);
    expect([...seen].sort(), 'no skips').toEqual([...written].sort());
    const rows = await h.deps.db
      .selectFrom('objects')
      .select(['public_id', 'seq'])
      .where('job_id', '=', job.id)
      .execute();
    const seqOf = new Map(rows.map((r) => [r.public_id, Number(r.seq)]));
    for (const id of seen) seqOrder.push(seqOf.get(id)!);
    expect(seqOrder).toEqual([...seqOrder].sort((x, y) => x - y));
  });

  describe('nextCursor semantics', () => {
    it('running: a cursor even when the page is not full; following it later continues where it stopped', async () => {
      const job = await insertJob(h.deps.db, a, 'running', {
        complete: false,
        limitations: [{ code: 'budget_exhausted', message: 'Budget reached.' }],
      });
      const o1 = await addObject(h.deps.db, job);
      const o2 = await addObject(h.deps.db, job);
      const p1 = await get(a, `/v2/jobs/${job.ref}/results?limit=10`);
      expect(p1.body).toMatchObject({
        jobRef: job.ref,
        jobStatus: 'running',
        terminal: false,
        coverage: { complete: false },
        page: { limit: 10 },
      });
      expect(p1.body.limitations.map((l: { code: string }) => l.code)).toEqual([
        'job_not_finished',
        'budget_exhausted',
      ]);
      expect(p1.body.items.map((i: { objectId: string }) => i.objectId)).toEqual([o1.publicId, o2.publicId]);
      expect(p1.body.page.nextCursor).toEqual(expect.any(String));

      const p2 = await get(a, `/v2/jobs/${job.ref}/results?limit=10&cursor=${p1.body.page.nextCursor}`);
      expect(p2.body.items).toEqual([]);
      expect(p2.body.page.nextCursor, 'nothing more yet, not no more ever').toEqual(expect.any(String));

      const o3 = await addObject(h.deps.db, job);
      const p3 = await get(a, `/v2/jobs/${job.ref}/results?limit=10&cursor=${p2.body.page.nextCursor}`);
      expect(p3.body.items.map((i: { objectId: string }) => i.objectId)).toEqual([o3.publicId]);

      await finishJob(h.deps.db, job, 'partial', {
        complete: false,
        limitations: [{ code: 'budget_exhausted', message: 'Budget reached.' }],
      });
      const p4 = await get(a, `/v2/jobs/${job.ref}/results?limit=10&cursor=${p3.body.page.nextCursor}`);
      expect(p4.body).toMatchObject({
        jobStatus: 'partial',
        terminal: true,
        items: [],
        coverage: { complete: false },
        page: { limit: 10, nextCursor: null },
      });
      expect(p4.body.limitations).toEqual([{ code: 'budget_exhausted', message: 'Budget reached.' }]);
    });

    it('terminal: null exactly when nothing follows (a full last page ends the walk too); coverage comes from the job', async () => {
      const job = await insertJob(h.deps.db, a);
      await addObjects(h.deps.db, job, 10);
      await finishJob(h.deps.db, job, 'completed', { complete: true, limitations: [] });
      const full = await get(a, `/v2/jobs/${job.ref}/results?limit=10`);
      expect(full.body.items).toHaveLength(10);
      expect(full.body).toMatchObject({
        terminal: true,
        coverage: { complete: true },
        limitations: [],
        page: { nextCursor: null },
      });
      const first = await get(a, `/v2/jobs/${job.ref}/results?limit=4`);
      expect(first.body.page.nextCursor).toEqual(expect.any(String));
      const { items, pages } = await pageAll(a, `/v2/jobs/${job.ref}/results`, 5);
      expect(items).toHaveLength(10);
      expect(pages).toBe(2);
    });

    it('a terminal job without recorded coverage is not reported complete', async () => {
      const job = await insertJob(h.deps.db, a, 'failed');
      const res = await get(a, `/v2/jobs/${job.ref}/results`);
      expect(res.body).toMatchObject({
        terminal: true,
        coverage: { complete: false },
        page: { limit: 50, nextCursor: null },
      });
      expect(res.body.limitations.map((l: { code: string }) => l.code)).toEqual(['coverage_not_recorded']);
    });
  });

  describe('cursors', () => {
    let jobA: JobFixture;
    let jobA2: JobFixture;
    let jobB: JobFixture;
    let resultsCursor: string;
    let highCursor: string;
    beforeAll(async () => {
      jobA = await insertJob(h.deps.db, a);
      jobA2 = await insertJob(h.deps.db, a);
      jobB = await insertJob(h.deps.db, b);
      for (const j of [jobA, jobA2, jobB]) {
        const objs = await addObjects(h.deps.db, j, 5);
        for (const o of objs) await addFinding(h.deps.db, j, o, 'high');
      }
      resultsCursor = (await get(a, `/v2/jobs/${jobA.ref}/results?limit=2`)).body.page.nextCursor;
      highCursor = (await get(a, `/v2/jobs/${jobA.ref}/findings?limit=2&severity=high`)).body.page.nextCursor;
      expect(resultsCursor).toEqual(expect.any(String));
      expect(highCursor).toEqual(expect.any(String));
    });

    async function expectInvalidCursor(o: Owner, path: string) {
      const res = await get(o, path);
      expect(res.status, `${path} → ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.error.code).toBe('invalid_cursor');
    }

    it('the issued cursors work where they were issued', async () => {
      expect((await get(a, `/v2/jobs/${jobA.ref}/results?limit=2&cursor=${resultsCursor}`)).status).toBe(200);
      expect((await get(a, `/v2/jobs/${jobA.ref}/findings?limit=2&severity=high&cursor=${highCursor}`)).status).toBe(
        200,
      );
    });

    it('forged, truncated or altered → invalid_cursor', async () => {
      const base = `/v2/jobs/${jobA.ref}/results?limit=2&cursor=`;
      await expectInvalidCursor(a, `${base}${randomBytes(60).toString('base64url')}`);
      await expectInvalidCursor(a, `${base}${resultsCursor.slice(0, -1)}`);
      await expectInvalidCursor(a, `${base}${resultsCursor.slice(0, 20)}`);
      await expectInvalidCursor(a, `${base}${resultsCursor}A`);
      const raw = Buffer.from(resultsCursor, 'base64url');
      raw[raw.length - 20]! ^= 0x01;
      await expectInvalidCursor(a, `${base}${raw.toString('base64url')}`);
      await expectInvalidCursor(a, `${base}`);
      await expectInvalidCursor(a, `${base}%00%01`);
      await expectInvalidCursor(a, `${base}${'A'.repeat(4000)}`);
    });

    it('cross-job, cross-route, cross-filter and cross-tenant → invalid_cursor', async () => {
      await expectInvalidCursor(a, `/v2/jobs/${jobA2.ref}/results?limit=2&cursor=${resultsCursor}`);
      await expectInvalidCursor(a, `/v2/jobs/${jobA.ref}/findings?limit=2&cursor=${resultsCursor}`);
      await expectInvalidCursor(a, `/v2/jobs/${jobA.ref}/results?limit=2&cursor=${highCursor}`);
      await expectInvalidCursor(a, `/v2/jobs/${jobA.ref}/findings?limit=2&cursor=${highCursor}`);
      await expectInvalidCursor(a, `/v2/jobs/${jobA.ref}/findings?limit=2&severity=low&cursor=${highCursor}`);
      await expectInvalidCursor(a, `/v2/jobs/${jobA.ref}/findings?limit=2&severity=critical&cursor=${highCursor}`);
      await expectInvalidCursor(b, `/v2/jobs/${jobB.ref}/results?limit=2&cursor=${resultsCursor}`);
      await expectInvalidCursor(b, `/v2/jobs/${jobB.ref}/findings?limit=2&severity=high&cursor=${highCursor}`);
    });

    it('a changed limit keeps the cursor valid (limit is not part of the view)', async () => {
      const res = await get(a, `/v2/jobs/${jobA.ref}/results?limit=50&cursor=${resultsCursor}`);
      expect(res.status).toBe(200);
      expect(res.body.items).toHaveLength(3);
    });

    it("another tenant presenting a cursor on the owner's job ref gets job_not_found, not a cursor answer", async () => {
      const res = await get(b, `/v2/jobs/${jobA.ref}/results?limit=2&cursor=${resultsCursor}`);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('job_not_found');
    });
  });

  describe('query validation', () => {
    let job: JobFixture;
    beforeAll(async () => {
      job = await insertJob(h.deps.db, a);
      await addObjects(h.deps.db, job, 3);
    });

    it.each([['0'], ['501'], ['abc'], ['1.5'], ['-1'], [''], ['1e2'], ['%201']])(
      'limit=%s → invalid_request naming limit',
      async (limit) => {
        for (const route of ['results', 'findings']) {
          const res = await get(a, `/v2/jobs/${job.ref}/${route}?limit=${limit}`);
          expect(res.status).toBe(400);
          expect(res.body.error.code).toBe('invalid_request');
          expect(res.body.error.details.issues.map((i: { path: string }) => i.path)).toEqual(['limit']);
        }
      },
    );

    it('limit 1 and 500 are accepted; the default is 50; unknown parameters are ignored', async () => {
      expect((await get(a, `/v2/jobs/${job.ref}/results?limit=1`)).body.page.limit).toBe(1);
      expect((await get(a, `/v2/jobs/${job.ref}/results?limit=500`)).body.page.limit).toBe(500);
      const res = await get(a, `/v2/jobs/${job.ref}/results?offset=2&page=3&foo=bar`);
      expect(res.status).toBe(200);
      expect(res.body.page.limit).toBe(50);
      expect(res.body.items).toHaveLength(3);
    });

    it('a repeated limit or an unknown severity → invalid_request', async () => {
      const rep = await get(a, `/v2/jobs/${job.ref}/results?limit=1&limit=2`);
      expect(rep.status).toBe(400);
      expect(rep.body.error.code).toBe('invalid_request');
      const sev = await get(a, `/v2/jobs/${job.ref}/findings?severity=severe`);
      expect(sev.status).toBe(400);
      expect(sev.body.error.details.issues.map((i: { path: string }) => i.path)).toEqual(['severity']);
    });
  });

  describe('findings', () => {
    let job: JobFixture;
    let objs: ObjFixture[];
    const ids: Record<string, string> = {};
    beforeAll(async () => {
      job = await insertJob(h.deps.db, a);
      objs = await addObjects(h.deps.db, job, 3);
      for (const [i, sev] of (
        ['info', 'critical', 'low', 'high', 'medium', 'high', 'info', 'critical'] as Severity[]
      ).entries()) {
        ids[`${i}:${sev}`] = await addFinding(h.deps.db, job, objs[i % 3]!, sev, `code_${i}`);
      }
      await finishJob(h.deps.db, job);
    });

    it('needs finding:read besides scan:read → insufficient_scope naming it', async () => {
      const reader = await owner(h, await createTenant(h, { scopes: ['scan:read'] }));
      const own = await insertJob(h.deps.db, reader);
      const res = await get(reader, `/v2/jobs/${own.ref}/findings`);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('insufficient_scope');
      expect(res.body.error.details).toEqual({ requiredScopes: ['finding:read'] });
      expect((await get(reader, `/v2/jobs/${own.ref}/results`)).status).toBe(200);

      const findingsOnly = await owner(h, await createTenant(h, { scopes: ['finding:read'] }));
      const r2 = await get(findingsOnly, `/v2/jobs/${own.ref}/findings`);
      expect(r2.status).toBe(403);
      expect(r2.body.error.details).toEqual({ requiredScopes: ['scan:read'] });
    });

    it('lists every finding in seq order with its public projection', async () => {
      const res = await get(a, `/v2/jobs/${job.ref}/findings`);
      expect(res.status).toBe(200);
      expect(res.body.items.map((f: { findingId: string }) => f.findingId)).toEqual(Object.values(ids));
      expect(res.body.items[1]).toEqual({
        findingId: ids['1:critical'],
        code: 'code_1',
        severity: 'critical',
        confidence: 'firm',
        title: 'critical finding',
        summary: 'summary',
        objectId: objs[1]!.publicId,
        evidence: [{ ref: expect.stringMatching(/^ev_[0-9A-HJKMNP-TV-Z]{26}$/), summary: 'seen in TXT' }],
        sources: [{ lane: 'mail', source: 'dns' }],
        detectedAt: expect.any(String),
        change: null,
        suppressed: null,
      });
      expect(res.body.page.nextCursor).toBeNull();
    });

    it('severity is a minimum, and pages with its own cursors', async () => {
      const high = await pageAll(a, `/v2/jobs/${job.ref}/findings?severity=high`, 1);
      expect(high.items.map((f) => f.severity)).toEqual(['critical', 'high', 'high', 'critical']);
      expect(high.items.map((f) => f.findingId)).toEqual([
        ids['1:critical'],
        ids['3:high'],
        ids['5:high'],
        ids['7:critical'],
      ]);
      const medium = await get(a, `/v2/jobs/${job.ref}/findings?severity=medium`);
      expect(medium.body.items.map((f: { severity: string }) => f.severity)).toEqual([
        'critical',
        'high',
        'medium',
        'high',
        'critical',
      ]);
      const crit = await get(a, `/v2/jobs/${job.ref}/findings?severity=critical`);
      expect(crit.body.items).toHaveLength(2);
      const info = await get(a, `/v2/jobs/${job.ref}/findings?severity=info&limit=3`);
      expect(info.body.items).toHaveLength(3);
      // 'info' filters nothing, so its cursor is the unfiltered view's.
      const rest = await get(a, `/v2/jobs/${job.ref}/findings?cursor=${info.body.page.nextCursor}`);
      expect(rest.body.items).toHaveLength(5);
    });
  });

  describe('object detail', () => {
    let job: JobFixture;
    let otherJob: JobFixture;
    let domain: ObjFixture;
    let mx: ObjFixture;
    let ip: ObjFixture;
    let lonely: ObjFixture;
    let otherJobObj: ObjFixture;
    let f1: string;
    let f2: string;
    beforeAll(async () => {
      job = await insertJob(h.deps.db, a);
      domain = await addObject(h.deps.db, job, {
        type: 'domain',
        key: 'example.com',
        evidence: [{ summary: 'SOA' }, { summary: 'NS' }],
      });
      mx = await addObject(h.deps.db, job, { type: 'mx_host', key: 'mx.example.com' });
      ip = await addObject(h.deps.db, job, { type: 'ip_address', key: '192.0.2.1' });
      lonely = await addObject(h.deps.db, job, { type: 'url', key: 'https://example.com/' });
      await relate(h.deps.db, job, mx, 'mx_of', domain);
      await relate(h.deps.db, job, mx, 'resolves_to', ip);
      await relate(h.deps.db, job, domain, 'discovered_from', mx);
      f1 = await addFinding(h.deps.db, job, domain, 'medium');
      await addFinding(h.deps.db, job, mx, 'low');
      f2 = await addFinding(h.deps.db, job, domain, 'high');
      otherJob = await insertJob(h.deps.db, a);
      otherJobObj = await addObject(h.deps.db, otherJob, { key: 'other.example.com' });
    });

    it('is the result item plus relations in both directions and the finding ids', async () => {
      const res = await get(a, `/v2/jobs/${job.ref}/objects/${domain.publicId}`);
      expect(res.status).toBe(200);
      const page = await get(a, `/v2/jobs/${job.ref}/results`);
      const item = page.body.items.find((i: { objectId: string }) => i.objectId === domain.publicId);
      expect(res.body).toEqual({
        ...item,
        relations: [
          { relation: 'discovered_from', direction: 'outgoing', objectId: mx.publicId },
          { relation: 'mx_of', direction: 'incoming', objectId: mx.publicId },
        ],
        findings: [f1, f2],
        suppressedFindings: [],
      });
      expect(res.body.type).toBe('domain');
      expect(res.body.evidence).toHaveLength(2);
      expect(res.body.evidence[0].ref).not.toBe(res.body.evidence[1].ref);

      const mxRes = await get(a, `/v2/jobs/${job.ref}/objects/${mx.publicId}`);
      expect(mxRes.body.relations).toEqual([
        { relation: 'mx_of', direction: 'outgoing', objectId: domain.publicId },
        { relation: 'resolves_to', direction: 'outgoing', objectId: ip.publicId },
        { relation: 'discovered_from', direction: 'incoming', objectId: domain.publicId },
      ]);
      const lonelyRes = await get(a, `/v2/jobs/${job.ref}/objects/${lonely.publicId}`);
      expect(lonelyRes.body).toMatchObject({ relations: [], findings: [] });
    });

    it('evidence refs are stable across reads and carry no database id', async () => {
      const r1 = await get(a, `/v2/jobs/${job.ref}/objects/${domain.publicId}`);
      const r2 = await get(a, `/v2/jobs/${job.ref}/objects/${domain.publicId}`);
      expect(r1.body.evidence).toEqual(r2.body.evidence);
      const text = JSON.stringify(r1.body);
      expect(text).not.toMatch(/"(id|seq|jobId|job_id|objectDbId)"/);
    });

    it('unknown, malformed or other-job object ids → object_not_found, identical apart from requestId', async () => {
      const bodies = [];
      for (const id of [
        publicId('obj'),
        'obj_bad',
        'not-an-id',
        otherJobObj.publicId,
        String(domain.id),
        publicId('fnd'),
      ]) {
        const res = await get(a, `/v2/jobs/${job.ref}/objects/${id}`);
        expect(res.status, id).toBe(404);
        bodies.push({ ...res.body.error, requestId: undefined });
      }
      expect(bodies[0]!.code).toBe('object_not_found');
      for (const body of bodies) expect(body).toEqual(bodies[0]);
    });

    it('another tenant sees neither the job nor the object: the same 404 as for things that never existed', async () => {
      const nothing = publicId('job');
      const cases: Array<[string, string]> = [
        [`/v2/jobs/${job.ref}/results`, `/v2/jobs/${nothing}/results`],
        [`/v2/jobs/${job.ref}/findings`, `/v2/jobs/${nothing}/findings`],
        [`/v2/jobs/${job.ref}/objects/${domain.publicId}`, `/v2/jobs/${nothing}/objects/${domain.publicId}`],
        [`/v2/jobs/${job.ref}/results?cursor=garbage`, `/v2/jobs/job_malformed/results?cursor=garbage`],
      ];
      for (const [foreign, never] of cases) {
        const f = await get(b, foreign);
        const n = await get(b, never);
        expect(f.status, foreign).toBe(404);
        expect(f.body.error.code).toBe('job_not_found');
        expect({ ...f.body.error, requestId: 'x' }).toEqual({ ...n.body.error, requestId: 'x' });
        expect(f.headers['content-length']).toBe(n.headers['content-length']);
      }
      // b's own job does not open a's object either.
      const own = await insertJob(h.deps.db, b);
      const cross = await get(b, `/v2/jobs/${own.ref}/objects/${domain.publicId}`);
      const none = await get(b, `/v2/jobs/${own.ref}/objects/${publicId('obj')}`);
      expect(cross.status).toBe(404);
      expect({ ...cross.body.error, requestId: 'x' }).toEqual({ ...none.body.error, requestId: 'x' });
      expect(cross.body.error.code).toBe('object_not_found');
    });
  });

  it('needs a key and scan:read', async () => {
    const job = await insertJob(h.deps.db, a);
    const anon = await client(h.app).get(`/v2/jobs/${job.ref}/results`);
    expect(anon.status).toBe(401);
    const writer = await owner(h, await createTenant(h, { scopes: ['scan:create'] }));
    const res = await get(writer, `/v2/jobs/${job.ref}/objects/${publicId('obj')}`);
    expect(res.status).toBe(403);
    expect(res.body.error.details).toEqual({ requiredScopes: ['scan:read'] });
  });

  it('answers other methods with 405 and an Allow header', async () => {
    const res = await client(h.app, a.tenant.key).post(`/v2/jobs/${publicId('job')}/results`, {});
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET');
  });
});
