// CSV (RFC 4180) of a job's findings or objects: a header row, one row per item, CRLF line ends,
// every field quoted when it holds a comma, a quote, CR or LF. Target text ends up in cells (a TXT
// record in a summary, a page's title in a projection), and a spreadsheet runs a cell that starts
// with = + - @ (or tab / CR, which some strip first) as a formula: such a cell is prefixed with a
// quote ('), OWASP's advice, whatever column it is in. The column sets are stable and documented
// in docs/api.md ("Exports"); new columns are only ever added at the end.
import { suppressionOf, type ExportObject, type FindingEntry } from './export-items.ts';
import { findingLocation } from './finding-location.ts';

export const FINDING_COLUMNS = [
  'findingId',
  'code',
  'severity',
  'confidence',
  'title',
  'summary',
  'objectId',
  'objectType',
  'objectKey',
  'url',
  'detectedAt',
  'change',
  'suppressed',
  'suppressionId',
  'suppressionReason',
  'suppressionExpiresAt',
  'sources',
  'evidence',
] as const;

export const OBJECT_COLUMNS = [
  'objectId',
  'type',
  'key',
  'distance',
  'firstSeenAt',
  'change',
  'changedFields',
  'lanes',
  'projection',
  'evidence',
] as const;

const FORMULA_START = /^[=+\-@\t\r]/;

/** One RFC 4180 field, neutralised against formula injection. */
export function csvCell(value: string | number | boolean | null | undefined): string {
  let s = value === null || value === undefined ? '' : String(value);
  if (FORMULA_START.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

function row(cells: Array<string | number | boolean | null | undefined>): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}

export function csvHeader(what: 'findings' | 'objects'): string {
  return row([...(what === 'findings' ? FINDING_COLUMNS : OBJECT_COLUMNS)]);
}

/** Evidence summaries, one per line inside the cell. */
function evidenceCell(evidence: Array<{ summary: string }>): string {
  return evidence.map((e) => e.summary).join('\n');
}

export function csvFindingRow(entry: FindingEntry): string {
  const { item, subject } = entry;
  const s = suppressionOf(item);
  return row([
    item.findingId,
    item.code,
    item.severity,
    item.confidence,
    item.title,
    item.summary,
    item.objectId,
    subject.type,
    subject.key,
    findingLocation(subject).url,
    item.detectedAt,
    item.change ?? '',
    s ? 'true' : 'false',
    s?.suppressionId,
    s?.reason,
    s?.expiresAt,
    item.sources.map((x) => `${x.lane}:${x.source}`).join(' '),
    evidenceCell(item.evidence),
  ]);
}

export function csvObjectRow(item: ExportObject): string {
  return row([
    item.objectId,
    item.type,
    item.key,
    item.distance,
    item.firstSeenAt,
    item.change ?? '',
    (item.changedFields ?? []).join(' '),
    item.lanes.map((l) => `${l.lane}:${l.status}`).join(' '),
    JSON.stringify(item.projection),
    evidenceCell(item.evidence),
  ]);
}
