// scan.recursive.v1 across jobs (CONTRACT §13; docs/findings.md, "Change fingerprints"):
//   - objects are (type, normalized key) as the checks write them: names are `host` or `domain`
//     (an MX or NS name is a `host` in a scan), addresses canonical text, URLs as fetched,
//     certificates by SHA-256, web posture by URL, mail posture and registration by domain;
//   - not compared: how a name was first found (`foundVia`, `foundFrom`: whichever task of this
//     job finished first), and the common volatile facts (TTLs, durations, days to expiry);
//   - a name is observed gone by its own DNS task, completed (an authoritative NXDOMAIN, or its
//     names only answering as its level's wildcard); an address by the DNS tasks of the names
//     that resolved to it; a URL, web posture or certificate by the web tasks of its host(s); the
//     mail posture by the mail task of its domain; the registration by the domain task.
import { COMMON_VOLATILE, urlHost, type ChangeRules } from '../kit/change-rules.ts';

const OBSERVED_BY: Record<string, readonly string[]> = {
  ip_address: ['dns'],
  url: ['web'],
  web_posture: ['web'],
  certificate: ['web'],
  mail_posture: ['mail'],
  registration: ['domain'],
  service: ['active'],
};

export const scanChangeRules: ChangeRules = {
  fingerprint: 'scan.recursive.v1/1',
  volatile: [...COMMON_VOLATILE, 'foundVia', 'foundFrom'],
  observers: 'related',
  observedBy: (type) => OBSERVED_BY[type],
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
