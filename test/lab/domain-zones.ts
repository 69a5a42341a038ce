// Fixture zones for the domain product (delegation and records), passed to the DNS lab next to
// the standard ones: `startLabDns({ zones: [...labZones, ...domainZones] })`.
//
// The lab is one authoritative server for every zone, not a real hierarchy: "test" below plays
// the TLD registry (so an unregistered second-level name is an authoritative NXDOMAIN), and a
// child zone answers its own DS query (a real resolver would ask the parent; the outcome the
// client sees — answer, NODATA — is the same). Names match the RDAP fixtures (./rdap-fixtures.ts).
import { rdapNames } from './rdap-fixtures.ts';
import type { Zone, ZoneRecord } from './zones.ts';

function soa(origin: string, mname = `ns1.${origin}`): ZoneRecord {
  return {
    name: '@',
    type: 'SOA',
    ttl: 3600,
    data: {
      mname,
      rname: `hostmaster.${origin}`,
      serial: 2026020101,
      refresh: 7200,
      retry: 900,
      expire: 1209600,
      minimum: 300,
    },
  };
}

/** A registered domain with two in-zone name servers and an address. */
function delegated(origin: string, extra: ZoneRecord[] = [], behaviours: Zone['behaviours'] = []): Zone {
  return {
    origin,
    ttl: 300,
    behaviours,
    records: [
      soa(origin),
      { name: '@', type: 'NS', ttl: 3600, data: `ns1.${origin}` },
      { name: '@', type: 'NS', ttl: 3600, data: `ns2.${origin}` },
      { name: 'ns1', type: 'A', data: '127.0.0.53' },
      { name: 'ns2', type: 'A', data: '127.0.0.54' },
      { name: 'ns2', type: 'AAAA', data: '::1' },
      { name: '@', type: 'A', data: '127.0.0.60' },
      ...extra,
    ],
  };
}

export const domainLabNames = {
  ...rdapNames,
  /** Registrable domain whose every query is SERVFAIL. */
  servfail: 'lab-servfail.test',
  /** Registrable domain whose server never answers. */
  timeout: 'lab-timeout.test',
  /** NS and SOA answer, DS never does: delegation known, DNSSEC not. */
  dsTimeout: 'lab-ds-timeout.test',
  /** One in-zone NS plus one whose name does not exist. */
  danglingNs: 'lab-dangling-ns.test',
  /** An NS host under a name nobody registered. */
  goneNsHost: 'ns.gone-provider.test',
} as const;

const n = domainLabNames;

/** The TLD as its registry serves it: names that are not delegated do not exist. */
export const testTld: Zone = {
  origin: 'test',
  records: [soa('test', 'a.nic.test'), { name: '@', type: 'NS', ttl: 3600, data: 'a.nic.test' }],
};

export const domainZones: Zone[] = [
  testTld,
  delegated(n.expired),
  delegated(n.expiringSoon),
  delegated(n.signed, [
    {
      name: '@',
      type: 'DS',
      ttl: 3600,
      data: { keyTag: 12345, algorithm: 13, digestType: 2, digest: Buffer.alloc(32, 0xaa) },
    },
  ]),
  delegated(n.redirected),
  delegated(n.dsTimeout, [], [{ name: '@', behaviour: { kind: 'silent' }, types: ['DS'] }]),
  {
    origin: n.danglingNs,
    records: [
      soa(n.danglingNs),
      { name: '@', type: 'NS', data: `ns1.${n.danglingNs}` },
      { name: '@', type: 'NS', data: n.goneNsHost },
      { name: 'ns1', type: 'A', data: '127.0.0.53' },
      { name: '@', type: 'A', data: '127.0.0.61' },
    ],
  },
  {
    origin: n.servfail,
    records: [soa(n.servfail)],
    behaviours: [{ name: '@', behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } }],
  },
  { origin: n.timeout, records: [soa(n.timeout)], behaviours: [{ name: '@', behaviour: { kind: 'silent' } }] },
];
