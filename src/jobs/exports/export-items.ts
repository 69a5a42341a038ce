// What the export writers are given (CONTRACT §17): the pages' own items, each finding with the
// type and key of the object it is about (its identity, §13, and its location), and the job's
// public status body. The writers are pure functions of these: nothing here reaches the database.
import type { z } from 'zod';
import type { FindingItem, ResultItem } from '../../contract/page-schemas.ts';
import type { jobStatusSchema } from '../../contract/job-schemas.ts';
import type { Severity } from '../../contract/tasks.ts';

/** §15: a finding accepted on purpose. Marked, never hidden. */
export interface FindingSuppression {
  suppressionId: string;
  reason: string;
  expiresAt: string | null;
}

/** A finding page item, with its `suppressed` mark (§15: null when open). */
export type ExportFinding = FindingItem;

export interface FindingSubject {
  type: string;
  key: string;
}

export interface FindingEntry {
  item: ExportFinding;
  /** The object the finding is about (type and normalized key). */
  subject: FindingSubject;
}

export type ExportObject = ResultItem;

export type ExportJob = z.infer<typeof jobStatusSchema>;

export function suppressionOf(item: ExportFinding): FindingSuppression | null {
  return item.suppressed ?? null;
}

/** Most severe first: the order of every list a person reads. */
export const SEVERITY_ORDER: readonly Severity[] = ['critical', 'high', 'medium', 'low', 'info'];

/** A lane that did not complete all its work: a partial scan must never read as a clean one. */
export function incompleteLanes(job: ExportJob): ExportJob['lanes'] {
  return job.lanes.filter((l) => l.status !== 'completed');
}
