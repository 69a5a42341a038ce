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
//   aliased.changes.test  A .18                   CNAME into servfail.changes-broken.test, whose
//                                                 servers answer SERVFAIL (the address: never "gone")
//   refusing.changes.test A .19                   CNAME into refused.changes-broken.test (REFUSED)
//   dual.changes.test     A .20, AAAA ::ffff:.20  the same; its AAAA questions go unanswered
//                                                 (a gap: neither "changed" nor "gone")
//   deep.changes.test     A .21; a.deep.changes.test A .22: deep is a level (its wildcard probe
//                                                 runs); in state 2 deep's own questions all SERVFAIL
//   https://changes.test/ every security header   no X-Content-Type-Options
//   mx2.changes.test      A .24, a second MX      its A and AAAA questions go unanswered (the
//                         (nothing on port 25)    mail lookup's MX host: a gap, not "changed")
//   recovers.changes.test SERVFAIL                A .25 (issue 44: the baseline's DNS task of a
//                                                 name failed, the new one observed: unconfirmed)
//   opens.changes.test    A .26; :80 answers, :443 resets the connection (no HTTPS: the target's
//                         answer)                 :443 serves HTTPS (gained: a change)
//   stalls.changes.test   A .23; :80 answers, :443 answers; in state 2 :443 accepts the request and
//                         never answers (a timeout: the web lookup's posture is a gap).
//   (opens and stalls are named by no record the scan follows: only their web lookups ask.)
//
// Names are found from the apex's SPF `a:` terms (a balanced scan's `spf` source), so the removed
// and the failing names are only asked again because the second scan rechecks its baseline's
// names (an SPF record naming a SERVFAIL name would leave the mail posture's SPF lane partial,
// and with it everything that lane observes: unconfirmed, rightly, but not what this lab shows);
// the same goes for the names whose DNS fails in state 2. The MX is the
// mail lab's mx1.good-mail.test (STARTTLS, DANE): the mail posture's lanes complete there.
// Addresses are 127.0.6.x (test/lab/addresses.ts); only the apex serves HTTP(S).
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { labHost } from './addresses.ts';
import type { LabContext, LabPart, LabPartFactory } from './serve.ts';
import { zoneApex, type Zone, type ZoneRecord } from './zones.ts';

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
  aliased: labHost('changes', 18),
  refusing: labHost('changes', 19),
  dual: labHost('changes', 20),
  /** dual's AAAA: IPv4-mapped, so the lab's one rule (loopback only) holds for it too. */
  dualV6: `::ffff:${labHost('changes', 20)}`,
  /** The same, as an object's key (RFC 5952). */
  dualV6Key: '::ffff:7f00:614',
  deep: labHost('changes', 21),
  underDeep: labHost('changes', 22),
  stalls: labHost('changes', 23),
  mx2: labHost('changes', 24),
  recovers: labHost('changes', 25),
  opens: labHost('changes', 26),
} as const;

/** The zone a state-2 alias points into: its servers fail (SERVFAIL, or REFUSED below `refused`). */
export const CHANGES_BROKEN_ZONE = 'changes-broken.test';

export const changesNames = {
  stays: `stays.${CHANGES_ZONE}`,
  moves: `moves.${CHANGES_ZONE}`,
  removed: `removed.${CHANGES_ZONE}`,
  flaky: `flaky.${CHANGES_ZONE}`,
  added: `added.${CHANGES_ZONE}`,
  aliased: `aliased.${CHANGES_ZONE}`,
  refusing: `refusing.${CHANGES_ZONE}`,
  dual: `dual.${CHANGES_ZONE}`,
  deep: `deep.${CHANGES_ZONE}`,
  underDeep: `a.deep.${CHANGES_ZONE}`,
  stalls: `stalls.${CHANGES_ZONE}`,
  mx2: `mx2.${CHANGES_ZONE}`,
  recovers: `recovers.${CHANGES_ZONE}`,
  opens: `opens.${CHANGES_ZONE}`,
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
  // a.deep.changes.test makes deep.changes.test a level: its wildcard probe runs, keyed by deep's name.
  const spfNames =
    state === 1
      ? [n.stays, n.moves, n.flaky, n.removed, n.aliased, n.refusing, n.dual, n.deep, n.underDeep, n.recovers]
      : [n.stays, n.moves, n.added, n.recovers];
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
    { name: '@', type: 'MX', data: { preference: 20, exchange: n.mx2 } },
    { name: 'mx2', type: 'A', data: changesAddresses.mx2 },
    { name: 'recovers', type: 'A', data: changesAddresses.recovers },
    { name: 'opens', type: 'A', data: changesAddresses.opens },
    { name: 'stalls', type: 'A', data: changesAddresses.stalls },
    { name: '@', type: 'TXT', data: [`v=spf1 ${spfNames.map((s) => `a:${s}`).join(' ')} -all`] },
    { name: '_dmarc', type: 'TXT', data: [`v=DMARC1; p=${state === 1 ? 'none' : 'reject'}`] },
    { name: 'stays', type: 'A', data: changesAddresses.stays },
    { name: 'moves', type: 'A', data: state === 1 ? changesAddresses.movesBefore : changesAddresses.movesAfter },
    { name: 'flaky', type: 'A', data: changesAddresses.flaky },
    ...(state === 1
      ? [
          { name: 'aliased', type: 'A', data: changesAddresses.aliased },
          { name: 'refusing', type: 'A', data: changesAddresses.refusing },
        ]
      : [
          { name: 'aliased', type: 'CNAME', data: `servfail.${CHANGES_BROKEN_ZONE}` },
          { name: 'refusing', type: 'CNAME', data: `refused.${CHANGES_BROKEN_ZONE}` },
        ]),
    { name: 'dual', type: 'A', data: changesAddresses.dual },
    { name: 'dual', type: 'AAAA', data: changesAddresses.dualV6 },
    { name: 'deep', type: 'A', data: changesAddresses.deep },
    { name: 'a.deep', type: 'A', data: changesAddresses.underDeep },
    ...(state === 1
      ? [{ name: 'removed', type: 'A', data: changesAddresses.removed }]
      : [{ name: 'added', type: 'A', data: changesAddresses.added }]),
  ];
  return {
    origin: CHANGES_ZONE,
    records,
    behaviours:
      state === 2
        ? [
            { name: 'flaky', behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } },
            { name: 'dual', types: ['AAAA'], behaviour: { kind: 'silent' } },
            { name: 'deep', behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } },
            { name: 'mx2', types: ['A', 'AAAA'], behaviour: { kind: 'silent' } },
          ]
        : [{ name: 'recovers', behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } }],
  };
}

/** The zone the state-2 aliases lead into: every name under it fails (REFUSED under `refused`). */
export function changesBrokenZone(): Zone {
  return {
    origin: CHANGES_BROKEN_ZONE,
    records: [
      ...zoneApex(CHANGES_BROKEN_ZONE),
      { name: 'servfail', type: 'A', data: changesAddresses.aliased },
      { name: 'refused', type: 'A', data: changesAddresses.refusing },
    ],
    behaviours: [
      { name: 'refused', subtree: true, behaviour: { kind: 'rcode', rcode: 'REFUSED' } },
      { name: 'servfail', subtree: true, behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } },
    ],
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
    const tls = { key: cert.keyPem, cert: cert.chainPem };
    // stalls: in state 2 its https side takes the request and never answers (held until the
    // client gives up: a timeout, no fact about the site).
    const held = new Set<http.ServerResponse>();
    const stalling: http.RequestListener = (req, res) => {
      if (state === 1) return page(req, res);
      held.add(res);
      res.on('close', () => held.delete(res));
    };
    // opens: :443 resets every connection in state 1 (the target's answer: no HTTPS), serves in 2.
    const opensHttps = https.createServer(tls, page);
    const opens443 = net.createServer((socket) => {
      if (state === 1) socket.resetAndDestroy();
      else opensHttps.emit('connection', socket);
    });
    await ctx.listen(80, [
      { host: changesAddresses.apex, server: http.createServer(toHttps) },
      { host: changesAddresses.stalls, server: http.createServer(page) },
      { host: changesAddresses.opens, server: http.createServer(page) },
    ]);
    await ctx.listen(443, [
      { host: changesAddresses.apex, server: https.createServer(tls, page) },
      { host: changesAddresses.stalls, server: https.createServer(tls, stalling) },
      { host: changesAddresses.opens, server: opens443 },
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
      zones: [changesZone(1), changesBrokenZone()],
      attachDns: (dns) => {
        setZone = dns.setZone;
      },
      close: async () => {
        for (const res of held) res.destroy();
      },
    };
  };
}
