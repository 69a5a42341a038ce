// What a mail check asked the DNS, kept as data. Checks ask through a DnsAsker (one query per
// name and type per check, however many branches need it), and hand the answers to the parse
// pool as a snapshot that mailauth and our evaluators replay: the pool never reaches the network,
// and what was concluded can always be traced to the replies it came from.
import type { QueryResult, RecordType, Resolver } from '../../dns/types.ts';
import { presence, recordsOf, type Presence } from '../../dns/presence.ts';

export type DnsSnapshot = Record<string, QueryResult>;

export const snapshotKey = (name: string, type: RecordType): string =>
  `${name.replace(/\.$/, '').toLowerCase()}|${type}`;

/** A question the check did not ask: indeterminate, like any reply that says nothing. */
export function notAsked(name: string, type: RecordType): QueryResult {
  return {
    name,
    type,
    outcome: 'error',
    rcode: null,
    answers: [],
    flags: { aa: false, ad: false, tc: false, ra: false },
    transport: null,
    durationMs: 0,
  };
}

export function replay(snapshot: DnsSnapshot): (name: string, type: RecordType) => QueryResult {
  return (name, type) => snapshot[snapshotKey(name, type)] ?? notAsked(name, type);
}

export class DnsAsker {
  readonly snapshot: DnsSnapshot = {};
  readonly #pending = new Map<string, Promise<QueryResult>>();
  readonly #resolver: Resolver;
  readonly #signal: AbortSignal;
  constructor(resolver: Resolver, signal: AbortSignal) {
    this.#resolver = resolver;
    this.#signal = signal;
  }

  ask(name: string, type: RecordType): Promise<QueryResult> {
    const key = snapshotKey(name, type);
    let p = this.#pending.get(key);
    if (!p) {
      p = this.#resolver.query(name.replace(/\.$/, '').toLowerCase(), type, { signal: this.#signal }).then((r) => {
        this.snapshot[key] = r;
        return r;
      });
      this.#pending.set(key, p);
    }
    return p;
  }
}

/** Each TXT record's character-strings joined (RFC 7208 §3.3, RFC 7489 §6.6.3…). */
export function txtValues(r: QueryResult): string[] {
  return recordsOf(r).map((rec) => (Array.isArray(rec.data) ? (rec.data as string[]).join('') : String(rec.data)));
}

/** The TXT records at a name that start with a version tag, and what the reply proves. */
export function taggedTxt(r: QueryResult, tag: RegExp): { presence: Presence; records: string[] } {
  const p = presence(r);
  if (p !== 'present') return { presence: p, records: [] };
  const records = txtValues(r).filter((v) => tag.test(v.trim()));
  return { presence: records.length > 0 ? 'present' : 'absent', records };
}

export function evidenceLine(r: QueryResult): string {
  const p = presence(r);
  if (p === 'present') return `${r.type} ${r.name}: ${recordsOf(r).length} record(s)`;
  if (p === 'absent')
    return `${r.type} ${r.name}: ${r.outcome === 'nxdomain' ? 'NXDOMAIN' : 'NOERROR, no records (NODATA)'}`;
  return `${r.type} ${r.name}: ${r.outcome === 'timeout' ? 'no reply before the deadline' : (r.rcode ?? r.outcome)}`;
}
