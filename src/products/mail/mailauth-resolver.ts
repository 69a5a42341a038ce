// mailauth's functions take a `resolver(name, rrtype)` shaped like node:dns/promises' resolve().
// They read two error codes as "no such record": ENOTFOUND and ENODATA (and, in DMARC, EBADNAME).
// Anything else they rethrow or turn into a temporary error. mailauth's own issues #34/#49 came
// from resolvers that raised those codes for failures; this adapter raises them ONLY for an
// authoritative denial (src/dns/presence.ts: NXDOMAIN → ENOTFOUND, NODATA → ENODATA) and a code
// that no mailauth path maps to absence for everything else (ESERVFAIL, EREFUSED, ETIMEOUT…), so
// a failure can never read as "no policy".
//
// `lookup` is the project's resolver (live) or a snapshot of answers already gathered by a check
// (replay, in the parse pool): mailauth never gets a way to reach the network itself.
import type { QueryResult, RecordType } from '../../dns/types.ts';
import { presence, recordsOf } from '../../dns/presence.ts';

export type Lookup = (name: string, type: RecordType) => Promise<QueryResult> | QueryResult;

/** The code a failed mailauth resolver call carries, by the query's outcome. */
export function mailauthErrorCode(r: QueryResult): string {
  switch (r.outcome) {
    case 'nxdomain':
      return 'ENOTFOUND';
    case 'nodata':
      return 'ENODATA';
    case 'answer':
      return 'ENODATA'; // only a CNAME chain that ends without records of the type
    case 'servfail':
      return 'ESERVFAIL';
    case 'refused':
      return 'EREFUSED';
    case 'formerr':
      return 'EFORMERR';
    case 'notimp':
      return 'ENOTIMP';
    case 'timeout':
      return 'ETIMEOUT';
    default:
      return 'EBADRESP';
  }
}

export class MailauthDnsError extends Error {
  readonly code: string;
  readonly result: QueryResult;
  constructor(r: QueryResult) {
    super(`${r.type} ${r.name}: ${r.outcome}`);
    this.name = 'MailauthDnsError';
    this.code = mailauthErrorCode(r);
    this.result = r;
  }
}

/** node:dns-shaped data of a present reply (TXT: arrays of character-strings, MX: {exchange, priority}). */
function shaped(r: QueryResult): unknown[] {
  return recordsOf(r).map((rec) => {
    if (r.type === 'MX') {
      const mx = rec.data as { preference: number; exchange: string };
      return { exchange: mx.exchange, priority: mx.preference };
    }
    return rec.data;
  });
}

export function mailauthResolver(lookup: Lookup): (name: string, type: string) => Promise<unknown[]> {
  return async (name, type) => {
    const r = await lookup(name.replace(/\.$/, '').toLowerCase(), type.toUpperCase() as RecordType);
    if (presence(r) !== 'present') throw new MailauthDnsError(r);
    return shaped(r);
  };
}
