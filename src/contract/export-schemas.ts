// Exports and the report (CONTRACT §17): the export route's query, the media types and file
// names of each format, and their part of the OpenAPI document (merged by openapi.ts).
import { z } from 'zod';
import type { ErrorCode } from './errors.ts';
import type { Json } from './json-schema.ts';

export const EXPORT_FORMATS = ['sarif', 'csv', 'jsonl'] as const;
export const EXPORT_SUBJECTS = ['findings', 'objects'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
export type ExportSubject = (typeof EXPORT_SUBJECTS)[number];

/** Unknown query parameters are ignored (z.object strips them). */
export const exportQuery = z
  .object({
    format: z.enum(EXPORT_FORMATS),
    what: z.enum(EXPORT_SUBJECTS).default('findings'),
  })
  .refine((q) => !(q.format === 'sarif' && q.what === 'objects'), {
    message: 'SARIF carries results (findings) only: export objects as csv or jsonl',
    path: ['what'],
  });

/** RFC 4180's header parameter says the first line names the columns. */
export const EXPORT_MEDIA_TYPES: Record<ExportFormat, string> = {
  sarif: 'application/sarif+json',
  csv: 'text/csv; charset=utf-8; header=present',
  jsonl: 'application/x-ndjson; charset=utf-8',
};

const EXTENSIONS: Record<ExportFormat, string> = { sarif: 'sarif', csv: 'csv', jsonl: 'jsonl' };

/** `lss-<job ref>-<what>.<ext>`: a job ref is [a-z0-9_] only, so the name needs no quoting rules. */
export function exportFileName(jobRef: string, what: ExportSubject, format: ExportFormat): string {
  return `lss-${jobRef}-${what}.${EXTENSIONS[format]}`;
}

/** The report's policy: nothing loads, nothing runs; only its own inline style and data: images. */
export const REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

const EXPORT_ERRORS: ErrorCode[] = [
  'authentication_required',
  'insufficient_scope',
  'rate_limit_exceeded',
  'service_unavailable',
  'internal_error',
  'job_not_found',
  'job_not_terminal',
];

const jobRefParam = {
  name: 'job_ref',
  in: 'path',
  required: true,
  description: 'Opaque job reference (job_…) returned with 202.',
  schema: { type: 'string' },
};

const disposition = {
  'Content-Disposition': {
    schema: { type: 'string' },
    description: 'attachment; filename="lss-<job_ref>-<what>.<sarif|csv|jsonl>"',
  },
};

export function exportPaths(errorResponses: (codes: ErrorCode[]) => Json): Json {
  return {
    '/v2/jobs/{job_ref}/export': {
      get: {
        operationId: 'exportJob',
        summary: "A terminal job's findings or objects as one SARIF, CSV or JSONL file, streamed",
        description:
          'Findings need finding:read besides scan:read (as their pages do); objects need scan:read. Terminal jobs ' +
          'only (job_not_terminal otherwise). SARIF 2.1.0 carries findings only. The body is streamed from the ' +
          "job's keyset pages: memory does not grow with the job. Reads cost no credits.",
        'x-scopes': ['scan:read', 'finding:read'],
        security: [{ bearer: [] }],
        parameters: [
          jobRefParam,
          {
            name: 'format',
            in: 'query',
            required: true,
            description: "sarif (findings only), csv (RFC 4180, header row) or jsonl (the pages' items, one a line).",
            schema: { type: 'string', enum: [...EXPORT_FORMATS] },
          },
          {
            name: 'what',
            in: 'query',
            required: false,
            description: 'findings (default) or objects.',
            schema: { type: 'string', enum: [...EXPORT_SUBJECTS], default: 'findings' },
          },
        ],
        responses: {
          '200': {
            description: 'The file, streamed',
            headers: disposition,
            content: {
              [EXPORT_MEDIA_TYPES.sarif]: { schema: { type: 'object' } },
              'text/csv': { schema: { type: 'string' } },
              'application/x-ndjson': { schema: { type: 'string' } },
            },
          },
          ...errorResponses([...EXPORT_ERRORS, 'invalid_request']),
        },
      },
    },
    '/v2/jobs/{job_ref}/report': {
      get: {
        operationId: 'getJobReport',
        summary: 'A terminal job as one self-contained HTML page (no script, nothing external), printable',
        description:
          'Target, product, status, coverage per lane, findings by severity, changes since the baseline, suppressed ' +
          'findings apart and limitations. The findings part needs finding:read; without it the page says they are ' +
          "omitted. Served with Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'; img-src data:.",
        'x-scopes': ['scan:read'],
        security: [{ bearer: [] }],
        parameters: [jobRefParam],
        responses: {
          '200': {
            description: 'The report',
            headers: {
              'Content-Security-Policy': { schema: { type: 'string' }, description: REPORT_CSP },
            },
            content: { 'text/html': { schema: { type: 'string' } } },
          },
          ...errorResponses(EXPORT_ERRORS),
        },
      },
    },
  };
}
