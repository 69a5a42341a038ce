// The job report (CONTRACT §17): one self-contained HTML page, no script and nothing external
// (the route serves it under `default-src 'none'; style-src 'unsafe-inline'; img-src data:`).
// Every string that came from a target (names, URLs, summaries, evidence) and every other string
// goes through escapeHtml: attribute values are always double-quoted, so escaping & < > " ' is
// enough. Coverage per lane is drawn as bars of inline-styled boxes; a print stylesheet makes
// "Save as PDF" give a readable report. A pure function of its input.
import type { Severity } from '../../contract/tasks.ts';
import { SEVERITY_ORDER, incompleteLanes, suppressionOf, type ExportJob, type FindingEntry } from './export-items.ts';
import { findingLocation } from './finding-location.ts';
import { REPORT_STYLE } from './report-style.ts';

export interface ReportInput {
  job: ExportJob;
  /** null: the key lacks finding:read, and the page says the findings are omitted. */
  findings: {
    counts: Record<Severity, number>;
    /** Suppressed findings among all of the job's (when known), else among the listed ones. */
    suppressedCount: number;
    listed: FindingEntry[];
    total: number;
  } | null;
  generatedAt: string;
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

const e = escapeHtml;

/** Segments of a lane's bar, in the order they are drawn, with their class. */
const LANE_PARTS = [
  ['completed', 'ok'],
  ['skipped', 'skip'],
  ['partial', 'part'],
  ['timeout', 'bad'],
  ['unavailable', 'bad'],
  ['failed', 'bad'],
  ['cancelled', 'skip'],
  ['budgetExhausted', 'part'],
] as const;

function laneBar(l: ExportJob['lanes'][number]): string {
  const total = Math.max(l.tasks, 1);
  const parts = LANE_PARTS.filter(([k]) => l[k] > 0)
    .map(([k, cls]) => {
      const pct = ((l[k] / total) * 100).toFixed(2);
      return `<span class="seg ${cls}" style="width:${pct}%" title="${e(k)}: ${l[k]}"></span>`;
    })
    .join('');
  const done = l.tasks > 0 ? Math.round((l.completed / l.tasks) * 100) : 0;
  return `<tr><th scope="row">${e(l.lane)}</th><td><span class="bar">${parts}</span></td>
<td class="num">${done}%</td><td><span class="st st-${l.status === 'completed' ? 'ok' : 'warn'}">${e(l.status)}</span></td>
<td class="small">${l.completed}/${l.tasks} completed${LANE_PARTS.filter(([k]) => k !== 'completed' && l[k] > 0)
    .map(([k]) => `, ${e(k)} ${l[k]}`)
    .join('')}</td></tr>`;
}

function coverageSection(job: ExportJob): string {
  const incomplete = incompleteLanes(job);
  const verdict =
    job.coverage.complete && incomplete.length === 0
      ? '<p class="verdict ok">Coverage complete: every lane completed its work.</p>'
      : `<p class="verdict warn">Coverage incomplete: ${incomplete.length} lane(s) did not complete. What was not checked is not known to be clean.</p>`;
  const rows = job.lanes.map(laneBar).join('\n');
  const lims = job.coverage.limitations.length
    ? `<h3>Limitations</h3><ul class="lims">${job.coverage.limitations
        .map((l) => `<li><code>${e(l.code)}</code> ${e(l.message)}</li>`)
        .join('')}</ul>`
    : '<p class="small">No limitations recorded.</p>';
  return `<section id="coverage"><h2>Coverage per lane</h2>${verdict}
<table class="lanes"><thead><tr><th>Lane</th><th>Tasks</th><th>Done</th><th>Status</th><th>Detail</th></tr></thead>
<tbody>${rows || '<tr><td colspan="5">No lane ran.</td></tr>'}</tbody></table>
<p class="legend small"><span class="seg ok"></span> completed <span class="seg skip"></span> skipped / cancelled
<span class="seg part"></span> partial / budget <span class="seg bad"></span> timeout / unavailable / failed</p>
${lims}</section>`;
}

function severityTable(counts: Record<Severity, number>): string {
  const max = Math.max(1, ...SEVERITY_ORDER.map((s) => counts[s]));
  return `<table class="sev"><tbody>${SEVERITY_ORDER.map(
    (s) =>
      `<tr><th scope="row"><span class="sv sv-${s}">${s}</span></th><td class="num">${counts[s]}</td>
<td><span class="bar thin">${
        counts[s] > 0 ? `<span class="seg sv-${s}" style="width:${((counts[s] / max) * 100).toFixed(2)}%"></span>` : ''
      }</span></td></tr>`,
  ).join('')}</tbody></table>`;
}

function findingCard(f: FindingEntry): string {
  const where = findingLocation(f.subject);
  const s = suppressionOf(f.item);
  const evidence = f.item.evidence.slice(0, 5);
  return `<article class="finding sv-border-${f.item.severity}">
<h4><span class="sv sv-${f.item.severity}">${e(f.item.severity)}</span> ${e(f.item.title)}
${f.item.change ? `<span class="chg">${e(f.item.change)}</span>` : ''}</h4>
<p class="meta"><code>${e(f.item.code)}</code> · ${e(f.item.confidence)} · ${e(f.subject.type)}
<span class="key">${e(where.url ?? f.subject.key)}</span></p>
<p>${e(f.item.summary)}</p>
${
  evidence.length
    ? `<ul class="ev">${evidence.map((x) => `<li>${e(x.summary)}</li>`).join('')}${
        f.item.evidence.length > evidence.length ? `<li>… ${f.item.evidence.length - evidence.length} more</li>` : ''
      }</ul>`
    : ''
}
${
  s
    ? `<p class="sup">Suppressed: ${e(s.reason.replaceAll('_', ' '))} (${e(s.suppressionId)}${
        s.expiresAt ? `, until ${e(s.expiresAt)}` : ', no expiry'
      })</p>`
    : ''
}
</article>`;
}

function findingsSection(input: ReportInput): string {
  const f = input.findings;
  if (!f) {
    return `<section id="findings"><h2>Findings</h2><p class="verdict warn">Findings omitted: this key lacks the
<code>finding:read</code> scope.</p></section>`;
  }
  const open = f.listed.filter((x) => !suppressionOf(x.item));
  const suppressed = f.listed.filter((x) => suppressionOf(x.item));
  const bySeverity = SEVERITY_ORDER.map((sev) => {
    const list = open.filter((x) => x.item.severity === sev);
    return list.length ? `<h3>${e(sev)} (${list.length})</h3>${list.map(findingCard).join('\n')}` : '';
  }).join('\n');
  const capped =
    f.listed.length < f.total
      ? `<p class="small">The ${f.listed.length} most severe of ${f.total} findings are listed; the export
(<code>lss job export … --format csv</code>) has every one.</p>`
      : '';
  return `<section id="findings"><h2>Findings by severity</h2>${severityTable(f.counts)}
<p class="small">${f.total} finding(s), ${f.suppressedCount} suppressed. No finding does not mean safe: see coverage.</p>
${capped}
<h2>Open findings</h2>${bySeverity || '<p>No open finding.</p>'}
<section id="suppressed"><h2>Suppressed findings</h2>
<p class="small">Accepted on purpose (a suppression): shown apart, never hidden.</p>
${suppressed.length ? suppressed.map(findingCard).join('\n') : '<p>No suppressed finding.</p>'}</section>
</section>`;
}

function changesSection(job: ExportJob, findingsShown: boolean): string {
  if (!job.baseline || !job.changes) {
    return '<section id="changes"><h2>Changes since the baseline</h2><p>No baseline: this is the first job of its product and target, so nothing is compared.</p></section>';
  }
  const o = job.changes.objects;
  const fc = job.changes.findings;
  const cell = (label: string, n: number) => `<td><span class="num">${n}</span> ${e(label)}</td>`;
  return `<section id="changes"><h2>Changes since the baseline</h2>
<p class="small">Baseline <code>${e(job.baseline.jobRef)}</code>, completed ${e(job.baseline.completedAt)}.
Gone and resolved count only what was observed absent; what could not be checked is unconfirmed.</p>
<table class="chg"><tbody>
<tr><th scope="row">Objects</th>${cell('new', o.new)}${cell('changed', o.changed)}${cell('gone', o.gone)}${cell('unconfirmed', o.unconfirmed)}${cell('unchanged', o.unchanged)}</tr>
${findingsShown ? `<tr><th scope="row">Findings</th>${cell('new', fc.new)}${cell('resolved', fc.resolved)}${cell('unconfirmed', fc.unconfirmed)}${cell('unchanged', fc.unchanged)}</tr>` : ''}
</tbody></table></section>`;
}

export function renderReport(input: ReportInput): string {
  const { job } = input;
  const title = `LSS report: ${job.target.value}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${e(title)}</title>
<style>${REPORT_STYLE}</style>
</head>
<body>
<header>
<p class="brand">LSS · Lookup and Scan Service</p>
<h1>${e(job.target.value)}</h1>
<dl class="facts">
<div><dt>Target</dt><dd>${e(job.target.type)} <strong>${e(job.target.value)}</strong></dd></div>
<div><dt>Product</dt><dd><code>${e(job.product)}</code>${job.profile ? ` · profile ${e(job.profile)}` : ''}</dd></div>
<div><dt>Status</dt><dd><span class="st st-${job.status === 'completed' ? 'ok' : 'warn'}">${e(job.status)}</span></dd></div>
<div><dt>Job</dt><dd><code>${e(job.jobRef)}</code></dd></div>
<div><dt>Started</dt><dd>${e(job.startedAt ?? '—')}</dd></div>
<div><dt>Completed</dt><dd>${e(job.completedAt ?? '—')}</dd></div>
<div><dt>Objects</dt><dd>${job.progress.objects}</dd></div>
<div><dt>Findings</dt><dd>${input.findings ? input.findings.total : 'omitted'}</dd></div>
</dl>
</header>
<main>
${coverageSection(job)}
${findingsSection(input)}
${changesSection(job, input.findings !== null)}
</main>
<footer><p class="small">Generated ${e(input.generatedAt)} from job <code>${e(job.jobRef)}</code>.
Finding codes are described in the finding catalog (docs/findings.md).</p></footer>
</body>
</html>
`;
}
