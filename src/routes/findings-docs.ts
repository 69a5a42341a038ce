// GET /docs/findings: the finding catalog as a page of this service, one anchor per code, so a
// SARIF rule's helpUri (`<this service>/docs/findings#<code>`) opens its row wherever the export
// was imported. Built from the catalog that docs/findings.md is drift-tested against: the same
// rows, no second copy to keep. Static and public like /docs; no script, nothing external.
import type { Express, RequestHandler } from 'express';
import { ApiError } from '../contract/errors.ts';
import { findingCatalog } from '../products/findings-catalog.ts';
import { escapeHtml as e } from '../jobs/exports/report-writer.ts';
import { REPORT_CSP } from '../contract/export-schemas.ts';

export const FINDINGS_DOCS_PATH = '/docs/findings';

function page(): string {
  const byCode = new Map<string, typeof findingCatalog>();
  for (const f of findingCatalog) byCode.set(f.code, [...(byCode.get(f.code) ?? []), f]);
  const rows = [...byCode.values()]
    .map((list) => {
      const f = list[0]!;
      return `<tr id="${e(f.code)}"><td><a href="#${e(f.code)}"><code>${e(f.code)}</code></a></td><td>${e(f.severity)}</td>
<td>${e(f.confidence)}</td><td>${list.map((x) => e(x.product)).join('<br>')}</td><td><strong>${e(f.title)}</strong><br>${e(f.description)}</td></tr>`;
    })
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>LSS finding catalog</title>
<style>body{font:14px/1.45 system-ui,sans-serif;max-width:1200px;margin:0 auto;padding:16px 24px}
table{border-collapse:collapse}td{border-bottom:1px solid #ddd;padding:6px 8px;vertical-align:top}
tr:target{background:#fff8c5}code{font-family:ui-monospace,Menlo,Consolas,monospace}</style></head>
<body><h1>Finding catalog</h1>
<p>Finding codes are stable machine identifiers, like error codes. A finding is raised only on positive evidence;
a check that could not run produces a coverage limitation, never a finding and never its absence.</p>
<table><thead><tr><th>code</th><th>severity</th><th>confidence</th><th>product</th><th>raised when</th></tr></thead>
<tbody>
${rows}
</tbody></table></body></html>
`;
}

const methodNotAllowed: RequestHandler = () => {
  throw new ApiError('method_not_allowed', { details: { allow: 'GET' } });
};

export function mountFindingsDocsRoute(app: Express): void {
  let html: string | undefined;
  app.get(FINDINGS_DOCS_PATH, (_req, res) => {
    html ??= page();
    res
      .set({
        'Content-Security-Policy': REPORT_CSP,
        'X-Content-Type-Options': 'nosniff',
        'Cache-Control': 'public, max-age=3600',
      })
      .type('html')
      .send(html);
  });
  app.all(FINDINGS_DOCS_PATH, methodNotAllowed);
}
