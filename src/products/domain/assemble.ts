// Builds the job's result envelope body from the three finished tasks. Each lane's status is its
// task's; a lane whose task did not complete (or left no output) contributes null to the result
// and its limitations, so null always comes with the reason.
import type { LaneOutcome, LaneSpec, Limitation, SourceRef, SyncOutcome, TaskOutcomeView } from '../types.ts';
import { laneOutcome } from '../types.ts';
import { nameParts } from './names.ts';
import type { DelegationProjection, DomainResult, RecordsProjection, RegistrationProjection } from './schema.ts';

export const domainLanes = {
  delegation: { lane: 'dns_delegation', required: true, description: 'NS, SOA and DS of the registrable domain, addresses of its name servers' },
  registration: { lane: 'registration', required: false, description: 'RDAP registration data of the registrable domain (RFC 9224 bootstrap or RDAP_BASE_URL)' },
  records: { lane: 'dns_records', required: false, description: 'A, AAAA, MX, TXT and CAA of the name' },
} satisfies Record<string, LaneSpec>;

const CONTRIBUTES = new Set(['completed', 'partial']);

export function assembleDomain(value: string, tasks: TaskOutcomeView[]): SyncOutcome<DomainResult> {
  const parts = nameParts(value);
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

  const part = <P>(spec: LaneSpec): P | null => {
    const task = tasks.find((t) => t.productLane === spec.lane);
    if (!task) {
      lanes.push(laneOutcome(spec, 'failed', { reason: 'task_missing' }));
      addLimitation({ code: `${spec.lane}_failed`, message: `The ${spec.lane} lane left no outcome; its part of the result is null.` });
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
    if (task.output && CONTRIBUTES.has(task.status)) return task.output.projection as P;
    if (task.status === 'skipped' && reason === 'not_applicable') {
      addLimitation({ code: `${spec.lane}_not_applicable`, message: `The ${spec.lane} lane does not apply to ${parts.name} (a public suffix).` });
    } else if (own.length === 0) {
      addLimitation({ code: `${spec.lane}_${task.status}`, message: `The ${spec.lane} lane ended ${task.status}${reason ? ` (${reason})` : ''}; its part of the result is null.` });
    }
    return null;
  };

  const delegation = part<DelegationProjection>(domainLanes.delegation);
  const registration = part<RegistrationProjection>(domainLanes.registration);
  const records = part<RecordsProjection>(domainLanes.records);
  return {
    result: { name: parts.name, registrableDomain: parts.registrableDomain, publicSuffix: parts.publicSuffix, delegation, registration, records },
    lanes,
    sources,
    limitations,
  };
}
