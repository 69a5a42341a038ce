// SARIF 2.1.0 (OASIS) of a terminal job's findings, written in three pieces so the route can
// stream it: the head (the log, the run, the tool with one rule per catalog code, the invocation
// with its coverage), one result per finding, the tail. Pure functions of the job body, the
// catalog and the items: the same input gives the same bytes.
//
// Coverage is kept, never upgraded: invocations[0].executionSuccessful is true only when the job
// completed with every lane completed and complete coverage; each lane that did not complete and
// each limitation is a toolExecutionNotifications entry, so a partial scan never imports as a clean
// one. Severity maps to level (critical/high → error, medium → warning, low/info → note) and to
// the rules' `security-severity` (GitHub's and DefectDojo's ranking of security results).
import type { Severity } from '../../contract/tasks.ts';
import type { CatalogEntry } from '../../products/findings-catalog.ts';
import { incompleteLanes, suppressionOf, type ExportJob, type FindingEntry } from './export-items.ts';
import { FINGERPRINT_KEY, findingFingerprint, findingLocation } from './finding-location.ts';

export const SARIF_SCHEMA_URI =
  'https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json';

export interface SarifTool {
  /** The service's version (package.json). */
  version: string;
  /** Absolute URL of the findings catalog page; a rule's help is `<helpBase>#<code>`. */
  helpBase: string;
}

export type SarifLevel = 'error' | 'warning' | 'note';

export function sarifLevel(s: Severity): SarifLevel {
  return s === 'critical' || s === 'high' ? 'error' : s === 'medium' ? 'warning' : 'note';
}

/** CVSS-like bands GitHub uses to rank security alerts (critical ≥ 9, high ≥ 7, medium ≥ 4). */
const SECURITY_SEVERITY: Record<Severity, string> = {
  critical: '9.5',
  high: '8.0',
  medium: '5.5',
  low: '2.0',
  info: '0.0',
};

/** GitHub's `precision` tag from our confidence. */
const PRECISION = { confirmed: 'very-high', firm: 'high', tentative: 'medium' } as const;

/** One rule per finding code; a code two products declare is one rule (the catalog keeps them alike). */
export function sarifRules(catalog: readonly CatalogEntry[], helpBase: string) {
  const seen = new Map<string, CatalogEntry[]>();
  for (const e of catalog) seen.set(e.code, [...(seen.get(e.code) ?? []), e]);
  return [...seen.values()].map((entries) => {
    const e = entries[0]!;
    const helpUri = `${helpBase}#${e.code}`;
    return {
      id: e.code,
      name: camelName(e.code),
      shortDescription: { text: e.title },
      fullDescription: { text: e.description },
      help: {
        text: `${e.title}. ${e.description} (${helpUri})`,
        markdown: `**${e.title}.** ${e.description}\n\n[${e.code} in the finding catalog](${helpUri})`,
      },
      helpUri,
      defaultConfiguration: { level: sarifLevel(e.severity) },
      properties: {
        tags: ['security', ...entries.map((x) => x.product)],
        precision: PRECISION[e.confidence],
        'security-severity': SECURITY_SEVERITY[e.severity],
        severity: e.severity,
      },
    };
  });
}

/** SARIF wants rule names in PascalCase-ish identifiers (SARIF2012 asks for a readable name). */
function camelName(code: string): string {
  return code
    .split('_')
    .map((w) => (w ? w[0]!.toUpperCase() + w.slice(1) : w))
    .join('');
}

export function executionSuccessful(job: ExportJob): boolean {
  return job.status === 'completed' && job.coverage.complete && incompleteLanes(job).length === 0;
}

function notifications(job: ExportJob) {
  const lanes = incompleteLanes(job).map((l) => {
    const unfinished = l.tasks - l.completed - l.skipped;
    return {
      level: 'warning' as const,
      message: {
        text:
          `Lane ${l.lane} ended ${l.status}: ${unfinished} of ${l.tasks} tasks did not complete ` +
          `(partial ${l.partial}, unavailable ${l.unavailable}, timeout ${l.timeout}, failed ${l.failed}, ` +
          `cancelled ${l.cancelled}, budget exhausted ${l.budgetExhausted}). What it did not check is not known to be clean.`,
      },
      descriptor: { id: `lane/${l.lane}` },
      properties: { lane: l.lane, status: l.status, tasks: l.tasks, completed: l.completed },
    };
  });
  const limits = job.coverage.limitations.map((l) => ({
    level: 'warning' as const,
    message: { text: l.message || l.code },
    descriptor: { id: `limitation/${l.code}` },
    properties: { limitation: l.code },
  }));
  return [...lanes, ...limits];
}

/** Everything before the first result, ending inside `"results": [`. */
export function sarifHead(job: ExportJob, catalog: readonly CatalogEntry[], tool: SarifTool): string {
  const run = {
    tool: {
      driver: {
        name: 'LSS',
        fullName: 'LSS Lookup and Scan Service',
        version: tool.version,
        semanticVersion: tool.version,
        informationUri: tool.helpBase,
        rules: sarifRules(catalog, tool.helpBase),
      },
    },
    automationDetails: { id: `lss/${job.product}/${job.target.value}/${job.jobRef}` },
    invocations: [
      {
        executionSuccessful: executionSuccessful(job),
        ...(job.startedAt ? { startTimeUtc: job.startedAt } : {}),
        ...(job.completedAt ? { endTimeUtc: job.completedAt } : {}),
        toolExecutionNotifications: notifications(job),
        properties: { jobStatus: job.status, coverageComplete: job.coverage.complete },
      },
    ],
    properties: {
      jobRef: job.jobRef,
      product: job.product,
      profile: job.profile,
      target: job.target,
      baseline: job.baseline ?? null,
    },
    columnKind: 'unicodeCodePoints',
  };
  const log = { $schema: SARIF_SCHEMA_URI, version: '2.1.0', runs: [run] };
  // The run is closed by sarifTail: cut the serialised object just before its last two braces.
  const text = JSON.stringify(log);
  return `${text.slice(0, -3)},"results":[`;
}

export function sarifResult(entry: FindingEntry): string {
  const { item, subject } = entry;
  const where = findingLocation(subject);
  const suppressed = suppressionOf(item);
  const evidence = item.evidence.map((e) => e.summary).filter((s) => s.length > 0);
  const result = {
    ruleId: item.code,
    level: sarifLevel(item.severity),
    message: { text: item.summary || item.title },
    locations: [
      {
        // The whole artifact: a page or a name has no lines; line 1 is the validators' whole-file form.
        physicalLocation: { artifactLocation: { uri: where.path }, region: { startLine: 1 } },
        logicalLocations: [{ fullyQualifiedName: where.logicalName, kind: where.logicalKind }],
      },
    ],
    partialFingerprints: { [FINGERPRINT_KEY]: findingFingerprint(item.code, subject) },
    ...(suppressed
      ? {
          suppressions: [
            {
              kind: 'external',
              status: 'accepted',
              justification: suppressionJustification(suppressed),
              properties: { suppressionId: suppressed.suppressionId, expiresAt: suppressed.expiresAt },
            },
          ],
        }
      : {}),
    properties: {
      findingId: item.findingId,
      objectId: item.objectId,
      objectType: subject.type,
      objectKey: subject.key,
      ...(where.url ? { url: where.url } : {}),
      severity: item.severity,
      confidence: item.confidence,
      detectedAt: item.detectedAt,
      change: item.change ?? null,
      ...(evidence.length > 0 ? { evidence } : {}),
    },
  };
  return JSON.stringify(result);
}

function suppressionJustification(s: { reason: string; expiresAt: string | null; suppressionId: string }): string {
  return `${s.reason.replaceAll('_', ' ')} (${s.suppressionId}${s.expiresAt ? `, until ${s.expiresAt}` : ''})`;
}

/** Closes results, the run, runs and the log. */
export function sarifTail(): string {
  return ']}]}';
}
