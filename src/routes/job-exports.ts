// GET /v2/jobs/{job_ref}/export and /report (CONTRACT §17). Admission as every read: key →
// scopes (findings need finding:read, as their pages do) → application rate limit → query; then
// the job within the caller's workspace (another tenant's is job_not_found) and terminal (else
// job_not_terminal: an export of a running job would be a snapshot that reads as the result).
// The export is streamed: src/jobs/exports/export-reader.ts reads one keyset page when the
// response asks for more (Readable.from + pipeline: a slow client slows the reads), each page is
// projected exactly as its page route projects it, and a pure writer turns it into text.
// Reads cost no credits.
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Express, Request, RequestHandler } from 'express';
import type { AppDeps } from '../http/deps.ts';
import { authenticate } from '../http/authenticate.ts';
import { rateLimit } from '../http/rate-limit.ts';
import { zodIssues } from '../http/body.ts';
import { state } from '../http/context.ts';
import { ApiError } from '../contract/errors.ts';
import {
  EXPORT_MEDIA_TYPES,
  REPORT_CSP,
  exportFileName,
  exportQuery,
  type ExportFormat,
  type ExportSubject,
} from '../contract/export-schemas.ts';
import { findJob, isTerminal, jobView, type JobRow } from '../jobs/job-view.ts';
import { createEvidenceRefs } from '../jobs/cursor.ts';
import {
  findingBatches,
  objectBatches,
  severityCounts,
  topFindings,
  type FindingBatch,
} from '../jobs/exports/export-reader.ts';
import type { ExportJob, FindingEntry } from '../jobs/exports/export-items.ts';
import { suppressionOf } from '../jobs/exports/export-items.ts';
import { sarifHead, sarifResult, sarifTail } from '../jobs/exports/sarif-writer.ts';
import { csvFindingRow, csvHeader, csvObjectRow } from '../jobs/exports/csv-writer.ts';
import { jsonlLine } from '../jobs/exports/jsonl-writer.ts';
import { renderReport } from '../jobs/exports/report-writer.ts';
import { findingCatalog } from '../products/findings-catalog.ts';
import { findingItem, resultItem } from './job-pages.ts';
import { FINDINGS_DOCS_PATH } from './findings-docs.ts';

const SERVICE_VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** The report lists at most this many findings (most severe first); the export has all of them. */
export const REPORT_FINDINGS_MAX = 500;

type EvidenceRefs = ReturnType<typeof createEvidenceRefs>;

/** Findings are finding:read data wherever they are read; objects are scan:read. */
const findingScopeUnlessObjects: RequestHandler = (req, res, next) => {
  const principal = state(res).principal!;
  if (req.query.what !== 'objects' && !principal.scopes.has('finding:read'))
    throw new ApiError('insufficient_scope', { details: { requiredScopes: ['finding:read'] } });
  next();
};

export function mountJobExportRoutes(app: Express, deps: AppDeps): void {
  const evidenceRef = createEvidenceRefs(deps.config.CURSOR_SECRET);

  app.get(
    '/v2/jobs/:job_ref/export',
    authenticate(deps.auth, ['scan:read']),
    findingScopeUnlessObjects,
    rateLimit(deps.limiter),
    async (req, res) => {
      state(res).step = 'job_read';
      const parsed = exportQuery.safeParse(req.query);
      if (!parsed.success) throw new ApiError('invalid_request', { details: { issues: zodIssues(parsed.error) } });
      const { format, what } = parsed.data;
      const job = await terminalJob(deps, state(res).principal!.workspaceId, req);
      const view = (await jobView(deps.db, job)) as ExportJob;
      res.set({
        'Content-Type': EXPORT_MEDIA_TYPES[format],
        'Content-Disposition': `attachment; filename="${exportFileName(job.public_id, what, format)}"`,
        'Cache-Control': 'no-store',
        'X-Content-Type-Options': 'nosniff',
      });
      const body = exportText(deps, job, view, format, what, evidenceRef, helpBase(req));
      // pipeline destroys the response on a failure after the first byte: the client sees a cut
      // body (no final chunk), never a file that looks whole.
      await pipeline(Readable.from(body, { highWaterMark: 1 }), res);
    },
  );

  app.get(
    '/v2/jobs/:job_ref/report',
    authenticate(deps.auth, ['scan:read']),
    rateLimit(deps.limiter),
    async (req, res) => {
      state(res).step = 'job_read';
      const principal = state(res).principal!;
      const job = await terminalJob(deps, principal.workspaceId, req);
      const view = (await jobView(deps.db, job)) as ExportJob;
      let findings = null;
      if (principal.scopes.has('finding:read')) {
        const [counts, top] = await Promise.all([
          severityCounts(deps.db, job.id),
          topFindings(deps.db, job, REPORT_FINDINGS_MAX),
        ]);
        const listed = entries(top, evidenceRef);
        const summary = (view as { findingsSummary?: { suppressed?: number } }).findingsSummary;
        findings = {
          counts,
          total: Object.values(counts).reduce((a, b) => a + b, 0),
          listed,
          suppressedCount: summary?.suppressed ?? listed.filter((f) => suppressionOf(f.item)).length,
        };
      }
      res
        .set({
          'Content-Security-Policy': REPORT_CSP,
          'X-Content-Type-Options': 'nosniff',
          'Referrer-Policy': 'no-referrer',
          'Cache-Control': 'no-store',
        })
        .type('html')
        .send(renderReport({ job: view, findings, generatedAt: new Date().toISOString() }));
    },
  );
}

async function terminalJob(deps: AppDeps, workspaceId: number, req: Request): Promise<JobRow> {
  const job = await findJob(deps.db, workspaceId, String(req.params.job_ref));
  if (!job) throw new ApiError('job_not_found');
  if (!isTerminal(job.status)) throw new ApiError('job_not_terminal');
  return job;
}

/** The findings catalog page of this service, as the client reached it (requireHost vetted Host). */
function helpBase(req: Request): string {
  try {
    return new URL(FINDINGS_DOCS_PATH, `${req.protocol}://${req.get('host')}`).href;
  } catch {
    return `http://localhost${FINDINGS_DOCS_PATH}`;
  }
}

function entries(batch: FindingBatch, evidenceRef: EvidenceRefs): FindingEntry[] {
  return batch.rows.map((r) => ({
    item: findingItem(r, evidenceRef, batch.marks?.get(Number(r.id)), batch.suppressed.get(Number(r.id)) ?? null),
    subject: batch.subjects.get(Number(r.id)) ?? { type: 'unknown', key: '' },
  }));
}

async function* exportText(
  deps: AppDeps,
  job: JobRow,
  view: ExportJob,
  format: ExportFormat,
  what: ExportSubject,
  evidenceRef: EvidenceRefs,
  help: string,
): AsyncGenerator<string> {
  if (what === 'objects') {
    if (format === 'csv') yield csvHeader('objects');
    for await (const batch of objectBatches(deps.db, job)) {
      const items = batch.rows.map((r) => resultItem(r, evidenceRef, batch.marks?.get(Number(r.id))));
      yield items.map(format === 'csv' ? csvObjectRow : jsonlLine).join('');
    }
    return;
  }
  if (format === 'sarif') yield sarifHead(view, findingCatalog, { version: SERVICE_VERSION, helpBase: help });
  if (format === 'csv') yield csvHeader('findings');
  let first = true;
  for await (const batch of findingBatches(deps.db, job)) {
    const list = entries(batch, evidenceRef);
    if (format === 'jsonl') yield list.map((f) => jsonlLine(f.item)).join('');
    else if (format === 'csv') yield list.map(csvFindingRow).join('');
    else {
      yield `${first ? '' : ','}${list.map(sarifResult).join(',')}`;
      first = false;
    }
  }
  if (format === 'sarif') yield sarifTail();
}
