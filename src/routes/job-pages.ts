// Retained-job reads (CONTRACT §10): result pages, finding pages and single-object detail.
// Admission as everywhere: key → scopes → application rate limit → query validation; then the
// job within the caller's workspace (another tenant's job is job_not_found, exactly like none),
// then the cursor, which must have been issued for this workspace, job, route and filter.
import { PUBLIC_ID_RE } from '../contract/ids.ts';
import type { Express, Request } from 'express';
import type { z } from 'zod';
import type { AppDeps } from '../http/deps.ts';
import { authenticate } from '../http/authenticate.ts';
import { rateLimit } from '../http/rate-limit.ts';
import { zodIssues } from '../http/body.ts';
import { state } from '../http/context.ts';
import { ApiError } from '../contract/errors.ts';
import {
  findingPageQuery,
  resultPageQuery,
  type FindingItem,
  type FindingPage,
  type ObjectDetail,
  type ResultItem,
  type ResultPage,
} from '../contract/page-schemas.ts';
import { findJob, isTerminal, laneCounts, type JobRow } from '../jobs/job-view.ts';
import { createCursorCodec, createEvidenceRefs, type CursorCodec, type CursorRoute } from '../jobs/cursor.ts';
import {
  findObject,
  findingPage,
  objectFindings,
  objectPage,
  objectRelations,
  severityName,
  type FindingRow,
  type ObjectRow,
} from '../jobs/pages-repo.ts';
import type { Limitation } from '../contract/lanes.ts';
import { findingMarks, objectMarks, type ItemMark } from '../jobs/changes/changes-repo.ts';
import type { Severity } from '../contract/tasks.ts';
import type { SuppressedMark } from '../contract/suppression-schemas.ts';
import { suppressedById, suppressedCondition } from '../jobs/suppressions/job-suppressions.ts';

type EvidenceRefs = (owner: string, index: number) => string;

export interface JobPageOptions {
  /** Defaults: CURSOR_SECRET (and CURSOR_SECRET_PREVIOUS when the config carries it). */
  cursors?: CursorCodec;
}

export function mountJobPageRoutes(app: Express, deps: AppDeps, opts: JobPageOptions = {}): void {
  const previousSecret = (deps.config as { CURSOR_SECRET_PREVIOUS?: string }).CURSOR_SECRET_PREVIOUS;
  const cursors = opts.cursors ?? createCursorCodec({ secret: deps.config.CURSOR_SECRET, previousSecret });
  const evidenceRef = createEvidenceRefs(deps.config.CURSOR_SECRET);

  app.get(
    '/v2/jobs/:job_ref/results',
    authenticate(deps.auth, ['scan:read']),
    rateLimit(deps.limiter),
    async (req, res) => {
      state(res).step = 'job_read';
      const query = parseQuery(resultPageQuery, req);
      const workspaceId = state(res).principal!.workspaceId;
      // The job (status) is read BEFORE the items: a job seen terminal has written its last item,
      // so "terminal and no more items" can never be answered while an item is still to come.
      const job = await requireJob(deps, workspaceId, req);
      const after = startSeq(cursors, query.cursor, { workspaceId, jobId: job.id, route: 'results', filter: '' });
      const page = await objectPage(deps.db, job.id, after, query.limit);
      const marks = compared(job)
        ? await objectMarks(
            deps.db,
            job.id,
            page.rows.map((r) => Number(r.id)),
          )
        : null;
      const body: ResultPage = {
        ...pageHead(job),
        lanes: (await laneCounts(deps.db, job.id)).lanes,
        items: page.rows.map((r) => resultItem(r, evidenceRef, marks?.get(Number(r.id)))),
        page: {
          limit: query.limit,
          nextCursor: nextCursor(
            cursors,
            job,
            page,
            { workspaceId, jobId: job.id, route: 'results', filter: '' },
            after,
          ),
        },
      };
      res.json(body);
    },
  );

  app.get(
    '/v2/jobs/:job_ref/findings',
    authenticate(deps.auth, ['scan:read', 'finding:read']),
    rateLimit(deps.limiter),
    async (req, res) => {
      state(res).step = 'job_read';
      const query = parseQuery(findingPageQuery, req);
      const workspaceId = state(res).principal!.workspaceId;
      const job = await requireJob(deps, workspaceId, req);
      // 'info' filters nothing: the same view as no filter, so it shares its cursors.
      const minSeverity: Severity | undefined = query.severity === 'info' ? undefined : query.severity;
      // include is the default view: its cursors are the unfiltered ones.
      const suppressed = query.suppressed === 'include' ? undefined : query.suppressed;
      const filter = `${minSeverity ?? ''}${suppressed ? `|${suppressed}` : ''}`;
      const scope = { workspaceId, jobId: job.id, route: 'findings' as const, filter };
      const after = startSeq(cursors, query.cursor, scope);
      const page = await findingPage(deps.db, job.id, after, query.limit, minSeverity, suppressedCondition(suppressed));
      const ids = page.rows.map((r) => Number(r.id));
      const sup = isTerminal(job.status) ? await suppressedById(deps.db, job.id, ids) : null;
      const marks = compared(job)
        ? await findingMarks(
            deps.db,
            job.id,
            page.rows.map((r) => Number(r.id)),
          )
        : null;
      const body: FindingPage = {
        ...pageHead(job),
        lanes: (await laneCounts(deps.db, job.id)).lanes,
        items: page.rows.map((r) =>
          findingItem(r, evidenceRef, marks?.get(Number(r.id)), sup?.get(Number(r.id)) ?? null),
        ),
        page: { limit: query.limit, nextCursor: nextCursor(cursors, job, page, scope, after) },
      };
      res.json(body);
    },
  );

  app.get(
    '/v2/jobs/:job_ref/objects/:object_id',
    authenticate(deps.auth, ['scan:read']),
    rateLimit(deps.limiter),
    async (req, res) => {
      state(res).step = 'job_read';
      const workspaceId = state(res).principal!.workspaceId;
      const job = await requireJob(deps, workspaceId, req);
      const obj = await findObject(deps.db, workspaceId, job.id, String(req.params.object_id));
      if (!obj) throw new ApiError('object_not_found');
      const [relations, findings] = await Promise.all([
        objectRelations(deps.db, job.id, obj.id),
        objectFindings(deps.db, job.id, obj.id),
      ]);
      const marks = compared(job) ? await objectMarks(deps.db, job.id, [Number(obj.id)]) : null;
      const sup = isTerminal(job.status)
        ? await suppressedById(
            deps.db,
            job.id,
            findings.map((f) => f.id),
          )
        : new Map();
      const body: ObjectDetail = {
        ...resultItem(obj, evidenceRef, marks?.get(Number(obj.id))),
        relations: relations as ObjectDetail['relations'],
        findings: findings.map((f) => f.publicId),
        suppressedFindings: findings.flatMap((f) => {
          const m = sup.get(f.id);
          return m ? [{ findingId: f.publicId, ...m }] : [];
        }),
      };
      res.json(body);
    },
  );
}

/**
 * Items carry their marks (CONTRACT §13) once the job is terminal and has a baseline: the
 * comparison is made when the job ends. Before that, or without a baseline, `change` is null.
 */
function compared(job: JobRow): boolean {
  return job.baseline_ref !== null && isTerminal(job.status);
}

function markFields(mark: ItemMark | undefined): Pick<ResultItem, 'change' | 'changedFields' | 'changeReason'> {
  return mark ? { ...mark } : { change: null };
}

function parseQuery<S extends z.ZodType>(schema: S, req: Request): z.infer<S> {
  const parsed = schema.safeParse(req.query);
  if (!parsed.success) throw new ApiError('invalid_request', { details: { issues: zodIssues(parsed.error) } });
  return parsed.data;
}

async function requireJob(deps: AppDeps, workspaceId: number, req: Request): Promise<JobRow> {
  const job = await findJob(deps.db, workspaceId, String(req.params.job_ref));
  if (!job) throw new ApiError('job_not_found');
  return job;
}

function startSeq(
  cursors: CursorCodec,
  cursor: string | undefined,
  scope: { workspaceId: number; jobId: number; route: CursorRoute; filter: string },
): number {
  if (cursor === undefined) return 0;
  const seq = cursors.decode(cursor, scope);
  if (seq === null) throw new ApiError('invalid_cursor');
  return seq;
}

/**
 * A cursor whenever more items exist now, or the job is not terminal (more may come: the client
 * continues later from where it stopped, never re-reading). null only when terminal and done.
 */
function nextCursor(
  cursors: CursorCodec,
  job: JobRow,
  page: { rows: Array<{ seq: number }>; hasMore: boolean },
  scope: { workspaceId: number; jobId: number; route: CursorRoute; filter: string },
  after: number,
): string | null {
  if (!page.hasMore && isTerminal(job.status)) return null;
  const last = page.rows.at(-1);
  return cursors.encode({ ...scope, lastSeq: last ? Number(last.seq) : after });
}

const NOT_FINISHED: Limitation = {
  code: 'job_not_finished',
  message: 'The job has not finished: more items may follow and coverage is not final.',
};
const COVERAGE_NOT_RECORDED: Limitation = {
  code: 'coverage_not_recorded',
  message: 'The job recorded no coverage; treat it as incomplete.',
};

/** Coverage is never upgraded here: a running job, or a terminal one without coverage, is incomplete. */
function pageHead(job: JobRow) {
  const terminal = isTerminal(job.status);
  const cov = parseJson(job.coverage) as { complete?: unknown; limitations?: unknown } | null;
  const recorded = Array.isArray(cov?.limitations)
    ? cov.limitations.map(toLimitation).filter((l): l is Limitation => l !== null)
    : [];
  let complete = false;
  let limitations: Limitation[];
  if (!terminal) limitations = [NOT_FINISHED, ...recorded];
  else if (!cov) limitations = [COVERAGE_NOT_RECORDED];
  else {
    complete = cov.complete === true;
    limitations = recorded;
  }
  return { jobRef: job.public_id, jobStatus: job.status, terminal, coverage: { complete }, limitations };
}

function toLimitation(v: unknown): Limitation | null {
  const l = v as { code?: unknown; message?: unknown } | null;
  if (!l || typeof l.code !== 'string') return null;
  return { code: l.code, message: typeof l.message === 'string' ? l.message : '' };
}

// ---- Row → public projection (allowlisted fields only; no database id leaves) ---------------

function parseJson(v: unknown): unknown {
  if (typeof v !== 'string') return v ?? null;
  try {
    return JSON.parse(v);
  } catch {
    return null;
  }
}

const iso = (d: Date) => new Date(d).toISOString();

function evidenceList(raw: unknown, owner: string, evidenceRef: EvidenceRefs): Array<{ ref: string; summary: string }> {
  const list = parseJson(raw);
  if (!Array.isArray(list)) return [];
  // The lane writer stores a random ev_ ref with each summary (stable across secret rotations);
  // rows written without one get a keyed-hash ref, also stable while CURSOR_SECRET is.
  return list.map((e, i) => ({
    ref:
      typeof e?.ref === 'string' && PUBLIC_ID_RE.test(e.ref) && e.ref.startsWith('ev_') ? e.ref : evidenceRef(owner, i),
    summary: typeof e?.summary === 'string' ? e.summary : '',
  }));
}

/** Object lanes as stored (an array of {lane, status, reason?} or a {lane: status} map). */
function laneList(raw: unknown): ResultItem['lanes'] {
  const v = parseJson(raw);
  const out: ResultItem['lanes'] = [];
  if (Array.isArray(v)) {
    for (const l of v) {
      if (l && typeof l.lane === 'string' && typeof l.status === 'string') {
        out.push(
          typeof l.reason === 'string'
            ? { lane: l.lane, status: l.status, reason: l.reason }
            : { lane: l.lane, status: l.status },
        );
      }
    }
  } else if (v && typeof v === 'object') {
    for (const [lane, status] of Object.entries(v)) if (typeof status === 'string') out.push({ lane, status });
  }
  return out;
}

export function resultItem(r: ObjectRow, evidenceRef: EvidenceRefs, mark?: ItemMark): ResultItem {
  const projection = parseJson(r.projection);
  return {
    objectId: r.public_id,
    type: r.type as ResultItem['type'],
    key: r.okey,
    distance: Number(r.distance),
    firstSeenAt: iso(r.first_seen_at),
    lanes: laneList(r.lanes),
    projection:
      projection && typeof projection === 'object' && !Array.isArray(projection)
        ? (projection as Record<string, unknown>)
        : {},
    evidence: evidenceList(r.evidence, r.public_id, evidenceRef),
    ...markFields(mark),
  };
}

export function findingItem(
  r: FindingRow,
  evidenceRef: EvidenceRefs,
  mark: ItemMark | undefined,
  suppressed: SuppressedMark,
): FindingItem {
  const sources = parseJson(r.sources);
  return {
    findingId: r.public_id,
    code: r.code,
    severity: severityName(Number(r.severity)),
    confidence: r.confidence as FindingItem['confidence'],
    title: r.title,
    summary: r.summary,
    objectId: r.object_public_id,
    evidence: evidenceList(r.evidence, r.public_id, evidenceRef),
    sources: Array.isArray(sources)
      ? sources
          .filter((s) => s && typeof s.lane === 'string' && typeof s.source === 'string')
          .map((s) => ({ lane: s.lane, source: s.source }))
      : [],
    detectedAt: iso(r.detected_at),
    ...markFields(mark),
    suppressed,
  };
}
