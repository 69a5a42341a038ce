// lookup.web.v1 across jobs (CONTRACT §13; docs/findings.md, "Change fingerprints"): the objects
// of the web lookup: the URL's host, addresses, certificate, URLs of both chains and the web posture, each (type, normalized key) as the checks write them. Every task of a lookup is
// about its one target, so an object missing from this job is observed gone when a lane that
// examined it in the baseline ran completed this time. Not compared: the common volatile facts.
import { COMMON_VOLATILE, type ChangeRules } from '../kit/change-rules.ts';

export const webChangeRules: ChangeRules = {
  fingerprint: 'lookup.web.v1/1',
  volatile: [...COMMON_VOLATILE],
  observers: 'job',
};
