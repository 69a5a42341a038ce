// Fixture registrations of the lab's RDAP server (./rdap-server.ts), as RFC 9083 domain objects.
//
// Registration is looked up for the REGISTRABLE domain (the public suffix list's view), and
// ".test" is not in the PSL, so tldts treats "test" as the suffix: the registrable domain of
// "anything.lab.test" is "lab.test". Fixture registrations are therefore second-level names under
// .test ("lab-expired.test", not "expired.lab.test"); ./domain-zones.ts gives them DNS zones.
//
// Dates are relative to `now`, so "expires in 10 days" stays true whenever the tests run, and
// counted from the start of its UTC day: two lookups on the same day read the same registration
// (a change comparison of two identical lookups finds nothing changed, CONTRACT §13). Every
// relative date is a whole number of days from that midnight, so "expires in 10 days" is between
// 9 and 10 days from now, "expired 10 days ago" between 10 and 11.

import { LAB_REFUSED_ADDRESS } from './addresses.ts';

const DAY = 24 * 60 * 60 * 1000;

export type RdapFixture =
  | { kind: 'domain'; body: Record<string, unknown> }
  /** Accepts the request and never answers. */
  | { kind: 'hang' }
  | { kind: 'status'; status: number; body: Record<string, unknown> }
  /** 302 to `location`; a path ("/…") is relative to the lab server itself. */
  | { kind: 'redirect'; location: string };

export const rdapNames = {
  registered: 'lab.test',
  expired: 'lab-expired.test',
  expiringSoon: 'lab-expiring.test',
  signed: 'lab-signed.test',
  slow: 'lab-rdap-slow.test',
  serverError: 'lab-rdap-error.test',
  redirected: 'lab-rdap-redirect.test',
  redirectOutsideAllowlist: 'lab-rdap-refused-hop.test',
  notRegistered: 'lab-missing.test',
} as const;

export const LAB_REGISTRAR = { name: 'Lab Registrar, Inc.', ianaId: '9999' } as const;

interface DomainSpec {
  name: string;
  registered: Date;
  expires: Date;
  changed: Date;
  status: string[];
  nameservers: string[];
  signed: boolean;
  selfBase: string;
}

function domainObject(d: DomainSpec): Record<string, unknown> {
  const handle = `${d.name.replace(/\W/g, '_').toUpperCase()}-LAB`;
  return {
    rdapConformance: ['rdap_level_0', 'icann_rdap_response_profile_1', 'icann_rdap_technical_implementation_guide_1'],
    objectClassName: 'domain',
    handle,
    ldhName: d.name.toUpperCase(), // registries often answer in upper case
    links: [
      {
        value: `${d.selfBase}domain/${d.name}`,
        rel: 'self',
        href: `${d.selfBase}domain/${d.name}`,
        type: 'application/rdap+json',
      },
    ],
    status: d.status,
    entities: [
      {
        objectClassName: 'entity',
        handle: LAB_REGISTRAR.ianaId,
        roles: ['registrar'],
        publicIds: [{ type: 'IANA Registrar ID', identifier: LAB_REGISTRAR.ianaId }],
        vcardArray: [
          'vcard',
          [
            ['version', {}, 'text', '4.0'],
            ['fn', {}, 'text', LAB_REGISTRAR.name],
          ],
        ],
        entities: [
          {
            objectClassName: 'entity',
            roles: ['abuse'],
            vcardArray: [
              'vcard',
              [
                ['version', {}, 'text', '4.0'],
                ['fn', {}, 'text', ''],
                ['email', {}, 'text', 'abuse@registrar.lab.test'],
              ],
            ],
          },
        ],
      },
      {
        objectClassName: 'entity',
        roles: ['registrant'],
        // Personal data a client must never see in our output.
        vcardArray: [
          'vcard',
          [
            ['version', {}, 'text', '4.0'],
            ['fn', {}, 'text', 'Jane Registrant'],
            ['email', {}, 'text', 'jane@private.lab.test'],
          ],
        ],
      },
    ],
    events: [
      { eventAction: 'registration', eventDate: d.registered.toISOString() },
      { eventAction: 'expiration', eventDate: d.expires.toISOString() },
      { eventAction: 'last changed', eventDate: d.changed.toISOString() },
      { eventAction: 'last update of RDAP database', eventDate: new Date().toISOString() },
    ],
    secureDNS: d.signed
      ? { delegationSigned: true, dsData: [{ keyTag: 12345, algorithm: 13, digestType: 2, digest: 'A'.repeat(64) }] }
      : { delegationSigned: false },
    nameservers: d.nameservers.map((n) => ({ objectClassName: 'nameserver', ldhName: n.toUpperCase() })),
    notices: [
      {
        title: 'Terms of Use',
        description: ['Lab data, not real.'],
        links: [{ href: `${d.selfBase}help`, rel: 'terms-of-service' }],
      },
    ],
    port43: 'whois.lab.test',
  };
}

/** The fixtures as served by a lab whose base URL (ending in "/") is `selfBase`. */
export function rdapFixtures(selfBase: string, now = new Date()): Map<string, RdapFixture> {
  const today = Math.floor(now.getTime() / DAY) * DAY;
  const at = (days: number) => new Date(today + days * DAY);
  const base = {
    registered: new Date('2019-03-01T12:00:00Z'),
    changed: at(-30),
    status: ['client transfer prohibited'],
    signed: false,
    selfBase,
  };
  const domain = (spec: Omit<DomainSpec, keyof typeof base> & Partial<typeof base>): RdapFixture => ({
    kind: 'domain',
    body: domainObject({ ...base, ...spec }),
  });
  const n = rdapNames;
  return new Map<string, RdapFixture>([
    [
      n.registered,
      domain({
        name: n.registered,
        expires: at(400),
        nameservers: ['ns1.lab.test', 'ns2.lab.test'],
        status: ['active', 'client transfer prohibited'],
      }),
    ],
    [
      n.expired,
      domain({
        name: n.expired,
        expires: at(-10),
        nameservers: [`ns1.${n.expired}`, `ns2.${n.expired}`],
        status: ['client hold', 'auto renew period'],
      }),
    ],
    [
      n.expiringSoon,
      domain({
        name: n.expiringSoon,
        expires: at(10),
        nameservers: [`ns1.${n.expiringSoon}`, `ns2.${n.expiringSoon}`],
      }),
    ],
    [
      n.signed,
      domain({ name: n.signed, expires: at(700), nameservers: [`ns1.${n.signed}`, `ns2.${n.signed}`], signed: true }),
    ],
    [n.redirected, { kind: 'redirect', location: `/registry-b/domain/${n.redirected}` }],
    [`registry-b:${n.redirected}`, domain({ name: n.redirected, expires: at(200), nameservers: ['ns1.lab.test'] })],
    // A hop to a loopback address outside the test service's allowlist (LAB_ALLOW): refused by
    // the guard. Never a non-loopback address: a regressed guard would really connect to it.
    [
      n.redirectOutsideAllowlist,
      { kind: 'redirect', location: `http://${LAB_REFUSED_ADDRESS}/domain/${n.redirectOutsideAllowlist}` },
    ],
    [n.slow, { kind: 'hang' }],
    [
      n.serverError,
      {
        kind: 'status',
        status: 500,
        body: { errorCode: 500, title: 'Internal Server Error', description: ['The lab plays a broken registry.'] },
      },
    ],
  ]);
}

/** RFC 9083 §6 error body for names the lab does not know. */
export function notFoundBody(name: string): Record<string, unknown> {
  return {
    rdapConformance: ['rdap_level_0'],
    errorCode: 404,
    title: 'Not Found',
    description: [`${name} is not registered in the lab`],
  };
}
