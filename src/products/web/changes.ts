// lookup.web.v1 across jobs (CONTRACT §13; docs/findings.md, "Change fingerprints"): the objects
// of the web lookup: the URL's host, addresses, certificate, URLs of both chains and the web
// posture, each (type, normalized key) as the checks write them. Every task of a lookup is about
// its one target, so an object missing from this job is observed gone when a lane that examined
// it in the baseline ran completed this time. Not compared: the common volatile facts.
// Gaps (compared as observed by neither job, whichever holds them: docs/api.md, "Gaps, changes
// and absences"): what the http check marked `unobserved` (UNOBSERVED) because a request chain
// produced no final response for a reason that is ours or unknown (a timeout in any phase, a DNS
// failure, a refusal by the outbound guard, a connection lost without the target refusing or
// resetting it: ./http-check.ts chainGap): the posture's final URL, status and grade when the
// https chain failed so (the http one stood in), its grade when the http chain did, and the status
// of the URL the chain stopped at. A refused or reset connection is the target's answer: HTTPS
// gained or lost is a change.
import { COMMON_VOLATILE, unobservedGap, type ChangeRules } from '../kit/change-rules.ts';

export const webChangeRules: ChangeRules = {
  fingerprint: 'lookup.web.v1/1',
  volatile: [...COMMON_VOLATILE],
  observers: 'job',
  gap: unobservedGap,
};
