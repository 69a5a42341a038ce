// What a resolver with private zones answers (issue 30 item 3): a cluster's DNS (cluster.local), a
// company's (corp.internal), a private reverse zone, and `localhost`, served by the lab DNS beside
// its public zones and chased through CNAMEs like a recursive resolver with those zones would.
// Public lab names point into them; the service must cut every such chain where it leaves public
// DNS and never report a name or address that only these zones hold.
//
// The "private" addresses are loopback ones outside the lab's allow-list (127.200.0.0/16, as
// every refusal test here: the network rule allows no other address in a fixture zone); the lab
// service does not allow them, so their reverse zone (200.127.in-addr.arpa) is non-global for it.
import { LAB_REFUSED_NET } from './addresses.ts';
import { reverseName, zoneApex, type Zone } from './zones.ts';

const refusedBase = LAB_REFUSED_NET.split('/')[0]!.split('.').slice(0, 2).join('.'); // 127.200

/** What only the private zones hold: none of these may appear in any reply of the service. */
export const PRIVATE_ONLY = {
  k8sName: 'kubernetes.default.svc.cluster.local',
  k8sAddress: `${refusedBase}.96.1`,
  vaultName: 'vault.corp.internal',
  vaultAddress: `${refusedBase}.0.5`,
  secretText: 'private-zone-secret',
} as const;

/** A private (here: refused loopback) address published in a public zone: a public fact. */
export const PUBLISHED_PRIVATE_ADDRESS = `${refusedBase}.7.7`;

/** Public lab names whose answers lead into the private zones. */
export const LEAK = {
  zone: 'leak.lab.test',
  /** CNAME into cluster.local. */
  k8s: 'k8s.leak.lab.test',
  /** CNAME to k8s.leak.lab.test, then into cluster.local: the first link is public and kept. */
  via: 'via.leak.lab.test',
  /** CNAME into corp.internal, which CNAMEs back to a public name: nothing past the exit is kept. */
  back: 'back.leak.lab.test',
  /** A public name with a private address in a public zone: a public fact, kept. */
  privateAddress: 'private-address.leak.lab.test',
  /** Reverse names: 127.0.0.77 CNAMEs into the private reverse zone, 127.0.0.78 names a private host. */
  ptrIntoPrivateZone: '127.0.0.77',
  ptrNamingPrivateHost: '127.0.0.78',
} as const;

export const privateZones: Zone[] = [
  {
    origin: LEAK.zone,
    records: [
      ...zoneApex(LEAK.zone),
      { name: 'k8s', type: 'CNAME', data: PRIVATE_ONLY.k8sName },
      { name: 'via', type: 'CNAME', data: LEAK.k8s },
      { name: 'back', type: 'CNAME', data: 'back.corp.internal' },
      { name: 'private-address', type: 'A', data: PUBLISHED_PRIVATE_ADDRESS },
    ],
  },
  {
    origin: 'cluster.local',
    records: [
      ...zoneApex('cluster.local'),
      { name: 'kubernetes.default.svc', type: 'A', data: PRIVATE_ONLY.k8sAddress },
      { name: 'kubernetes.default.svc', type: 'TXT', data: [PRIVATE_ONLY.secretText] },
      { name: 'kubernetes.default.svc', type: 'MX', data: { preference: 10, exchange: PRIVATE_ONLY.vaultName } },
    ],
  },
  {
    origin: 'corp.internal',
    records: [
      ...zoneApex('corp.internal'),
      { name: 'vault', type: 'A', data: PRIVATE_ONLY.vaultAddress },
      { name: 'back', type: 'CNAME', data: 'lab.test' },
    ],
  },
  {
    origin: `${refusedBase.split('.').reverse().join('.')}.in-addr.arpa`,
    records: [{ name: reverseName(PRIVATE_ONLY.vaultAddress), type: 'PTR', data: PRIVATE_ONLY.vaultName }],
  },
  {
    origin: reverseName(LEAK.ptrIntoPrivateZone).replace(/\.$/, ''),
    records: [{ name: '@', type: 'CNAME', data: reverseName(PRIVATE_ONLY.vaultAddress).replace(/\.$/, '') }],
  },
  {
    origin: reverseName(LEAK.ptrNamingPrivateHost).replace(/\.$/, ''),
    records: [{ name: '@', type: 'PTR', data: PRIVATE_ONLY.vaultName }],
  },
  // A resolver that answers `localhost` (Unbound and BIND do, as RFC 6761 §6.3 suggests).
  { origin: 'localhost', records: [{ name: '@', type: 'A', data: '127.0.0.1' }] },
];
