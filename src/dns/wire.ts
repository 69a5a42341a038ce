// The DNS message layer of the stub resolver: building a query, deciding whether a datagram is
// the reply to it, and turning the reply into presentation data. Everything here is pure, so a
// hostile or broken reply can only ever produce "not a reply" (null), never an exception.
import * as packet from 'dns-packet';
import type { DnsRecord, QueryOutcome, RecordType } from './types.ts';

/** Large enough for most answers, small enough to avoid IP fragmentation (DNS Flag Day 2020). */
export const EDNS_UDP_SIZE = 1232;

const RCODE_NAMES: Record<number, string> = {
  0: 'NOERROR',
  1: 'FORMERR',
  2: 'SERVFAIL',
  3: 'NXDOMAIN',
  4: 'NOTIMP',
  5: 'REFUSED',
  6: 'YXDOMAIN',
  7: 'YXRRSET',
  8: 'NXRRSET',
  9: 'NOTAUTH',
  10: 'NOTZONE',
  16: 'BADVERS',
};

export function rcodeName(code: number): string {
  return RCODE_NAMES[code] ?? `RCODE${code}`;
}

/** Lower case without the trailing dot; the root stays ".". */
export function canonicalName(name: string): string {
  return name.toLowerCase().replace(/\.$/, '') || '.';
}

/** Wire-format limits of RFC 1035: labels of 1–63 octets, at most 255 octets encoded. */
export function encodableName(name: string): boolean {
  if (name === '.') return true;
  if (name === '') return false;
  const labels = name.split('.');
  let wire = 1;
  for (const label of labels) {
    const len = Buffer.byteLength(label);
    if (len === 0 || len > 63) return false;
    wire += len + 1;
  }
  return wire <= 255;
}

export function buildQuery(
  id: number,
  name: string,
  type: RecordType,
  opts: { recursionDesired?: boolean } = {},
): Buffer {
  return packet.encode({
    type: 'query',
    id,
    // AD set in the query (RFC 6840 §5.7): a validating resolver sets AD in its reply only when the
    // query had AD or DO, so without it `flags.ad` would be false from every resolver. AD is still
    // the resolver's word, trusted only as DNS_RESOLVER_VALIDATES says (docs/operations.md).
    // RD off for a question to a zone's own server (./authoritative.ts): it must answer from its
    // zone data, never recurse or answer from a cache of its own.
    flags: (opts.recursionDesired === false ? 0 : packet.RECURSION_DESIRED) | packet.AUTHENTIC_DATA,
    questions: [{ name, type, class: 'IN' }],
    // DO stays off: we do not validate signatures ourselves, so asking for them would only bloat replies.
    additionals: [
      {
        type: 'OPT',
        name: '.',
        udpPayloadSize: EDNS_UDP_SIZE,
        extendedRcode: 0,
        ednsVersion: 0,
        flags: 0,
        flag_do: false,
        options: [],
      },
    ],
  });
}

export type Reply = packet.DecodedPacket;

/** Full rcode: the header's 4 bits extended by the OPT record's upper 8 bits (RFC 6891). */
export function replyRcode(reply: Reply): number {
  const opt = (reply.additionals ?? []).find((a) => a.type === 'OPT') as packet.OptAnswer | undefined;
  return ((opt?.extendedRcode ?? 0) << 4) | ((reply.flags ?? 0) & 0xf);
}

/**
 * The decoded reply when `buf` answers query `id` for (name, type, IN); null for anything else:
 * undecodable bytes, a query instead of a response, another id, another question. Callers keep
 * waiting on null, so a spoofed or stray datagram cannot end a query early.
 */
export function acceptReply(buf: Buffer, id: number, name: string, type: RecordType): Reply | null {
  let reply: Reply;
  try {
    reply = packet.decode(buf);
  } catch {
    return null;
  }
  if (!reply.flag_qr || reply.id !== id) return null;
  if (((reply.flags ?? 0) >> 11) & 0xf) return null; // opcode must be QUERY
  const questions = reply.questions ?? [];
  // Some servers drop the question section from error replies (FORMERR, REFUSED…); such a reply
  // still answers us, but a NOERROR without the question proves nothing and is ignored.
  if (questions.length === 0) return replyRcode(reply) !== 0 ? reply : null;
  if (questions.length !== 1) return null;
  const q = questions[0]!;
  if (canonicalName(q.name) !== canonicalName(name) || q.type !== type || (q.class ?? 'IN') !== 'IN') return null;
  return reply;
}

export function outcomeOf(rcode: number, answers: DnsRecord[]): QueryOutcome {
  switch (rcode) {
    case 0:
      return answers.length > 0 ? 'answer' : 'nodata';
    case 1:
      return 'formerr';
    case 2:
      return 'servfail';
    case 3:
      return 'nxdomain';
    case 4:
      return 'notimp';
    case 5:
      return 'refused';
    default:
      return 'error';
  }
}

/**
 * The answer-section records that belong to the question: the CNAME chain starting at `name`
 * and the records of `type` at any name on that chain. Anything else in the section (records
 * for unrelated names, RRSIGs) is not part of the answer and is left out.
 *
 * Linear in the section: the CNAMEs are indexed by owner once and the chain is walked from
 * `name`, each owner at most once (a loop ends the walk). Rescanning the section once per link
 * cost chain × section: a 64 KB reply listing ~3,000 CNAMEs last link first took a second of the
 * event loop of whichever process asked (issue 18).
 */
export function answerRecords(reply: Reply, name: string, type: RecordType): DnsRecord[] {
  const section = (reply.answers ?? []).filter((a) => a.type !== 'OPT') as unknown as WireRecord[];
  const owners = section.map((a) => canonicalName(a.name));
  const targets = new Map<string, string[]>();
  section.forEach((a, i) => {
    if (a.type !== 'CNAME') return;
    const list = targets.get(owners[i]!);
    const target = canonicalName(String(a.data));
    if (list) list.push(target);
    else targets.set(owners[i]!, [target]);
  });
  // Breadth-first from the question's name; a name is expanded once, so a loop or a fork (an
  // owner with several CNAMEs, which RFC 2181 §10.1 forbids but a hostile server can send) stays linear.
  const chain = new Set([canonicalName(name)]);
  const queue = [canonicalName(name)];
  for (let i = 0; i < queue.length; i++) {
    for (const target of targets.get(queue[i]!) ?? []) {
      if (chain.has(target)) continue;
      chain.add(target);
      queue.push(target);
    }
  }
  const out: DnsRecord[] = [];
  section.forEach((a, i) => {
    if (!chain.has(owners[i]!)) return;
    if (a.type !== type && a.type !== 'CNAME') return;
    out.push({ name: a.name, type: a.type, ttl: a.ttl ?? 0, data: presentData(a.type, a.data) });
  });
  return out;
}

interface WireRecord {
  name: string;
  type: string;
  ttl?: number;
  data?: unknown;
}

const hex = (b: unknown): string => (Buffer.isBuffer(b) ? b.toString('hex') : '');
const num = (n: unknown): number => (typeof n === 'number' ? n : 0);

/** Presentation data: strings for names and addresses, objects for structured types. */
export function presentData(type: string, data: unknown): unknown {
  const d = (data ?? {}) as Record<string, unknown>;
  switch (type) {
    case 'A':
    case 'AAAA':
    case 'CNAME':
    case 'NS':
    case 'PTR':
    case 'DNAME':
      return String(data);
    case 'MX':
      return { preference: num(d.preference), exchange: String(d.exchange ?? '') };
    case 'SOA':
      return {
        mname: String(d.mname ?? ''),
        rname: String(d.rname ?? ''),
        serial: num(d.serial),
        refresh: num(d.refresh),
        retry: num(d.retry),
        expire: num(d.expire),
        minimum: num(d.minimum),
      };
    case 'TXT': {
      const parts = Array.isArray(data) ? data : [data];
      // Each character-string separately: SPF and DKIM split long values and the split matters.
      return parts.map((p) => (Buffer.isBuffer(p) ? p.toString('utf8') : String(p)));
    }
    case 'CAA':
      return { flags: num(d.flags), tag: String(d.tag ?? ''), value: String(d.value ?? '') };
    case 'SRV':
      return { priority: num(d.priority), weight: num(d.weight), port: num(d.port), target: String(d.target ?? '') };
    case 'DS':
      return {
        keyTag: num(d.keyTag),
        algorithm: num(d.algorithm),
        digestType: num(d.digestType),
        digest: hex(d.digest),
      };
    case 'TLSA':
      return {
        usage: num(d.usage),
        selector: num(d.selector),
        matchingType: num(d.matchingType),
        certificate: hex(d.certificate),
      };
    case 'DNSKEY':
      return {
        flags: num(d.flags),
        protocol: 3,
        algorithm: num(d.algorithm),
        key: Buffer.isBuffer(d.key) ? d.key.toString('base64') : '',
      };
    default:
      return Buffer.isBuffer(data) ? data.toString('hex') : data;
  }
}
