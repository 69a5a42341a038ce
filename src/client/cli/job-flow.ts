// Shared by the lookup, scan and job commands: waiting for a job with a progress bar, reading its
// findings, and turning a job state into an outcome. A terminal job is judged by its state and
// coverage; --fail-on adds a verdict on findings but never turns a partial job into a complete one.
import { LssApiError } from '../errors.ts';
import type { LssClient } from '../client.ts';
import type { Collected } from '../page-iterator.ts';
import type { CollectedChanges } from '../change-pages.ts';
import type { FindingPage, JobStatus, Severity } from '../types.ts';
import { SEVERITIES } from '../../contract/tasks.ts';
import { EXIT_INTERRUPTED, type Outcome } from './exit-codes.ts';
import { jobProgress } from './progress.ts';
import { renderChanges, renderFindings, renderJob } from './render.ts';
import type { Report } from './report.ts';
import type { Terminal } from './terminal.ts';

/** A terminal state judged with its coverage; a job still running is `whileRunning`. */
export function stateOutcome(
  status: JobStatus['status'],
  terminal: boolean,
  coverageComplete: boolean,
  whileRunning: Outcome = 'in_progress',
): Outcome {
  if (!terminal) return whileRunning;
  if (status === 'completed') return coverageComplete ? 'complete' : 'partial';
  if (status === 'partial' || status === 'cancelled') return 'partial';
  return 'service_error'; // failed, unavailable
}

export function jobOutcome(job: JobStatus): Outcome {
  return stateOutcome(job.status, job.terminal, job.coverage.complete);
}

export function atOrAbove(severity: Severity, threshold: Severity): boolean {
  return SEVERITIES.indexOf(severity) >= SEVERITIES.indexOf(threshold);
}

/** --fail-on outranks complete and partial (a finding is a fact); errors were thrown earlier. */
export function withFailOn(
  outcome: Outcome,
  findings: Collected<FindingPage> | null,
  failOn: Severity | undefined,
): Outcome {
  if (!failOn || !findings) return outcome;
  return findings.items.some((f) => atOrAbove(f.severity, failOn)) ? 'fail_on' : outcome;
}

/**
 * --fail-on-new (CONTRACT §13, the CI gate): a finding that is new since the baseline, at or above
 * the severity. Without a baseline every finding of the job is new (there is nothing it was
 * already known from), so the job's findings are judged. Without finding:read the verdict cannot
 * be given: the service left finding changes out, which must not read as "none new".
 */
export function withFailOnNew(
  outcome: Outcome,
  job: JobStatus,
  changes: CollectedChanges | null,
  findings: Collected<FindingPage> | null,
  failOnNew: Severity | undefined,
): Outcome {
  if (!failOnNew || outcome === 'fail_on') return outcome;
  if (job.baseline === null) return withFailOnOpen(outcome, findings, failOnNew);
  if (!changes) return outcome;
  if (changes.findingsOmitted) return 'refused';
  // CONTRACT §15: a suppressed finding is not new to the gate; a resurfaced one (its suppression
  // expired or was revoked since the baseline) is.
  const hit = changes.items.some(
    (i) =>
      i.kind === 'finding' &&
      (i.change === 'new' || i.change === 'resurfaced') &&
      !i.suppressed &&
      i.severity !== undefined &&
      atOrAbove(i.severity, failOnNew),
  );
  return hit ? 'fail_on' : outcome;
}

/** --fail-on-open (CONTRACT §15): an open (unsuppressed) finding at or above the severity. */
export function withFailOnOpen(
  outcome: Outcome,
  findings: Collected<FindingPage> | null,
  failOnOpen: Severity | undefined,
): Outcome {
  if (!failOnOpen || !findings || outcome === 'fail_on') return outcome;
  return findings.items.some((f) => !f.suppressed && atOrAbove(f.severity, failOnOpen)) ? 'fail_on' : outcome;
}

/** The lowest of the severities the gates ask for: the findings to read for all of them. */
export function lowestSeverity(...gates: Array<Severity | undefined>): Severity | undefined {
  const set = gates.filter((g): g is Severity => g !== undefined);
  return set.reduce<Severity | undefined>((low, g) => (low === undefined || atOrAbove(low, g) ? g : low), undefined);
}

/**
 * The changes of a terminal job with a baseline (every mark but unchanged), null otherwise. With
 * --fail-on-new and a key that lacks finding:read, says why no verdict can be given.
 */
export async function readChanges(
  client: LssClient,
  term: Terminal,
  job: JobStatus,
  failOnNew: Severity | undefined,
): Promise<CollectedChanges | null> {
  if (!job.terminal || job.baseline === null) {
    if (failOnNew && job.terminal)
      term.err('lss: no baseline for this job: --fail-on-new judges every finding of it as new');
    return null;
  }
  const changes = await client.collectChanges(job.jobRef, { limit: 500 });
  if (failOnNew && changes.findingsOmitted)
    term.err('lss: --fail-on-new needs the finding:read scope: new findings cannot be judged without it');
  return changes;
}

/** Waits with a progress bar; Ctrl-C stops waiting (not the job) and says how to look later. */
export async function waitWithProgress(
  client: LssClient,
  term: Terminal,
  first: JobStatus,
  budget?: number,
): Promise<JobStatus> {
  const progress = jobProgress(term, budget);
  const abort = new AbortController();
  const onSigint = () => abort.abort();
  process.once('SIGINT', onSigint);
  try {
    return (await client.waitForJob(first.jobRef, { first, onUpdate: (j) => progress.update(j), signal: abort.signal }))
      .job;
  } catch (err) {
    if (abort.signal.aborted) {
      progress.stop();
      term.err(`lss: stopped waiting; the job goes on: lss job show ${first.jobRef}`);
      process.exit(EXIT_INTERRUPTED);
    }
    throw err;
  } finally {
    progress.stop();
    process.off('SIGINT', onSigint);
  }
}

/**
 * Every finding of the job. Without --fail-on a key lacking finding:read only loses the findings
 * table (said on stderr); with --fail-on the verdict needs them, so the refusal stands.
 */
export async function readFindings(
  client: LssClient,
  term: Terminal,
  jobRef: string,
  failOn: Severity | undefined,
): Promise<Collected<FindingPage> | null> {
  try {
    return await client.collectFindings(jobRef, { limit: 500 });
  } catch (err) {
    if (!failOn && err instanceof LssApiError && err.code === 'insufficient_scope') {
      term.err('lss: findings not shown: the key lacks the finding:read scope');
      return null;
    }
    throw err;
  }
}

/** The report of a job that was waited for (or just accepted / read); its changes last. */
export function jobReport(
  term: Terminal,
  job: JobStatus,
  findings: Collected<FindingPage> | null,
  failOn: Severity | undefined,
  extra: {
    human?: () => string;
    changes?: CollectedChanges | null;
    failOnNew?: Severity | undefined;
    failOnOpen?: Severity | undefined;
  } = {},
): Report {
  const c = term.colors;
  const changes = extra.changes ?? null;
  const gated = withFailOnNew(withFailOn(jobOutcome(job), findings, failOn), job, changes, findings, extra.failOnNew);
  return {
    outcome: withFailOnOpen(gated, findings, extra.failOnOpen),
    data: { job, ...(findings ? { findings } : {}), ...(changes ? { changes } : {}) },
    human: () =>
      [
        renderJob(job, c),
        extra.human?.() ?? '',
        findings ? renderFindings(findings, c) : '',
        changes ? renderChanges(changes, c) : '',
      ]
        .filter(Boolean)
        .join('\n'),
  };
}
