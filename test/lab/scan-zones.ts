// Fixture zones of the scan lab (issue 10 item 11), as data. Every address is loopback: scan
// hosts live in 127.0.3.0/24 (labHost('scan', n)); 127.0.3.99 is an out-of-scope CDN host whose
// listeners count connections (an advanced scan must send it nothing).
//
//   scan-basic.test   third-party MX / NS / CDN, SPF includes, SRV, certificate SANs, a dangling
//                     CNAME (NXDOMAIN), a provider alias serving the unclaimed-name page, a
//                     dangling _tcp name (never a finding), a CNAME loop, a 40-deep chain, a
//                     SERVFAIL subzone, a page linking to 3,000 hosts (a flood source), AXFR open
//   scan-dnsfail.test the target's own DNS answers SERVFAIL, its DMARC record answers
//   scan-wild.test    A wildcard with a real host under it, an MX and an SRV target only the
//                     wildcard answers, an alias of a name only the wildcard answers, a
//                     CNAME-only wildcard level, a pattern (rotating) wildcard level
//   shop.scan-basic.test  a subdomain approved on its own: active work must stay inside it
//   alice.github.io   an owner under a private public suffix (the lab's github.io stand-in); its
//                     certificate, page and MX name bob.github.io, another owner: a third party
//   gen<N>.test       generated: N hosts linked as a tree from the apex page (benchmark)
import { labHost } from './addresses.ts';
import type { Zone, ZoneRecord } from './zones.ts';

export const SCAN_ZONE = 'scan-basic.test';
export const WILD_ZONE = 'scan-wild.test';
/** A label under scan-wild.test that only the wildcard answers, the CNAME target of `cdn`. */
export const WILD_CNAME_TARGET = 'c-5n4m3b';
/** Every question about the name itself gets SERVFAIL; its DMARC record answers. */
export const DNSFAIL_ZONE = 'scan-dnsfail.test';
/** An out-of-scope host (a CDN edge) inside the lab allowlist: it must see no connection. */
export const OUT_OF_SCOPE_ADDRESS = labHost('scan', 99);
export const FLOOD_LINKS = 3000;
export const CHAIN_LENGTH = 40;

export const scanAddresses = {
  apex: labHost('scan', 10),
  mail: labHost('scan', 11),
  sip: labHost('scan', 12),
  provider: labHost('scan', 13),
  chainEnd: labHost('scan', 14),
  api: labHost('scan', 15),
  flood: labHost('scan', 16),
  wildcard: labHost('scan', 20),
  wildReal: labHost('scan', 21),
  cnameTarget: labHost('scan', 22),
  /** alice.github.io and bob.github.io share it: a request with Host bob.github.io would show. */
  pages: labHost('scan', 23),
} as const;

/** Owners under the lab's private suffix github.io (public suffix list, private section). */
export const PAGES_OWNER = 'alice.github.io';
export const PAGES_OTHER_OWNER = 'bob.github.io';

const soa = (origin: string): ZoneRecord => ({
  name: '@',
  type: 'SOA',
  ttl: 3600,
  data: {
    mname: `ns1.${origin}`,
    rname: `hostmaster.${origin}`,
    serial: 2026112401,
    refresh: 7200,
    retry: 900,
    expire: 1209600,
    minimum: 300,
  },
});

export function scanBasicZone(): Zone {
  const chain: ZoneRecord[] = Array.from({ length: CHAIN_LENGTH }, (_, i) => ({
    name: `chain-${i}`,
    type: 'CNAME',
    data: `chain-${i + 1}.${SCAN_ZONE}`,
  }));
  return {
    origin: SCAN_ZONE,
    allowAxfr: true,
    records: [
      soa(SCAN_ZONE),
      { name: '@', type: 'NS', data: `ns1.${SCAN_ZONE}` },
      { name: '@', type: 'NS', data: 'ns.thirdparty-dns.test' },
      { name: '@', type: 'A', data: scanAddresses.apex },
      { name: '@', type: 'MX', data: { preference: 10, exchange: `mail.${SCAN_ZONE}` } },
      { name: '@', type: 'MX', data: { preference: 20, exchange: 'mx.thirdparty-mail.test' } },
      { name: '@', type: 'TXT', data: [`v=spf1 include:_spf.${SCAN_ZONE} include:_spf.thirdparty-mail.test -all`] },
      { name: '_spf', type: 'TXT', data: ['v=spf1 ip4:127.0.3.0/24 -all'] },
      { name: 'www', type: 'CNAME', data: SCAN_ZONE },
      { name: 'mail', type: 'A', data: scanAddresses.mail },
      // The lab DNS server itself (127.0.0.1): the zone's in-scope name server, which allows AXFR.
      { name: 'ns1', type: 'A', data: '127.0.0.1' },
      { name: 'api', type: 'A', data: scanAddresses.api },
      { name: '_sip._tcp', type: 'SRV', data: { priority: 10, weight: 5, port: 5060, target: `sip.${SCAN_ZONE}` } },
      { name: 'sip', type: 'A', data: scanAddresses.sip },
      // A service name pointing nowhere: dangling, but never a takeover finding.
      { name: '_xmpp-server._tcp', type: 'CNAME', data: `nowhere.${SCAN_ZONE}` },
      // Out of scope: a CDN the site uses.
      { name: 'cdn', type: 'CNAME', data: 'edge.thirdparty-cdn.test' },
      // Dangling: the target does not exist (NXDOMAIN).
      { name: 'old', type: 'CNAME', data: `gone.${SCAN_ZONE}` },
      // A provider alias (lab copy of github.io) serving the unclaimed-name page.
      { name: 'blog', type: 'CNAME', data: 'lss-lab.github.io' },
      { name: 'loop-a', type: 'CNAME', data: `loop-b.${SCAN_ZONE}` },
      { name: 'loop-b', type: 'CNAME', data: `loop-a.${SCAN_ZONE}` },
      ...chain,
      { name: `chain-${CHAIN_LENGTH}`, type: 'A', data: scanAddresses.chainEnd },
      { name: 'flood', type: 'A', data: scanAddresses.flood },
      { name: 'app.broken', type: 'A', data: scanAddresses.api },
      // Approved on its own in the scope test: its active work stays below it.
      { name: 'shop', type: 'A', data: scanAddresses.api },
    ],
    behaviours: [{ name: 'broken', behaviour: { kind: 'rcode', rcode: 'SERVFAIL' }, subtree: true }],
  };
}

export function scanWildZone(): Zone {
  return {
    origin: WILD_ZONE,
    records: [
      soa(WILD_ZONE),
      { name: '@', type: 'NS', data: `ns1.${SCAN_ZONE}` },
      { name: '@', type: 'A', data: scanAddresses.wildReal },
      // SPF names: one real host, one that only the wildcard answers, and names under the
      // CNAME-only and the pattern wildcard levels.
      {
        name: '@',
        type: 'TXT',
        data: [
          `v=spf1 include:real.${WILD_ZONE} include:ghost.${WILD_ZONE} include:x.cnw.${WILD_ZONE} include:y.pat.${WILD_ZONE} include:cdn.${WILD_ZONE} -all`,
        ],
      },
      { name: '*', type: 'A', data: scanAddresses.wildcard },
      // An MX and an SRV target that exist only through the wildcard: collapsed, yet still the
      // MX of the mail posture and the target of the SRV record.
      { name: '@', type: 'MX', data: { preference: 10, exchange: `mx.${WILD_ZONE}` } },
      { name: '_sip._tcp', type: 'SRV', data: { priority: 10, weight: 5, port: 5060, target: `sip.${WILD_ZONE}` } },
      { name: 'real', type: 'A', data: scanAddresses.wildReal },
      { name: '*.cnw', type: 'CNAME', data: `target.${WILD_ZONE}` },
      { name: 'target', type: 'A', data: scanAddresses.cnameTarget },
      // A real alias (its CNAME is its own) of a name that only the wildcard answers: the target
      // collapses into the wildcard object, recorded on the alias (one hop beyond the balanced
      // profile's reach, so no dns task of its own would ever fold it).
      { name: 'cdn', type: 'CNAME', data: `${WILD_CNAME_TARGET}.${WILD_ZONE}` },
      { name: 'pat', type: 'TXT', data: ['pattern wildcard level'] },
    ],
    behaviours: [{ name: 'pat', behaviour: { kind: 'random-a', prefix: '127.0.3.' }, subtree: true, types: ['A'] }],
  };
}

/** The target's own DNS fails (the scan's required task) while its mail posture still answers. */
export function scanDnsFailZone(): Zone {
  return {
    origin: DNSFAIL_ZONE,
    records: [soa(DNSFAIL_ZONE), { name: '_dmarc', type: 'TXT', data: ['v=DMARC1; p=reject'] }],
    behaviours: [{ name: '@', behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } }],
  };
}

/** Zones that only exist to make out-of-scope names and the provider alias resolve inside the lab. */
export function thirdPartyZones(): Zone[] {
  return [
    {
      origin: 'thirdparty-mail.test',
      records: [
        soa('thirdparty-mail.test'),
        { name: 'mx', type: 'A', data: OUT_OF_SCOPE_ADDRESS },
        { name: '_spf', type: 'TXT', data: ['v=spf1 -all'] },
      ],
    },
    {
      origin: 'thirdparty-dns.test',
      records: [soa('thirdparty-dns.test'), { name: 'ns', type: 'A', data: OUT_OF_SCOPE_ADDRESS }],
    },
    {
      origin: 'thirdparty-cdn.test',
      records: [
        soa('thirdparty-cdn.test'),
        { name: 'edge', type: 'A', data: OUT_OF_SCOPE_ADDRESS },
        { name: 'partner', type: 'A', data: OUT_OF_SCOPE_ADDRESS },
      ],
    },
    // Lab stand-in for the provider's zone: only loopback answers, never the real service.
    {
      origin: 'github.io',
      records: [
        soa('github.io'),
        { name: 'lss-lab', type: 'A', data: scanAddresses.provider },
        { name: 'alice', type: 'A', data: scanAddresses.pages },
        { name: 'www.alice', type: 'CNAME', data: PAGES_OWNER },
        { name: 'alice', type: 'MX', data: { preference: 10, exchange: PAGES_OTHER_OWNER } },
        { name: 'alice', type: 'TXT', data: [`v=spf1 include:${PAGES_OTHER_OWNER} -all`] },
        { name: 'bob', type: 'A', data: scanAddresses.pages },
        { name: 'bob', type: 'MX', data: { preference: 10, exchange: PAGES_OTHER_OWNER } },
      ],
    },
  ];
}

// ---- generated zones (benchmark) ------------------------------------------------------------

/**
 * The generated zones' web hosts: 250 loopback addresses (127.0.4.1–250), HTTP only (nothing listens
 * on their HTTPS port: a check's https chain is refused at once), as the issue 32 lab has them.
 */
export const GEN_WEB_ADDRESSES = Array.from({ length: 250 }, (_, i) => `127.0.4.${i + 1}`);
/** The zone's mail host resolves but serves nothing (connections refused). */
export const GEN_DEAD_ADDRESS = labHost('scan', 120);

export function genZoneName(n: number): string {
  return `gen${n}.test`;
}

/** Children of host i in the link tree (the apex is 0): a tree of `fanout`, numbered breadth first. */
export function genChildren(i: number, n: number, fanout: number): number[] {
  return Array.from({ length: fanout }, (_, k) => i * fanout + k + 1).filter((j) => j < n);
}

/** Fanout so that 3 hops (a deep scan's limit) reach every one of n hosts. */
export function genFanout(n: number): number {
  let f = 2;
  while (f + f * f + f * f * f < n) f++;
  return f;
}

/**
 * N hosts as an F-ary tree of links (h0 is the apex; h1..h(N-1)), every host an A record to one
 * of the 250 web addresses, every page linking to its children (issue 32: the lab its figures came
 * from). Names are found only by following the pages' links, within a deep scan's 3 hops.
 */
export function generatedZone(n: number): Zone {
  const origin = genZoneName(n);
  const records: ZoneRecord[] = [
    soa(origin),
    { name: '@', type: 'NS', data: `ns1.${SCAN_ZONE}` },
    { name: '@', type: 'A', data: GEN_WEB_ADDRESSES[0]! },
    { name: '@', type: 'MX', data: { preference: 10, exchange: `mail.${origin}` } },
    { name: '@', type: 'TXT', data: ['v=spf1 mx -all'] },
    { name: 'mail', type: 'A', data: GEN_DEAD_ADDRESS },
  ];
  for (let i = 1; i < n; i++)
    records.push({ name: `h${i}`, type: 'A', data: GEN_WEB_ADDRESSES[i % GEN_WEB_ADDRESSES.length]! });
  return { origin, records };
}
