// A scan's web task carries the addresses its host's dns task resolved (planner.ts: `addresses`,
// `addressesUntil`), and the web check connects to them without asking DNS again
// (posture-checks.ts withCarriedAddresses, OutboundGuard.knowing), against the loopback lab: the
// name below has no DNS record at all, so a page fetched proves the carried address was used; once
// expired the check resolves as before (host_not_found); a carried address the guard refuses is
// refused like an answer, nothing connected.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtimeFor } from '../helpers/lab-runtime.ts';
import { LAB_REFUSED_ADDRESS } from '../lab/addresses.ts';
import { scanLabPart } from '../lab/scan-lab.ts';
import { startLab, type RunningLab } from '../lab/serve.ts';
import { GEN_WEB_ADDRESSES, genZoneName } from '../lab/scan-zones.ts';
import type { CheckContext, ProductRuntime } from '../../src/products/kit/product-contract.ts';
import { runScanWebCheck } from '../../src/products/scan/checks/posture-checks.ts';

const N = 10;
// Not in the generated zone (NXDOMAIN), served by its web hosts like any of the zone's names.
const HOST = `carried.${genZoneName(N)}`;

describe("scan.web: the dns task's addresses, carried", () => {
  let lab: RunningLab;
  let rt: ProductRuntime;
  let requests: Array<{ address: string; host: string }>;
  const ctx = (): CheckContext => ({ runtime: rt, signal: new AbortController().signal });
  const check = (params: Record<string, unknown>) =>
    runScanWebCheck(
      { objectKey: HOST, params: { host: HOST, url: `https://${HOST}/`, scope: genZoneName(N), ...params } },
      ctx(),
      { web: { fetchTimeoutMs: 3000 }, rdapTimeoutMs: 3000 },
    );
  const chains = (out: Awaited<ReturnType<typeof check>>) =>
    (out.projection.http as { chains: { http: { outcome: string; failure: { kind: string } | null } } }).chains;

  beforeAll(async () => {
    lab = await startLab({ parts: [scanLabPart({ generated: [N], onReady: (l) => (requests = l.requests) })] });
    rt = runtimeFor(lab.env);
  }, 60_000);
  afterAll(async () => {
    await lab?.close();
  });

  it('connects to the carried address without asking DNS; the tls part reads it too', async () => {
    const address = GEN_WEB_ADDRESSES[3]!;
    const before = requests.length;
    const out = await check({ addresses: [address], addressesUntil: Date.now() + 60_000 });
    expect(chains(out).http.outcome).toBe('response');
    expect(requests.slice(before).filter((r) => r.host.startsWith(HOST))).toContainEqual(
      expect.objectContaining({ address }),
    );
    // The tls part used it too (its host → address objects; :443 is refused, the generated hosts
    // are HTTP only), and nothing else: DNS would have said there is no such name.
    expect(out.objects.filter((o) => o.type === 'ip_address').map((o) => o.key)).toEqual([address]);
  });

  it('past addressesUntil the host is resolved again: no record, host_not_found', async () => {
    const before = requests.length;
    const out = await check({ addresses: [GEN_WEB_ADDRESSES[3]], addressesUntil: Date.now() - 1 });
    expect(chains(out).http.outcome).toBe('failed');
    expect(chains(out).http.failure?.kind).toBe('host_not_found');
    expect(requests.length).toBe(before);
  });

  it('a carried address the guard refuses is refused like an answer: nothing connected', async () => {
    const before = requests.length;
    const out = await check({ addresses: [LAB_REFUSED_ADDRESS], addressesUntil: Date.now() + 60_000 });
    expect(chains(out).http.outcome).toBe('refused');
    expect(requests.length).toBe(before);
  });
});
