// scan.recursive.v1 across jobs (CONTRACT §13; docs/findings.md, "Change fingerprints"):
//   - objects are (type, normalized key) as the checks write them: names are `host` or `domain`
//     (an MX or NS name is a `host` in a scan), addresses canonical text, URLs as fetched,
//     certificates by SHA-256, web posture by URL, mail posture and registration by domain;
//   - not compared: how a name was first found (`foundVia`, `foundFrom`: whichever task of this
//     job finished first), and the common volatile facts (TTLs, durations, days to expiry);
//   - a name is observed gone by its own DNS task, completed (an authoritative NXDOMAIN, or its
//     names only answering as its level's wildcard); an address by the DNS tasks of the names
//     that resolved to it; a URL, web posture or certificate by the web tasks of its host(s); the
//     mail posture by the mail task of its domain; the registration by the domain task;
//   - of the dns lane, only the names' own DNS tasks observe them: a level's wildcard probe is
//     keyed by the level's name but asks random names under it (it completes while the level's
//     own resolution fails); an address is gone from a name only when that name's A and AAAA
//     questions were answered (the DNS task's `addresses` part), whatever its other questions did;
//   - gaps: a DNS question kept with an indeterminate outcome (SERVFAIL, a timeout…), a wildcard
//     comparison that could not be made (`wildcard: "unknown"`), what the mail task's lanes left
//     unknown on an MX host or in the mail posture (../mail/changes.ts: an MX host whose
//     addresses are unknown, an SMTP session that timed out…), and what a check marked
//     `unobserved` (a web posture whose https chain timed out) are compared as observed by
//     neither job;
//   - a field only this job holds is no change when the baseline's check did not write the object
//     (a name whose DNS task got SERVFAIL in the baseline, known there only as an SPF name): the
//     name is unconfirmed, with the reason of that baseline task (docs/api.md).
import { COMMON_VOLATILE, urlHost, type ChangeRules } from '../kit/change-rules.ts';
import { mailGap } from '../mail/changes.ts';
import { SCAN_CHECKS } from './rules/check-names.ts';

const OBSERVED_BY: Record<string, readonly string[]> = {
  ip_address: ['dns'],
  url: ['web'],
  web_posture: ['web'],
  certificate: ['web'],
  mail_posture: ['mail'],
  registration: ['domain'],
  service: ['active'],
};

/** The part of a scan DNS task that resolved its name's addresses (./checks/dns-check.ts). */
export const ADDRESS_PART = 'addresses';

export const scanChangeRules: ChangeRules = {
  fingerprint: 'scan.recursive.v1/1',
  volatile: [...COMMON_VOLATILE, 'foundVia', 'foundFrom'],
  observers: 'related',
  observedBy: (type) => OBSERVED_BY[type],
  observingChecks: (lane) => (lane === 'dns' ? [SCAN_CHECKS.dns] : undefined),
  partOf: (type) => (type === 'ip_address' ? ADDRESS_PART : undefined),
  // A scan's MX names are hosts holding what its mail task's lanes wrote (addresses, reverse DNS,
  // SMTP sessions, TLSA) and its mail posture the same summaries: the mail lookup's gaps.
  gap: (key, value, holder) => (key === 'wildcard' && value === 'unknown') || mailGap(key, value, holder),
  subjectsOf: (ref) => {
    if (ref.type === 'url' || ref.type === 'web_posture') {
      const host = urlHost(ref.key);
      return host ? [host] : [ref.key];
    }
    if (ref.type === 'service') return [ref.key.replace(/:\d+\/[a-z]+$/, '')];
    return [ref.key];
  },
  // The DNS task of a name that answers NXDOMAIN records it with exists: false (a dangling
  // target, a name rechecked from the baseline): the name is not part of the estate any more.
  absent: (type, projection) => (type === 'host' || type === 'domain') && projection.exists === false,
  subjectTypes: ['host', 'domain'],
};
