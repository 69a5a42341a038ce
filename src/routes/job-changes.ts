// GET /v2/jobs/{job_ref}/changes (CONTRACT §13): the job's comparison with its baseline, paged
// like §10's pages (keyset cursor bound to workspace, job, route and filters). Admission as every
// read: key → scan:read → application rate limit → query; then the job within the caller's
// workspace (another tenant's is job_not_found). Finding items need finding:read as well: without
// it they are left out whatever the filters ask, and the page says so (findingsOmitted).
import type { Express } from 'express';
import type { AppDeps } from '../http/deps.ts';
import { authenticate } from '../http/authenticate.ts';
import { rateLimit } from '../http/rate-limit.ts';
import { zodIssues } from '../http/body.ts';
import { state } from '../http/context.ts';
import { ApiError } from '../contract/errors.ts';
import {
  CHANGE_KINDS,
  DEFAULT_CHANGE_FILTER,
  FINDING_MARKS,
  OBJECT_MARKS,
  changePageQuery,
  type ChangeItem,
  type ChangePage,
  type UnconfirmedReason,
} from '../contract/change-schemas.ts';
import { findJob, isTerminal } from '../jobs/job-view.ts';
import { suppressedByRef } from '../jobs/suppressions/job-suppressions.ts';
import { createCursorCodec, type CursorCodec, type CursorScope } from '../jobs/cursor.ts';
import { severityName } from '../jobs/pages-repo.ts';
import { groupOf, kindOfGroup, markOfGroup } from '../jobs/changes/change-codes.ts';
import {
  changePage,
  packPosition,
  unpackPosition,
  type ChangePosition,
  type ChangeRow,
} from '../jobs/changes/changes-repo.ts';
import { parseJson } from '../db/transaction.ts';

export interface JobChangeOptions {
  cursors?: CursorCodec;
}

/** Before the first row (seqs start at 1). */
const START: ChangePosition = { grp: 0, seq: 0 };

export function mountJobChangeRoutes(app: Express, deps: AppDeps, opts: JobChangeOptions = {}): void {
  const previousSecret = (deps.config as { CURSOR_SECRET_PREVIOUS?: string }).CURSOR_SECRET_PREVIOUS;
  const cursors = opts.cursors ?? createCursorCodec({ secret: deps.config.CURSOR_SECRET, previousSecret });

  app.get(
    '/v2/jobs/:job_ref/changes',
    authenticate(deps.auth, ['scan:read']),
    rateLimit(deps.limiter),
    async (req, res) => {
      const s = state(res);
      s.step = 'job_read';
      const parsed = changePageQuery.safeParse(req.query);
      if (!parsed.success) throw new ApiError('invalid_request', { details: { issues: zodIssues(parsed.error) } });
      const query = parsed.data;
      const principal = s.principal!;
      // The job (status) before the rows: a job seen terminal has its whole comparison written.
      const job = await findJob(deps.db, principal.workspaceId, String(req.params.job_ref));
      if (!job) throw new ApiError('job_not_found');
      const findingsOmitted = !principal.scopes.has('finding:read');
      const kinds = (query.kind ? [query.kind] : [...CHANGE_KINDS]).filter(
        (k) => !(findingsOmitted && k === 'finding'),
      );
      const marks = query.change ?? DEFAULT_CHANGE_FILTER;
      const groups = kinds.flatMap((k) =>
        marks.filter((m) => (k === 'object' ? OBJECT_MARKS : FINDING_MARKS).includes(m)).map((m) => groupOf(k, m)),
      );
      // Bound to the view: the groups the filters (and the key's scopes) allow, as a bit mask.
      const scope: CursorScope = {
        workspaceId: principal.workspaceId,
        jobId: job.id,
        route: 'changes',
        filter: groups.reduce((mask, g) => mask | (1 << g), 0).toString(16),
      };
      let after = START;
      if (query.cursor !== undefined) {
        const packed = cursors.decode(query.cursor, scope);
        if (packed === null) throw new ApiError('invalid_cursor');
        after = unpackPosition(packed);
      }
      const terminal = isTerminal(job.status);
      const baseline = job.baseline_ref
        ? { jobRef: job.baseline_ref, completedAt: new Date(job.baseline_completed_at!).toISOString() }
        : null;
      let items: ChangeItem[] = [];
      let nextCursor: string | null = null;
      if (!terminal) {
        // Nothing yet: the comparison is made when the job ends. The cursor lets the client wait.
        nextCursor = cursors.encode({ ...scope, lastSeq: packPosition(after) });
      } else if (baseline && groups.length > 0) {
        const page = await changePage(deps.db, job.id, groups, after, query.limit);
        // Finding items carry their finding's suppression as the job's end made it (CONTRACT §15).
        const sup = await suppressedByRef(
          deps.db,
          job.id,
          page.rows.flatMap((r) => (r.finding_ref ? [r.finding_ref] : [])),
        );
        items = page.rows.map((r) => {
          const item = changeItem(r);
          return item.kind === 'finding'
            ? { ...item, suppressed: (r.finding_ref ? sup.get(r.finding_ref) : undefined) ?? null }
            : item;
        });
        const last = page.rows.at(-1);
        if (page.hasMore && last) nextCursor = cursors.encode({ ...scope, lastSeq: packPosition(last) });
      }
      const body: ChangePage = {
        jobRef: job.public_id,
        jobStatus: job.status,
        terminal,
        baseline,
        findingsOmitted,
        items,
        page: { limit: query.limit, nextCursor },
      };
      res.json(body);
    },
  );
}

function changeItem(r: ChangeRow): ChangeItem {
  const kind = kindOfGroup(Number(r.grp));
  const fields = parseJson<string[]>(r.changed_fields);
  return {
    kind,
    change: markOfGroup(Number(r.grp)),
    type: r.subject_type,
    key: r.subject_key,
    ...(kind === 'finding' ? { objectType: r.object_type ?? '' } : {}),
    objectId: r.object_ref,
    baselineObjectId: r.baseline_object_ref,
    ...(kind === 'finding'
      ? {
          findingId: r.finding_ref,
          baselineFindingId: r.baseline_finding_ref,
          severity: severityName(Number(r.severity ?? 0)),
        }
      : {}),
    ...(Array.isArray(fields) && fields.length > 0 ? { changedFields: fields } : {}),
    ...(r.reason ? { reason: r.reason as UnconfirmedReason } : {}),
  };
}
