// How a product's outputs are compared across jobs (CONTRACT §13), declared by the product and
// applied by the comparison (src/jobs/changes/), which knows nothing of any product:
//   - identity: an object is (type, normalized key), a finding is (code, its object's identity);
//     both are the keys the product already writes, never a title or a message;
//   - what is compared: the object's top-level projection fields, less the volatile facts
//     (derived from the clock, or from the order in which a job happened to find things); arrays
//     are compared as sets unless the product says their order means something;
//   - what observes an absence: a baseline object this job does not hold is `gone` only when a
//     check that would have produced it ran `completed` on its subject (its own key, or an object
//     related to it in the baseline), never because nothing was seen.
// `fingerprint` versions all of it: docs/findings.md ("Change fingerprints") writes each product's
// down, and a job is only ever compared with a baseline made under the same fingerprint.
import type { ObjectRef } from '../../contract/tasks.ts';

export interface ChangeRules {
  /** `<product id>/<version>`: bumped whenever identity or the compared fields change meaning. */
  fingerprint: string;
  /** Projection keys, at any depth, that are never compared. */
  volatile: readonly string[];
  /** Array keys whose order means something (every other array is compared as a set). */
  ordered?: readonly string[];
  /**
   * Where the checks that observe an object ran: `related` (a scan: on the object's own key or
   * subjects, or on an object related to it in the baseline; all of them must have completed,
   * unless one on its own subject did) or `job` (a lookup: every task is about the one target, so
   * any completed task of an observing lane observed it).
   */
  observers: 'related' | 'job';
  /** The product lanes whose checks observe objects of this type (default: the lanes that examined it). */
  observedBy?(type: string): readonly string[] | undefined;
  /**
   * The checks of a product lane whose tasks observe what their key names (default: every check
   * of the lane). An absence is observed only by the check that produces the object or relation,
   * on that subject: a task keyed by the same name that looks at something else (a scan's
   * wildcard probe, keyed by its level, asks random names under it) observes nothing about it.
   */
  observingChecks?(productLane: string): readonly string[] | undefined;
  /**
   * The part of its observing tasks that observes an object of this type (a scan's address: the
   * A and AAAA questions of the DNS tasks of the names that resolved to it), as those tasks keep
   * their parts' outcomes (`projection.lanes`): the object is gone only when that part completed,
   * whatever the task's other questions did, and never when it did not (a CNAME whose target's
   * servers failed is no completed resolution of the address set).
   */
  partOf?(type: string): string | undefined;
  /**
   * A value that records an observation that failed (a DNS question that got no answer, a fetch
   * that timed out), at any depth of a projection: a gap, never data. `holder` is the object the
   * key sits in (a value may be a gap because of what its holder says: an MX host whose addresses
   * are unknown, a summary marked `unobserved`). Where either job holds one, that key is compared
   * as observed by neither (CONTRACT §13: `changed` only when an observed value differs).
   */
  gap?(key: string, value: unknown, holder: Record<string, unknown>): boolean;
  /** The task keys an object is observed on besides its related objects (default: its own key). */
  subjectsOf?(ref: ObjectRef): string[];
  /** A held object that records an absence (a name that answered NXDOMAIN): compared as not held. */
  absent?(type: string, projection: Record<string, unknown>): boolean;
  /**
   * The object types a subject key is written as (a scan's names: host, domain). A subject this
   * job holds as an absent record (absent()) was observed not to exist: whatever the baseline
   * observed on it (its URLs, web posture…) is gone with it.
   */
  subjectTypes?: readonly string[];
}

/**
 * Volatile in every product: how long things took, TTLs, and counts of days from today (a
 * certificate's `daysToExpiry`, a registration's `daysUntilExpiration`: a daily monitor would
 * otherwise read every one as changed every day).
 */
export const COMMON_VOLATILE = ['ttl', 'durationMs', 'daysToExpiry', 'daysUntilExpiration'] as const;

/** The host of a URL key (`https://a.example/` → a.example), or null when the key is no URL. */
export function urlHost(key: string): string | null {
  if (!/^https?:\/\//i.test(key)) return null;
  try {
    return new URL(key).hostname.toLowerCase().replace(/\.$/, '');
  } catch {
    return null;
  }
}

/**
 * The gap marker a check writes into an object it could not fully observe (CONTRACT §13): in the
 * object, or in a lane's own summary inside it, `unobserved: true` (none of its values was
 * observed) or `unobserved: [keys]` (those sibling keys were not: a web posture whose https chain
 * timed out). The marker itself is never compared. A lane writes it only into what it alone
 * writes (its summary, its own object), so another lane's write never overwrites it.
 */
export const UNOBSERVED = 'unobserved';

/** The gap rule of the `unobserved` marker (UNOBSERVED): every product's ChangeRules.gap uses it. */
export function unobservedGap(key: string, _value: unknown, holder: Record<string, unknown>): boolean {
  if (key === UNOBSERVED) return true;
  const marker = holder[UNOBSERVED];
  return marker === true || (Array.isArray(marker) && marker.includes(key));
}

/** DNS outcomes that observed something: an answer, an authoritative denial (src/dns/presence.ts). */
const DETERMINATE_OUTCOMES: ReadonlySet<string> = new Set(['answer', 'nodata', 'nxdomain']);

/**
 * A DNS question as products keep it (`{ outcome, rcode, data }`) whose outcome is indeterminate
 * (SERVFAIL, REFUSED, a timeout…): a gap (ChangeRules.gap), whatever data it holds.
 */
export function dnsQuestionGap(value: unknown): boolean {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return false;
  const outcome = (value as { outcome?: unknown }).outcome;
  return typeof outcome === 'string' && !DETERMINATE_OUTCOMES.has(outcome);
}
