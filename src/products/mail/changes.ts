// lookup.mail.v1 across jobs (CONTRACT §13; docs/findings.md, "Change fingerprints"): the objects
// of the mail lookup: a domain's MX hosts, addresses, certificates, name servers, DKIM selector
// names and BIMI URLs, and its mail posture (one summary per lane), each (type, normalized key) as
// the checks write them. Every task of a lookup is about its one target, so an object missing
// from this job is observed gone when a lane that examined it in the baseline ran completed this
// time. Not compared: the common volatile facts.
// Gaps (compared as observed by neither job, whichever job holds them: docs/api.md, "Gaps,
// changes and absences"):
//   - an MX host whose addresses are unknown (`resolution: "unknown"`, a DNS failure): its
//     addresses, resolution, reverse DNS and STARTTLS sessions;
//   - a reverse DNS check that got a DNS failure (`temperror`), a TLSA question without a usable
//     answer (`tlsa: "indeterminate"`), a DS question likewise (`ds: "unknown"`);
//   - an SMTP session that could not be held for a reason that is ours or unknown (unreachable:
//     refused, reset or timed out, not told apart; a timeout; refused by the outbound guard;
//     aborted), in an MX host's `starttls` or the posture's `smtp_starttls` summary;
//   - a name server that could not be asked (`zoneState` timeout, unreachable, failed, not
//     allowed, address unknown);
//   - the posture's SPF summary whose tree got no usable answer somewhere (`verdict:
//     "indeterminate"`), its DANE summary with a TLSA question unanswered;
//   - what a lane marked `unobserved` (UNOBSERVED): the DMARC summary when a name of the tree walk
//     up to the record got no answer, the DKIM summary when a selector probe got none, the
//     MTA-STS policy's mode and max_age when its fetch failed for a reason that is not the
//     target's, an SMTP summary host whose addresses are unknown.
// A lane that fails as a whole writes no summary (a field missing: the lane's coverage decides).
import { COMMON_VOLATILE, dnsQuestionGap, unobservedGap, type ChangeRules } from '../kit/change-rules.ts';

/** SMTP session states that observed nothing of the server (ours, or not told apart). */
const SMTP_GAP_STATES: ReadonlySet<unknown> = new Set([
  'unreachable',
  'connect_timeout',
  'banner_timeout',
  'command_timeout',
  'not_allowed',
  'aborted',
]);

/** Zone server states (./zone-check.ts) under which nothing is known of the server's copy. */
const ZONE_SERVER_GAPS: ReadonlySet<unknown> = new Set([
  'failed',
  'timeout',
  'unreachable',
  'not_allowed',
  'unknown_address',
]);

/** An MX host's facts that hang on its addresses: unknown with them. */
const ADDRESS_FACTS: ReadonlySet<string> = new Set(['addresses', 'resolution', 'reverse', 'starttls']);

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const field = (v: unknown, k: string): unknown => (isObject(v) ? v[k] : undefined);

export function mailGap(key: string, value: unknown, holder: Record<string, unknown>): boolean {
  if (unobservedGap(key, value, holder) || dnsQuestionGap(value)) return true;
  if (holder.resolution === 'unknown' && ADDRESS_FACTS.has(key)) return true;
  if (key === 'addresses' && holder.zoneState === 'unknown_address') return true;
  switch (key) {
    case 'tlsa':
      return value === 'indeterminate';
    case 'ds':
      return value === 'unknown';
    case 'reverse':
      return list(value).some((r) => field(r, 'state') === 'temperror');
    case 'starttls':
      return list(value).some((s) => SMTP_GAP_STATES.has(field(s, 'state')));
    case 'zoneState':
      return ZONE_SERVER_GAPS.has(value);
    case 'spf':
      return field(value, 'verdict') === 'indeterminate';
    case 'dane':
      return list(field(value, 'hosts')).some((h) => field(h, 'tlsa') === 'indeterminate');
    case 'smtp_starttls':
      return list(field(value, 'hosts')).some(
        (h) => field(h, 'unobserved') === true || list(field(h, 'states')).some((s) => SMTP_GAP_STATES.has(s)),
      );
    default:
      return false;
  }
}

export const mailChangeRules: ChangeRules = {
  fingerprint: 'lookup.mail.v1/1',
  volatile: [...COMMON_VOLATILE],
  observers: 'job',
  gap: mailGap,
};
