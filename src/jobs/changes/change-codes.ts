// How marks are stored (job_changes.grp = kind × 8 + mark): one small integer the changes route
// pages by, one keyset range per (kind, mark) its filters allow (migration 012).
import { CHANGE_MARKS, type ChangeKind, type ChangeMark } from '../../contract/change-schemas.ts';

export const KIND_CODES: Record<ChangeKind, number> = { object: 0, finding: 1 };

export function groupOf(kind: ChangeKind, mark: ChangeMark): number {
  return KIND_CODES[kind] * 8 + CHANGE_MARKS.indexOf(mark);
}

export function kindOfGroup(grp: number): ChangeKind {
  return grp >= 8 ? 'finding' : 'object';
}

export function markOfGroup(grp: number): ChangeMark {
  return CHANGE_MARKS[grp % 8] ?? 'unchanged';
}
