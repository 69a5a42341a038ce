// The scan's dns and active checks against the loopback lab, below the job machinery (issue 18
// items 3-5): a zone transfer only of a zone inside the approved scope, asked only of name servers
// inside it, capped per source; a TCP probe that resolves its host again at connection time (a
// rebinding answer between the dns task and the probe is refused, nothing connects); records that
// point into special-use names or refused addresses kept as facts, never as leads (a CNAME into one
// is where the answer leaves public DNS: cut there, issue 30).
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtimeFor } from '../helpers/lab-runtime.ts';
import { LAB_REFUSED_ADDRESS, labHost } from '../lab/addresses.ts';
import { startLab, type LabPartFactory, type RunningLab } from '../lab/serve.ts';
import type { Zone } from '../lab/zones.ts';
import type { CheckContext, ProductRuntime } from '../../src/products/kit/product-contract.ts';
import {
  CARRIED_ABSENCE_MAX_S,
  CARRIED_ADDRESSES_MAX_S,
  addressesUntil,
  runScanDnsCheck,
} from '../../src/products/scan/checks/dns-check.ts';
import type { QueryResult } from '../../src/dns/types.ts';
import { runAxfrCheck, runTcpProbeCheck } from '../../src/products/scan/checks/active-checks.ts';
import type { DnsFacts } from '../../src/products/scan/rules/planner.ts';

const ZONE = 'scope-lab.test';
const SHOP = `shop.${ZONE}`;
const PARTS = 'parts-lab.test';
const HOSTS = 30;
const WEB = labHost('scan', 201);
const REBIND_FIRST = labHost('scan', 202);
// Addresses the guard refuses (loopback outside LAB_ALLOW, as a private range would be): were the
// guard to regress, a connection would reach this machine, never anything beyond it.
const OUTSIDE_1 = '127.200.0.7';
const OUTSIDE_2 = '127.200.0.8';

const soa = (origin: string) => ({
  name: '@',
  type: 'SOA',
  data: {
    mname: `ns1.${origin}`,
    rname: `hostmaster.${origin}`,
    serial: 1,
    refresh: 1,
    retry: 1,
    expire: 1,
    minimum: 1,
  },
});

const zones: Zone[] = [
  {
    origin: ZONE,
    allowAxfr: true,
    records: [
      soa(ZONE),
      { name: '@', type: 'NS', data: `ns1.${ZONE}` },
      { name: '@', type: 'A', data: WEB },
      // The lab DNS server itself: the zone's in-scope name server, which allows AXFR.
      { name: 'ns1', type: 'A', data: '127.0.0.1' },
      ...Array.from({ length: HOSTS }, (_, i) => ({ name: `h${i}`, type: 'A', data: WEB })),
      // Records that point into the deployment's own network.
      { name: '@', type: 'MX', data: { preference: 10, exchange: 'mail.internal' } },
      { name: '@', type: 'MX', data: { preference: 20, exchange: `mx.${ZONE}` } },
      { name: 'mx', type: 'A', data: WEB },
      { name: 'alias', type: 'CNAME', data: 'db.svc.cluster.local' },
      { name: 'priv', type: 'A', data: OUTSIDE_1 },
      { name: 'mixed', type: 'A', data: OUTSIDE_2 },
      { name: 'mixed', type: 'A', data: WEB },
      { name: 'rebind', type: 'A', data: REBIND_FIRST },
    ],
    behaviours: [{ name: 'rebind', behaviour: { kind: 'rebind', after: 1, address: LAB_REFUSED_ADDRESS } }],
  },
  {
    // A delegated subzone whose name servers sit on both sides of the approved scope shop.<zone>.
    origin: SHOP,
    records: [
      soa(SHOP),
      { name: '@', type: 'NS', data: `ns1.${SHOP}` },
      { name: '@', type: 'NS', data: `ns1.${ZONE}` },
      { name: 'ns1', type: 'A', data: '127.0.0.1' },
    ],
  },
  {
    // A name that answers, and an alias into a subzone whose servers fail (issue 44 item 1).
    origin: PARTS,
    records: [
      soa(PARTS),
      { name: '@', type: 'NS', data: `ns1.${PARTS}` },
      { name: 'ns1', type: 'A', data: '127.0.0.1' },
      { name: 'answers', type: 'A', data: WEB, ttl: 42 },
      { name: 'alias', type: 'CNAME', data: `x.dead.${PARTS}` },
      { name: 'x.dead', type: 'A', data: WEB },
    ],
    behaviours: [{ name: 'dead', subtree: true, behaviour: { kind: 'rcode', rcode: 'SERVFAIL' } }],
  },
];

describe('scan checks: approved scope, per-source cap, rebinding, special-use facts', () => {
  let lab: RunningLab;
  let rt: ProductRuntime;
  let connections = 0;
  const ctx = (): CheckContext => ({ runtime: rt, signal: new AbortController().signal });

  beforeAll(async () => {
    const part: LabPartFactory = async (c) => {
      // Port 22 of the rebinding address (refused) and of its first answer: both count connections.
      const counter = () =>
        net.createServer((s) => {
          connections++;
          s.destroy();
        });
      await c.listen(22, [
        { host: LAB_REFUSED_ADDRESS, server: counter() },
        { host: REBIND_FIRST, server: counter() },
      ]);
      return { name: 'scope', zones, close: async () => {} };
    };
    lab = await startLab({ parts: [part] });
    rt = runtimeFor(lab.env);
  }, 60_000);

  afterAll(async () => {
    await lab?.close();
  });

  it('transfers only a zone inside the approved scope', async () => {
    const out = await runAxfrCheck(
      { objectKey: ZONE, params: { scope: ZONE, approvedScope: SHOP, sourceCap: 200 }, distance: 0 },
      ctx(),
      { timeoutMs: 3000 },
    );
    expect(out.status).toBe('skipped');
    expect(out.limitations.map((l) => l.code)).toEqual(['axfr_out_of_scope']);
    expect(out.findings).toEqual([]);
  });

  it('asks only the name servers inside the approved scope; the others are a limitation', async () => {
    const out = await runAxfrCheck(
      { objectKey: SHOP, params: { scope: ZONE, approvedScope: SHOP, sourceCap: 200 }, distance: 0 },
      ctx(),
      { timeoutMs: 3000 },
    );
    expect((out.projection.servers as Array<{ server: string }>).map((s) => s.server)).toEqual([`ns1.${SHOP}`]);
    expect(out.limitations.map((l) => l.code)).toContain('axfr_out_of_scope_servers');
  });

  it('caps what one transfer contributes at the per-source cap: source_truncated, partial, namesSeen', async () => {
    const cap = 5;
    const out = await runAxfrCheck(
      { objectKey: ZONE, params: { scope: ZONE, approvedScope: ZONE, sourceCap: cap }, distance: 0 },
      ctx(),
      { timeoutMs: 3000 },
    );
    expect(out.findings.map((f) => f.code)).toEqual(['scan_zone_transfer_allowed']);
    const discoveries = out.projection.discoveries as unknown[];
    expect(discoveries).toHaveLength(cap);
    expect(out.projection.namesSeen).toBeGreaterThan(HOSTS);
    expect(out.objects).toHaveLength(cap); // objects for the kept names only
    expect(out.status).toBe('partial');
    const truncated = out.limitations.find((l) => l.code === 'source_truncated');
    expect(truncated?.message).toContain(`the first ${cap} are followed`);
  });

  it('a probe resolves its host again when it connects: a record rebound since the dns task is refused, nothing connects', async () => {
    const dns = await runScanDnsCheck(
      { objectKey: `rebind.${ZONE}`, params: { target: `rebind.${ZONE}`, scope: ZONE }, distance: 0 },
      ctx(),
    );
    expect((dns.projection as unknown as DnsFacts).addresses).toEqual([REBIND_FIRST]);
    const probe = await runTcpProbeCheck(
      { objectKey: `rebind.${ZONE}`, params: { host: `rebind.${ZONE}` }, distance: 0 },
      ctx(),
      { connectTimeoutMs: 500 },
    );
    expect(probe).toMatchObject({ status: 'unavailable', reason: 'target_not_allowed' });
    expect(connections).toBe(0);
  });

  it("keeps its address set's outcome as a part: an alias into a failing zone resolved no address (issue 44 item 1)", async () => {
    // Each name its own target: no wildcard probe to compare with (else `wildcard_unknown`).
    const run = (name: string) =>
      runScanDnsCheck({ objectKey: name, params: { target: name, scope: PARTS }, distance: 0 }, ctx());
    const before = Date.now();
    const answers = await run(`answers.${PARTS}`);
    expect(answers.status).toBe('completed');
    expect((answers.projection as unknown as DnsFacts).lanes).toEqual([{ lane: 'addresses', status: 'completed' }]);
    // Both questions answered (A 42 s, AAAA NODATA): the web task may use the addresses for the
    // A record's 42 s, not more.
    const until = (answers.projection as unknown as DnsFacts).addressesUntil!;
    expect(until).toBeGreaterThanOrEqual(before + 42_000);
    expect(until).toBeLessThanOrEqual(Date.now() + 42_000);
    // The CNAME is answered, the addresses at its end are not (SERVFAIL): partial, and its
    // address part says why, so no address the name had reads as gone.
    const alias = await run(`alias.${PARTS}`);
    const facts = alias.projection as unknown as DnsFacts;
    expect(alias.status).toBe('partial');
    expect(facts.cnameTargets).toEqual([`x.dead.${PARTS}`]);
    expect(facts.addresses).toEqual([]);
    expect(facts.lanes).toEqual([{ lane: 'addresses', status: 'unavailable', reason: 'dns_servfail' }]);
    expect(facts).not.toHaveProperty('addressesUntil');
  });

  it('special-use names a record points at are facts, never discoveries; refused addresses are kept out of the plan', async () => {
    const apex = await runScanDnsCheck({ objectKey: ZONE, params: { target: ZONE, scope: ZONE }, distance: 0 }, ctx());
    const facts = apex.projection as unknown as DnsFacts;
    expect(facts.discoveries.map((d) => d.name)).toEqual([`mx.${ZONE}`, `ns1.${ZONE}`]);
    const internal = apex.objects.find((o) => o.key === 'mail.internal');
    expect(internal?.projection).toMatchObject({
      foundVia: 'mx',
      specialUse: { reason: 'special_use_domain', suffix: 'internal' },
    });
    expect(apex.relations).toContainEqual({
      from: { type: 'host', key: 'mail.internal' },
      relation: 'mx_of',
      to: { type: 'domain', key: ZONE },
    });

    const alias = await runScanDnsCheck(
      { objectKey: `alias.${ZONE}`, params: { target: ZONE, scope: ZONE }, distance: 1 },
      ctx(),
    );
    // A CNAME into a special-use name is where the answer leaves public DNS (issue 30 item 3): the
    // chain is cut there, the special-use name is no fact of the scan, and its dns is indeterminate.
    expect((alias.projection as unknown as DnsFacts).discoveries).toEqual([]);
    expect(alias.objects.map((o) => o.key)).not.toContain('db.svc.cluster.local');
    expect((alias.projection as unknown as DnsFacts).cnameTargets).toEqual([]);
    expect(alias).toMatchObject({ status: 'unavailable', reason: 'answer_leaves_public_dns' });

    for (const [name, refused, allowed] of [
      ['priv', [OUTSIDE_1], []],
      ['mixed', [OUTSIDE_2], [WEB]],
    ] as const) {
      const out = await runScanDnsCheck(
        { objectKey: `${name}.${ZONE}`, params: { target: ZONE, scope: ZONE }, distance: 1 },
        ctx(),
      );
      const f = out.projection as unknown as DnsFacts;
      expect(f.refusedAddresses, name).toEqual(refused);
      expect(f.addresses, name).toEqual(allowed);
      // Nothing for a web task to carry: the planner plans none for a name with a refused address.
      expect(f, name).not.toHaveProperty('addressesUntil');
      expect(out.objects.find((o) => o.key === refused[0])?.projection, name).toMatchObject({
        outboundRefused: true,
        range: 'loopback',
      });
      expect(
        out.limitations.map((l) => l.code),
        name,
      ).toContain('address_not_reachable');
    }
  });
});

describe('addressesUntil: how long a web task may use its dns task’s addresses', () => {
  const q = (type: 'A' | 'AAAA', outcome: QueryResult['outcome'], ttls: number[] = []): QueryResult => ({
    name: 'h.example',
    type,
    outcome,
    rcode: outcome === 'answer' || outcome === 'nodata' ? 'NOERROR' : outcome === 'nxdomain' ? 'NXDOMAIN' : null,
    flags: { aa: true, ad: false, tc: false, ra: false },
    transport: 'udp',
    durationMs: 1,
    answers: ttls.map((ttl, i) => ({
      name: 'h.example',
      type,
      ttl,
      data: type === 'A' ? `192.0.2.${i + 1}` : `2001:db8::${i + 1}`,
    })),
  });
  const now = 1_000_000;
  it('the least TTL of both answers, bounded; nothing when either question is indeterminate or nothing is usable', () => {
    expect(addressesUntil(q('A', 'answer', [120, 30]), q('AAAA', 'answer', [90]), true, now)).toEqual({
      addressesUntil: now + 30_000,
    });
    expect(addressesUntil(q('A', 'answer', [86_400]), q('AAAA', 'answer', [86_400]), true, now)).toEqual({
      addressesUntil: now + CARRIED_ADDRESSES_MAX_S * 1000,
    });
    // One family absent: its negative TTL is not kept, so the shorter bound.
    expect(addressesUntil(q('A', 'answer', [3600]), q('AAAA', 'nodata'), true, now)).toEqual({
      addressesUntil: now + CARRIED_ABSENCE_MAX_S * 1000,
    });
    // Asked again, an indeterminate question might answer more addresses: nothing carried.
    for (const outcome of ['servfail', 'timeout'] as const)
      expect(addressesUntil(q('A', 'answer', [120]), q('AAAA', outcome), true, now)).toEqual({});
    expect(addressesUntil(q('A', 'answer', [0]), q('AAAA', 'nodata'), true, now)).toEqual({});
    expect(addressesUntil(q('A', 'answer', [120]), q('AAAA', 'nodata'), false, now)).toEqual({});
  });
});
