// Fixture zones of the lab's authoritative DNS server, as data. A zone is an origin, its records
// and, optionally, per-name behaviours (hostile or broken servers). Later fixtures (mail posture,
// web targets, scale zones) are new Zone values appended to `labZones` or passed to startLabDns.
//
// Conventions (zone-file style): an owner name is relative to the origin, "@" is the origin itself
// and a name ending in "." is absolute. Names inside record data (CNAME targets, MX exchanges…)
// are always absolute, written without the trailing dot. Data shapes are dns-packet's.
import { isIPv6 } from 'node:net';

export interface ZoneRecord {
  name: string;
  type: string;
  ttl?: number;
  data: unknown;
}

/** How the server treats one name instead of answering from the records. */
export type Behaviour =
  | { kind: 'rcode'; rcode: 'SERVFAIL' | 'REFUSED' | 'FORMERR' | 'NOTIMP' }
  /** Never answers. */
  | { kind: 'silent' }
  /** Sends the correct answer under a wrong message id, then nothing. */
  | { kind: 'wrong-id' }
  /** Sends random bytes. */
  | { kind: 'garbage' }
  /** Answers correctly after `ms` milliseconds. */
  | { kind: 'delay'; ms: number }
  /** The name exists; each A query gets a different random address under `prefix` (a rotating or pattern wildcard), other types NODATA. */
  | { kind: 'random-a'; prefix: string }
  /** DNS rebinding: the first `after` A queries get the zone's records, every later one `address` (other types as recorded). */
  | { kind: 'rebind'; after: number; address: string };

export interface NameBehaviour {
  name: string;
  behaviour: Behaviour;
  /** Only for these query types (default: all). */
  types?: string[];
  /** Only over this transport (default: both). */
  transport?: 'udp' | 'tcp';
  /** Also every name below this one (a broken subzone). */
  subtree?: boolean;
}

export interface Zone {
  origin: string;
  /** Default TTL of records without one. */
  ttl?: number;
  records: ZoneRecord[];
  behaviours?: NameBehaviour[];
  /** Set the AD bit on every reply from this zone (to check that the client reports it as given). */
  authenticatedData?: boolean;
  /** Answer AXFR over TCP with every record of the zone (a misconfigured server); else REFUSED. */
  allowAxfr?: boolean;
  /** Answer without the AA bit: a cache or a forwarder holding a copy, not the zone's own server. */
  notAuthoritative?: boolean;
}

/** The usual SOA + NS pair every zone needs. */
export function zoneApex(origin: string, serial = 2026010101): ZoneRecord[] {
  return [
    {
      name: '@',
      type: 'SOA',
      ttl: 3600,
      data: {
        mname: `ns1.lab.test`,
        rname: `hostmaster.${origin}`,
        serial,
        refresh: 7200,
        retry: 900,
        expire: 1209600,
        minimum: 300,
      },
    },
    { name: '@', type: 'NS', ttl: 3600, data: 'ns1.lab.test' },
  ];
}

/**
 * SOA and NS of a zone whose name server is `ns.<origin>` at `address` (default 127.0.0.1, the
 * lab DNS itself; a mirror's address for a server of its own): the servers a proof of control
 * asks directly (src/dns/authoritative.ts, TCP port 53 mapped to the lab's port).
 */
export function servedApex(origin: string, address = '127.0.0.1'): ZoneRecord[] {
  const [soa] = zoneApex(origin);
  return [
    { ...soa!, data: { ...(soa!.data as object), mname: `ns.${origin}` } },
    { name: '@', type: 'NS', ttl: 3600, data: `ns.${origin}` },
    { name: 'ns', type: 'A', ttl: 3600, data: address },
  ];
}

/** 1.0.0.127.in-addr.arpa. for 127.0.0.1 */
export function reverseName(ip: string): string {
  if (!isIPv6(ip)) return `${ip.split('.').reverse().join('.')}.in-addr.arpa.`;
  const groups = expandV6(ip);
  const nibbles = groups
    .map((g) => g.padStart(4, '0'))
    .join('')
    .split('');
  return `${nibbles.reverse().join('.')}.ip6.arpa.`;
}

function expandV6(ip: string): string[] {
  const [head, tail] = ip.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  if (tail === undefined) return h;
  const t = tail ? tail.split(':') : [];
  return [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
}

const LONG_TXT = `lab-long-txt ${'x'.repeat(300)}`; // > 255 octets: two character-strings

/**
 * Issue 45: a 52 KB TXT set (200 records of one 255-octet string, mostly control bytes, which JSON
 * writes as six characters each: ~300 KB of answer). One TCP reply holds it (52.6 KB < 64 KiB).
 */
export const HUGE_TXT = { name: 'hugetxt.lab.test', records: 200, octets: 255 } as const;
const hugeTxt = (i: number) => {
  const head = `huge-${String(i).padStart(3, '0')} `;
  return head + '\u0001\u0002\u0007'.repeat(100).slice(0, HUGE_TXT.octets - head.length);
};

/** The ordinary zone plus one name per answer shape the resolver must handle. */
export const labTest: Zone = {
  origin: 'lab.test',
  ttl: 300,
  records: [
    ...zoneApex('lab.test'),
    { name: '@', type: 'A', data: '127.0.0.10' },
    { name: '@', type: 'AAAA', data: '::1' },
    { name: '@', type: 'MX', data: { preference: 10, exchange: 'mail.lab.test' } },
    { name: '@', type: 'MX', data: { preference: 20, exchange: 'mail2.lab.test' } },
    { name: '@', type: 'TXT', data: ['v=spf1 ip4:127.0.0.0/8 -all'] },
    { name: '@', type: 'TXT', data: [LONG_TXT.slice(0, 255), LONG_TXT.slice(255)] },
    { name: '@', type: 'CAA', data: { flags: 0, tag: 'issue', value: 'ca.lab.test' } },
    { name: '@', type: 'CAA', data: { flags: 0, tag: 'iodef', value: 'mailto:security@lab.test' } },
    { name: 'www', type: 'CNAME', data: 'lab.test' },
    { name: 'ns1', type: 'A', data: '127.0.0.53' },
    { name: 'mail', type: 'A', data: '127.0.0.25' },
    { name: 'mail2', type: 'A', data: '127.0.0.26' },
    { name: 'localhost', type: 'A', data: '127.0.0.1' },
    { name: 'localhost', type: 'AAAA', data: '::1' },
    // NODATA: the name exists (A) but has no AAAA.
    { name: 'nodata', type: 'A', data: '127.0.0.11' },
    // A loop: cname-loop → cname-loop-b → cname-loop.
    { name: 'cname-loop', type: 'CNAME', data: 'cname-loop-b.lab.test' },
    { name: 'cname-loop-b', type: 'CNAME', data: 'cname-loop.lab.test' },
    // Dangling: the target does not exist (NXDOMAIN with the CNAME in the answer, RFC 6604).
    { name: 'dangling', type: 'CNAME', data: 'gone.lab.test' },
    // Too big for a 1232-byte UDP reply: truncated over UDP, complete over TCP.
    ...Array.from({ length: 60 }, (_, i) => ({ name: 'big', type: 'A', data: `127.0.1.${i + 1}` })),
    ...Array.from({ length: 6 }, (_, i) => ({ name: 'big', type: 'TXT', data: [`big-${i} ${'y'.repeat(240)}`] })),
    // Same size, but the TCP reply is garbage: the fallback must end in an error, not a crash.
    ...Array.from({ length: 60 }, (_, i) => ({ name: 'tcp-garbage', type: 'A', data: `127.0.2.${i + 1}` })),
    // Wildcard: anything.wild.lab.test answers, wild.lab.test itself is an empty non-terminal.
    { name: '*.wild', type: 'A', data: '127.0.0.30' },
    { name: '*.wild', type: 'TXT', data: ['wildcard'] },
    // A TXT set far larger than an inline reply may be (issue 45).
    ...Array.from({ length: HUGE_TXT.records }, (_, i) => ({ name: 'hugetxt', type: 'TXT', data: [hugeTxt(i)] })),
    // Hostile and broken servers, one dedicated name each.
    { name: 'badid', type: 'A', data: '127.0.0.40' },
    { name: 'garbage', type: 'A', data: '127.0.0.41' },
    { name: 'slow', type: 'A', data: '127.0.0.42' },
    // Answers A/AAAA/MX…, stays silent for TXT and CAA: a mostly-answered name.
    { name: 'partial', type: 'A', data: '127.0.0.43' },
    { name: 'partial', type: 'TXT', data: ['never seen'] },
  ],
  behaviours: [
    { name: 'servfail', behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } },
    { name: 'refused', behaviour: { kind: 'rcode', rcode: 'REFUSED' } },
    { name: 'timeout', behaviour: { kind: 'silent' } },
    { name: 'badid', behaviour: { kind: 'wrong-id' } },
    { name: 'garbage', behaviour: { kind: 'garbage' } },
    { name: 'slow', behaviour: { kind: 'delay', ms: 3000 } },
    { name: 'partial', behaviour: { kind: 'silent' }, types: ['TXT', 'CAA'] },
    { name: 'tcp-garbage', behaviour: { kind: 'garbage' }, transport: 'tcp' },
  ],
};

/** bücher.lab.test, served under its A-label. */
export const idnZone: Zone = {
  origin: 'xn--bcher-kva.lab.test',
  records: [
    ...zoneApex('xn--bcher-kva.lab.test'),
    { name: '@', type: 'A', data: '127.0.0.12' },
    { name: '@', type: 'MX', data: { preference: 10, exchange: 'mail.lab.test' } },
    { name: '@', type: 'TXT', data: ['bücher'] },
  ],
};

/** A child zone whose replies carry AD=1 (the lab does not sign anything: AD is just a bit). */
export const adZone: Zone = {
  origin: 'ad.lab.test',
  authenticatedData: true,
  records: [...zoneApex('ad.lab.test'), { name: '@', type: 'A', data: '127.0.0.13' }],
};

export const reverse127: Zone = {
  origin: '127.in-addr.arpa',
  records: [
    ...zoneApex('127.in-addr.arpa'),
    { name: reverseName('127.0.0.1'), type: 'PTR', data: 'localhost.lab.test' },
    { name: reverseName('127.0.0.10'), type: 'PTR', data: 'lab.test' },
    { name: reverseName('127.0.0.25'), type: 'PTR', data: 'mail.lab.test' },
    // 127.0.0.99 has no PTR: NXDOMAIN. 127.0.0.66 answers SERVFAIL.
  ],
  behaviours: [{ name: reverseName('127.0.0.66'), behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } }],
};

export const reverseIp6: Zone = {
  origin: 'ip6.arpa',
  records: [...zoneApex('ip6.arpa'), { name: reverseName('::1'), type: 'PTR', data: 'localhost.lab.test' }],
};

/**
 * A dead zone: its servers never answer, for any name under it and any type (a tenant's zone whose
 * authoritative servers are blackholed; a recursive resolver then answers later than any client
 * waits). Nothing else in the lab is affected: every other zone answers as usual.
 */
export const stalledZone: Zone = {
  origin: 'stalled.test',
  records: [...zoneApex('stalled.test'), { name: '@', type: 'A', data: '127.0.0.14' }],
  behaviours: [{ name: '@', behaviour: { kind: 'silent' }, subtree: true }],
};

export const labZones: Zone[] = [labTest, idnZone, adZone, reverse127, reverseIp6, stalledZone];

/** Names the tests and docs refer to. */
export const labNames = {
  apex: 'lab.test',
  www: 'www.lab.test',
  nxdomain: 'does-not-exist.lab.test',
  nodata: 'nodata.lab.test',
  servfail: 'servfail.lab.test',
  refused: 'refused.lab.test',
  timeout: 'timeout.lab.test',
  big: 'big.lab.test',
  tcpGarbage: 'tcp-garbage.lab.test',
  idn: 'xn--bcher-kva.lab.test',
  ad: 'ad.lab.test',
  wildcard: 'anything.wild.lab.test',
  cnameLoop: 'cname-loop.lab.test',
  dangling: 'dangling.lab.test',
  badId: 'badid.lab.test',
  garbage: 'garbage.lab.test',
  slow: 'slow.lab.test',
  partial: 'partial.lab.test',
  /** Any name under it stalls (stalledZone): `h1.stalled.test`, `stalled.test`… */
  stalled: 'stalled.test',
  ptr4: '1.0.0.127.in-addr.arpa',
  ptr6: reverseName('::1').slice(0, -1),
  ptrNxdomain: '99.0.0.127.in-addr.arpa',
  ptrServfail: '66.0.0.127.in-addr.arpa',
} as const;
