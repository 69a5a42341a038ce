// Human output: cli-table3 tables for envelopes, jobs, pages and objects. Coverage and limitations
// are always printed beside the data, so a partial answer never reads as a complete one.
import Table from 'cli-table3';
import type { Collected } from '../page-iterator.ts';
import type { CollectedChanges } from '../change-pages.ts';
import type {
  Envelope,
  FindingItem,
  FindingPage,
  JobStatus,
  LaneOutcome,
  Limitation,
  ObjectDetail,
  ProductList,
  ResultPage,
} from '../types.ts';
import type { Colors } from './terminal.ts';

/**
 * cli-table3 colours its header itself unless told not to (colour is decided in terminal.ts);
 * no rule between rows, so a long projection stays readable.
 */
const plain = {
  style: { head: [], border: [] },
  chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
};

function table(head: string[], rows: string[][], c: Colors): string {
  const t = new Table({ ...plain, head: head.map((h) => c.bold(h)) });
  t.push(...rows);
  return t.toString();
}

function keyValues(rows: Array<[string, string]>, c: Colors): string {
  const t = new Table(plain);
  for (const [k, v] of rows) t.push({ [c.bold(k)]: v });
  return t.toString();
}

export function statusColor(status: string, c: Colors): string {
  if (status === 'completed' || status === 'ready' || status === 'available') return c.green(status);
  if (
    [
      'partial',
      'cancelled',
      'cancelling',
      'skipped',
      'partially_configured',
      'unconfigured',
      'budget_exhausted',
    ].includes(status)
  )
    return c.yellow(status);
  if (['queued', 'running'].includes(status)) return c.cyan(status);
  return c.red(status);
}

const SEVERITY_COLOR: Record<string, keyof Colors> = {
  critical: 'red',
  high: 'red',
  medium: 'yellow',
  low: 'cyan',
  info: 'gray',
};
function severity(s: string, c: Colors): string {
  const f = c[SEVERITY_COLOR[s] ?? 'reset'];
  return typeof f === 'function' ? f(s) : s;
}

type Rec = Record<string, unknown>;
const isRecord = (v: unknown): v is Rec => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Long values (a 2 KB TXT record) are cut for the table; --json has them whole. */
const MAX_LINE = 120;
const clip = (line: string): string => (line.length > MAX_LINE ? `${line.slice(0, MAX_LINE - 1)}…` : line);

function cell(value: unknown): string {
  return fullCell(value).split('\n').map(clip).join('\n');
}

function fullCell(value: unknown): string {
  if (value === null || value === undefined) return '—';
  if (!Array.isArray(value)) return typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (value.length === 0) return '—';
  if (value.every((v) => v === null || typeof v !== 'object')) return value.join(', ');
  // Answers with data: the data is what people read; everything else stays in --json.
  return value.map((v) => (isRecord(v) && 'data' in v ? fullCell(v.data) : JSON.stringify(v))).join('\n');
}

/** A map whose values are records with the same keys (DNS types → rcode, answers…): one table. */
function uniformMap(v: unknown): v is Record<string, Rec> {
  if (!isRecord(v)) return false;
  const values = Object.values(v);
  if (values.length < 2 || !values.every(isRecord)) return false;
  const keys = Object.keys(values[0]!).join();
  return values.every((x) => Object.keys(x).join() === keys);
}

/** A projection as rows of dotted paths, with uniform maps split out as tables of their own. */
export function flatten(
  value: unknown,
  prefix = '',
  maps: Array<[string, Record<string, Rec>]> = [],
): Array<[string, string]> {
  if (!isRecord(value)) return [[prefix || '(value)', cell(value)]];
  if (prefix && uniformMap(value)) {
    maps.push([prefix, value]);
    return [];
  }
  const entries = Object.entries(value);
  if (entries.length === 0) return [[prefix, '—']];
  return entries.flatMap(([k, v]) => flatten(v, prefix ? `${prefix}.${k}` : k, maps));
}

function projection(value: unknown, c: Colors): string {
  const maps: Array<[string, Record<string, Rec>]> = [];
  const rows = flatten(value, '', maps);
  const tables = maps.map(([name, map]) => {
    const cols = Object.keys(Object.values(map)[0]!);
    return table(
      [name, ...cols],
      Object.entries(map).map(([k, r]) => [k, ...cols.map((col) => cell(r[col]))]),
      c,
    );
  });
  return [rows.length ? keyValues(rows, c) : '', ...tables].filter(Boolean).join('\n');
}

export function renderLanes(lanes: LaneOutcome[], c: Colors): string {
  return table(
    ['lane', 'required', 'status', 'reason', 'ms'],
    lanes.map((l) => [
      l.lane,
      l.required ? 'yes' : 'no',
      statusColor(l.status, c),
      l.reason ?? '',
      l.durationMs === undefined ? '' : String(Math.round(l.durationMs * 10) / 10),
    ]),
    c,
  );
}

export function renderLimitations(limitations: Limitation[], c: Colors): string {
  if (limitations.length === 0) return '';
  return [
    c.yellow(c.bold('Limitations (what could not be checked):')),
    ...limitations.map((l) => `  ${c.yellow('!')} ${l.code}: ${l.message}`),
  ].join('\n');
}

function coverageLine(complete: boolean, c: Colors): string {
  return complete ? c.green('coverage complete') : c.yellow('coverage INCOMPLETE: absence of a finding proves nothing');
}

export function renderEnvelope(e: Envelope, c: Colors): string {
  return [
    `${c.bold(e.product)}  ${statusColor(e.status, c)}  ${coverageLine(e.coverage.complete, c)}  credits ${e.credits.charged}  ${c.dim(e.requestId)}`,
    projection(e.result, c),
    renderLanes(e.lanes, c),
    renderLimitations(e.limitations, c),
    e.sources.length
      ? c.dim(`sources: ${e.sources.map((s) => (s.version ? `${s.source}@${s.version}` : s.source)).join(', ')}`)
      : '',
  ]
    .filter(Boolean)
    .join('\n');
}

export function renderJob(job: JobStatus, c: Colors): string {
  const p = job.progress;
  const rows: Array<[string, string]> = [
    ['job', job.jobRef],
    ['product', job.product],
    ['status', `${statusColor(job.status, c)}${job.terminal ? '' : c.dim(' (not terminal)')}`],
    ['target', `${job.target.type} ${job.target.value}`],
  ];
  if (job.profile) rows.push(['profile', job.profile]);
  rows.push(
    ['tasks', `${p.tasksDone} done, ${p.tasksQueued} queued`],
    ['objects / findings', `${p.objects} / ${p.findings}`],
    ['coverage', coverageLine(job.coverage.complete, c)],
    [
      'credits',
      job.ledger
        ? `reserved ${job.ledger.reserved}, captured ${job.ledger.captured}, released ${job.ledger.released}`
        : c.dim('not settled yet'),
    ],
    ['created', job.createdAt],
  );
  if (job.completedAt) rows.push(['completed', job.completedAt]);
  if (job.baseline) {
    rows.push(['baseline', `${job.baseline.jobRef} (${job.baseline.completedAt})`]);
    const o = job.changes?.objects;
    const f = job.changes?.findings;
    rows.push([
      'changes',
      o && f
        ? `objects ${o.new} new, ${o.changed} changed, ${o.gone} gone, ${o.unconfirmed} unconfirmed; findings ${f.new} new, ${f.resolved} resolved, ${f.unconfirmed} unconfirmed`
        : c.dim('compared when the job ends'),
    ]);
  }
  const lanes = job.lanes.length
    ? table(
        ['lane', 'status', 'tasks', 'completed', 'partial', 'unavailable', 'timeout', 'failed', 'skipped'],
        job.lanes.map((l) => [
          l.lane,
          statusColor(l.status, c),
          ...[l.tasks, l.completed, l.partial, l.unavailable, l.timeout, l.failed, l.skipped].map(String),
        ]),
        c,
      )
    : '';
  return [keyValues(rows, c), lanes, renderLimitations(job.coverage.limitations, c)].filter(Boolean).join('\n');
}

function pageFooter(p: Collected<ResultPage> | Collected<FindingPage>, noun: string, c: Colors): string {
  const state = p.terminal
    ? statusColor(p.jobStatus, c)
    : `${statusColor(p.jobStatus, c)} ${c.yellow('(job still running: more may come)')}`;
  return [
    `${p.items.length} ${noun}; job ${state}; ${coverageLine(p.coverage.complete, c)}`,
    renderLimitations(p.limitations, c),
  ]
    .filter(Boolean)
    .join('\n');
}

export function renderResults(p: Collected<ResultPage>, c: Colors): string {
  const rows = p.items.map((i) => [
    i.objectId,
    i.type,
    i.key,
    String(i.distance),
    i.lanes.map((l) => `${l.lane}:${statusColor(l.status, c)}`).join(' '),
    String(i.evidence.length),
  ]);
  return [
    rows.length ? table(['object', 'type', 'key', 'distance', 'lanes', 'evidence'], rows, c) : '',
    pageFooter(p, 'objects', c),
  ]
    .filter(Boolean)
    .join('\n');
}

export function renderFindingRows(items: FindingItem[], c: Colors): string {
  return table(
    ['severity', 'code', 'title', 'confidence', 'object'],
    items.map((f) => [severity(f.severity, c), f.code, f.title, f.confidence, f.objectId]),
    c,
  );
}

export function renderFindings(p: Collected<FindingPage>, c: Colors): string {
  return [p.items.length ? renderFindingRows(p.items, c) : '', pageFooter(p, 'findings', c)].filter(Boolean).join('\n');
}

export function renderObject(o: ObjectDetail, c: Colors): string {
  return [
    keyValues(
      [
        ['object', o.objectId],
        ['type', o.type],
        ['key', o.key],
        ['distance', String(o.distance)],
        ['first seen', o.firstSeenAt],
      ],
      c,
    ),
    projection(o.projection, c),
    o.lanes.length
      ? table(
          ['lane', 'status', 'reason'],
          o.lanes.map((l) => [l.lane, statusColor(l.status, c), l.reason ?? '']),
          c,
        )
      : '',
    o.relations.length
      ? table(
          ['relation', 'direction', 'object'],
          o.relations.map((r) => [r.relation, r.direction, r.objectId]),
          c,
        )
      : '',
    o.evidence.length
      ? table(
          ['evidence', 'summary'],
          o.evidence.map((e) => [e.ref, e.summary]),
          c,
        )
      : '',
    o.findings.length ? `findings: ${o.findings.join(', ')}` : '',
  ]
    .filter(Boolean)
    .join('\n');
}

export function renderProducts(list: ProductList, c: Colors): string {
  return table(
    ['product', 'route', 'mode', 'credits', 'readiness', 'lanes not ready'],
    list.products.map((p) => [
      p.product,
      `${p.method} ${p.path}`,
      p.mode,
      p.credits.basis === 'fixed' ? String(p.credits.amount) : 'maxCredits',
      statusColor(p.readiness, c),
      p.lanes
        .filter((l) => l.readiness !== 'ready')
        .map((l) => `${l.lane}:${l.readiness}`)
        .join(' '),
    ]),
    c,
  );
}

const CHANGE_COLOR: Record<string, keyof Colors> = {
  new: 'cyan',
  changed: 'yellow',
  gone: 'magenta',
  resolved: 'green',
  unconfirmed: 'yellow',
  unchanged: 'gray',
};

/**
 * What changed since the baseline (CONTRACT §13). An unconfirmed row says why: its absence was
 * not observed, so it is not reported gone.
 */
export function renderChanges(p: CollectedChanges, c: Colors): string {
  if (!p.baseline) return c.dim('changes: no baseline (no earlier completed job of this target): nothing to compare');
  if (!p.terminal)
    return c.yellow(
      `changes since ${p.baseline.jobRef}: the job has not finished; the comparison is made when it ends`,
    );
  const mark = (m: string) => {
    const f = c[CHANGE_COLOR[m] ?? 'reset'];
    return typeof f === 'function' ? f(m) : m;
  };
  const rows = p.items.map((i) => [
    mark(i.change),
    i.kind,
    i.severity ? `${i.type} (${severity(i.severity, c)})` : i.type,
    i.key,
    i.changedFields?.join(', ') ?? (i.reason ? `reason: ${i.reason}` : ''),
  ]);
  const counts = new Map<string, number>();
  for (const i of p.items) counts.set(i.change, (counts.get(i.change) ?? 0) + 1);
  const summary = [...counts].map(([m, n]) => `${n} ${m}`).join(', ') || 'nothing changed';
  return [
    c.bold(`Changes since ${p.baseline.jobRef} (${p.baseline.completedAt}):`),
    rows.length ? table(['change', 'kind', 'type', 'key', 'fields / reason'], rows, c) : '',
    `${summary}${p.findingsOmitted ? c.yellow('; findings not shown: the key lacks finding:read') : ''}`,
  ]
    .filter(Boolean)
    .join('\n');
}
