// A terminal job written straight into MySQL, for the export tests and bench:exports: N host
// objects, each with up to a few findings of catalog codes, in multi-row statements, seqs taken
// the way the writer takes them (the job row's counters). Realistic rows: projections, lanes and
// evidence like a scan's, one object and one finding carrying a hostile TXT value.
import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { publicId } from '../../src/contract/ids.ts';
import type { Db } from '../../src/db/database.ts';
import type { JobStatus } from '../../src/db/schema.ts';
import { SEVERITIES } from '../../src/contract/tasks.ts';
import { findingCatalog } from '../../src/products/findings-catalog.ts';

export const HOSTILE_TXT = '=HYPERLINK("http://127.0.0.1/steal","Click me")';

export interface SyntheticOwner {
  workspaceId: number;
  keyId: number;
}

export interface SyntheticJobSpec {
  objects: number;
  /** Findings on every object whose index is a multiple of this (1: every object). */
  findingEvery?: number;
  /** Findings per such object (distinct codes). */
  findingsPerObject?: number;
  status?: JobStatus;
  coverage?: unknown;
  zone?: string;
}

export interface SyntheticJob {
  id: number;
  ref: string;
  objects: number;
  findings: number;
}

export async function insertSyntheticJob(db: Db, owner: SyntheticOwner, spec: SyntheticJobSpec): Promise<SyntheticJob> {
  const zone = spec.zone ?? `synthetic-${randomBytes(3).toString('hex')}.test`;
  const status = spec.status ?? 'completed';
  const terminal = status !== 'running' && status !== 'queued' && status !== 'cancelling';
  const ref = publicId('job');
  const ins = await db
    .insertInto('jobs')
    .values({
      public_id: ref,
      workspace_id: owner.workspaceId,
      api_key_id: owner.keyId,
      product: 'scan.recursive.v1',
      status,
      profile: 'deep',
      target_type: 'domain_name',
      target_value: zone,
      input: '{}',
      request_id: publicId('req'),
      credits_reserved: 0,
      credits_released: null,
      settled_at: null,
      result: null,
      coverage: JSON.stringify(spec.coverage ?? { complete: true, limitations: [] }),
      month: '2026-12',
      started_at: new Date(),
      completed_at: terminal ? new Date() : null,
      cancel_requested_at: null,
      deadline_at: new Date(Date.now() + 3_600_000),
    })
    .executeTakeFirstOrThrow();
  const jobId = Number(ins.insertId);
  const every = spec.findingEvery ?? 1;
  const perObject = spec.findingsPerObject ?? 1;
  const codes = findingCatalog.filter((f, i, all) => all.findIndex((g) => g.code === f.code) === i);
  let findings = 0;
  const BATCH = 500;
  for (let start = 0; start < spec.objects; start += BATCH) {
    const n = Math.min(BATCH, spec.objects - start);
    const objects = Array.from({ length: n }, (_, j) => {
      const i = start + j;
      const key = i === 0 ? zone : `h${i}.${zone}`;
      return {
        public_id: publicId('obj'),
        job_id: jobId,
        seq: i + 1,
        workspace_id: owner.workspaceId,
        type: i === 0 ? 'domain' : 'host',
        okey: key,
        okey_hash: createHash('sha256')
          .update(`${i === 0 ? 'domain' : 'host'}\n${key}`)
          .digest(),
        distance: i === 0 ? 0 : 1,
        projection: JSON.stringify({
          name: key,
          addresses: [`127.0.${(i >> 8) & 255}.${i & 255}`],
          ...(i === 0 ? { txt: [HOSTILE_TXT, 'v=spf1 -all'] } : {}),
        }),
        lanes: JSON.stringify([
          { lane: 'dns', status: 'completed' },
          { lane: 'web', status: i % 7 === 0 ? 'timeout' : 'completed' },
        ]),
        // The lane writer stores a random ev_ ref with each summary (output-writer.ts): so do we.
        evidence: JSON.stringify([{ ref: publicId('ev'), summary: i === 0 ? HOSTILE_TXT : `A ${key} 127.0.0.1` }]),
      };
    });
    await db.insertInto('objects').values(objects).execute();
    const ids = await db
      .selectFrom('objects')
      .select(['id', 'seq', 'okey'])
      .where('job_id', '=', jobId)
      .where('seq', '>', start)
      .where('seq', '<=', start + n)
      .orderBy('seq')
      .execute();
    const rows = [];
    for (const o of ids) {
      const i = Number(o.seq) - 1;
      if (i % every !== 0) continue;
      for (let k = 0; k < perObject; k++) {
        const kind = codes[(i + k * 7) % codes.length]!;
        findings += 1;
        rows.push({
          public_id: publicId('fnd'),
          job_id: jobId,
          seq: findings,
          workspace_id: owner.workspaceId,
          object_id: Number(o.id),
          code: kind.code,
          severity: SEVERITIES.indexOf(kind.severity),
          confidence: kind.confidence,
          title: kind.title,
          summary: i === 0 && k === 0 ? HOSTILE_TXT : `${kind.title} on ${o.okey}`,
          evidence: JSON.stringify([{ ref: publicId('ev'), summary: i === 0 ? HOSTILE_TXT : `seen on ${o.okey}` }]),
          sources: JSON.stringify([{ lane: 'dns', source: 'direct' }]),
        });
      }
    }
    for (let r = 0; r < rows.length; r += BATCH)
      await db
        .insertInto('findings')
        .values(rows.slice(r, r + BATCH))
        .execute();
  }
  await sql`UPDATE jobs SET object_seq = ${spec.objects}, finding_seq = ${findings} WHERE id = ${jobId}`.execute(db);
  return { id: jobId, ref, objects: spec.objects, findings };
}
