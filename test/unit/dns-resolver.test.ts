// The real StubResolver against the real lab DNS server on loopback: no mocks.
import dgram from 'node:dgram';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as packet from 'dns-packet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/config.ts';
import { StubResolver, createResolver } from '../../src/dns/stub-resolver.ts';
import { parseServer, type DnsServer } from '../../src/config/dns-servers.ts';
import { readResolvConf, resolveServers } from '../../src/dns/system-servers.ts';
import { acceptReply, buildQuery } from '../../src/dns/wire.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { labNames as n } from '../lab/zones.ts';

let lab: LabDns;
let server: DnsServer;
let silent: dgram.Socket; // a UDP "server" that reads and never answers
let silentServer: DnsServer;
let deadServer: DnsServer; // a port nobody listens on: ICMP port unreachable

const resolver = (timeoutMs = 1000, servers: DnsServer[] = [server]) => new StubResolver({ servers, timeoutMs });

beforeAll(async () => {
  lab = await startLabDns();
  server = { host: lab.host, port: lab.port };
  silent = dgram.createSocket('udp4');
  await new Promise<void>((r) => silent.bind(0, '127.0.0.1', () => r()));
  silentServer = { host: '127.0.0.1', port: silent.address().port };
  const probe = dgram.createSocket('udp4');
  await new Promise<void>((r) => probe.bind(0, '127.0.0.1', () => r()));
  deadServer = { host: '127.0.0.1', port: probe.address().port };
  await new Promise<void>((r) => probe.close(() => r()));
});

afterAll(async () => {
  await lab.close();
  await new Promise<void>((r) => silent.close(() => r()));
});

describe('rcode matrix', () => {
  it('answer: records of the type with TTL and the flags of the reply, over UDP', async () => {
    const r = await resolver().query(n.apex, 'A');
    expect(r).toMatchObject({ name: 'lab.test', type: 'A', outcome: 'answer', rcode: 'NOERROR', transport: 'udp' });
    expect(r.answers).toEqual([{ name: 'lab.test', type: 'A', ttl: 300, data: '127.0.0.10' }]);
    expect(r.flags).toEqual({ aa: true, ad: false, tc: false, ra: false });
    expect(r.durationMs).toBeGreaterThan(0);
  });

  it('nodata: the name exists, the type does not', async () => {
    const r = await resolver().query(n.nodata, 'AAAA');
    expect(r).toMatchObject({ outcome: 'nodata', rcode: 'NOERROR', answers: [] });
  });

  it('nxdomain', async () => {
    const r = await resolver().query(n.nxdomain, 'A');
    expect(r).toMatchObject({ outcome: 'nxdomain', rcode: 'NXDOMAIN', answers: [] });
  });

  it('servfail and refused are replies with their rcode', async () => {
    expect(await resolver().query(n.servfail, 'A')).toMatchObject({
      outcome: 'servfail',
      rcode: 'SERVFAIL',
      transport: 'udp',
    });
    expect(await resolver().query(n.refused, 'MX')).toMatchObject({ outcome: 'refused', rcode: 'REFUSED' });
    // A name outside the lab's zones: the lab does not recurse.
    expect(await resolver().query('example.com', 'A')).toMatchObject({ outcome: 'refused', rcode: 'REFUSED' });
  });

  it('timeout: no reply within the deadline; the whole query is bounded by it', async () => {
    const r = await resolver(200).query(n.timeout, 'A');
    expect(r).toMatchObject({ outcome: 'timeout', rcode: null, answers: [], transport: null });
    expect(r.durationMs).toBeGreaterThanOrEqual(190);
    expect(r.durationMs).toBeLessThan(400);
  });

  it('opts.timeoutMs overrides the default', async () => {
    const r = await resolver(10_000).query(n.timeout, 'A', { timeoutMs: 150 });
    expect(r.outcome).toBe('timeout');
    expect(r.durationMs).toBeLessThan(350);
  });

  it('a reply slower than the deadline is a timeout', async () => {
    const r = await resolver(300).query(n.slow, 'A');
    expect(r.outcome).toBe('timeout');
  });

  it('the root name can be asked (the lab is not authoritative for it: REFUSED)', async () => {
    expect(await resolver().query('.', 'NS')).toMatchObject({ name: '.', outcome: 'refused', rcode: 'REFUSED' });
  });

  it('a trailing dot and upper case in the asked name still match the reply', async () => {
    expect(await resolver().query('LAB.Test.', 'A')).toMatchObject({ name: 'LAB.Test', outcome: 'answer' });
  });

  it('an unencodable name is an error without touching the network', async () => {
    const r = await resolver().query(`${'a'.repeat(64)}.lab.test`, 'A');
    expect(r).toMatchObject({ outcome: 'error', transport: null });
  });
});

describe('presentation of record data', () => {
  it('MX, SOA, CAA, NS', async () => {
    const res = resolver();
    expect((await res.query(n.apex, 'MX')).answers.map((a) => a.data)).toEqual([
      { preference: 10, exchange: 'mail.lab.test' },
      { preference: 20, exchange: 'mail2.lab.test' },
    ]);
    expect((await res.query(n.apex, 'SOA')).answers[0]).toMatchObject({
      ttl: 3600,
      data: {
        mname: 'ns1.lab.test',
        rname: 'hostmaster.lab.test',
        serial: 2026010101,
        refresh: 7200,
        retry: 900,
        expire: 1209600,
        minimum: 300,
      },
    });
    expect((await res.query(n.apex, 'CAA')).answers.map((a) => a.data)).toContainEqual({
      flags: 0,
      tag: 'issue',
      value: 'ca.lab.test',
    });
    expect((await res.query(n.apex, 'NS')).answers.map((a) => a.data)).toEqual(['ns1.lab.test']);
  });

  it('TXT: one string per character-string, decoded as UTF-8', async () => {
    const r = await resolver().query(n.apex, 'TXT');
    const data = r.answers.map((a) => a.data as string[]);
    expect(data).toContainEqual(['v=spf1 ip4:127.0.0.0/8 -all']);
    const long = data.find((d) => d.length === 2)!;
    expect(long[0]).toHaveLength(255);
    expect(long.join('')).toMatch(/^lab-long-txt x{300}$/);
  });

  it('IDN: the A-label name resolves, UTF-8 TXT decodes', async () => {
    const res = resolver();
    expect((await res.query(n.idn, 'A')).answers.map((a) => a.data)).toEqual(['127.0.0.12']);
    expect((await res.query(n.idn, 'TXT')).answers[0]!.data).toEqual(['bücher']);
  });

  it('AD is reported as the server set it', async () => {
    const r = await resolver().query(n.ad, 'A');
    expect(r.flags.ad).toBe(true);
  });

  it('wildcard synthesis', async () => {
    const r = await resolver().query(n.wildcard, 'A');
    expect(r.answers).toEqual([{ name: n.wildcard, type: 'A', ttl: 300, data: '127.0.0.30' }]);
  });
});

describe('PTR', () => {
  it('IPv4 and IPv6 reverse names', async () => {
    const res = resolver();
    expect((await res.query(n.ptr4, 'PTR')).answers.map((a) => a.data)).toEqual(['localhost.lab.test']);
    expect((await res.query(n.ptr6, 'PTR')).answers.map((a) => a.data)).toEqual(['localhost.lab.test']);
  });

  it('a reverse name without PTR is NXDOMAIN, a broken one SERVFAIL', async () => {
    const res = resolver();
    expect((await res.query(n.ptrNxdomain, 'PTR')).outcome).toBe('nxdomain');
    expect((await res.query(n.ptrServfail, 'PTR')).outcome).toBe('servfail');
  });
});

describe('CNAME chains', () => {
  it('the chain records come with the records of the type', async () => {
    const r = await resolver().query(n.www, 'A');
    expect(r.outcome).toBe('answer');
    expect(r.answers).toEqual([
      { name: 'www.lab.test', type: 'CNAME', ttl: 300, data: 'lab.test' },
      { name: 'lab.test', type: 'A', ttl: 300, data: '127.0.0.10' },
    ]);
  });

  it('asking for CNAME returns the CNAME itself', async () => {
    const r = await resolver().query(n.www, 'CNAME');
    expect(r.answers).toEqual([{ name: 'www.lab.test', type: 'CNAME', ttl: 300, data: 'lab.test' }]);
  });

  it('dangling CNAME: NXDOMAIN for the target, the CNAME is kept', async () => {
    const r = await resolver().query(n.dangling, 'A');
    expect(r.outcome).toBe('nxdomain');
    expect(r.answers).toEqual([{ name: 'dangling.lab.test', type: 'CNAME', ttl: 300, data: 'gone.lab.test' }]);
  });

  it('a CNAME loop terminates with both links', async () => {
    const r = await resolver().query(n.cnameLoop, 'A');
    expect(r.answers.map((a) => `${a.name}>${a.data}`)).toEqual([
      'cname-loop.lab.test>cname-loop-b.lab.test',
      'cname-loop-b.lab.test>cname-loop.lab.test',
    ]);
  });
});

describe('TCP fallback', () => {
  it('a truncated UDP reply is asked again over TCP and comes back complete', async () => {
    const r = await resolver().query(n.big, 'A');
    expect(r).toMatchObject({ outcome: 'answer', transport: 'tcp' });
    expect(r.answers).toHaveLength(60);
    expect(r.flags.tc).toBe(false);
    const txt = await resolver().query(n.big, 'TXT');
    expect(txt).toMatchObject({ outcome: 'answer', transport: 'tcp' });
    expect(txt.answers).toHaveLength(6);
  });

  it('a garbled TCP reply is an error, not a crash and not an answer', async () => {
    const r = await resolver(1000).query(n.tcpGarbage, 'A');
    expect(r).toMatchObject({ outcome: 'error', rcode: null, answers: [] });
    expect(r.durationMs).toBeLessThan(900); // failed fast, did not wait for the deadline
  });
});

describe('hostile replies', () => {
  it('a reply with the wrong id is ignored: timeout within the deadline', async () => {
    const r = await resolver(250).query(n.badId, 'A');
    expect(r.outcome).toBe('timeout');
    expect(r.durationMs).toBeLessThan(450);
  });

  it('random bytes are ignored: timeout within the deadline', async () => {
    const r = await resolver(250).query(n.garbage, 'A');
    expect(r.outcome).toBe('timeout');
    expect(r.durationMs).toBeLessThan(450);
  });

  it('acceptReply: matches id and question (name case-insensitively), rejects the rest', () => {
    const reply = (id: number, name: string, type: 'A' | 'MX', flags = 0) =>
      packet.encode({ type: 'response', id, flags, questions: [{ name, type, class: 'IN' }], answers: [] });
    expect(acceptReply(reply(7, 'LAB.Test', 'A'), 7, 'lab.test', 'A')).not.toBeNull();
    expect(acceptReply(reply(8, 'lab.test', 'A'), 7, 'lab.test', 'A')).toBeNull();
    expect(acceptReply(reply(7, 'other.test', 'A'), 7, 'lab.test', 'A')).toBeNull();
    expect(acceptReply(reply(7, 'lab.test', 'MX'), 7, 'lab.test', 'A')).toBeNull();
    expect(acceptReply(buildQuery(7, 'lab.test', 'A'), 7, 'lab.test', 'A')).toBeNull(); // a query, not a reply
    expect(acceptReply(Buffer.from([0, 7, 0x81]), 7, 'lab.test', 'A')).toBeNull();
    // An error reply without the question section still answers; a NOERROR one proves nothing.
    const bare = (flags: number) => packet.encode({ type: 'response', id: 7, flags, questions: [] });
    expect(acceptReply(bare(5), 7, 'lab.test', 'A')).not.toBeNull();
    expect(acceptReply(bare(0), 7, 'lab.test', 'A')).toBeNull();
  });

  it('many concurrent queries each get their own answer', async () => {
    const res = resolver();
    const names = Array.from({ length: 40 }, (_, i) => (i % 2 ? n.apex : n.www));
    const results = await Promise.all(names.map((name) => res.query(name, 'A')));
    results.forEach((r, i) => {
      expect(r.name).toBe(names[i]);
      expect(r.outcome).toBe('answer');
    });
  });
});

describe('servers and retries', () => {
  it('rotates past a server whose port is closed, at once', async () => {
    const r = await resolver(1000, [deadServer, server]).query(n.apex, 'A');
    expect(r.outcome).toBe('answer');
    expect(r.durationMs).toBeLessThan(400);
  });

  it('rotates past a silent server when its slot of the budget runs out, then prefers the one that answered', async () => {
    const res = resolver(600, [silentServer, server]);
    const first = await res.query(n.apex, 'A');
    expect(first.outcome).toBe('answer');
    expect(first.durationMs).toBeGreaterThanOrEqual(280); // waited its half of the 600 ms budget
    expect(first.durationMs).toBeLessThan(600);
    const second = await res.query(n.apex, 'A');
    expect(second.outcome).toBe('answer');
    expect(second.durationMs).toBeLessThan(200);
  });

  it('only unreachable servers: error before the deadline', async () => {
    const r = await resolver(1000, [deadServer]).query(n.apex, 'A');
    expect(r).toMatchObject({ outcome: 'error', rcode: null });
    expect(r.durationMs).toBeLessThan(500);
  });

  it('createResolver takes DNS_SERVERS and DNS_TIMEOUT_MS from config', async () => {
    // Bracketed IPv4 because src/config/config.ts's validator currently rejects plain "ip:port" (its
    // greedy pattern swallows the port); parseServer accepts both forms.
    const config = parseConfig({
      DATABASE_URL: 'mysql://x',
      REDIS_URL: 'redis://x',
      KEY_PEPPER: 'x'.repeat(32),
      CURSOR_SECRET: 'y'.repeat(32),
      WEBHOOK_SECRET_KEY: 'w'.repeat(32),
      DNS_SERVERS: `[127.0.0.1]:${deadServer.port}, [${lab.host}]:${lab.port}`,
      DNS_TIMEOUT_MS: '700',
    });
    const res = createResolver(config);
    expect(res.servers).toEqual([deadServer, server]);
    expect(res.timeoutMs).toBe(700);
    expect((await res.query(n.apex, 'A')).outcome).toBe('answer');
  });
});

describe('abort', () => {
  it('an abort during the query rejects promptly and releases everything', async () => {
    const ctl = new AbortController();
    const started = performance.now();
    const p = resolver(5000).query(n.timeout, 'A', { signal: ctl.signal });
    setTimeout(() => ctl.abort(), 50);
    await expect(p).rejects.toMatchObject({ name: 'AbortError' });
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('an already aborted signal rejects without querying', async () => {
    const ctl = new AbortController();
    ctl.abort();
    await expect(resolver().query(n.apex, 'A', { signal: ctl.signal })).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('aborts do not count against readiness', async () => {
    const res = new StubResolver({ servers: [server], timeoutMs: 5000, downAfter: 1 });
    const ctl = new AbortController();
    const p = res.query(n.timeout, 'A', { signal: ctl.signal });
    ctl.abort();
    await expect(p).rejects.toBeTruthy();
    expect(res.readiness()).toBe('ready');
  });
});

describe('readiness', () => {
  it('unconfigured without servers; such a query is an error', async () => {
    const res = new StubResolver({ servers: [], timeoutMs: 100 });
    expect(res.readiness()).toBe('unconfigured');
    expect((await res.query(n.apex, 'A')).outcome).toBe('error');
  });

  it('down after 20 consecutive unreachable queries (default window)', async () => {
    const res = resolver(500, [deadServer]);
    for (let i = 0; i < 19; i++) await res.query(n.apex, 'A');
    expect(res.readiness()).toBe('ready');
    await res.query(n.apex, 'A');
    expect(res.readiness()).toBe('down');
  });

  it("timeouts are the target's fact, not the resolver's: they never make it down while it answers (issue 31)", async () => {
    const res = new StubResolver({ servers: [server], timeoutMs: 80, downAfter: 3, zoneBackoff: false });
    expect(res.readiness()).toBe('ready');
    for (let i = 0; i < 4; i++)
      await Promise.all([res.query(n.timeout, 'A'), res.query(n.timeout, 'MX'), res.query(n.garbage, 'A')]);
    // Nothing was heard meanwhile, so it asked its servers `. NS`: the lab answered (REFUSED).
    await new Promise((r) => setTimeout(r, 200));
    expect(res.verifications).toBeGreaterThanOrEqual(1);
    expect(res.readiness()).toBe('ready');
    res.close();
  });
});

describe('system servers', () => {
  it('parses ip, ip:port, [v6]:port and bare v6', () => {
    expect(parseServer('10.0.0.1')).toEqual({ host: '10.0.0.1', port: 53 });
    expect(parseServer(' 10.0.0.1:5353 ')).toEqual({ host: '10.0.0.1', port: 5353 });
    expect(parseServer('[::1]:5353')).toEqual({ host: '::1', port: 5353 });
    expect(parseServer('[2001:db8::1]')).toEqual({ host: '2001:db8::1', port: 53 });
    expect(parseServer('2001:db8::1')).toEqual({ host: '2001:db8::1', port: 53 });
    expect(parseServer('dns.example')).toBeNull();
    expect(parseServer('10.0.0.1:0')).toBeNull();
    expect(parseServer('10.0.0.1:70000')).toBeNull();
  });

  it('reads nameserver lines from resolv.conf, falls back to 127.0.0.1', () => {
    const dir = mkdtempSync(join(tmpdir(), 'lss-resolv-'));
    const file = join(dir, 'resolv.conf');
    writeFileSync(
      file,
      '# comment\nsearch lab.test\nnameserver 10.1.1.1\nnameserver ::1\noptions ndots:1\nnameserver bogus\n',
    );
    expect(readResolvConf(file)).toEqual([
      { host: '10.1.1.1', port: 53 },
      { host: '::1', port: 53 },
    ]);
    expect(resolveServers(undefined, file)).toHaveLength(2);
    expect(resolveServers([], file)).toHaveLength(2); // empty DNS_SERVERS means "the system's"
    expect(resolveServers(['127.0.0.1:5300'], file)).toEqual([{ host: '127.0.0.1', port: 5300 }]);
    expect(resolveServers(undefined, join(dir, 'missing'))).toEqual([{ host: '127.0.0.1', port: 53 }]);
  });
});
