// How marks are stored (job_changes.grp = kind × 8 + mark): one small integer the changes route
// pages by, one keyset range per (kind, mark) group its filters allow (migration 012).
//
// Only what is not `unchanged` is stored (./compare-chunk.ts). The unchanged groups (5 objects, 13
// findings) hold no rows once a comparison is made this way (jobs compared before keep theirs, and
// are read the same way): an unchanged identity is one of the job's objects or findings with no
// row, read back from them (./changes-repo.ts). Two exceptions are stored:
//   OBJECT_UNCHANGED_UNHELD (7)  an unchanged object the job does not hold (an absence the baseline
//       recorded, observed again without a record): nothing of the job to derive it from
//   FINDING_RESURFACED (14)      an unchanged pair whose baseline finding was suppressed, written
//       by the comparison; the terminal work deletes it again when a suppression covers the
//       job's finding now (then it reads unchanged)
import { CHANGE_MARKS, type ChangeKind, type ChangeMark } from '../../contract/change-schemas.ts';

export const KIND_CODES: Record<ChangeKind, number> = { object: 0, finding: 1 };

export function groupOf(kind: ChangeKind, mark: ChangeMark): number {
  return KIND_CODES[kind] * 8 + CHANGE_MARKS.indexOf(mark);
}

export const OBJECT_UNCHANGED = groupOf('object', 'unchanged');
export const FINDING_UNCHANGED = groupOf('finding', 'unchanged');
export const FINDING_RESURFACED = groupOf('finding', 'resurfaced');
/** Past every mark of CHANGE_MARKS (7 of them): read as unchanged. */
export const OBJECT_UNCHANGED_UNHELD = KIND_CODES.object * 8 + 7;

export function kindOfGroup(grp: number): ChangeKind {
  return grp >= 8 ? 'finding' : 'object';
}

export function markOfGroup(grp: number): ChangeMark {
  return CHANGE_MARKS[grp % 8] ?? 'unchanged';
}
