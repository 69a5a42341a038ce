// One chunk of a comparison (STYLE: "a comparison is a merge of two sorted streams"): the next
// `limit` objects of the baseline and of the job in identity order (okey_hash, a hash of type and
// key: ix_objects_hash), paired as they come, each identity's findings paired by code, every pair
// marked and written to job_changes. Up to the boundary both pages are sure to cover (the smaller
// of the two last hashes when a page is full), so nothing beyond a page is held in memory and the
// next chunk starts where this one ended. The caller holds the run's row lock (./comparison.ts).
//
// Every pair is counted; only what is not `unchanged` is stored (issue 44 item 14: an hourly
// monitor of an 80,000-object scan wrote 80,000 rows an hour for nothing). An unchanged identity
// is one of the job's objects or findings without a row (./changes-repo.ts reads them back so);
// the two exceptions, stored, are in ./change-codes.ts.
import { sql } from 'kysely';
import type { ChangeMark, UnconfirmedReason } from '../../contract/change-schemas.ts';
import { parseJson, type Trx } from '../../db/transaction.ts';
import type { ChangeRules } from '../../products/kit/change-rules.ts';
import { jobTallies, subjectPartOutcomes, subjectTallies } from '../tasks/task-outcomes.ts';
import type { ChangeCounts } from './change-summary.ts';
import { FINDING_RESURFACED, OBJECT_UNCHANGED_UNHELD, groupOf } from './change-codes.ts';
import { addedFields, changedFields } from './compare-projection.ts';
import {
  baselineGap,
  coverageGap,
  missingLaneReason,
  observeAbsence,
  partTally,
  worstReason,
  type ObjectLane,
  type Observation,
  type PartedTask,
  type TaskTally,
} from './observe-absence.ts';
import { objectHash } from '../output-writer.ts';

export interface RunPosition {
  jobId: number;
  baselineId: number;
  afterHash: Buffer | null;
  nextSeq: number;
  counts: ChangeCounts;
}

interface Obj {
  id: number;
  ref: string;
  type: string;
  key: string;
  hash: Buffer;
  projection: Record<string, unknown>;
  lanes: ObjectLane[];
}

interface Fnd {
  id: number;
  ref: string;
  objectId: number;
  code: string;
  severity: number;
  lanes: string[];
  /** The parts of its task that raised it (FindingOut.part: a scan's mail lane), if named. */
  parts: string[];
}

interface ChangeRow {
  grp: number;
  subjectType: string;
  subjectKey: string;
  objectType: string | null;
  objectId: number | null;
  findingId: number | null;
  objectRef: string | null;
  baselineObjectRef: string | null;
  findingRef: string | null;
  baselineFindingRef: string | null;
  severity: number | null;
  changedFields: string[] | null;
  reason: UnconfirmedReason | null;
}

/**
 * The next `limit` objects after `after` in identity order. FORCE INDEX: left to itself MariaDB
 * reads ix_objects_hash as `ref` on job_id alone and filters the hash with the index condition,
 * walking the job's entries from its first one on every chunk (EXPLAIN: ref, key_len 8: the
 * comparison grew quadratic); forced, it is a range on (job_id, okey_hash) (key_len 40) and a
 * chunk costs the same at any depth.
 */
async function readObjects(trx: Trx, jobId: number, after: Buffer | null, limit: number): Promise<Obj[]> {
  const res = await sql<{
    id: number;
    public_id: string;
    type: string;
    okey: string;
    okey_hash: Buffer;
    projection: unknown;
    lanes: unknown;
  }>`SELECT id, public_id, type, okey, okey_hash, projection, lanes FROM objects FORCE INDEX (ix_objects_hash)
    WHERE job_id = ${jobId} ${after ? sql`AND okey_hash > ${after}` : sql``} AND folded_into IS NULL
    ORDER BY okey_hash LIMIT ${limit}`.execute(trx);
  return res.rows.map((r) => ({
    id: Number(r.id),
    ref: r.public_id,
    type: r.type,
    key: r.okey,
    hash: Buffer.from(r.okey_hash),
    projection: (parseJson<Record<string, unknown>>(r.projection) ?? {}) as Record<string, unknown>,
    lanes: lanesOf(r.lanes),
  }));
}

function lanesOf(raw: unknown): ObjectLane[] {
  const v = parseJson<unknown>(raw);
  if (!Array.isArray(v)) return [];
  return v.filter((l): l is ObjectLane => typeof l?.lane === 'string' && typeof l?.status === 'string');
}

async function readFindings(trx: Trx, jobId: number, objectIds: readonly number[]): Promise<Map<number, Fnd[]>> {
  const out = new Map<number, Fnd[]>();
  for (let i = 0; i < objectIds.length; i += 1000) {
    const res = await sql<{
      id: number;
      public_id: string;
      object_id: number;
      code: string;
      severity: number;
      sources: unknown;
    }>`SELECT id, public_id, object_id, code, severity, sources FROM findings
      WHERE job_id = ${jobId} AND object_id IN (${sql.join(objectIds.slice(i, i + 1000))})`.execute(trx);
    for (const r of res.rows) {
      const sources = parseJson<Array<{ lane?: unknown; part?: unknown }>>(r.sources) ?? [];
      const named = (k: 'lane' | 'part') => [
        ...new Set(sources.map((s) => s?.[k]).filter((l): l is string => typeof l === 'string')),
      ];
      const f: Fnd = {
        id: Number(r.id),
        ref: r.public_id,
        objectId: Number(r.object_id),
        code: r.code,
        severity: Number(r.severity),
        lanes: named('lane'),
        parts: named('part'),
      };
      const list = out.get(f.objectId);
      if (list) list.push(f);
      else out.set(f.objectId, [f]);
    }
  }
  for (const list of out.values()) list.sort((a, b) => (a.code < b.code ? -1 : a.code > b.code ? 1 : 0));
  return out;
}

/** Identities of both pages up to the boundary both cover, merged in hash order. */
export function mergePages<T extends { hash: Buffer }>(
  base: readonly T[],
  cur: readonly T[],
  limit: number,
): { pairs: Array<{ base?: T; cur?: T }>; boundary: Buffer | null } {
  const ends = [base.length === limit ? base.at(-1)!.hash : null, cur.length === limit ? cur.at(-1)!.hash : null];
  const full = ends.filter((h): h is Buffer => h !== null);
  const boundary = full.length === 0 ? null : full.reduce((a, b) => (Buffer.compare(a, b) <= 0 ? a : b));
  const within = (o: T) => boundary === null || Buffer.compare(o.hash, boundary) <= 0;
  const pairs: Array<{ base?: T; cur?: T }> = [];
  let i = 0;
  let j = 0;
  while (i < base.length || j < cur.length) {
    const b = base[i];
    const c = cur[j];
    const bIn = b !== undefined && within(b);
    const cIn = c !== undefined && within(c);
    if (!bIn && !cIn) break;
    const order = bIn && cIn ? Buffer.compare(b.hash, c.hash) : bIn ? -1 : 1;
    if (order === 0) {
      pairs.push({ base: b, cur: c });
      i++;
      j++;
    } else if (order < 0) {
      pairs.push({ base: b });
      i++;
    } else {
      pairs.push({ cur: c });
      j++;
    }
  }
  return { pairs, boundary };
}

async function capReached(trx: Trx, jobId: number): Promise<boolean> {
  const res = await sql<{ n: number }>`
    SELECT COUNT(*) AS n FROM job_limitations WHERE job_id = ${jobId} AND code = 'object_cap_reached'`.execute(trx);
  return Number(res.rows[0]?.n ?? 0) > 0;
}

/** Compares the next chunk; returns the new position and whether the comparison is complete. */
export async function compareChunk(
  trx: Trx,
  pos: RunPosition,
  rules: ChangeRules,
  limit: number,
): Promise<{ pos: RunPosition; done: boolean }> {
  // One connection (the transaction's): the reads go one after the other.
  const baseObjs = await readObjects(trx, pos.baselineId, pos.afterHash, limit);
  const curObjs = await readObjects(trx, pos.jobId, pos.afterHash, limit);
  const { pairs, boundary } = mergePages(baseObjs, curObjs, limit);
  const baseFindings = await readFindings(
    trx,
    pos.baselineId,
    pairs.flatMap((p) => (p.base ? [p.base.id] : [])),
  );
  const curFindings = await readFindings(
    trx,
    pos.jobId,
    pairs.flatMap((p) => (p.cur ? [p.cur.id] : [])),
  );
  const absent = (o: Obj | undefined) => o !== undefined && (rules.absent?.(o.type, o.projection) ?? false);
  const held = (o: Obj | undefined): o is Obj => o !== undefined && !absent(o);

  // The baseline objects whose absence (or a finding's) this job may have observed: what its
  // tasks did on their subjects, counted once for the chunk.
  const needs = new Map<number, readonly string[]>();
  // Of those, the ones that lost a finding a part of its task raised, and that task's lanes.
  const partNeeds = new Map<number, readonly string[]>();
  const partLanes = new Set<string>();
  const objectLanes = (o: Obj) => rules.observedBy?.(o.type) ?? laneNames(o.lanes);
  for (const p of pairs) {
    if (!p.base) continue;
    const missing = !p.cur;
    const lost = (baseFindings.get(p.base.id) ?? []).filter(
      (f) => !(p.cur && (curFindings.get(p.cur.id) ?? []).some((c) => c.code === f.code)),
    );
    const laneGap = p.cur !== undefined && coverageGap(p.base.lanes, p.cur.lanes).missing.length > 0;
    if (missing || lost.length > 0 || laneGap) needs.set(p.base.id, rules.subjectsOf?.(p.base) ?? [p.base.key]);
    const parted = lost.filter((f) => f.parts.length > 0);
    if (parted.length > 0 && rules.observers === 'related') {
      partNeeds.set(p.base.id, needs.get(p.base.id)!);
      for (const f of parted) for (const l of f.lanes) partLanes.add(l);
    }
    // An object observed by a part of its checks' tasks (a scan's address: their address questions).
    if (missing && rules.partOf?.(p.base.type) && rules.observers === 'related') {
      partNeeds.set(p.base.id, needs.get(p.base.id)!);
      for (const l of objectLanes(p.base) ?? []) partLanes.add(l);
    }
  }
  // Of a lane's tasks on a subject, only the checks that observe what their key names count.
  const observing = (t: { productLane: string; check: string }) => {
    const checks = rules.observingChecks?.(t.productLane);
    return checks === undefined || checks.includes(t.check);
  };
  // The tasks of `jobId` on each wanted object's subjects (a lookup's: the whole job's); `jobOwn`
  // says whether a lookup's tasks count as the object's own.
  const talliesFor = async (jobId: number, want: Map<number, readonly string[]>, jobOwn: boolean) => {
    const out = new Map<number, TaskTally[]>();
    if (want.size === 0) return out;
    if (rules.observers === 'job') {
      const all = (await jobTallies(trx, jobId)).filter(observing).map((t) => ({ ...t, own: jobOwn }));
      for (const id of want.keys()) out.set(id, all);
      return out;
    }
    for (const t of await subjectTallies(trx, jobId, pos.baselineId, want)) {
      if (!observing(t)) continue;
      const list = out.get(t.baselineObjectId) ?? [];
      list.push(t);
      out.set(t.baselineObjectId, list);
    }
    return out;
  };
  const tallies = await talliesFor(pos.jobId, needs, false);
  // Held pairs where this job holds fields the baseline does not, and a lane that wrote the
  // object now had not written it then: what the baseline's tasks on it did (baselineGap).
  const baseNeeds = new Map<number, readonly string[]>();
  for (const p of pairs) {
    if (!p.base || !p.cur || !held(p.base) || !held(p.cur)) continue;
    if (addedFields(p.base.projection, p.cur.projection, rules).length === 0) continue;
    if (p.cur.lanes.every((c) => p.base!.lanes.some((b) => b.lane === c.lane && b.status === c.status))) continue;
    baseNeeds.set(p.base.id, rules.subjectsOf?.(p.base) ?? [p.base.key]);
  }
  const baseTallies = await talliesFor(pos.baselineId, baseNeeds, true);
  const partTasks = new Map<number, PartedTask[]>();
  for (const t of await subjectPartOutcomes(trx, pos.jobId, pos.baselineId, partNeeds, [...partLanes])) {
    if (!observing(t)) continue;
    const list = partTasks.get(t.baselineObjectId) ?? [];
    list.push({ ...t, parts: partsOf(t.parts) });
    partTasks.set(t.baselineObjectId, list);
  }
  const capped = needs.size > 0 && (await capReached(trx, pos.jobId));
  const goneSubjects = await absentSubjects(
    trx,
    pos.jobId,
    rules,
    pairs.flatMap((p) => (p.base && !p.cur ? (rules.subjectsOf?.(p.base) ?? [p.base.key]) : [])),
  );
  const observe = (baseId: number, lanes: readonly string[] | null, parts: readonly string[] = []): Observation => {
    const seen =
      parts.length > 0 && partNeeds.has(baseId)
        ? observeParts(partTasks.get(baseId) ?? [], lanes, parts, rules.observers)
        : observeAbsence(tallies.get(baseId) ?? [], lanes, rules.observers);
    // Past the object cap a completed check may have found it and not kept it: not observed.
    if (seen.seen === 'absent' && capped) return { seen: 'nothing', reason: 'not_rechecked' };
    return seen;
  };

  // Of the baseline's findings this chunk may pair unchanged, those suppressed in the baseline:
  // candidates for resurfaced (CONTRACT §15), the only unchanged findings stored (below).
  const baseSuppressed = await suppressedIn(
    trx,
    pos.baselineId,
    pairs.flatMap((p) => (p.base && p.cur ? (baseFindings.get(p.base.id) ?? []).map((f) => f.id) : [])),
  );

  const rows: ChangeRow[] = [];
  const counts = structuredClone(pos.counts);
  const objectRow = (p: { base?: Obj; cur?: Obj }, mark: ChangeMark, extra: Partial<ChangeRow> = {}) => {
    const o = (p.cur ?? p.base)!;
    (counts.objects as Record<string, number>)[mark]! += 1;
    // Unchanged and held by this job: counted, not stored (read back as the job's objects that
    // have no row, ./changes-repo.ts). Unchanged and not held (an absence the baseline recorded
    // and this job observed again without recording it): nothing to derive it from, so stored,
    // in a group of its own.
    if (mark === 'unchanged' && p.cur) return;
    rows.push({
      grp: mark === 'unchanged' ? OBJECT_UNCHANGED_UNHELD : groupOf('object', mark),
      subjectType: o.type,
      subjectKey: o.key,
      objectType: null,
      objectId: p.cur?.id ?? null,
      findingId: null,
      objectRef: p.cur?.ref ?? null,
      baselineObjectRef: p.base?.ref ?? null,
      findingRef: null,
      baselineFindingRef: null,
      severity: null,
      changedFields: null,
      reason: null,
      ...extra,
    });
  };

  for (const p of pairs) {
    // ---- the object
    let objectMark: ChangeMark;
    let objectReason: UnconfirmedReason | null = null;
    if (p.base && p.cur && held(p.base) && !held(p.cur)) {
      objectMark = 'gone'; // this job recorded its absence (an authoritative NXDOMAIN)
    } else if (p.base && p.cur && !held(p.base) && held(p.cur)) {
      objectMark = 'new';
    } else if (p.base && p.cur) {
      const cov = coverageGap(p.base.lanes, p.cur.lanes);
      const gap = worstReason([
        ...cov.reasons,
        ...(cov.missing.length > 0 ? [missingLaneReason(tallies.get(p.base.id) ?? [], cov.missing)] : []),
      ]);
      // The baseline's side: asked only when this job holds fields it does not (baseNeeds).
      const baseGap = baseNeeds.has(p.base.id)
        ? baselineGap(p.base.lanes, p.cur.lanes, baseTallies.get(p.base.id) ?? [])
        : null;
      const fields = changedFields(p.base.projection, p.cur.projection, rules, gap !== null, baseGap !== null);
      if (fields.length > 0) {
        objectMark = 'changed';
        objectRow(p, objectMark, { changedFields: fields });
        pairFindings(p, objectMark, null);
        continue;
      }
      objectReason = worstReason([...(gap ? [gap] : []), ...(baseGap ? [baseGap] : [])]);
      objectMark = objectReason === null ? 'unchanged' : 'unconfirmed';
    } else if (p.cur) {
      objectMark = 'new';
    } else if (!held(p.base)) {
      // The baseline recorded its absence (an NXDOMAIN name) and this job holds nothing of it:
      // never gone again. Still absent when this job observed that; else not known.
      const part = rules.partOf?.(p.base!.type);
      const seen = observe(p.base!.id, objectLanes(p.base!), part ? [part] : []);
      objectMark = seen.seen === 'absent' ? 'unchanged' : 'unconfirmed';
      objectReason = seen.seen === 'absent' ? null : seen.reason;
    } else if ((rules.subjectsOf?.(p.base!) ?? [p.base!.key]).some((k) => goneSubjects.has(k))) {
      objectMark = 'gone'; // what it was observed on does not exist any more (an NXDOMAIN name)
    } else {
      const part = rules.partOf?.(p.base!.type);
      const seen = observe(p.base!.id, objectLanes(p.base!), part ? [part] : []);
      objectMark = seen.seen === 'absent' ? 'gone' : 'unconfirmed';
      objectReason = seen.seen === 'absent' ? null : seen.reason;
    }
    objectRow(p, objectMark, objectReason ? { reason: objectReason } : {});
    pairFindings(p, objectMark, objectReason);
  }

  function pairFindings(p: { base?: Obj; cur?: Obj }, objectMark: ChangeMark, objectReason: UnconfirmedReason | null) {
    const bs = p.base ? (baseFindings.get(p.base.id) ?? []) : [];
    const cs = p.cur ? (curFindings.get(p.cur.id) ?? []) : [];
    const o = (p.cur ?? p.base)!;
    const row = (mark: ChangeMark, b: Fnd | undefined, c: Fnd | undefined, reason: UnconfirmedReason | null) => {
      (counts.findings as Record<string, number>)[mark]! += 1;
      // Unchanged: counted, not stored (derived from the job's findings), unless the baseline
      // had it suppressed: then it is stored as resurfaced, and the terminal work removes it
      // again if a suppression covers it now (apply-suppressions.ts), so it is read unchanged.
      const candidate = mark === 'unchanged' && b !== undefined && baseSuppressed.has(b.id);
      if (mark === 'unchanged' && !candidate) return;
      rows.push({
        grp: candidate ? FINDING_RESURFACED : groupOf('finding', mark),
        subjectType: (c ?? b)!.code,
        subjectKey: o.key,
        objectType: o.type,
        objectId: null,
        findingId: c?.id ?? null,
        objectRef: p.cur?.ref ?? null,
        baselineObjectRef: p.base?.ref ?? null,
        findingRef: c?.ref ?? null,
        baselineFindingRef: b?.ref ?? null,
        severity: (c ?? b)!.severity,
        changedFields: null,
        reason,
      });
    };
    let i = 0;
    let j = 0;
    while (i < bs.length || j < cs.length) {
      const b = bs[i];
      const c = cs[j];
      const order = b && c ? (b.code < c.code ? -1 : b.code > c.code ? 1 : 0) : b ? -1 : 1;
      if (order === 0) {
        row('unchanged', b, c, null);
        i++;
        j++;
      } else if (order > 0) {
        row('new', undefined, c, null);
        j++;
      } else {
        // A finding the job does not hold: resolved only when what raised it was observed.
        if (objectMark === 'gone') row('resolved', b, undefined, null);
        else if (!held(p.cur) && objectMark === 'unconfirmed')
          row('unconfirmed', b, undefined, objectReason ?? 'not_rechecked');
        else {
          // Observed by its lane's tasks; by the part of them that raised it when it names one.
          const seen = observe(p.base!.id, b!.lanes.length > 0 ? b!.lanes : null, b!.parts);
          if (seen.seen === 'absent') row('resolved', b, undefined, null);
          else row('unconfirmed', b, undefined, seen.reason);
        }
        i++;
      }
    }
  }

  await writeRows(trx, pos.jobId, pos.nextSeq, rows);
  return {
    pos: { ...pos, afterHash: boundary ?? pos.afterHash, nextSeq: pos.nextSeq + rows.length, counts },
    done: boundary === null,
  };
}

/** Of these findings of the baseline, those a suppression covered when it ended (job_suppressions' primary key). */
async function suppressedIn(trx: Trx, baselineId: number, findingIds: readonly number[]): Promise<Set<number>> {
  const out = new Set<number>();
  for (let i = 0; i < findingIds.length; i += 1000) {
    const res = await sql<{ finding_id: number }>`
      SELECT finding_id FROM job_suppressions WHERE job_id = ${baselineId}
        AND finding_id IN (${sql.join(findingIds.slice(i, i + 1000))})`.execute(trx);
    for (const r of res.rows) out.add(Number(r.finding_id));
  }
  return out;
}

/** Of these subject keys, those this job holds as absent records (rules.absent: an NXDOMAIN name). */
async function absentSubjects(
  trx: Trx,
  jobId: number,
  rules: ChangeRules,
  keys: readonly string[],
): Promise<Set<string>> {
  const out = new Set<string>();
  if (!rules.absent || !rules.subjectTypes || keys.length === 0) return out;
  const unique = [...new Set(keys)];
  const hashes = unique.flatMap((key) => rules.subjectTypes!.map((type) => objectHash({ type, key })));
  for (let i = 0; i < hashes.length; i += 1000) {
    const res = await sql<{ type: string; okey: string; projection: unknown }>`
      SELECT type, okey, projection FROM objects WHERE job_id = ${jobId} AND okey_hash IN (${sql.join(hashes.slice(i, i + 1000))})
        AND folded_into IS NULL`.execute(trx);
    for (const r of res.rows)
      if (rules.absent(r.type, parseJson<Record<string, unknown>>(r.projection) ?? {})) out.add(r.okey);
  }
  return out;
}

/**
 * A finding raised by parts of a composed task (a scan's mail lane): observed gone when each of
 * those parts observed it, as each part ended in the tasks on its subjects (partTally), whatever
 * the task's other parts did; else the least observed part's reason.
 */
function observeParts(
  tasks: readonly PartedTask[],
  lanes: readonly string[] | null,
  parts: readonly string[],
  mode: ChangeRules['observers'],
): Observation {
  const seen = parts.map((part) =>
    observeAbsence(
      tasks.map((t) => partTally(t, part)),
      lanes,
      mode,
    ),
  );
  const reason = worstReason(seen.flatMap((s) => (s.seen === 'nothing' ? [s.reason] : [])));
  return reason === null ? { seen: 'absent' } : { seen: 'nothing', reason };
}

/** A task's kept part outcomes (its output's `projection.lanes`), or null when it kept none. */
function partsOf(raw: unknown): PartedTask['parts'] {
  const v = parseJson<unknown>(raw);
  if (!Array.isArray(v)) return null;
  return v.filter(
    (p): p is { lane: string; status: string; reason?: string } =>
      typeof p?.lane === 'string' && typeof p?.status === 'string',
  );
}

function laneNames(lanes: readonly ObjectLane[]): string[] | null {
  return lanes.length > 0 ? [...new Set(lanes.map((l) => l.lane))] : null;
}

async function writeRows(trx: Trx, jobId: number, firstSeq: number, rows: readonly ChangeRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) {
    const values = rows.slice(i, i + 500).map(
      (
        r,
        k,
      ) => sql`(${jobId}, ${r.grp}, ${firstSeq + i + k}, ${r.subjectType.slice(0, 64)}, ${r.subjectKey.slice(0, 512)},
        ${r.objectType}, ${r.objectId}, ${r.findingId}, ${r.objectRef}, ${r.baselineObjectRef}, ${r.findingRef},
        ${r.baselineFindingRef}, ${r.severity}, ${r.changedFields ? JSON.stringify(r.changedFields) : null}, ${r.reason})`,
    );
    await sql`INSERT INTO job_changes (job_id, grp, seq, subject_type, subject_key, object_type, object_id, finding_id,
        object_ref, baseline_object_ref, finding_ref, baseline_finding_ref, severity, changed_fields, reason)
      VALUES ${sql.join(values)}`.execute(trx);
  }
}
