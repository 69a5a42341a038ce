// The limitation a task's status stands for, in the job's coverage: counted as each task is applied
// (task-settlement.ts) and summarised from the rows when a lookup job is decided (job-outcome.ts).
import type { Limitation } from '../../contract/lanes.ts';
import type { TaskRow } from './task-rows.ts';

/** A skipped task that does not apply to the input does not make coverage incomplete. */
export function applicableDone(t: Pick<TaskRow, 'status' | 'reason'>): boolean {
  return t.status === 'completed' || (t.status === 'skipped' && t.reason === 'not_applicable');
}

type LimitationSubject = Pick<TaskRow, 'status' | 'reason' | 'product_lane'>;

/** The limitation a task's status stands for (null for one that completed or did not apply). */
export function limitationCode(t: LimitationSubject): string | null {
  if (applicableDone(t)) return null;
  if (t.status === 'budget_exhausted') return 'budget_exhausted';
  if (t.reason === 'dead_lettered') return 'dead_lettered';
  if (t.reason === 'apply_failed') return 'result_not_applied';
  if (t.status === 'cancelled') return t.reason === 'deadline_exceeded' ? 'deadline_exceeded' : 'cancelled';
  return `${t.product_lane}_${t.status}`;
}

export function limitationMessage(code: string, n: number, t: LimitationSubject): string {
  const tasks = `${n} task${n === 1 ? '' : 's'}`;
  switch (code) {
    case 'budget_exhausted':
      return `${tasks} not scheduled: the credit budget was exhausted.`;
    case 'dead_lettered':
      return `${tasks} failed on every delivery and were abandoned; their results are missing.`;
    case 'result_not_applied':
      return `${tasks} finished, but what they found could not be recorded; their results are missing.`;
    case 'deadline_exceeded':
      return `${tasks} did not finish before the job deadline.`;
    case 'cancelled':
      return `${tasks} cancelled before completion.`;
    default:
      return `The ${t.product_lane} lane ended ${t.status}${t.reason ? ` (${t.reason})` : ''} for ${tasks}.`;
  }
}

export function taskLimitations(tasks: readonly TaskRow[]): Limitation[] {
  const seen = new Map<string, { n: number; first: TaskRow }>();
  for (const t of tasks) {
    const code = limitationCode(t);
    if (!code) continue;
    const s = seen.get(code);
    if (s) s.n++;
    else seen.set(code, { n: 1, first: t });
  }
  return [...seen].map(([code, { n, first }]) => ({ code, message: limitationMessage(code, n, first) }));
}
