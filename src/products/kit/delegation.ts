// What the parent's DS answer says about a zone, shared by the domain lookup's delegation lane and
// the mail lookup's zone and dane lanes. DS lives in the parent zone: records there are the start
// of a DNSSEC chain of trust to the zone (RFC 4035 §5, RFC 4033 §5); NODATA is "not signed".
import type { QueryResult } from '../../dns/types.ts';

export type DsState = 'present' | 'absent' | 'unknown';

/**
 * present: DS records; absent: answered NODATA, or NXDOMAIN for a name known not to exist
 * (`nameExists` false); unknown: anything else (SERVFAIL, timeout, an NXDOMAIN the other replies
 * contradict, an answer that is only an alias).
 */
export function dsState(ds: QueryResult, nameExists: boolean | null): DsState {
  if (ds.answers.some((r) => r.type === 'DS')) return 'present';
  if (ds.outcome === 'nodata' || (ds.outcome === 'nxdomain' && nameExists === false)) return 'absent';
  return 'unknown';
}
