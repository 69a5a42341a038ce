// Change detection (CONTRACT §13): the vocabulary of marks and reasons every layer speaks (and
// the client, which loads no schema library for it). Constants and types only.

/**
 * Every mark, in the order the changes route lists them (objects, then findings, each in this order).
 * `resurfaced` (CONTRACT §15): a finding suppressed in the baseline and open now (its suppression
 * expired or was revoked); set by the job's terminal work on a pair the comparison marked unchanged.
 */
export const CHANGE_MARKS = ['new', 'changed', 'gone', 'resolved', 'unconfirmed', 'unchanged', 'resurfaced'] as const;
export type ChangeMark = (typeof CHANGE_MARKS)[number];
/** The marks an item of each kind can carry. */
export const OBJECT_MARKS: readonly ChangeMark[] = ['new', 'changed', 'gone', 'unconfirmed', 'unchanged'];
export const FINDING_MARKS: readonly ChangeMark[] = ['new', 'resolved', 'unconfirmed', 'unchanged', 'resurfaced'];
/** The changes route's default filter: every mark but unchanged. */
export const DEFAULT_CHANGE_FILTER: readonly ChangeMark[] = [
  'new',
  'changed',
  'gone',
  'resolved',
  'unconfirmed',
  'resurfaced',
];

export const CHANGE_KINDS = ['object', 'finding'] as const;
export type ChangeKind = (typeof CHANGE_KINDS)[number];

/**
 * Why something is `unconfirmed` (never `gone` / `resolved`, never `unchanged`): what would have
 * observed it did not run to completion on it.
 *   indeterminate     the check asked and got no usable answer (SERVFAIL, timeout, unreachable)
 *   not_rechecked     the check never ran on it this time (budget, object cap, cancel, not planned)
 *   lane_partial      the check ran partial: what it did not cover is unknown
 *   lane_unavailable  the lane could not run (our side: not configured, down, failed)
 */
export const UNCONFIRMED_REASONS = ['indeterminate', 'not_rechecked', 'lane_partial', 'lane_unavailable'] as const;
export type UnconfirmedReason = (typeof UNCONFIRMED_REASONS)[number];
