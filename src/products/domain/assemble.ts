// Builds the job's result envelope body from the three finished tasks (src/products/kit/lane-assembly.ts):
// each lane's status is its task's; a lane that did not complete contributes null and its reason.
import type { LaneSpec, SyncOutcome } from '../../contract/lanes.ts';
import type { TaskOutcomeView } from '../../contract/tasks.ts';
import { laneAssembly } from '../kit/lane-assembly.ts';
import { nameParts } from '../kit/name-parts.ts';
import type { DelegationProjection, DomainResult, RecordsProjection, RegistrationProjection } from './schema.ts';

export const domainLanes = {
  delegation: {
    lane: 'dns_delegation',
    required: true,
    description: 'NS, SOA and DS of the registrable domain, addresses of its name servers',
  },
  registration: {
    lane: 'registration',
    required: false,
    description: 'RDAP registration data of the registrable domain (RFC 9224 bootstrap or RDAP_BASE_URL)',
  },
  records: { lane: 'dns_records', required: false, description: 'A, AAAA, MX, TXT and CAA of the name' },
} satisfies Record<string, LaneSpec>;

export function assembleDomain(value: string, tasks: TaskOutcomeView[]): SyncOutcome<DomainResult> {
  const parts = nameParts(value);
  const a = laneAssembly(tasks);
  const notApplicable = (lane: string) => `The ${lane} lane does not apply to ${parts.name} (a public suffix).`;
  const delegation = a.part<DelegationProjection>(domainLanes.delegation, {
    notApplicable: notApplicable(domainLanes.delegation.lane),
  });
  const registration = a.part<RegistrationProjection>(domainLanes.registration, {
    notApplicable: notApplicable(domainLanes.registration.lane),
  });
  const records = a.part<RecordsProjection>(domainLanes.records, {
    notApplicable: notApplicable(domainLanes.records.lane),
  });
  return {
    result: {
      name: parts.name,
      registrableDomain: parts.registrableDomain,
      publicSuffix: parts.publicSuffix,
      suffixSection: parts.suffixSection,
      privateSuffix: parts.privateSuffix,
      privateRegistrableDomain: parts.privateRegistrableDomain,
      delegation,
      registration,
      records,
    },
    lanes: a.lanes,
    sources: a.sources,
    limitations: a.limitations,
  };
}
