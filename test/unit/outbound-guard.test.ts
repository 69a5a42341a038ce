// The outbound guard: the address table, then real HTTP servers on loopback (no mocks): refused
// by default, allowed by ALLOW_PRIVATE_TARGETS-style CIDRs, redirects re-checked on every hop,
// the connection pinned to the vetted address, the body and the time capped.
import http from 'node:http';
import net, { type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyAddress, isAllowedTarget, setNat64Prefixes } from '../../src/net/address-policy.ts';
import { checkUrl } from '../../src/net/url-policy.ts';
import {
  createOutboundGuard,
  OutboundFetchError,
  OutboundRefusedError,
  type GuardedFetchOptions,
  type HostResolver,
} from '../../src/net/outbound-guard.ts';
import { guardedFetch as rawGuardedFetch } from '../../src/net/guarded-fetch.ts';

/** These servers are addressed by literal IPs; a test that needs names brings its own resolver. */
const noNames: HostResolver = async (host) => {
  throw new Error(`this test resolves no names (${host})`);
};
const guardedFetch = (url: string, opts: Omit<GuardedFetchOptions, 'resolver'> & { resolver?: HostResolver }) =>
  rawGuardedFetch(url, { resolver: noNames, ...opts });

describe('isAllowedTarget: the address table', () => {
  const refused: Array<[string, string]> = [
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fc00::1', 'private'],
    ['169.254.169.254', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['168.63.129.16', 'metadata'],
    ['169.254.1.1', 'link_local'],
    ['fe80::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['192.0.0.8', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['2001:db8::1', 'documentation'],
    ['2001::1', 'reserved'], // Teredo
    ['2002:7f00:1::1', 'reserved'], // 6to4
    ['::127.0.0.1', 'reserved'], // IPv4-compatible
    ['fec0::1', 'reserved'],
    ['4000::1', 'reserved'], // outside 2000::/3
    // IPv4-mapped and NAT64 forms take the class of the IPv4 address inside.
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:10.0.0.1', 'private'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['64:ff9b:1::1', 'private'],
    // Not canonical addresses: never allowed.
    ['127.1', 'invalid'],
    ['0x7f.0.0.1', 'invalid'],
    ['example.com', 'invalid'],
    ['', 'invalid'],
  ];
  it.each(refused)('%s is refused (%s)', (ip, range) => {
    expect(classifyAddress(ip)).toBe(range);
    expect(isAllowedTarget(ip, [])).toBe(false);
  });

  const allowed = [
    '8.8.8.8',
    '1.1.1.1',
    '93.184.215.14',
    '100.63.255.255',
    '100.128.0.1',
    '172.32.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
  ];
  it.each(allowed)('%s is public', (ip) => {
    expect(classifyAddress(ip)).toBe('public');
    expect(isAllowedTarget(ip, [])).toBe(true);
  });

  it('an allowed CIDR lets exactly its addresses through, mapped forms included', () => {
    const allow = ['127.0.0.0/8', 'fd00::/8'];
    expect(isAllowedTarget('127.0.0.1', allow)).toBe(true);
    expect(isAllowedTarget('::ffff:127.0.0.1', allow)).toBe(true);
    expect(isAllowedTarget('fd00::5', allow)).toBe(true);
    expect(isAllowedTarget('fd00:ec2::254', allow)).toBe(true); // the operator asked for all of fd00::/8
    expect(isAllowedTarget('10.0.0.1', allow)).toBe(false);
    expect(isAllowedTarget('169.254.169.254', allow)).toBe(false);
    expect(isAllowedTarget('::1', allow)).toBe(false);
    expect(isAllowedTarget('127.0.0.1', ['127.0.0.1/32'])).toBe(true);
    expect(isAllowedTarget('127.0.0.2', ['127.0.0.1/32'])).toBe(false);
    expect(isAllowedTarget('127.0.0.1', ['not-a-cidr'])).toBe(false);
    expect(isAllowedTarget('127.1', ['127.0.0.0/8'])).toBe(false);
  });
});

// ---- guardedFetch against real servers --------------------------------------------------------

interface TestServer {
  port: number;
  url: (path?: string, host?: string) => string;
  hosts: string[];
  close(): Promise<void>;
}

async function serve(host: string, handler: http.RequestListener): Promise<TestServer> {
  const hosts: string[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    hosts.push(String(req.headers.host));
    handler(req, res);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, host, () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    hosts,
    url: (path = '/', h = host) => `http://${h}:${port}${path}`,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        for (const s of sockets) s.destroy();
      }),
  };
}

let a: TestServer; // 127.0.0.1
let b: TestServer; // 127.0.0.2: loopback too, outside 127.0.0.1/32

beforeAll(async () => {
  b = await serve('127.0.0.2', (_req, res) => {
    res.end('from b');
  });
  a = await serve('127.0.0.1', (req, res) => {
    const path = req.url ?? '/';
    if (path === '/hello') return res.end('hello');
    if (path === '/to-b') return res.writeHead(302, { location: b.url('/') }).end();
    if (path === '/to-relative') return res.writeHead(307, { location: '/hello' }).end();
    if (path === '/loop') return res.writeHead(302, { location: '/loop' }).end();
    if (path === '/to-ftp') return res.writeHead(302, { location: 'ftp://127.0.0.1/' }).end();
    if (path === '/big') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' }); // chunked, no length
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      for (let i = 0; i < 40; i++) res.write(chunk);
      return res.end();
    }
    if (path === '/declared-big') return res.writeHead(200, { 'content-length': String(5 * 1024 * 1024) }).end();
    if (path === '/hang') return; // never answers
    if (path === '/to-numeric') return res.writeHead(302, { location: `http://2130706433:${a.port}/hello` }).end();
    if (path === '/to-numeric-relative') return res.writeHead(302, { location: `//0x7f.1:${a.port}/hello` }).end();
    if (path === '/huge-headers') {
      res.writeHead(200, Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`x-big-${i}`, 'v'.repeat(4000)])));
      return res.end('x');
    }
    if (path === '/slow-headers') {
      res.socket?.write('HTTP/1.1 200 OK\r\n');
      return; // the head never ends
    }
    if (path === '/hsts-hop')
      return res.writeHead(301, { location: '/hello', 'strict-transport-security': 'max-age=1' }).end();
    res.writeHead(404).end();
  });
});

afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

async function refusal(p: Promise<unknown>): Promise<OutboundRefusedError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OutboundRefusedError);
  return err as OutboundRefusedError;
}

async function failure(p: Promise<unknown>): Promise<OutboundFetchError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OutboundFetchError);
  return err as OutboundFetchError;
}

describe('NAT64_PREFIXES: network-specific prefixes are judged by the IPv4 address they embed (issue 45 item 10)', () => {
  it('every RFC 6052 prefix length decodes; without the setting the address is judged as itself', () => {
    // Documentation prefixes only (no real network here): unset, they are 'documentation'.
    // 10.0.0.5 = 0a 00 00 05 and 169.254.169.254 = a9 fe a9 fe, placed as RFC 6052 §2.2 says.
    const cases: Array<[string, string, string]> = [
      ['2001:db8::/32', '2001:db8:a00:5::', 'private'],
      ['2001:db8:100::/40', '2001:db8:10a:0:5::', 'private'],
      ['2001:db8:122::/48', '2001:db8:122:a00:5::', 'private'],
      ['2001:db8:122:300::/56', '2001:db8:122:30a:0:5::', 'private'],
      ['2001:db8:122:344::/64', '2001:db8:122:344:a:5::', 'private'],
      ['2001:db8:122:344::/96', '2001:db8:122:344::a9fe:a9fe', 'metadata'],
    ];
    try {
      for (const [prefix, address, range] of cases) {
        setNat64Prefixes([]);
        expect(classifyAddress(address), `${address} unset`).toBe('documentation');
        setNat64Prefixes([prefix]);
        expect(classifyAddress(address), `${address} under ${prefix}`).toBe(range);
      }
      setNat64Prefixes(['2001:db8:122:344::/96']);
      expect(classifyAddress('2001:db8:122:344::808:808')).toBe('public');
    } finally {
      setNat64Prefixes([]);
    }
  });
});

describe('checkUrl: URL forms refused before anything is resolved (pure data)', () => {
  const refused: Array<[string, string]> = [
    ['http://2130706433/', 'numeric_host_form'],
    ['http://0x7f.1/', 'numeric_host_form'],
    ['http://017700000001/', 'numeric_host_form'],
    ['http://127.1/', 'numeric_host_form'],
    ['http://0x7f000001/', 'numeric_host_form'],
    ['http://127.0.0.1./', 'numeric_host_form'],
    ['http://１２７.０.０.１/', 'numeric_host_form'],
    ['http://%31%32%37.0.0.1/', 'encoded_host'],
    ['http://169.254.169.254.nip/', 'ok'],
    ['http://user@example.com/', 'credentials_not_allowed'],
    ['http://:pw@example.com/', 'credentials_not_allowed'],
    ['ftp://example.com/', 'scheme_not_allowed'],
    ['file:///etc/passwd', 'scheme_not_allowed'],
    ['gopher://example.com/', 'scheme_not_allowed'],
    ['https:///x', 'authority_form'],
    ['http:\\\\example.com/', 'authority_form'],
    ['http:example.com', 'authority_form'],
    ['http://example.com/\n', 'control_characters'],
    [' http://example.com/', 'control_characters'],
    ['http://example.com:0/', 'bad_port'],
    [`http://example.com/${'a'.repeat(2030)}`, 'too_long'],
    ['example.com', 'not_a_url'],
  ];
  it.each(refused)('%s → %s', (url, problem) => {
    const v = checkUrl(url);
    expect(v.ok ? 'ok' : v.problem).toBe(problem);
  });
  it.each([
    'http://example.com/',
    'https://example.com:8443/a?b=c#d',
    'http://8.8.8.8/',
    'http://[2001:4860::8888]/',
    'HTTPS://EXAMPLE.COM',
  ])('%s is accepted', (url) => {
    expect(checkUrl(url).ok).toBe(true);
  });
});

describe('guardedFetch', () => {
  it('refuses a loopback server by default, before connecting', async () => {
    const before = a.hosts.length;
    const err = await refusal(guardedFetch(a.url('/hello'), { allow: [] }));
    expect(err).toMatchObject({ reason: 'target_not_allowed', range: 'loopback', host: '127.0.0.1' });
    expect(a.hosts.length).toBe(before);
  });

  it('fetches it when ALLOW_PRIVATE_TARGETS covers it', async () => {
    const res = await guardedFetch(a.url('/hello'), { allow: ['127.0.0.0/8'] });
    expect(res).toMatchObject({ status: 200, redirects: 0, url: a.url('/hello') });
    expect(res.body.toString()).toBe('hello');
  });

  it('follows a redirect and re-checks the next hop: allowed → refused is refused', async () => {
    const before = b.hosts.length;
    const err = await refusal(guardedFetch(a.url('/to-b'), { allow: ['127.0.0.1/32'] }));
    expect(err).toMatchObject({ reason: 'target_not_allowed', host: '127.0.0.2' });
    expect(b.hosts.length).toBe(before); // never connected to b
    // With both allowed, the same redirect is followed.
    const ok = await guardedFetch(a.url('/to-b'), { allow: ['127.0.0.0/8'] });
    expect(ok).toMatchObject({ status: 200, redirects: 1, url: b.url('/') });
    expect(ok.body.toString()).toBe('from b');
  });

  it("redirects: 'return' answers the redirect itself and never connects to its target (a webhook delivery)", async () => {
    const before = b.hosts.length;
    const res = await guardedFetch(a.url('/to-b'), {
      allow: ['127.0.0.0/8'],
      method: 'POST',
      body: '{"x":1}',
      redirects: 'return',
      plainHttp: 'allow-listed-only',
    });
    expect(res).toMatchObject({ status: 302, redirects: 0, url: a.url('/to-b') });
    expect(b.hosts.length).toBe(before);
  });

  it('resolves relative redirects; refuses other schemes; caps the number of hops', async () => {
    const rel = await guardedFetch(a.url('/to-relative'), { allow: ['127.0.0.0/8'] });
    expect(rel.body.toString()).toBe('hello');
    expect((await refusal(guardedFetch(a.url('/to-ftp'), { allow: ['127.0.0.0/8'] }))).reason).toBe(
      'scheme_not_allowed',
    );
    expect((await failure(guardedFetch(a.url('/loop'), { allow: ['127.0.0.0/8'], maxRedirects: 3 }))).kind).toBe(
      'too_many_redirects',
    );
    expect((await refusal(guardedFetch('file:///etc/passwd', { allow: ['127.0.0.0/8'] }))).reason).toBe(
      'scheme_not_allowed',
    );
  });

  it('refuses a host when ANY of its addresses is refused', async () => {
    // Both loopback: a regressed guard could only ever connect to this machine.
    const before = a.hosts.length;
    const resolver = async () => ['127.0.0.1', '127.200.0.1'];
    const err = await refusal(
      guardedFetch(`http://mixed.lab.test:${a.port}/hello`, { allow: ['127.0.0.1/32'], resolver }),
    );
    expect(err).toMatchObject({ reason: 'target_not_allowed', host: 'mixed.lab.test', range: 'loopback' });
    expect(a.hosts.length).toBe(before);
  });

  it('connects to the vetted address, not to a second lookup, and keeps the Host header', async () => {
    // No system resolver knows this name: only the vetted address can have been used.
    let lookups = 0;
    const resolver = async (host: string) => {
      lookups++;
      return host === 'pinned.lab.example' ? ['127.0.0.1'] : [];
    };
    const res = await guardedFetch(`http://pinned.lab.example:${a.port}/hello`, { allow: ['127.0.0.0/8'], resolver });
    expect(res.body.toString()).toBe('hello');
    expect(lookups).toBe(1);
    expect(a.hosts.at(-1)).toBe(`pinned.lab.example:${a.port}`);
  });

  it("a check's guard asks DNS once per host and makes a request once, shares a failure, vets every use; the process guard repeats both", async () => {
    const asked: string[] = [];
    const resolver: HostResolver = async (host) => {
      asked.push(host);
      await new Promise((r) => setTimeout(r, 5));
      if (host === 'broken.lab.example') throw new OutboundFetchError('dns_failure', 'SERVFAIL');
      return ['127.0.0.1'];
    };
    // Port 80 is the server's (fetches stay on the passive ports: src/net/passive-ports.ts).
    const portMap = new Map([[80, a.port]]);
    const guard = createOutboundGuard({ allow: ['127.0.0.0/8'], resolver, portMap });
    const check = guard.forCheck();
    const url = 'http://memo.lab.example/hello';
    // Two fetches at once (a check's two chains) and a later one (its preflight): one question.
    const requests = a.hosts.length;
    const [r1, r2] = await Promise.all([check.fetch(url), check.fetch(url)]);
    expect([r1.body.toString(), r2.body.toString()]).toEqual(['hello', 'hello']);
    // The same request twice in one check is one exchange; another request is its own.
    expect(a.hosts.length).toBe(requests + 1);
    expect((await check.fetch(url, { headers: { accept: 'text/plain' } })).body.toString()).toBe('hello');
    expect(a.hosts.length).toBe(requests + 2);
    expect(await check.resolve('MEMO.lab.example')).toEqual(['127.0.0.1']);
    expect(asked).toEqual(['memo.lab.example']);
    // A failure is the check's answer too: asked once, reported to each asker.
    for (let i = 0; i < 2; i++)
      expect((await failure(check.fetch('http://broken.lab.example/'))).kind).toBe('dns_failure');
    expect(asked.filter((h) => h === 'broken.lab.example')).toHaveLength(1);
    // The shared answer is still vetted at each use: a check guard with a narrower policy refuses it.
    const narrow = createOutboundGuard({ allow: [], resolver, portMap }).forCheck();
    expect((await refusal(narrow.fetch(url))).reason).toBe('target_not_allowed');
    // Another check (and the process guard) asks again.
    await guard.forCheck().resolve('memo.lab.example');
    await guard.resolve('memo.lab.example');
    await guard.resolve('memo.lab.example');
    expect(asked.filter((h) => h === 'memo.lab.example')).toHaveLength(5);
    const before = a.hosts.length;
    await Promise.all([guard.fetch(url), guard.fetch(url)]);
    expect(a.hosts.length).toBe(before + 2);
  });

  it("undici's errors while it reads a response are built without a stack (no frames to format on destroy); the limit is restored", async () => {
    // A body shorter than its Content-Length, then the connection closes: undici fails the
    // request with a ResponseContentLengthMismatchError it builds while reading the socket.
    const short = net.createServer((s) => {
      s.once('data', () => s.end('HTTP/1.1 200 OK\r\ncontent-length: 10\r\nconnection: close\r\n\r\nabc'));
    });
    await new Promise<void>((r) => short.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(short.address() as AddressInfo).port}/`;
      const err = await failure(guardedFetch(url, { allow: ['127.0.0.0/8'] }));
      expect(err.code).toBe('UND_ERR_RES_CONTENT_LENGTH_MISMATCH');
      const cause = err.cause as Error;
      expect(cause.stack).not.toMatch(/\n\s+at /);
      expect(Error.stackTraceLimit).toBe(10);
      // Errors of our own code elsewhere keep theirs.
      expect(new Error('x').stack).toMatch(/\n\s+at /);
    } finally {
      await new Promise<void>((r) => short.close(() => r()));
    }
  });

  it("a check's refused connection is its other parts' answer at that address and port; a connection, or another check, is not shared", async () => {
    // A port nothing listens on (refused), and one whose listener counts the connections it accepts.
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    let accepted = 0;
    const open = net.createServer((s) => {
      accepted++;
      s.destroy();
    });
    await new Promise<void>((r) => open.listen(0, '127.0.0.1', r));
    const openPort = (open.address() as AddressInfo).port;
    const seen = (e: OutboundFetchError) =>
      String((e.cause as Error | undefined)?.message).includes('seen by this check');
    try {
      const guard = createOutboundGuard({
        allow: ['127.0.0.0/8'],
        resolver: noNames,
        portMap: new Map([[443, closedPort]]),
      });
      // A scan's web check: its https chain and its TLS handshake to :443 of the address, at once.
      const check = guard.forCheck();
      const [fetched, handshake] = await Promise.all([
        failure(check.fetch('https://127.0.0.1/')),
        failure(check.connectTls({ address: '127.0.0.1', port: 443, servername: 'x.lab.example' })),
      ]);
      // Both read as a refusal, as before: one of them asked, the other read its answer.
      expect([fetched.code, handshake.message]).toEqual(['ECONNREFUSED', 'ECONNREFUSED']);
      expect([seen(fetched), seen(handshake)].sort()).toEqual([false, true]);
      // forCheck() of the check's guard (the http part's) is the same check.
      expect(seen(await failure(check.forCheck().connectTcp({ address: '127.0.0.1', port: 443 })))).toBe(true);
      // Another check asks for itself.
      expect(seen(await failure(guard.forCheck().connectTcp({ address: '127.0.0.1', port: 443 })))).toBe(false);
      // A connection is not shared: each part that connects makes its own.
      const toOpen = createOutboundGuard({
        allow: ['127.0.0.0/8'],
        resolver: noNames,
        portMap: new Map([[22, openPort]]),
      });
      const openCheck = toOpen.forCheck();
      const sockets = await Promise.all([
        openCheck.connectTcp({ address: '127.0.0.1', port: 22 }),
        openCheck.connectTcp({ address: '127.0.0.1', port: 22 }),
      ]);
      for (const s of sockets) s.destroy();
      await new Promise((r) => setTimeout(r, 50));
      expect(accepted).toBe(2);
    } finally {
      await new Promise<void>((r) => open.close(() => r()));
    }
  });

  it('knowing(): the carried addresses answer that host only, until they expire, and are vetted at every use', async () => {
    const asked: string[] = [];
    // DNS would answer an address nothing listens on: a fetch that reaches the server used the carried one.
    const resolver: HostResolver = async (host) => {
      asked.push(host);
      return ['127.0.0.3'];
    };
    const portMap = new Map([[80, a.port]]);
    const guard = createOutboundGuard({ allow: ['127.0.0.0/8'], resolver, portMap });
    const knows = guard.knowing('Carried.lab.example.', ['127.0.0.1'], Date.now() + 60_000);
    const before = a.hosts.length;
    const res = await knows.forCheck().fetch('http://carried.lab.example/hello');
    expect(res.body.toString()).toBe('hello');
    expect(a.hosts.length).toBe(before + 1);
    expect(await knows.resolve('CARRIED.lab.example')).toEqual(['127.0.0.1']);
    expect(asked).toEqual([]);
    // Another name (a redirect's) is asked as before.
    expect(await knows.resolve('other.lab.example')).toEqual(['127.0.0.3']);
    expect(asked).toEqual(['other.lab.example']);
    // Expired: the host is asked again.
    expect(
      await guard.knowing('carried.lab.example', ['127.0.0.1'], Date.now() - 1).resolve('carried.lab.example'),
    ).toEqual(['127.0.0.3']);
    expect(asked).toEqual(['other.lab.example', 'carried.lab.example']);
    // Vetted like any answer: a policy that refuses loopback refuses the carried address, nothing connected.
    const narrow = createOutboundGuard({ allow: [], resolver, portMap }).knowing(
      'carried.lab.example',
      ['127.0.0.1'],
      Date.now() + 60_000,
    );
    const refused = await refusal(narrow.forCheck().fetch('http://carried.lab.example/hello'));
    expect(refused).toMatchObject({ reason: 'target_not_allowed', range: 'loopback', host: 'carried.lab.example' });
    expect(a.hosts.length).toBe(before + 1);
  });

  it('a name without addresses is host_not_found; a failing resolver is dns_failure; neither is a refusal', async () => {
    expect((await failure(guardedFetch('http://nothing.invalid/', { allow: [], resolver: async () => [] }))).kind).toBe(
      'host_not_found',
    );
    const broken: HostResolver = async () => {
      throw new Error('SERVFAIL');
    };
    expect((await failure(guardedFetch('http://broken.invalid/', { allow: [], resolver: broken }))).kind).toBe(
      'dns_failure',
    );
  });

  it('caps the body size, streamed or declared', async () => {
    expect((await failure(guardedFetch(a.url('/big'), { allow: ['127.0.0.0/8'], maxBytes: 1024 * 1024 }))).kind).toBe(
      'response_too_large',
    );
    expect((await failure(guardedFetch(a.url('/declared-big'), { allow: ['127.0.0.0/8'] }))).kind).toBe(
      'response_too_large',
    );
    const small = await guardedFetch(a.url('/big'), { allow: ['127.0.0.0/8'], maxBytes: 4 * 1024 * 1024 });
    expect(small.body.length).toBe(40 * 64 * 1024);
  });

  it('refuses numeric-form hosts, first or in a redirect, without connecting; the canonical form is allowed', async () => {
    const before = a.hosts.length;
    for (const url of [
      `http://2130706433:${a.port}/hello`,
      `http://127.1:${a.port}/hello`,
      `http://0x7f.0.0.1:${a.port}/hello`,
    ]) {
      expect((await refusal(guardedFetch(url, { allow: ['127.0.0.0/8'] }))).reason, url).toBe('url_not_allowed');
    }
    expect(a.hosts.length).toBe(before);
    for (const path of ['/to-numeric', '/to-numeric-relative']) {
      const err = await refusal(guardedFetch(a.url(path), { allow: ['127.0.0.0/8'] }));
      expect(err.reason).toBe('url_not_allowed');
      expect(err.hops).toHaveLength(1); // the redirecting response is kept; its target was never asked
    }
    expect(a.hosts.length).toBe(before + 2);
    expect((await guardedFetch(a.url('/hello'), { allow: ['127.0.0.0/8'] })).status).toBe(200);
  });

  it('keeps a record of every hop: status, Location, scheme or host change, HSTS', async () => {
    const res = await guardedFetch(a.url('/hsts-hop'), { allow: ['127.0.0.0/8'] });
    expect(res.hops.map((h) => [h.url, h.status, h.location, h.next, h.schemeChange, h.hostChange, h.hsts])).toEqual([
      [a.url('/hsts-hop'), 301, '/hello', a.url('/hello'), null, false, 'max-age=1'],
      [a.url('/hello'), 200, null, null, null, false, null],
    ]);
    const cross = await guardedFetch(a.url('/to-b'), { allow: ['127.0.0.0/8'] });
    expect(cross.hops[0]).toMatchObject({ hostChange: true, next: b.url('/') });
  });

  it('caps the response head: too many header bytes is headers_too_large; a head that never ends is a headers timeout', async () => {
    expect(
      (await failure(guardedFetch(a.url('/huge-headers'), { allow: ['127.0.0.0/8'], maxHeaderBytes: 16 * 1024 }))).kind,
    ).toBe('headers_too_large');
    const slow = await failure(
      guardedFetch(a.url('/slow-headers'), { allow: ['127.0.0.0/8'], headersTimeoutMs: 200, timeoutMs: 5000 }),
    );
    expect(slow).toMatchObject({ kind: 'timeout', phase: 'headers' });
  });

  it('undici asks no DNS of its own: a name only the guard resolver knows is fetched, once resolved', async () => {
    let lookups = 0;
    const resolver = async (host: string) => {
      lookups++;
      return host === 'only-the-guard-knows.invalid' ? ['127.0.0.1'] : [];
    };
    const res = await guardedFetch(`http://only-the-guard-knows.invalid:${a.port}/to-relative`, {
      allow: ['127.0.0.0/8'],
      resolver,
    });
    expect(res.body.toString()).toBe('hello');
    expect(lookups).toBe(2); // one per hop, by the guard; the system resolver would answer NXDOMAIN for .invalid
  });

  it('caps the time: a server that never answers is a timeout', async () => {
    const t0 = performance.now();
    const err = await failure(guardedFetch(a.url('/hang'), { allow: ['127.0.0.0/8'], timeoutMs: 200 }));
    expect(err.kind).toBe('timeout');
    expect(performance.now() - t0).toBeLessThan(2000);
  });

  it("the caller's abort is reported as aborted", async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const err = await failure(
      guardedFetch(a.url('/hang'), { allow: ['127.0.0.0/8'], timeoutMs: 5000, signal: ac.signal }),
    );
    expect(err.kind).toBe('aborted');
  });
});
