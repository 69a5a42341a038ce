// The change-detection lab (CONTRACT §13): one zone, changes.test, served in two states that a
// test switches between two jobs, and its web host, whose page drops a header in the second.
//
//   name                  state 1                 state 2
//   changes.test          A .10, SPF a:stays a:moves a:flaky a:removed, DMARC p=none
//                                                 SPF a:stays a:moves a:added, DMARC p=reject
//   stays.changes.test    A .12                   A .12                 (unchanged)
//   moves.changes.test    A .14                   A .15                 (changes address)
//   removed.changes.test  A .13                   NXDOMAIN              (removed)
//   flaky.changes.test    A .16                   SERVFAIL              (its DNS fails: never "gone")
//   added.changes.test    NXDOMAIN                A .17                 (appears)
//   https://changes.test/ every security header   no X-Content-Type-Options
//
// Names are found from the apex's SPF `a:` terms (a balanced scan's `spf` source), so the removed
// and the failing names are only asked again because the second scan rechecks its baseline's
// names (an SPF record naming a SERVFAIL name would leave the mail posture's SPF lane partial,
// and with it everything that lane observes: unconfirmed, rightly, but not what this lab shows). The MX is the
// mail lab's mx1.good-mail.test (STARTTLS, DANE): the mail posture's lanes complete there.
// Addresses are 127.0.6.x (test/lab/addresses.ts); only the apex serves HTTP(S).
import http from 'node:http';
import https from 'node:https';
import { labHost } from './addresses.ts';
import type { LabContext, LabPart, LabPartFactory } from './serve.ts';
import type { Zone, ZoneRecord } from './zones.ts';

export const CHANGES_ZONE = 'changes.test';
export type ChangesState = 1 | 2;

export const changesAddresses = {
  apex: labHost('changes', 10),
  stays: labHost('changes', 12),
  removed: labHost('changes', 13),
  movesBefore: labHost('changes', 14),
  movesAfter: labHost('changes', 15),
  flaky: labHost('changes', 16),
  added: labHost('changes', 17),
} as const;

export const changesNames = {
  stays: `stays.${CHANGES_ZONE}`,
  moves: `moves.${CHANGES_ZONE}`,
  removed: `removed.${CHANGES_ZONE}`,
  flaky: `flaky.${CHANGES_ZONE}`,
  added: `added.${CHANGES_ZONE}`,
} as const;

export interface ChangesLab {
  readonly state: ChangesState;
  /** Serves the zone and the page of this state from now on. */
  setState(state: ChangesState): void;
}

const HEADERS: Record<string, string> = {
  'strict-transport-security': 'max-age=63072000; includeSubDomains',
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'content-security-policy': "default-src 'self'; frame-ancestors 'none'",
};

export function changesZone(state: ChangesState): Zone {
  const n = changesNames;
  const spfNames = state === 1 ? [n.stays, n.moves, n.flaky, n.removed] : [n.stays, n.moves, n.added];
  const records: ZoneRecord[] = [
    {
      name: '@',
      type: 'SOA',
      ttl: 3600,
      data: {
        mname: `ns1.${CHANGES_ZONE}`,
        rname: `hostmaster.${CHANGES_ZONE}`,
        serial: 2026112800 + state,
        refresh: 7200,
        retry: 900,
        expire: 1209600,
        minimum: 300,
      },
    },
    { name: '@', type: 'NS', data: `ns1.${CHANGES_ZONE}` },
    // The lab DNS server itself: the zone lane asks its name server directly.
    { name: 'ns1', type: 'A', data: '127.0.0.1' },
    { name: '@', type: 'A', data: changesAddresses.apex },
    { name: 'www', type: 'CNAME', data: CHANGES_ZONE },
    { name: '@', type: 'MX', data: { preference: 10, exchange: 'mx1.good-mail.test' } },
    { name: '@', type: 'TXT', data: [`v=spf1 ${spfNames.map((s) => `a:${s}`).join(' ')} -all`] },
    { name: '_dmarc', type: 'TXT', data: [`v=DMARC1; p=${state === 1 ? 'none' : 'reject'}`] },
    { name: 'stays', type: 'A', data: changesAddresses.stays },
    { name: 'moves', type: 'A', data: state === 1 ? changesAddresses.movesBefore : changesAddresses.movesAfter },
    { name: 'flaky', type: 'A', data: changesAddresses.flaky },
    ...(state === 1
      ? [{ name: 'removed', type: 'A', data: changesAddresses.removed }]
      : [{ name: 'added', type: 'A', data: changesAddresses.added }]),
  ];
  return {
    origin: CHANGES_ZONE,
    records,
    behaviours: state === 2 ? [{ name: 'flaky', behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } }] : [],
  };
}

export function changesLabPart(opts: { onReady?(lab: ChangesLab): void } = {}): LabPartFactory {
  return async (ctx: LabContext): Promise<LabPart> => {
    let state: ChangesState = 1;
    let setZone: ((zone: Zone) => void) | undefined;
    const page: http.RequestListener = (_req, res) => {
      const headers = { ...HEADERS };
      if (state === 2) delete headers['x-content-type-options'];
      const body = `<!doctype html><html><head><title>${CHANGES_ZONE}</title></head><body>state ${state}</body></html>`;
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'content-length': Buffer.byteLength(body),
        ...headers,
      });
      res.end(body);
    };
    const toHttps: http.RequestListener = (req, res) => {
      res.writeHead(301, { location: `https://${String(req.headers.host ?? CHANGES_ZONE).split(':')[0]}/` });
      res.end();
    };
    const cert = await ctx.ca.issue({ names: [CHANGES_ZONE, `*.${CHANGES_ZONE}`] });
    await ctx.listen(80, [{ host: changesAddresses.apex, server: http.createServer(toHttps) }]);
    await ctx.listen(443, [
      {
        host: changesAddresses.apex,
        server: https.createServer({ key: cert.keyPem, cert: cert.chainPem }, page),
      },
    ]);
    const lab: ChangesLab = {
      get state() {
        return state;
      },
      setState(next) {
        state = next;
        setZone?.(changesZone(next));
      },
    };
    opts.onReady?.(lab);
    return {
      name: 'changes',
      zones: [changesZone(1)],
      attachDns: (dns) => {
        setZone = dns.setZone;
      },
      close: async () => {},
    };
  };
}
