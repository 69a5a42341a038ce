// lookup.domain.v1 across jobs (CONTRACT §13; docs/findings.md, "Change fingerprints"): the objects
// of the domain lookup: the domain, its name servers, MX names, addresses and registration, each (type, normalized key) as the checks write them. Every task of a lookup is
// about its one target, so an object missing from this job is observed gone when a lane that
// examined it in the baseline ran completed this time. Not compared: the common volatile facts.
// Gaps: a DNS question kept with an indeterminate outcome (its records' `{ outcome, rcode,
// answers }`), in either job, is compared as observed by neither.
import { COMMON_VOLATILE, dnsQuestionGap, unobservedGap, type ChangeRules } from '../kit/change-rules.ts';

export const domainChangeRules: ChangeRules = {
  fingerprint: 'lookup.domain.v1/1',
  volatile: [...COMMON_VOLATILE],
  observers: 'job',
  gap: (key, value, holder) => dnsQuestionGap(value) || unobservedGap(key, value, holder),
};
