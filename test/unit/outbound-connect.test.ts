// The guard's name resolution (the project's resolver, present / absent / indeterminate) and its
// raw TCP and TLS connections, against the DNS lab and real servers on loopback with certificates
// from the lab CA (trusted through NODE_EXTRA_CA_CERTS, which `npm test` sets).
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { StubResolver } from '../../src/dns/stub-resolver.ts';
import { parseServer } from '../../src/config/dns-servers.ts';
import {
  createOutboundGuard,
  OutboundFetchError,
  OutboundRefusedError,
  hostResolverOver,
} from '../../src/net/outbound-guard.ts';
import { parsePortMap } from '../../src/config/port-map.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { labNames } from '../lab/zones.ts';
import { loadLabCa } from '../lab/ca.ts';
import { listenOnHosts, type Listening } from '../lab/multi-host.ts';
import { LAB_ALLOW, LAB_REFUSED_ADDRESS } from '../lab/addresses.ts';
import type { Zone } from '../lab/zones.ts';
import { handshakeFacts } from '../../src/net/tls-facts.ts';
import { ocspStapled } from '../../src/net/outbound-guard.ts';
import { parseCertificate } from '../../src/net/certificate.ts';
import type { Issued } from '../lab/ca.ts';

const zone: Zone = {
  origin: 'guard.lab.test',
  records: [
    {
      name: '@',
      type: 'SOA',
      data: { mname: 'ns1.lab.test', rname: 'h.lab.test', serial: 1, refresh: 1, retry: 1, expire: 1, minimum: 1 },
    },
    { name: 'tls', type: 'A', data: '127.0.0.71' },
    { name: 'refused', type: 'A', data: LAB_REFUSED_ADDRESS },
    { name: 'mixed', type: 'A', data: '127.0.0.71' },
    { name: 'mixed', type: 'A', data: LAB_REFUSED_ADDRESS },
    { name: 'v4only', type: 'A', data: '127.0.0.72' },
    { name: 'web', type: 'A', data: '127.0.0.77' },
    { name: 'wrongname', type: 'A', data: '127.0.0.77' },
  ],
  behaviours: [{ name: 'half', behaviour: { kind: 'rcode', rcode: 'SERVFAIL' }, types: ['AAAA'] }],
};

let dns: LabDns;
let resolver: StubResolver;
let tlsLab: Listening;
let refusedLab: Listening;
let refusedConnections = 0;
let factsLab: Listening;
let webLab: Listening;
const issued: Record<string, Issued> = {};
const DAY = 86_400_000;

beforeAll(async () => {
  dns = await startLabDns({ zones: [zone, ...(await import('../lab/zones.ts')).labZones] });
  resolver = new StubResolver({ servers: [parseServer(dns.address)!], timeoutMs: 300 });
  const ca = await loadLabCa();
  const good = await ca.issue({ names: ['tls.guard.lab.test'] });
  const server = tls.createServer({ key: good.keyPem, cert: good.chainPem }, (s) => s.end('hello over tls\n'));
  tlsLab = await listenOnHosts([{ host: '127.0.0.71', server }]);
  const counter = net.createServer((s) => {
    refusedConnections++;
    s.destroy();
  });
  refusedLab = await listenOnHosts([{ host: LAB_REFUSED_ADDRESS, server: counter }], { port: tlsLab.port });
  // One host per certificate posture, all on one port (as the lab's HTTPS hosts are).
  issued.good = good;
  issued.expired = await ca.issue({
    names: ['facts.guard.lab.test'],
    notBefore: new Date(Date.now() - 100 * DAY),
    notAfter: new Date(Date.now() - DAY),
  });
  issued.selfSigned = await ca.issue({ names: ['facts.guard.lab.test'], selfSigned: true });
  issued.rsa = await ca.issue({ names: ['facts.guard.lab.test'], key: { type: 'rsa', bits: 2048 } });
  const hosts = { expired: '127.0.0.74', selfSigned: '127.0.0.75', rsa: '127.0.0.76' } as const;
  // An HTTPS server whose certificate names web.guard.lab.test only (wrongname shares its address).
  const web = await ca.issue({ names: ['web.guard.lab.test'] });
  webLab = await listenOnHosts([
    {
      host: '127.0.0.77',
      server: https.createServer({ key: web.keyPem, cert: web.chainPem }, (_req, res) => res.end('ok')),
    },
  ]);
  factsLab = await listenOnHosts(
    Object.entries(hosts).map(([k, host]) => ({
      host,
      server: tls.createServer({ key: issued[k]!.keyPem, cert: issued[k]!.chainPem }, (s) => s.end()),
    })),
  );
});

afterAll(async () => {
  await Promise.all([dns?.close(), tlsLab?.close(), refusedLab?.close(), factsLab?.close(), webLab?.close()]);
  expect(refusedConnections).toBe(0);
});

describe('hostResolverOver: host addresses by the DNS rule', () => {
  it('present: the addresses of A (a SERVFAIL on AAAA does not hide them)', async () => {
    const r = hostResolverOver(resolver);
    expect(await r('v4only.guard.lab.test')).toEqual(['127.0.0.72']);
    expect(await r(labNames.apex)).toEqual(expect.arrayContaining(['127.0.0.10', '::1']));
  });

  it('absent only on NXDOMAIN / NODATA for both types: host_not_found', async () => {
    const err = await hostResolverOver(resolver)(labNames.nxdomain).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutboundFetchError);
    expect((err as OutboundFetchError).kind).toBe('host_not_found');
  });

  it('indeterminate (SERVFAIL, timeout) is a dns_failure, never host_not_found', async () => {
    for (const name of [labNames.servfail, labNames.timeout, 'half.guard.lab.test']) {
      const err = await hostResolverOver(resolver)(name).catch((e: unknown) => e);
      expect((err as OutboundFetchError).kind, name).toBe('dns_failure');
    }
  });
});

describe('the guard object: vetted connections only', () => {
  const portMap = () => parsePortMap(`443=${tlsLab.port}`)!;
  const guard = (allow: string[]) => createOutboundGuard({ allow, resolver, portMap: portMap() });

  it('resolve() refuses a host when any address is outside the allowlist', async () => {
    expect(await guard([LAB_ALLOW]).resolve('tls.guard.lab.test')).toEqual(['127.0.0.71']);
    const err = await guard([LAB_ALLOW])
      .resolve('mixed.guard.lab.test')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutboundRefusedError);
    expect(err).toMatchObject({ reason: 'target_not_allowed', range: 'loopback', host: 'mixed.guard.lab.test' });
  });

  it('connectTcp / connectTls refuse an address outside the allowlist before connecting', async () => {
    const g = guard([LAB_ALLOW]);
    await expect(g.connectTcp({ address: LAB_REFUSED_ADDRESS, port: 443 })).rejects.toBeInstanceOf(
      OutboundRefusedError,
    );
    await expect(
      g.connectTls({ address: LAB_REFUSED_ADDRESS, port: 443, servername: 'refused.guard.lab.test' }),
    ).rejects.toBeInstanceOf(OutboundRefusedError);
    await expect(guard([]).connectTcp({ address: '127.0.0.71', port: 443 })).rejects.toMatchObject({
      reason: 'target_not_allowed',
      range: 'loopback',
    });
  });

  it('connectTls maps port 443 to the lab port and trusts the lab CA (NODE_EXTRA_CA_CERTS)', async () => {
    const [address] = await guard([LAB_ALLOW]).resolve('tls.guard.lab.test');
    const socket = await guard([LAB_ALLOW]).connectTls({
      address: address!,
      port: 443,
      servername: 'tls.guard.lab.test',
    });
    expect(socket.authorized).toBe(true);
    const line = await new Promise<string>((r) => socket.once('data', (d) => r(String(d))));
    expect(line).toBe('hello over tls\n');
    socket.destroy();
  });

  it('a certificate for another name is reported, not hidden, with rejectUnauthorized false', async () => {
    const socket = await guard([LAB_ALLOW]).connectTls(
      { address: '127.0.0.71', port: 443, servername: 'other.guard.lab.test' },
      { tls: { rejectUnauthorized: false } },
    );
    // The chain is trusted (the lab CA); the name is not: Node reports the mismatch as the reason.
    expect(socket.authorized).toBe(false);
    expect(String(socket.authorizationError)).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
    expect(tls.checkServerIdentity('other.guard.lab.test', socket.getPeerCertificate())).toBeInstanceOf(Error);
    expect(tls.checkServerIdentity('tls.guard.lab.test', socket.getPeerCertificate())).toBeUndefined();
    socket.destroy();
    const strict = await guard([LAB_ALLOW])
      .connectTls({ address: '127.0.0.71', port: 443, servername: 'other.guard.lab.test' })
      .catch((e: unknown) => e);
    expect(strict).toBeInstanceOf(OutboundFetchError);
    expect((strict as OutboundFetchError).kind).toBe('connection_failed');
  });

  it('a connection that cannot be made within the time is a timeout; refused ports are connection_failed', async () => {
    const closed = await guard([LAB_ALLOW])
      .connectTcp({ address: '127.0.0.73', port: 9 })
      .catch((e: unknown) => e);
    expect((closed as OutboundFetchError).kind).toBe('connection_failed');
  });
});

describe('handshakeFacts: trust, name and chain as separate facts', () => {
  const guard = () =>
    createOutboundGuard({ allow: [LAB_ALLOW], resolver, portMap: parsePortMap(`443=${factsLab.port}`)! });
  const handshake = (address: string) =>
    guard().connectTls(
      { address, port: 443, servername: 'facts.guard.lab.test' },
      { tls: { rejectUnauthorized: false, requestOCSP: true } },
    );

  it('a good chain: trusted, the name matches, the path runs to the lab root, no stapled OCSP', async () => {
    const g = createOutboundGuard({ allow: [LAB_ALLOW], resolver, portMap: parsePortMap(`443=${tlsLab.port}`)! });
    const s = await g.connectTls(
      { address: '127.0.0.71', port: 443, servername: 'tls.guard.lab.test' },
      { tls: { rejectUnauthorized: false, requestOCSP: true } },
    );
    const f = handshakeFacts(s, 'tls.guard.lab.test', ocspStapled(s));
    s.destroy();
    expect(f).toMatchObject({ chainTrusted: true, trustError: null, hostnameMatch: true, ocspStapled: false });
    expect(f.protocol).toMatch(/^TLSv1\.[23]$/);
    expect(f.chain).toHaveLength(3); // leaf, lab intermediate, lab root (the trust anchor)
    expect(Buffer.from(f.chain[0]!, 'base64').equals(issued.good!.certDer)).toBe(true);
  });

  describe('the peer chain is converted to objects once at most per socket (peer-certificate.ts)', () => {
    afterEach(() => vi.restoreAllMocks());
    const detailedConversions = () => {
      const spy = vi.spyOn(tls.TLSSocket.prototype, 'getPeerCertificate');
      return () => spy.mock.calls.filter(([detailed]) => detailed === true).length;
    };

    it("a trusted handshake: Node's host-name check and handshakeFacts share one conversion", async () => {
      const count = detailedConversions();
      const g = createOutboundGuard({ allow: [LAB_ALLOW], resolver, portMap: parsePortMap(`443=${tlsLab.port}`)! });
      const s = await g.connectTls(
        { address: '127.0.0.71', port: 443, servername: 'tls.guard.lab.test' },
        { tls: { rejectUnauthorized: false } },
      );
      expect(count()).toBe(1); // Node's own, in its host-name check
      const f = handshakeFacts(s, 'tls.guard.lab.test');
      expect(handshakeFacts(s, 'other.guard.lab.test').hostnameMatch).toBe(false);
      s.destroy();
      expect(count()).toBe(1);
      expect(f).toMatchObject({ chainTrusted: true, hostnameMatch: true });
      expect(f.chain).toHaveLength(3);
      expect(Buffer.from(f.chain[0]!, 'base64').equals(issued.good!.certDer)).toBe(true);
    });

    it('an untrusted handshake (Node makes no host-name check): handshakeFacts converts it, once', async () => {
      const count = detailedConversions();
      const s = await handshake('127.0.0.75');
      expect(count()).toBe(0);
      expect(handshakeFacts(s, 'facts.guard.lab.test')).toMatchObject({ chainTrusted: false, hostnameMatch: true });
      expect(count()).toBe(1);
      s.destroy();
    });

    it("a fetch: Node's host-name check reads the leaf alone and still refuses another name", async () => {
      const count = detailedConversions();
      const g = createOutboundGuard({ allow: [LAB_ALLOW], resolver, portMap: parsePortMap(`443=${webLab.port}`)! });
      const ok = await g.fetch('https://web.guard.lab.test/', { timeoutMs: 5000 });
      expect(ok.status).toBe(200);
      expect(ok.body.toString()).toBe('ok');
      expect(ok.tlsVerified).toBe(true);
      const wrong = await g.fetch('https://wrongname.guard.lab.test/', { timeoutMs: 5000 }).catch((e: unknown) => e);
      expect(wrong).toBeInstanceOf(OutboundFetchError);
      expect(wrong).toMatchObject({ kind: 'tls_failed', code: 'ERR_TLS_CERT_ALTNAME_INVALID' });
      // Unverified, the same name is read (the http lane's second reading of a broken chain).
      const unverified = await g.fetch('https://wrongname.guard.lab.test/', { timeoutMs: 5000, verifyTls: false });
      expect(unverified.status).toBe(200);
      expect(count()).toBe(0);
    });
  });

  it('expired and self-signed are untrusted with their reason; the name still matches', async () => {
    const expired = await handshake('127.0.0.74');
    expect(handshakeFacts(expired, 'facts.guard.lab.test')).toMatchObject({
      chainTrusted: false,
      trustError: 'CERT_HAS_EXPIRED',
      hostnameMatch: true,
    });
    expired.destroy();
    const self = await handshake('127.0.0.75');
    expect(handshakeFacts(self, 'facts.guard.lab.test')).toMatchObject({
      chainTrusted: false,
      trustError: 'DEPTH_ZERO_SELF_SIGNED_CERT',
      hostnameMatch: true,
    });
    expect(handshakeFacts(self, 'other.guard.lab.test').hostnameMatch).toBe(false);
    self.destroy();
  });

  it('parseCertificate gives key facts and the DANE digests of what was presented', async () => {
    const s = await handshake('127.0.0.76');
    const f = handshakeFacts(s, 'facts.guard.lab.test');
    s.destroy();
    const info = parseCertificate({ der: f.chain[0]! });
    expect(info).toMatchObject({
      keyType: 'rsa',
      keyBits: 2048,
      curve: null,
      signatureAlgorithm: 'ecdsa-with-SHA256',
      sans: ['facts.guard.lab.test'],
    });
    const { createHash } = await import('node:crypto');
    expect(info.digests.spkiSha256).toBe(createHash('sha256').update(issued.rsa!.spkiDer).digest('hex'));
    expect(info.digests.certSha512).toBe(createHash('sha512').update(issued.rsa!.certDer).digest('hex'));
    expect(parseCertificate(issued.good!.certPem)).toMatchObject({ keyType: 'ec', keyBits: 256, curve: 'prime256v1' });
  });
});

describe('OUTBOUND_PORT_MAP', () => {
  it('parses port=port pairs and rejects anything else', () => {
    expect([...parsePortMap('25=2525, 443=8443')!]).toEqual([
      [25, 2525],
      [443, 8443],
    ]);
    expect(parsePortMap('')!.size).toBe(0);
    for (const bad of ['25', '25=', '0=1', '25=70000', '25=1,25=2', 'a=b']) expect(parsePortMap(bad), bad).toBeNull();
  });
});
