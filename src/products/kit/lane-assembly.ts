// Shared by async lookups' assemble(): the envelope's lanes, sources and limitations from the
// finished tasks, one product lane at a time. A lane whose task did not complete (or left no
// output) contributes null to the result plus its limitations, so null always comes with a reason;
// except a lane that measured the target without completing (its output is `measured`: refused,
// stalled, legacy TLS only), whose part says what the target did.
import type { LaneOutcome, LaneSpec, Limitation, SourceRef } from '../../contract/lanes.ts';
import type { TaskOutcomeView } from '../../contract/tasks.ts';
import { laneOutcome } from '../../contract/lanes.ts';

const CONTRIBUTES = new Set(['completed', 'partial']);

export interface LaneAssembly {
  /** The projection part of `spec`'s lane, or null (with the lane's status and limitations recorded). */
  part<P>(
    spec: LaneSpec,
    opts?: { notApplicable?: string; notPlanned?: { reason: string; message: string } },
  ): P | null;
  readonly lanes: LaneOutcome[];
  readonly sources: SourceRef[];
  readonly limitations: Limitation[];
}

export function laneAssembly(tasks: readonly TaskOutcomeView[]): LaneAssembly {
  const lanes: LaneOutcome[] = [];
  const sources: SourceRef[] = [];
  const limitations: Limitation[] = [];
  const seenSources = new Set<string>();
  const seenLimitations = new Set<string>();
  const addLimitation = (l: Limitation) => {
    const k = `${l.code}\u0000${l.message}`;
    if (!seenLimitations.has(k)) {
      seenLimitations.add(k);
      limitations.push(l);
    }
  };
  return {
    lanes,
    sources,
    limitations,
    part<P>(
      spec: LaneSpec,
      opts: { notApplicable?: string; notPlanned?: { reason: string; message: string } } = {},
    ): P | null {
      const task = tasks.find((t) => t.productLane === spec.lane);
      if (!task && opts.notPlanned) {
        // Not asked for by this input (e.g. an unauthorized request): skipped, not missing.
        lanes.push(laneOutcome(spec, 'skipped', { reason: opts.notPlanned.reason }));
        addLimitation({ code: `${spec.lane}_${opts.notPlanned.reason}`, message: opts.notPlanned.message });
        return null;
      }
      if (!task) {
        lanes.push(laneOutcome(spec, 'failed', { reason: 'task_missing' }));
        addLimitation({
          code: `${spec.lane}_failed`,
          message: `The ${spec.lane} lane left no outcome; its part of the result is null.`,
        });
        return null;
      }
      const reason = task.reason ?? task.output?.reason;
      lanes.push(laneOutcome(spec, task.status, reason ? { reason } : {}));
      for (const s of task.output?.sources ?? []) {
        const k = `${s.source}\u0000${s.version ?? ''}`;
        if (!seenSources.has(k)) {
          seenSources.add(k);
          sources.push(s);
        }
      }
      const own = task.output?.limitations ?? [];
      own.forEach(addLimitation);
      // A copy: cross-lane derivations may annotate a part without touching the stored output.
      if (task.output && CONTRIBUTES.has(task.status)) return structuredClone(task.output.projection) as P;
      const measured = task.output?.measured === true;
      if (task.status === 'skipped' && reason === 'not_applicable' && opts.notApplicable) {
        addLimitation({ code: `${spec.lane}_not_applicable`, message: opts.notApplicable });
      } else if (own.length === 0) {
        addLimitation({
          code: `${spec.lane}_${task.status}`,
          message: `The ${spec.lane} lane ended ${task.status}${reason ? ` (${reason})` : ''}; ${measured ? 'its part of the result says what the target did' : 'its part of the result is null'}.`,
        });
      }
      // What the lane saw of a target that refused, stalled or spoke only a legacy protocol is a
      // fact (CONTRACT §7): its part says what happened instead of being null.
      return measured ? (structuredClone(task.output!.projection) as P) : null;
    },
  };
}
