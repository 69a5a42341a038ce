import { describe, it, expect, beforeAll, afterAll, beforeEach } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import pino from 'pino';
import { parseConfig } from '../../src/config/config.ts';
import type { ExecContext } from '../../src/products/kit/product-contract.ts';
import { productReadiness } from '../../src/products/kit/readiness.ts';
import type { QueryOutcome, QueryResult, RecordType, Resolver } from '../../src/dns/types.ts';
import { buildEnvelope } from '../../src/contract/envelope.ts';
import { ipProduct, ipResult, type IpInput, type IpResult } from '../../src/products/ip/index.ts';
import { formatIp, parseCidr, firstOf, lastOf, widthOf } from '../../src/products/ip/address.ts';
import { resetContextCache } from '../../src/products/ip/context-dataset.ts';
import { specialRegistry, ipv4SpecialRegistry, ipv6SpecialRegistry } from '../../src/products/ip/special-registry.ts';

const baseEnv = {
  DATABASE_URL: 'mysql://x',
  REDIS_URL: 'redis://x',
  KEY_PEPPER: 'x'.repeat(32),
  CURSOR_SECRET: 'y'.repeat(32),
  WEBHOOK_SECRET_KEY: 'w'.repeat(32),
};

function ctx(opts: { contextDb?: string; resolver?: Resolver; allowPrivate?: string } = {}): ExecContext {
  const config = parseConfig({
    ...baseEnv,
    ...(opts.contextDb ? { IP_CONTEXT_DB: opts.contextDb } : {}),
    ...(opts.allowPrivate ? { ALLOW_PRIVATE_TARGETS: opts.allowPrivate } : {}),
  });
  return {
    runtime: { config, log: pino({ level: 'silent' }), services: opts.resolver ? { resolver: opts.resolver } : {} },
    requestId: 'req_test',
    signal: new AbortController().signal,
  };
}

function parseOk(body: unknown): IpInput {
  const r = ipProduct.input.safeParse(body);
  if (!r.success) throw new Error(`expected ${JSON.stringify(body)} to pass: ${JSON.stringify(r.error.issues)}`);
  return r.data;
}

async function run(body: unknown, c: ExecContext = ctx()) {
  const out = await ipProduct.execute!(parseOk(body), c);
  expect(ipResult.safeParse(out.result).success).toBe(true);
  return out;
}

async function lookup(value: string): Promise<IpResult> {
  return (await run({ value })).result;
}

function blocksOf(r: IpResult): string[] {
  return r.specialPurpose.map((m) => m.addressBlock);
}

describe('address_registry: every IANA special-purpose row (generated from the table)', () => {
  const all = specialRegistry.flatMap((row) => row.blocks.map((block) => ({ row, block, cidr: parseCidr(block) })));

  it('holds every row of both registries (25 IPv4 rows with 26 blocks, 25 IPv6 rows)', () => {
    expect(ipv4SpecialRegistry).toHaveLength(25);
    expect(ipv4SpecialRegistry.flatMap((r) => r.blocks)).toHaveLength(26);
    expect(ipv6SpecialRegistry).toHaveLength(25);
  });

  for (const { row, block, cidr } of all) {
    it(`${block} (${row.name})`, async () => {
      const first = firstOf(cidr);
      const last = lastOf(cidr);
      for (const value of first === last ? [first] : [first, last]) {
        const text = formatIp({ version: cidr.version, value });
        const r = await lookup(text);
        expect(blocksOf(r), text).toContain(block);
        // Most specific wins: the first row reported is this one, or a longer prefix inside it.
        const containing = all.filter(
          (o) => o.cidr.version === cidr.version && value >= firstOf(o.cidr) && value <= lastOf(o.cidr),
        );
        const longest = Math.max(...containing.map((o) => o.cidr.bits));
        const top = all.find((o) => o.block === r.specialPurpose[0]!.addressBlock)!;
        expect(top.cidr.bits, text).toBe(longest);
        // Reported in order, longest prefix first.
        const bits = r.specialPurpose.map((m) => parseCidr(m.addressBlock).bits);
        expect([...bits].sort((a, b) => b - a)).toEqual(bits);
        expect(r.globallyReachable, text).toBe(top.row.globallyReachable);
        expect(r.scope, text).toBe(top.row.scope);
        const match = r.specialPurpose.find((m) => m.addressBlock === block)!;
        expect(match).toMatchObject({
          name: row.name,
          rfc: row.rfc,
          allocationDate: row.allocationDate,
          globallyReachable: row.globallyReachable,
        });
      }
      const max = (1n << widthOf(cidr.version)) - 1n;
      const outside = first > 0n ? first - 1n : last < max ? last + 1n : null;
      if (outside !== null) {
        const text = formatIp({ version: cidr.version, value: outside });
        expect(blocksOf(await lookup(text)), text).not.toContain(block);
      }
    });
  }
});

describe('address_registry: facts checked against the registry text by hand', () => {
  it('192.0.0.9 and 192.0.0.10 are globally reachable; their neighbours in 192.0.0.0/24 are not', async () => {
    expect(await lookup('192.0.0.9')).toMatchObject({ globallyReachable: true, scope: 'anycast' });
    expect(blocksOf(await lookup('192.0.0.9'))).toEqual(['192.0.0.9/32', '192.0.0.0/24']);
    expect(await lookup('192.0.0.10')).toMatchObject({ globallyReachable: true });
    expect(await lookup('192.0.0.8')).toMatchObject({ globallyReachable: false });
    expect(blocksOf(await lookup('192.0.0.8'))).toEqual(['192.0.0.8/32', '192.0.0.0/24']);
    expect(blocksOf(await lookup('192.0.0.11'))).toEqual(['192.0.0.0/24']);
    expect((await lookup('192.0.0.11')).globallyReachable).toBe(false);
    expect(blocksOf(await lookup('192.0.0.5'))).toEqual(['192.0.0.0/29', '192.0.0.0/24']);
    expect(blocksOf(await lookup('192.0.0.171'))).toEqual(['192.0.0.171/32', '192.0.0.0/24']);
  });

  it('100.64.0.0/10 is shared address space, not private and not public', async () => {
    expect(await lookup('100.64.0.0')).toMatchObject({ scope: 'shared', globallyReachable: false });
    expect(await lookup('100.127.255.255')).toMatchObject({ scope: 'shared' });
    expect(await lookup('100.128.0.0')).toMatchObject({ scope: 'public', globallyReachable: true, specialPurpose: [] });
  });

  it('8.8.8.8 is ordinary public unicast', async () => {
    expect(await lookup('8.8.8.8')).toMatchObject({
      normalized: '8.8.8.8',
      version: 4,
      scope: 'public',
      globallyReachable: true,
      specialPurpose: [],
      embeddedIpv4: null,
      multicast: null,
      context: null,
      ptr: null,
    });
  });

  it('private, loopback, link-local, this-network, broadcast and reserved IPv4', async () => {
    expect(await lookup('10.1.2.3')).toMatchObject({ scope: 'private', globallyReachable: false });
    expect(await lookup('172.31.255.255')).toMatchObject({ scope: 'private' });
    expect(await lookup('172.32.0.0')).toMatchObject({ scope: 'public' });
    expect(await lookup('192.168.1.1')).toMatchObject({ scope: 'private' });
    expect(await lookup('127.0.0.1')).toMatchObject({ scope: 'loopback', globallyReachable: false });
    expect((await lookup('127.0.0.1')).specialPurpose[0]!.note).toMatch(/RFC 8029/);
    expect(await lookup('169.254.169.254')).toMatchObject({ scope: 'link_local' });
    expect(await lookup('0.0.0.0')).toMatchObject({ scope: 'unspecified' });
    expect(blocksOf(await lookup('0.0.0.0'))).toEqual(['0.0.0.0/32', '0.0.0.0/8']);
    expect(await lookup('0.1.2.3')).toMatchObject({ scope: 'this_network' });
    expect(await lookup('255.255.255.255')).toMatchObject({ scope: 'broadcast', globallyReachable: false });
    expect(blocksOf(await lookup('255.255.255.255'))).toEqual(['255.255.255.255/32', '240.0.0.0/4']);
    expect(await lookup('240.0.0.1')).toMatchObject({ scope: 'reserved', globallyReachable: false });
  });

  it('documentation and benchmarking ranges', async () => {
    expect(await lookup('192.0.2.1')).toMatchObject({ scope: 'documentation', globallyReachable: false });
    expect(await lookup('198.51.100.7')).toMatchObject({ scope: 'documentation' });
    expect(await lookup('203.0.113.255')).toMatchObject({ scope: 'documentation' });
    expect(await lookup('2001:db8::')).toMatchObject({ scope: 'documentation', globallyReachable: false });
    expect(await lookup('3fff:fff:ffff::1')).toMatchObject({ scope: 'documentation' });
    expect(await lookup('3fff:1000::1')).toMatchObject({ scope: 'public', globallyReachable: true });
    expect(await lookup('198.19.255.255')).toMatchObject({ scope: 'benchmarking' });
    expect(await lookup('198.20.0.0')).toMatchObject({ scope: 'public' });
    expect(await lookup('2001:2::1')).toMatchObject({ scope: 'benchmarking', globallyReachable: false });
  });

  it('the 6to4 relay anycast /24 is terminated (no reachability); 192.88.99.2 is the 6a44 relay', async () => {
    const r = await lookup('192.88.99.1');
    expect(r).toMatchObject({ scope: 'deprecated', globallyReachable: null });
    expect(r.specialPurpose[0]).toMatchObject({ terminationDate: '2015-03', source: null, destination: null });
    expect(await lookup('192.88.99.2')).toMatchObject({ globallyReachable: false });
    expect(blocksOf(await lookup('192.88.99.2'))).toEqual(['192.88.99.2/32', '192.88.99.0/24']);
  });

  it('AS112 and AMT IPv4 blocks are globally reachable', async () => {
    expect(await lookup('192.31.196.1')).toMatchObject({ globallyReachable: true });
    expect(await lookup('192.52.193.1')).toMatchObject({ globallyReachable: true });
    expect(await lookup('192.175.48.6')).toMatchObject({ globallyReachable: true });
  });

  it('IPv6 loopback, unspecified, link-local, unique-local and deprecated site-local', async () => {
    expect(await lookup('::1')).toMatchObject({
      normalized: '::1',
      version: 6,
      scope: 'loopback',
      globallyReachable: false,
    });
    expect(await lookup('::')).toMatchObject({ scope: 'unspecified' });
    expect(await lookup('fe80::1')).toMatchObject({ scope: 'link_local', globallyReachable: false });
    expect(await lookup('fd12:3456:789a::1')).toMatchObject({ scope: 'unique_local', globallyReachable: false });
    expect(await lookup('fec0::1')).toMatchObject({
      scope: 'site_local',
      globallyReachable: false,
      specialPurpose: [],
    });
  });

  it('IPv4-mapped addresses report the embedded IPv4 address and are written in mixed notation', async () => {
    const r = await lookup('::ffff:192.0.2.1');
    expect(r).toMatchObject({ normalized: '::ffff:192.0.2.1', scope: 'ipv4_mapped', globallyReachable: false });
    expect(r.embeddedIpv4).toMatchObject({ address: '192.0.2.1', mechanism: 'ipv4_mapped', scope: 'documentation' });
    expect((await lookup('::FFFF:C000:0201')).normalized).toBe('::ffff:192.0.2.1');
  });

  it('"::a.b.c.d" is the deprecated IPv4-compatible form, not IPv4-mapped', async () => {
    expect(await lookup('::1.2.3.4')).toMatchObject({ normalized: '::102:304', embeddedIpv4: null, scope: 'reserved' });
  });

  it('6to4 embeds the IPv4 address in bits 16-47; the registry says N/A for reachability', async () => {
    const r = await lookup('2002:c000:0201::');
    expect(r).toMatchObject({ normalized: '2002:c000:201::', scope: 'transition', globallyReachable: null });
    expect(r.embeddedIpv4).toMatchObject({ address: '192.0.2.1', mechanism: '6to4' });
  });

  it('Teredo: server address and de-obfuscated client address and port (RFC 4380 example layout)', async () => {
    const r = await lookup('2001:0000:4136:e378:8000:63bf:3fff:fdd2');
    expect(r).toMatchObject({
      normalized: '2001:0:4136:e378:8000:63bf:3fff:fdd2',
      globallyReachable: null,
      scope: 'transition',
    });
    expect(blocksOf(r)).toEqual(['2001::/32', '2001::/23']);
    expect(r.embeddedIpv4).toMatchObject({
      address: '192.0.2.45',
      mechanism: 'teredo',
      teredoServer: '65.54.227.120',
      teredoClientPort: 40000,
    });
  });

  it('NAT64 well-known prefix is globally reachable and embeds the IPv4 address', async () => {
    const r = await lookup('64:ff9b::8.8.8.8');
    expect(r).toMatchObject({ normalized: '64:ff9b::808:808', globallyReachable: true, scope: 'translation' });
    expect(r.embeddedIpv4).toMatchObject({
      address: '8.8.8.8',
      mechanism: 'nat64_well_known_prefix',
      globallyReachable: true,
    });
    expect(await lookup('64:ff9b:1::1')).toMatchObject({ globallyReachable: false, embeddedIpv4: null });
  });

  it('globally reachable rows inside 2001::/23 and the AS112 /48 in 2620::', async () => {
    expect(await lookup('2001:1::1')).toMatchObject({ globallyReachable: true });
    expect(await lookup('2001:1::2')).toMatchObject({ globallyReachable: true });
    expect(await lookup('2001:1::3')).toMatchObject({ globallyReachable: true });
    expect(await lookup('2001:1::4')).toMatchObject({ globallyReachable: false, scope: 'protocol_assignment' });
    expect(await lookup('2001:3::1')).toMatchObject({ globallyReachable: true });
    expect(await lookup('2001:4:112::1')).toMatchObject({ globallyReachable: true });
    expect(await lookup('2001:4:113::1')).toMatchObject({ globallyReachable: false });
    expect(await lookup('2001:20::1')).toMatchObject({ globallyReachable: true, scope: 'overlay_identifier' });
    expect(await lookup('2001:30::1')).toMatchObject({ globallyReachable: true });
    expect(await lookup('2001:10::1')).toMatchObject({ globallyReachable: null, scope: 'deprecated' });
    expect(await lookup('2620:4f:8000::42')).toMatchObject({ globallyReachable: true });
    expect(await lookup('2620:4f:8001::1')).toMatchObject({
      globallyReachable: true,
      scope: 'public',
      specialPurpose: [],
    });
  });

  it('discard, dummy and SRv6 blocks', async () => {
    expect(await lookup('100::1')).toMatchObject({ scope: 'discard', globallyReachable: false });
    expect(await lookup('100:0:0:1::1')).toMatchObject({ scope: 'dummy', globallyReachable: false });
    expect(await lookup('100:0:0:2::1')).toMatchObject({ scope: 'reserved', specialPurpose: [] });
    expect(await lookup('5f00::1')).toMatchObject({ scope: 'segment_routing', globallyReachable: false });
  });

  it('ordinary IPv6 global unicast and reserved IPv6 space', async () => {
    expect(await lookup('2606:4700:4700::1111')).toMatchObject({
      scope: 'public',
      globallyReachable: true,
      addressSpace: { block: '2000::/3' },
    });
    expect(await lookup('4000::1')).toMatchObject({ scope: 'reserved', globallyReachable: false });
  });

  it('IPv6 multicast: scope nibble and flags decoded', async () => {
    expect(await lookup('ff02::1')).toMatchObject({
      scope: 'multicast',
      globallyReachable: false,
      multicast: {
        scope: 'link_local',
        group: 'All Nodes Address',
        flags: { transient: false, prefixBased: false, rendezvousPointEmbedded: false },
      },
    });
    expect((await lookup('ff01::1')).multicast?.scope).toBe('interface_local');
    expect((await lookup('ff03::1')).multicast?.scope).toBe('realm_local');
    expect((await lookup('ff05::2')).multicast?.scope).toBe('site_local');
    expect((await lookup('ff08::1')).multicast?.scope).toBe('organization_local');
    expect(await lookup('ff0e::101')).toMatchObject({ globallyReachable: null, multicast: { scope: 'global' } });
    expect((await lookup('ff3e::8000:1')).multicast?.flags).toEqual({
      transient: true,
      prefixBased: true,
      rendezvousPointEmbedded: false,
    });
    expect((await lookup('ff02::1:ff00:1234')).multicast?.group).toBe('Solicited-Node Address');
  });

  it('IPv4 multicast blocks', async () => {
    expect(await lookup('224.0.0.251')).toMatchObject({
      scope: 'multicast',
      globallyReachable: false,
      multicast: { scope: 'link_local', group: 'mDNS' },
    });
    expect(await lookup('239.255.255.250')).toMatchObject({ multicast: { scope: 'admin_local', group: 'SSDP' } });
    expect(await lookup('232.1.2.3')).toMatchObject({ multicast: { block: '232.0.0.0/8' } });
    expect(await lookup('239.255.255.255')).toMatchObject({ scope: 'multicast' });
    expect(await lookup('223.255.255.255')).toMatchObject({ scope: 'public' });
  });

  it('normalises IPv6 text to RFC 5952', async () => {
    expect((await lookup('2001:DB8:0:0:0:0:0:1')).normalized).toBe('2001:db8::1');
    expect((await lookup('2001:0db8::0001')).normalized).toBe('2001:db8::1');
    expect((await lookup('2001:db8:0:0:1:0:0:1')).normalized).toBe('2001:db8::1:0:0:1');
    expect((await lookup('2001:db8:0:1:1:1:1:1')).normalized).toBe('2001:db8:0:1:1:1:1:1');
  });
});

describe('input schema', () => {
  function valueIssues(value: unknown): string[] {
    const r = ipProduct.input.safeParse({ value });
    expect(r.success, String(value)).toBe(false);
    return r.success ? [] : r.error.issues.map((i) => i.path.join('.'));
  }

  it('rejects CIDR with a clear message', () => {
    const r = ipProduct.input.safeParse({ value: '192.0.2.0/24' });
    expect(r.success).toBe(false);
    expect(r.error!.issues[0]).toMatchObject({ path: ['value'], message: expect.stringMatching(/CIDR/) });
    expect(valueIssues('2001:db8::/32')).toEqual(['value']);
  });

  it('rejects IPv4 with leading zeros as ambiguous', () => {
    const r = ipProduct.input.safeParse({ value: '010.1.1.1' });
    expect(r.error!.issues[0]).toMatchObject({ path: ['value'], message: expect.stringMatching(/leading zero/) });
    expect(valueIssues('1.2.3.04')).toEqual(['value']);
    expect(valueIssues('::ffff:1.2.3.010')).toEqual(['value']);
  });

  it('rejects garbage, short/long forms, empty and wrong types', () => {
    for (const v of [
      'garbage',
      '1.2.3',
      '1.2.3.4.5',
      '256.0.0.1',
      '0x7f.0.0.1',
      '2130706433',
      '1:2:3:4:5:6:7:8:9',
      '1::2::3',
      'g::1',
      ' 1.2.3.4',
      '[::1]',
      'fe80::1%eth0',
      '',
    ]) {
      expect(valueIssues(v), v).toEqual(['value']);
    }
    expect(valueIssues(12)).toEqual(['value']);
    expect(valueIssues('1'.repeat(65))).toEqual(['value']);
  });

  it('accepts any IPv6 textual form and fills the defaults', () => {
    for (const v of [
      '::',
      '::1',
      '1::',
      '2001:db8::1',
      '2001:0DB8:0000:0000:0000:0000:0000:0001',
      '::ffff:1.2.3.4',
      '1:2:3:4:5:6:1.2.3.4',
    ]) {
      expect(ipProduct.input.safeParse({ value: v }).success, v).toBe(true);
    }
    expect(parseOk({ value: '8.8.8.8' })).toEqual({ value: '8.8.8.8', includeContext: false, reverseDns: false });
  });

  it('rejects non-boolean options and unknown fields', () => {
    expect(ipProduct.input.safeParse({ value: '8.8.8.8', includeContext: 'yes' }).success).toBe(false);
    expect(ipProduct.input.safeParse({ value: '8.8.8.8', reverseDns: 1 }).success).toBe(false);
    expect(ipProduct.input.safeParse({ value: '8.8.8.8', cidr: true }).success).toBe(false);
  });
});

describe('lanes not asked for', () => {
  it('are skipped as not applicable and the envelope is complete', async () => {
    const input = parseOk({ value: '8.8.8.8' });
    const out = await ipProduct.execute!(input, ctx());
    expect(out.lanes).toEqual([
      expect.objectContaining({ lane: 'address_registry', required: true, status: 'completed' }),
      { lane: 'context', required: false, status: 'skipped', reason: 'not_applicable' },
      { lane: 'reverse_dns', required: false, status: 'skipped', reason: 'not_applicable' },
    ]);
    expect(out.sources).toEqual([
      { source: 'iana_special_registry', version: expect.stringMatching(/\d{4}-\d{2}-\d{2}/) },
    ]);
    const env = buildEnvelope(ipProduct, input, out, 'req_test');
    expect(env.status).toBe('completed');
    expect(env.coverage.complete).toBe(true);
    expect(env.input).toEqual({ value: '8.8.8.8', includeContext: false, reverseDns: false });
  });
});

describe('context lane (IP_CONTEXT_DB, iptoasn TSV)', () => {
  let dir: string;
  let tsv: string;
  const fixture = [
    '1.0.0.0\t1.0.0.255\t13335\tUS\tCLOUDFLARENET',
    '8.8.8.0\t8.8.8.255\t15169\tUS\tGOOGLE',
    '10.0.0.0\t10.255.255.255\t0\tNone\tNot routed',
    '193.0.0.0\t193.0.7.255\t3333\tNL\tRIPE-NCC-AS Reseaux IP Europeens Network Coordination Centre (RIPE NCC)',
    '2001:4860::\t2001:4860:ffff:ffff:ffff:ffff:ffff:ffff\t15169\tUS\tGOOGLE',
    '2a00:1450::\t2a00:1450:ffff:ffff:ffff:ffff:ffff:ffff\t15169\tIE\tGOOGLE',
    'not a row',
    '',
  ].join('\n');

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'lss-ipctx-'));
    tsv = join(dir, 'ip2asn-combined.tsv');
    writeFileSync(tsv, fixture);
    writeFileSync(join(dir, 'ip2asn-combined.tsv.gz'), gzipSync(fixture));
    writeFileSync(join(dir, 'empty.tsv'), 'nothing useful here\n');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  beforeEach(() => resetContextCache());

  async function withContext(value: string, db?: string) {
    return run({ value, includeContext: true }, ctx({ contextDb: db }));
  }

  it('finds IPv4 rows', async () => {
    const out = await withContext('8.8.8.8', tsv);
    expect(out.lanes[1]).toMatchObject({ lane: 'context', status: 'completed' });
    expect(out.result.context).toEqual({
      asn: 15169,
      asName: 'GOOGLE',
      country: 'US',
      routed: true,
      range: { start: '8.8.8.0', end: '8.8.8.255' },
      lookedUp: '8.8.8.8',
    });
    expect(out.sources).toContainEqual({
      source: 'ip_context_dataset',
      version: expect.stringContaining('ip2asn-combined.tsv@'),
    });
    expect((await withContext('1.0.0.0', tsv)).result.context?.asn).toBe(13335);
    expect((await withContext('1.0.0.255', tsv)).result.context?.asn).toBe(13335);
    expect((await withContext('193.0.7.255', tsv)).result.context).toMatchObject({ asn: 3333, country: 'NL' });
  });

  it('finds IPv6 rows (BigInt search)', async () => {
    expect((await withContext('2001:4860:4860::8888', tsv)).result.context).toMatchObject({
      asn: 15169,
      country: 'US',
      range: { start: '2001:4860::' },
    });
    expect((await withContext('2a00:1450:4001:81c::200e', tsv)).result.context).toMatchObject({
      asn: 15169,
      country: 'IE',
    });
  });

  it('looks an IPv4-mapped address up under IPv4', async () => {
    expect((await withContext('::ffff:8.8.4.4', tsv)).result.context).toMatchObject({ asn: null, lookedUp: '8.8.4.4' });
    expect((await withContext('::ffff:8.8.8.8', tsv)).result.context).toMatchObject({
      asn: 15169,
      lookedUp: '8.8.8.8',
    });
  });

  it('reports AS 0 as not routed', async () => {
    const out = await withContext('10.1.2.3', tsv);
    expect(out.result.context).toMatchObject({
      asn: null,
      routed: false,
      asName: null,
      country: null,
      range: { start: '10.0.0.0', end: '10.255.255.255' },
    });
    expect(out.limitations.map((l) => l.code)).toContain('ip_context_not_routed');
  });

  it('an address with no row is a completed lookup that says so', async () => {
    for (const value of ['9.9.9.9', '0.0.0.1', '255.255.255.255', '2001:4861::1', '::1']) {
      const out = await withContext(value, tsv);
      expect(out.lanes[1], value).toMatchObject({ status: 'completed' });
      expect(out.result.context, value).toMatchObject({
        asn: null,
        asName: null,
        country: null,
        routed: null,
        range: null,
      });
      expect(
        out.limitations.map((l) => l.code),
        value,
      ).toContain('ip_context_no_row');
    }
  });

  it('reads a gzip-compressed dataset', async () => {
    expect((await withContext('8.8.8.8', join(dir, 'ip2asn-combined.tsv.gz'))).result.context?.asn).toBe(15169);
  });

  it('unreadable file: unavailable / dataset_unreadable', async () => {
    for (const db of [join(dir, 'missing.tsv'), join(dir, 'empty.tsv'), dir]) {
      const out = await withContext('8.8.8.8', db);
      expect(out.lanes[1], db).toMatchObject({ lane: 'context', status: 'unavailable', reason: 'dataset_unreadable' });
      expect(out.result.context).toBeNull();
      expect(out.limitations.map((l) => l.code)).toContain('ip_context_unavailable');
    }
  });

  it('readiness: ready when configured and loadable, else unconfigured (unset: the shipped dataset)', async () => {
    expect(ipProduct.readiness(ctx().runtime).context).toBe('ready');
    expect(ipProduct.readiness(ctx({ contextDb: tsv }).runtime).context).toBe('ready');
    expect(ipProduct.readiness(ctx({ contextDb: join(dir, 'missing.tsv') }).runtime).context).toBe('unconfigured');
    expect(ipProduct.readiness(ctx({ contextDb: dir }).runtime).context).toBe('unconfigured');
    await withContext('8.8.8.8', join(dir, 'empty.tsv'));
    expect(ipProduct.readiness(ctx({ contextDb: join(dir, 'empty.tsv') }).runtime).context).toBe('unconfigured');
  });
});

describe('reverse_dns lane', () => {
  class FakeResolver implements Resolver {
    calls: { name: string; type: RecordType }[] = [];
    outcome: QueryOutcome | 'throw';
    ptr: string[];
    constructor(outcome: QueryOutcome | 'throw', ptr: string[] = []) {
      this.outcome = outcome;
      this.ptr = ptr;
    }
    async query(name: string, type: RecordType): Promise<QueryResult> {
      this.calls.push({ name, type });
      if (this.outcome === 'throw') throw new Error('socket closed');
      const rcode: Record<QueryOutcome, string | null> = {
        answer: 'NOERROR',
        nodata: 'NOERROR',
        nxdomain: 'NXDOMAIN',
        servfail: 'SERVFAIL',
        refused: 'REFUSED',
        formerr: 'FORMERR',
        notimp: 'NOTIMP',
        timeout: null,
        error: null,
        left_public_dns: 'NOERROR',
      };
      return {
        name,
        type,
        outcome: this.outcome,
        rcode: rcode[this.outcome],
        answers: this.outcome === 'answer' ? this.ptr.map((data) => ({ name, type: 'PTR', ttl: 300, data })) : [],
        flags: { aa: false, ad: false, tc: false, ra: true },
        transport: this.outcome === 'timeout' || this.outcome === 'error' ? null : 'udp',
        durationMs: 1,
      };
    }
    readiness() {
      return 'ready' as const;
    }
  }

  async function withResolver(value: string, resolver?: Resolver) {
    return run({ value, reverseDns: true }, ctx({ resolver }));
  }

  it('asks for the in-addr.arpa / ip6.arpa name', async () => {
    const r = new FakeResolver('nxdomain');
    await withResolver('93.184.215.14', r);
    await withResolver('2606:4700::1', r);
    expect(r.calls).toEqual([
      { name: '14.215.184.93.in-addr.arpa', type: 'PTR' },
      { name: '1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.7.4.6.0.6.2.ip6.arpa', type: 'PTR' },
    ]);
  });

  it('never asks the PTR of an address that is not globally reachable: skipped, with a reason and a limitation', async () => {
    // The reverse zones of these ranges are answered by the resolver the service runs next to.
    for (const value of [
      '10.0.0.7',
      '192.168.1.1',
      '172.16.0.1',
      '127.0.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '192.0.2.1', // documentation
      '::1',
      'fd00::1',
      'fe80::1',
      '2001:db8::1',
      '::ffff:10.0.0.7', // IPv4-mapped: judged by the address it carries
      '::ffff:127.0.0.1',
      '64:ff9b::a00:7', // NAT64 of 10.0.0.7
    ]) {
      const r = new FakeResolver('answer', ['db-1.prod.internal.']);
      const input = parseOk({ value, reverseDns: true });
      const out = await ipProduct.execute!(input, ctx({ resolver: r }));
      expect(r.calls, value).toEqual([]);
      expect(out.lanes[2], value).toMatchObject({
        lane: 'reverse_dns',
        status: 'skipped',
        reason: 'not_globally_reachable',
      });
      expect(out.result.ptr, value).toBeNull();
      expect(
        out.limitations.map((l) => l.code),
        value,
      ).toContain('reverse_dns_not_global');
      // Asked for and not done: never a complete envelope.
      expect(buildEnvelope(ipProduct, input, out, 'req_test').status, value).toBe('partial');
    }
  });

  it('asks for a non-global address inside ALLOW_PRIVATE_TARGETS (the lab), IPv4-mapped forms included', async () => {
    const r = new FakeResolver('answer', ['localhost.lab.test.']);
    for (const value of ['127.0.0.1', '::ffff:127.0.0.1']) {
      const out = await ipProduct.execute!(
        parseOk({ value, reverseDns: true }),
        ctx({ resolver: r, allowPrivate: '127.0.0.0/8' }),
      );
      expect(out.lanes[2], value).toMatchObject({ lane: 'reverse_dns', status: 'completed' });
    }
    expect(r.calls.map((c) => c.name)).toEqual([
      '1.0.0.127.in-addr.arpa',
      `1.0.0.0.0.0.f.7.f.f.f.f.${'0.'.repeat(20)}ip6.arpa`,
    ]);
    // A mapped public address is globally reachable: asked.
    const pub = new FakeResolver('nxdomain');
    await withResolver('::ffff:8.8.8.8', pub);
    expect(pub.calls).toHaveLength(1);
  });

  it('answer: the PTR names', async () => {
    const out = await withResolver('8.8.8.8', new FakeResolver('answer', ['dns.google.']));
    expect(out.lanes[2]).toMatchObject({ lane: 'reverse_dns', status: 'completed' });
    expect(out.lanes[2]!.reason).toBeUndefined();
    expect(out.result.ptr).toEqual(['dns.google']);
  });

  it('nxdomain and nodata: an authoritative "no PTR" is an answer', async () => {
    for (const outcome of ['nxdomain', 'nodata'] as const) {
      const input = parseOk({ value: '93.184.215.14', reverseDns: true });
      const out = await ipProduct.execute!(input, ctx({ resolver: new FakeResolver(outcome) }));
      expect(out.lanes[2], outcome).toMatchObject({ status: 'completed' });
      expect(out.result.ptr, outcome).toEqual([]);
      expect(out.limitations.map((l) => l.code)).not.toContain('reverse_dns_unavailable');
      expect(buildEnvelope(ipProduct, input, out, 'req_test').status).toBe('completed');
    }
  });

  it('servfail / refused: failed, ptr null (never "no PTR"), envelope partial', async () => {
    for (const outcome of ['servfail', 'refused'] as const) {
      const input = parseOk({ value: '8.8.8.8', reverseDns: true });
      const out = await ipProduct.execute!(input, ctx({ resolver: new FakeResolver(outcome) }));
      expect(out.lanes[2], outcome).toMatchObject({ lane: 'reverse_dns', status: 'failed', reason: outcome });
      expect(out.result.ptr).toBeNull();
      expect(out.limitations.map((l) => l.code)).toContain('reverse_dns_unavailable');
      expect(buildEnvelope(ipProduct, input, out, 'req_test').status).toBe('partial');
    }
  });

  it('error: unavailable with the outcome as reason', async () => {
    const out = await withResolver('8.8.8.8', new FakeResolver('error'));
    expect(out.lanes[2]).toMatchObject({ status: 'unavailable', reason: 'error' });
    expect(out.result.ptr).toBeNull();
    expect(out.limitations.map((l) => l.code)).toContain('reverse_dns_unavailable');
  });

  it('a resolver that throws is unavailable, not "no PTR"', async () => {
    const out = await withResolver('8.8.8.8', new FakeResolver('throw'));
    expect(out.lanes[2]).toMatchObject({ status: 'unavailable', reason: 'error' });
    expect(out.result.ptr).toBeNull();
  });

  it('timeout: lane timeout with a limitation', async () => {
    const out = await withResolver('8.8.8.8', new FakeResolver('timeout'));
    expect(out.lanes[2]).toMatchObject({ status: 'timeout', reason: 'timeout' });
    expect(out.result.ptr).toBeNull();
    expect(out.limitations.map((l) => l.code)).toContain('reverse_dns_unavailable');
  });

  it('no resolver service: unavailable / resolver_not_configured', async () => {
    const out = await withResolver('8.8.8.8');
    expect(out.lanes[2]).toMatchObject({
      lane: 'reverse_dns',
      required: false,
      status: 'unavailable',
      reason: 'resolver_not_configured',
    });
    expect(out.result.ptr).toBeNull();
    expect(out.limitations.map((l) => l.code)).toContain('reverse_dns_unavailable');
  });

  it('readiness follows the resolver', () => {
    expect(ipProduct.readiness(ctx().runtime)).toEqual({
      address_registry: 'ready',
      context: 'ready',
      reverse_dns: 'unconfigured',
    });
    expect(ipProduct.readiness(ctx({ resolver: new FakeResolver('answer') }).runtime).reverse_dns).toBe('ready');
    expect(productReadiness(ipProduct, ctx().runtime)).toBe('partially_configured');
  });
});
