// Where a finding is, in the terms of tools built for source files (SARIF, code scanning).
// A finding's identity across jobs is its code and its object's type and key (CONTRACT §13; one
// object carries a code at most once, uq_findings_key), so its fingerprint is a hash of those
// three and nothing a message says. Its location is the object's URL, https://<host>/ for a
// host, or a logical location for names, addresses and certificates; each is also written as a
// repository-relative path, because GitHub code scanning accepts only relative or file: URIs
// (an https: artifact URI fails the upload) and DefectDojo reads the first location's path.
import { hash } from 'node:crypto';
import type { FindingSubject } from './export-items.ts';

/** SARIF partialFingerprints key; DefectDojo reads `<name>/v<n>` as a versioned fingerprint. */
export const FINGERPRINT_KEY = 'lssFindingIdentity/v1';

export function findingFingerprint(code: string, subject: FindingSubject): string {
  // One-shot hash: a Hash object per finding was most of a SARIF result's cost.
  return hash('sha256', `${code}\n${subject.type}\n${subject.key}`, 'hex');
}

export interface FindingLocation {
  /** The address a person opens: the URL, https://<host>/, or null for names and addresses. */
  url: string | null;
  /** Repository-relative path standing for it (no scheme, no query): `<host>[_<port>]/<path>`. */
  path: string;
  /** Logical location: what it is and its fully qualified name. */
  logicalKind: string;
  logicalName: string;
}

/** Object types keyed by a URL (the web posture is kept per URL). */
const URL_TYPES = new Set(['url', 'web_posture']);
/** Object types keyed by a DNS name. */
const NAME_TYPES = new Set(['host', 'domain', 'mx_host', 'ns_host', 'mail_posture', 'registration']);

export function findingLocation(subject: FindingSubject): FindingLocation {
  const { type, key } = subject;
  if (URL_TYPES.has(type)) {
    const url = parseHttpUrl(key);
    if (url) {
      const port = url.port && url.port !== '443' ? `_${url.port}` : url.protocol === 'http:' ? '_80' : '';
      return {
        url: url.href,
        path: `${segment(url.hostname + port)}${url.pathname}`,
        logicalKind: 'resource',
        logicalName: url.href,
      };
    }
  }
  if (type === 'host') {
    return { url: `https://${key}/`, path: `${segment(key)}/`, logicalKind: 'resource', logicalName: key };
  }
  // Names, addresses, services and certificates: no page to open; a path under the kind of thing.
  const kind = NAME_TYPES.has(type) ? 'dns' : type;
  return { url: null, path: `${segment(kind)}/${segment(key)}`, logicalKind: 'resource', logicalName: key };
}

function parseHttpUrl(s: string): URL | null {
  try {
    const u = new URL(s);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u : null;
  } catch {
    return null;
  }
}

/** One path segment: percent-encoded, so an IPv6 literal or a stray character stays one segment. */
function segment(s: string): string {
  return encodeURIComponent(s);
}
