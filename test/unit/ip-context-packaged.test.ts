// The IP context dataset that ships with the service (@ip-location-db/asn + asn-country): with no
// IP_CONTEXT_DB the context lane answers from it; IP_CONTEXT_DB still wins; the compact table is
// built by a child process into a cache file (or handed over on stdout when no path is writable),
// and a torn cache file is rebuilt, never trusted. These are dataset reads on this machine: no
// network traffic.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/config.ts';
import { buildEnvelope } from '../../src/contract/envelope.ts';
import { ipProduct, type IpInput } from '../../src/products/ip/index.ts';
import { lookupAsn, deserializeAsnTable, AsnTableFormatError } from '../../src/products/ip/asn-table.ts';
import { contextPackage } from '../../src/products/ip/context-package.ts';
import { loadOrBuildContextTable } from '../../src/products/ip/packaged-context.ts';
import { parseIp } from '../../src/products/ip/address.ts';
import type { ExecContext } from '../../src/products/kit/product-contract.ts';

const baseEnv = {
  DATABASE_URL: 'mysql://x',
  REDIS_URL: 'redis://x',
  KEY_PEPPER: 'x'.repeat(32),
  CURSOR_SECRET: 'y'.repeat(32),
  WEBHOOK_SECRET_KEY: 'w'.repeat(32),
};

function ctx(env: Record<string, string> = {}): ExecContext {
  return {
    runtime: { config: parseConfig({ ...baseEnv, ...env }), log: pino({ level: 'silent' }), services: {} },
    requestId: 'req_test',
    signal: new AbortController().signal,
  };
}

async function withContext(value: string, c: ExecContext = ctx()) {
  const input = ipProduct.input.parse({ value, includeContext: true }) as IpInput;
  const out = await ipProduct.execute!(input, c);
  return { out, envelope: buildEnvelope(ipProduct, input, out, 'req_test') };
}

const addr = (text: string) => {
  const p = parseIp(text);
  if (!p.ok) throw new Error(text);
  return p.address;
};

describe('the shipped IP context dataset', () => {
  it('answers 8.8.8.8, 1.1.1.1 and 2001:4860:4860::8888 with no variable set', { timeout: 120_000 }, async () => {
    for (const [value, asn, org, country] of [
      ['8.8.8.8', 15169, 'Google LLC', 'US'],
      ['1.1.1.1', 13335, 'Cloudflare, Inc.', 'AU'], // APNIC registered it: the registration country
      ['2001:4860:4860::8888', 15169, 'Google LLC', 'US'],
    ] as const) {
      const { out, envelope } = await withContext(value);
      expect(out.lanes[1]).toMatchObject({ lane: 'context', status: 'completed' });
      expect(out.result.context, value).toMatchObject({ asn, asName: org, country, routed: true, lookedUp: value });
      expect(envelope.status).toBe('completed');
      const source = out.sources.find((s) => s.source === 'ip_context_dataset')!;
      expect(source.version).toBe(contextPackage()!.version);
      expect(source.version).toMatch(/^@ip-location-db\/asn@[\d.]+, @ip-location-db\/asn-country@[\d.]+$/);
      expect(source.attribution).toMatch(/CC BY 4\.0/);
      expect(source.attribution).toMatch(/routeviews\.org.*nro\.net.*db-ip\.com/);
      expect(out.limitations.map((l) => l.code)).toContain('ip_context_snapshot');
    }
  });

  it('an IPv4-mapped address is looked up as IPv4; an address in no range has no row', {
    timeout: 120_000,
  }, async () => {
    expect((await withContext('::ffff:8.8.8.8')).out.result.context).toMatchObject({ asn: 15169, lookedUp: '8.8.8.8' });
    const { out } = await withContext('10.1.2.3');
    expect(out.result.context).toMatchObject({ asn: null, asName: null, country: null, routed: null, range: null });
    expect(out.limitations.map((l) => l.code)).toContain('ip_context_no_row');
  });

  it('IP_CONTEXT_DB still overrides it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lss-ipctx-override-'));
    try {
      const tsv = join(dir, 'ip2asn-combined.tsv');
      writeFileSync(tsv, '8.8.8.0\t8.8.8.255\t64500\tZZ\tOPERATOR-DATASET\n');
      const { out } = await withContext('8.8.8.8', ctx({ IP_CONTEXT_DB: tsv }));
      expect(out.result.context).toMatchObject({ asn: 64500, asName: 'OPERATOR-DATASET', country: 'ZZ' });
      expect(out.sources.find((s) => s.source === 'ip_context_dataset')).toEqual({
        source: 'ip_context_dataset',
        version: expect.stringMatching(/^ip2asn-combined\.tsv@/),
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('readiness: the context lane is ready with no variable set', () => {
    expect(ipProduct.readiness(ctx().runtime).context).toBe('ready');
  });
});

describe('the compact table and its cache file', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'lss-ipctx-cache-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const pkg = () => contextPackage()!;

  it('a torn cache file is rebuilt by the child process, then read from the cache', { timeout: 120_000 }, async () => {
    const path = join(dir, 'nested', 'table.bin');
    const first = await loadOrBuildContextTable(pkg(), [path]);
    expect(first.origin).toBe('built');
    writeFileSync(path, Buffer.from('LSSASN01\u0005\u0000\u0000\u0000{"ve'));
    expect(() => deserializeAsnTable(Buffer.from('LSSASN01\u0005\u0000\u0000\u0000{"ve'))).toThrow(AsnTableFormatError);
    const rebuilt = await loadOrBuildContextTable(pkg(), [path]);
    expect(rebuilt.origin).toBe('built');
    const cached = await loadOrBuildContextTable(pkg(), [path]);
    expect(cached.origin).toBe('cache');
    expect(lookupAsn(cached.table, 4, addr('8.8.8.8').value)?.asn).toBe(15169);
  });

  it('with no writable cache path the child hands the table over on stdout', { timeout: 120_000 }, async () => {
    const blocker = join(dir, 'a-file');
    writeFileSync(blocker, 'not a directory');
    const loaded = await loadOrBuildContextTable(pkg(), [join(blocker, 'table.bin')]);
    expect(loaded.origin).toBe('built_unsaved');
    const hit = lookupAsn(loaded.table, 6, addr('2001:4860:4860::8888').value);
    expect(hit).toMatchObject({ asn: 15169, asName: 'Google LLC' });
  });

  it('lookups are binary searches over typed arrays', async () => {
    const { table } = await loadOrBuildContextTable(pkg());
    for (const t of [table.asn4, table.asn6, table.cc4, table.cc6]) {
      expect(t.starts).toBeInstanceOf(Uint32Array);
      expect(t.ends).toBeInstanceOf(Uint32Array);
      // sorted and disjoint: each start is past the previous end
      const unordered: number[] = [];
      for (let i = 1; i < t.rows; i++) {
        let cmp = 0;
        for (let w = 0; w < t.stride && cmp === 0; w++) {
          const a = t.starts[i * t.stride + w]!;
          const b = t.ends[(i - 1) * t.stride + w]!;
          cmp = a === b ? 0 : a < b ? -1 : 1;
        }
        if (cmp !== 1) unordered.push(i);
      }
      expect(t.rows).toBeGreaterThan(10_000);
      expect(unordered).toEqual([]);
    }
    expect(lookupAsn(table, 4, addr('0.0.0.0').value)).toBeNull();
    expect(lookupAsn(table, 6, addr('ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff').value)).toBeNull();
  });
});
