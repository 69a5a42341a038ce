// Gone only when observed (CONTRACT §13). Something the baseline had and this job does not hold
// is `gone` (an object) or `resolved` (a finding) only when a check that would have produced it
// ran `completed` on its subject this time; otherwise it is `unconfirmed`, with the reason of
// the check that did not complete. Pure: the comparison gathers, per baseline object, the
// outcomes of this job's tasks on its subjects (./compare-chunk.ts), and decides here.
import type { UnconfirmedReason } from '../../contract/change-schemas.ts';
import type { TaskStatus } from '../../db/schema.ts';

/** How many of this job's tasks in one product lane ended one way, on the object's own subject or a related one. */
export interface TaskTally {
  productLane: string;
  /** On the object's own subject (its key, or the host of its URL), not on a related object. */
  own: boolean;
  status: TaskStatus;
  reason: string | null;
  n: number;
}

export type Observation = { seen: 'absent' } | { seen: 'nothing'; reason: UnconfirmedReason };

/** Reasons, the least observed first: the one reported when several lanes fell short. */
const REASON_ORDER: readonly UnconfirmedReason[] = [
  'not_rechecked',
  'indeterminate',
  'lane_unavailable',
  'lane_partial',
];

export function worstReason(reasons: Iterable<UnconfirmedReason>): UnconfirmedReason | null {
  let best: UnconfirmedReason | null = null;
  for (const r of reasons) if (best === null || REASON_ORDER.indexOf(r) < REASON_ORDER.indexOf(best)) best = r;
  return best;
}

/**
 * Why a task with this outcome observed nothing; null when it completed. An unavailable lane
 * whose reason is a failure of the target's side (a DNS SERVFAIL or refusal, an unreachable
 * host) asked and got no answer: indeterminate, like a timeout. A lane that could not run on our
 * side (not configured, failed) is lane_unavailable.
 */
export function reasonOfOutcome(status: string, reason: string | null): UnconfirmedReason | null {
  switch (status) {
    case 'completed':
      return null;
    case 'partial':
      return 'lane_partial';
    case 'timeout':
      return 'indeterminate';
    case 'unavailable':
      return reason && /^dns_|unreachable|refused|timeout|reset|connection/.test(reason)
        ? 'indeterminate'
        : 'lane_unavailable';
    case 'failed':
      return 'lane_unavailable';
    default:
      // pending/running/waiting (never at a terminal job), skipped, cancelled, budget_exhausted
      return 'not_rechecked';
  }
}

/**
 * `lanes`: the product lanes that observe it (null: any). `mode` related (a scan): a completed
 * task on its own subject settles it; else every task on its subjects and related objects must
 * have completed. `job` (a lookup: every task is about the one target): any completed task of an
 * observing lane settles it.
 */
export function observeAbsence(
  tallies: readonly TaskTally[],
  lanes: readonly string[] | null,
  mode: 'related' | 'job',
): Observation {
  const relevant = tallies.filter((t) => t.n > 0 && (lanes === null || lanes.includes(t.productLane)));
  if (relevant.length === 0) return { seen: 'nothing', reason: 'not_rechecked' };
  const completed = (t: TaskTally) => t.status === 'completed';
  if (mode === 'job' ? relevant.some(completed) : relevant.some((t) => t.own && completed(t)))
    return { seen: 'absent' };
  if (mode === 'related' && relevant.every(completed)) return { seen: 'absent' };
  const reason = worstReason(
    relevant.map((t) => reasonOfOutcome(t.status, t.reason)).filter((r): r is UnconfirmedReason => r !== null),
  );
  return { seen: 'nothing', reason: reason ?? 'not_rechecked' };
}

export interface ObjectLane {
  lane: string;
  status: string;
  reason?: string;
}

/**
 * A held object: did this job's lanes examine it as the baseline's did? Each lane that completed
 * on it in the baseline and did not complete on it now gives its reason; a lane missing from it
 * now is listed, for the caller to ask what that lane's task on it did (a DNS task that got
 * SERVFAIL writes no status on the name: indeterminate, not merely not rechecked).
 */
export function coverageGap(
  baseLanes: readonly ObjectLane[],
  curLanes: readonly ObjectLane[],
): { reasons: UnconfirmedReason[]; missing: string[] } {
  const reasons: UnconfirmedReason[] = [];
  const missing: string[] = [];
  for (const b of baseLanes) {
    if (b.status !== 'completed') continue;
    const c = curLanes.find((l) => l.lane === b.lane);
    if (!c) missing.push(b.lane);
    else {
      const r = reasonOfOutcome(c.status, c.reason ?? null);
      if (r) reasons.push(r);
    }
  }
  return { reasons, missing };
}

/** Why lanes missing from a held object did not cover it: what their tasks on its own subject did. */
export function missingLaneReason(tallies: readonly TaskTally[], lanes: readonly string[]): UnconfirmedReason {
  const own = tallies.filter((t) => t.own && t.n > 0 && lanes.includes(t.productLane));
  return (
    worstReason(
      own.map((t) => reasonOfOutcome(t.status, t.reason)).filter((r): r is UnconfirmedReason => r !== null),
    ) ?? 'not_rechecked'
  );
}

/** A task of a composed check (a scan's mail task) and the outcomes of its parts, as it kept them. */
export interface PartedTask {
  productLane: string;
  own: boolean;
  status: TaskStatus;
  reason: string | null;
  /** Its parts' outcomes (null: none kept: a task that produced no output, or an older one). */
  parts: ReadonlyArray<{ lane: string; status: string; reason?: string }> | null;
}

const PART_STATUSES: ReadonlySet<string> = new Set([
  'completed',
  'partial',
  'unavailable',
  'timeout',
  'failed',
  'skipped',
]);

/**
 * The tally of one part of a composed task: what observes a finding that part raised (its `part`,
 * FindingOut). The part's own outcome when the task kept one, whatever its other parts did (a
 * scan's mail task is partial whenever DKIM selectors are probed, yet its DMARC lane may have
 * completed); a part the task did not run observed nothing (`skipped`); a task that kept no part
 * outcomes, or did not end completed or partial, counts as a whole.
 */
export function partTally(task: PartedTask, part: string): TaskTally {
  const whole: TaskTally = {
    productLane: task.productLane,
    own: task.own,
    status: task.status,
    reason: task.reason,
    n: 1,
  };
  // Nothing kept, or the task did not end completed or partial (cancelled, never run, timed out
  // as a whole: what its parts said before it was stopped is not what it measured): as a whole.
  if (task.parts === null || (task.status !== 'completed' && task.status !== 'partial')) return whole;
  const p = task.parts.find((x) => x.lane === part);
  if (!p) return { ...whole, status: 'skipped', reason: 'part_not_run' };
  return {
    ...whole,
    status: (PART_STATUSES.has(p.status) ? p.status : 'skipped') as TaskStatus,
    reason: typeof p.reason === 'string' ? p.reason : null,
  };
}

/**
 * Reasons of a task that observed the target although it did not complete: it answered with a
 * refusal (nothing listens on the port) or does not exist. What such a baseline task left out of
 * an object is absent, observed: a host that gains HTTPS after refusing :443 has changed.
 */
const TARGET_ANSWERED: ReadonlySet<string> = new Set(['connection_refused', 'host_not_found']);

/** Lane statuses under which a check wrote what it observed, its gaps marked (ChangeRules.gap). */
const WROTE = new Set(['completed', 'partial']);

/**
 * The baseline side of a held object's coverage (issue 44): lanes that wrote the object now and
 * did not write it in the baseline (no entry, or an entry whose status observed nothing) left the
 * baseline blind to what they write. Each such lane's baseline tasks on the object's subject
 * (`baselineTallies`: own subject first, a lookup's whole job) say why: none completed or
 * partial and none answered for the target → a field only this job has is no change, and the
 * object is unconfirmed with this reason; null when the baseline covered it. A `partial` lane
 * is coverage: it marks in the projection what it could not observe, so a :443 refusal (web
 * lane partial) is an observation and HTTPS gained since is a change.
 */
export function baselineGap(
  baseLanes: readonly ObjectLane[],
  curLanes: readonly ObjectLane[],
  baselineTallies: readonly TaskTally[],
): UnconfirmedReason | null {
  const blind = curLanes
    .filter((c) => WROTE.has(c.status))
    .map((c) => c.lane)
    .filter((lane) => !baseLanes.some((b) => b.lane === lane && WROTE.has(b.status)));
  const reasons: UnconfirmedReason[] = [];
  for (const lane of blind) {
    const all = baselineTallies.filter((t) => t.n > 0 && t.productLane === lane);
    const own = all.filter((t) => t.own);
    const relevant = own.length > 0 ? own : all;
    if (relevant.some((t) => WROTE.has(t.status) || (t.reason !== null && TARGET_ANSWERED.has(t.reason)))) continue;
    reasons.push(
      worstReason(
        relevant.map((t) => reasonOfOutcome(t.status, t.reason)).filter((r): r is UnconfirmedReason => r !== null),
      ) ?? 'not_rechecked',
    );
  }
  return worstReason(reasons);
}
