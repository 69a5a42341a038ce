// The scan planner against the profile table (src/products/scan/rules/profiles.ts, CONTRACT §11): what each
// profile runs at distance 0, which sources it follows and how far, what never gets a task (out
// of scope, beyond the hop limit, wildcard matches, service names for web), and the gates that
// keep active work to approved, in-scope names that are not aliases of a third party.
import { describe, expect, it } from 'vitest';
import {
  expandScan,
  planScan,
  recheckBaseline,
  SCAN_CHECKS,
  type DnsFacts,
  type ScanInput,
  type WebFacts,
} from '../../src/products/scan/rules/planner.ts';
import {
  profiles,
  scanProfiles,
  unitCosts,
  type NameSource,
  type ScanProfile,
} from '../../src/products/scan/rules/profiles.ts';
import type { CheckOutput, FinishedTask, TaskPlan } from '../../src/contract/tasks.ts';
import type { ApprovedScope } from '../../src/auth/approved-scopes.ts';

const TARGET = 'example.test';
const input = (profile: ScanProfile, active = false, target = TARGET): ScanInput => ({
  profile,
  target: { type: 'domain_name', value: target },
  options: { active, maxCredits: 1000 },
});
/** Approved scopes: a name is an operator's approval; an object says its proof. */
const ctx = (approved: Array<string | ApprovedScope> = []) => ({
  approvedScopes: async () =>
    approved.map(
      (a): ApprovedScope => (typeof a === 'string' ? { domain: a, proof: 'operator_override', token: null } : a),
    ),
});
const out = (projection: Record<string, unknown>): CheckOutput => ({
  status: 'completed',
  projection,
  objects: [],
  relations: [],
  findings: [],
  limitations: [],
  sources: [],
});
const keys = (plans: TaskPlan[]) => plans.map((p) => `${p.check} ${p.objectKey}`).sort();

function dnsFacts(name: string, f: Partial<DnsFacts> = {}): DnsFacts {
  return { name, match: 'real', addresses: ['127.0.0.1'], hasMx: false, cnameTargets: [], discoveries: [], ...f };
}
function finishedDns(name: string, distance: number, f: Partial<DnsFacts> = {}): FinishedTask {
  return {
    check: SCAN_CHECKS.dns,
    objectKey: name,
    distance,
    status: 'completed',
    output: out({ ...dnsFacts(name, f) }),
  };
}
function finishedWeb(host: string, distance: number, f: Partial<WebFacts> = {}): FinishedTask {
  return {
    check: SCAN_CHECKS.web,
    objectKey: host,
    distance,
    status: 'completed',
    output: out({ host, httpsResponded: true, discoveries: [], cnameTargets: [], ...f }),
  };
}

describe('planScan: distance-0 work per profile', () => {
  it("quick: the target's DNS (required) and mail, nothing else", () => {
    const plans = planScan(input('quick'));
    expect(keys(plans)).toEqual([`${SCAN_CHECKS.dns} ${TARGET}`, `${SCAN_CHECKS.mail} ${TARGET}`]);
    expect(plans.find((p) => p.check === SCAN_CHECKS.dns)!.required).toBe(true);
  });

  it("balanced and deep add delegation/registration and the apex and www, each behind its level's wildcard probe", () => {
    for (const profile of ['balanced', 'deep'] as const) {
      const plans = planScan(input(profile, false, `shop.${TARGET}`));
      expect(keys(plans)).toEqual([
        `${SCAN_CHECKS.dns} ${TARGET}`,
        `${SCAN_CHECKS.dns} shop.${TARGET}`,
        `${SCAN_CHECKS.dns} www.${TARGET}`,
        `${SCAN_CHECKS.domain} ${TARGET}`,
        `${SCAN_CHECKS.mail} shop.${TARGET}`,
        // The wildcard probe of the registrable domain's level (for www) — none above it (a public suffix).
        `${SCAN_CHECKS.wildcard} ${TARGET}`,
      ]);
      const www = plans.find((p) => p.objectKey === `www.${TARGET}` && p.check === SCAN_CHECKS.dns)!;
      expect(www.gate).toEqual({ check: SCAN_CHECKS.wildcard, objectKey: TARGET });
      expect(www.distance).toBe(1);
    }
  });

  it('deep probes DKIM selectors, balanced does not', () => {
    expect(planScan(input('deep')).find((p) => p.check === SCAN_CHECKS.mail)!.params).toMatchObject({ dkim: true });
    expect(planScan(input('balanced')).find((p) => p.check === SCAN_CHECKS.mail)!.params).toMatchObject({
      dkim: false,
    });
  });

  it('plans nothing active at distance 0: the zone transfer and the wordlist wait for the approved scope (expandScan)', () => {
    for (const active of [true, false])
      expect(planScan(input('advanced', active)).filter((p) => p.lane === 'active')).toEqual([]);
  });

  it('every task costs what CONTRACT §6 says for its lane', () => {
    for (const profile of scanProfiles) {
      for (const p of planScan(input(profile, profile === 'advanced')))
        expect(p.unitCost).toBe(unitCosts[p.lane as keyof typeof unitCosts]);
    }
  });
});

describe("recheckBaseline: the baseline's names, handed in as data (CONTRACT §13)", () => {
  const names = [
    { name: TARGET, distance: 0 },
    { name: `a.${TARGET}`, distance: 1 },
    { name: `deep.b.${TARGET}`, distance: 7 },
    { name: 'mx.thirdparty.test', distance: 1 },
    { name: `*.${TARGET}`, distance: 1 },
    { name: `A.${TARGET.toUpperCase()}.`, distance: 2 },
  ];

  it('every in-scope host name but the target gets its DNS task, behind its level wildcard probe, via baseline', () => {
    const plans = recheckBaseline(input('deep'), names);
    const dns = plans.filter((p) => p.check === SCAN_CHECKS.dns);
    expect(dns.map((p) => p.objectKey).sort()).toEqual([`a.${TARGET}`, `a.${TARGET}`, `deep.b.${TARGET}`]);
    for (const p of dns) {
      expect(p.params?.via).toBe('baseline');
      expect(p.gate?.check).toBe(SCAN_CHECKS.wildcard);
      expect(p.unitCost).toBe(unitCosts.dns);
      expect(p.distance).toBeLessThanOrEqual(profiles.deep.hops);
      expect(p.distance).toBeGreaterThanOrEqual(1);
    }
    expect(plans.filter((p) => p.check === SCAN_CHECKS.wildcard).map((p) => p.objectKey)).toContain(`b.${TARGET}`);
    // Out of scope and wildcard names never get a task: recorded, never probed (CONTRACT §11).
    expect(plans.some((p) => p.objectKey === 'mx.thirdparty.test' || p.objectKey.startsWith('*'))).toBe(false);
  });

  it('a profile without recursion (quick) rechecks nothing: its baseline holds only the target', () => {
    expect(recheckBaseline(input('quick'), names)).toEqual([]);
  });
});

describe('active work stays inside the approved scope that covers the target', () => {
  const activeKeys = (plans: TaskPlan[]) =>
    plans
      .filter((p) => p.lane === 'active')
      .map((p) => `${p.check} ${p.objectKey}`)
      .sort();

  it("the target's DNS answer plans the zone transfer and the wordlist of the approved scope's apex", async () => {
    const plans = await expandScan(input('advanced', true), finishedDns(TARGET, 0), ctx([TARGET]));
    expect(activeKeys(plans)).toEqual(
      [
        `${SCAN_CHECKS.axfr} ${TARGET}`,
        `${SCAN_CHECKS.tcpProbe} ${TARGET}`,
        `${SCAN_CHECKS.wordlist} ${TARGET}`,
      ].sort(),
    );
    for (const p of plans.filter((x) => x.check === SCAN_CHECKS.axfr || x.check === SCAN_CHECKS.wordlist)) {
      expect(p.params).toMatchObject({ approvedScope: TARGET });
      expect(p.distance).toBe(0);
    }
    // Without the option, or without an approval covering the target: nothing active at all.
    expect(activeKeys(await expandScan(input('advanced', false), finishedDns(TARGET, 0), ctx([TARGET])))).toEqual([]);
    expect(activeKeys(await expandScan(input('advanced', true), finishedDns(TARGET, 0), ctx(['other.test'])))).toEqual(
      [],
    );
  });

  it('a public-suffix row (stored before the CLI refused it) widens nothing: approving test and shop.<domain> keeps the transfer in shop (issue 30)', async () => {
    const shop = `shop.${TARGET}`;
    const i = input('advanced', true, shop);
    // Before: activeScopeOf took the widest covering row, `test`, and clamped it to example.test:
    // the transfer and the wordlist of the whole registrable domain, approved for shop only.
    const at0 = await expandScan(i, finishedDns(shop, 0), ctx(['test', shop]));
    expect(activeKeys(at0)).toEqual(
      [`${SCAN_CHECKS.axfr} ${shop}`, `${SCAN_CHECKS.tcpProbe} ${shop}`, `${SCAN_CHECKS.wordlist} ${shop}`].sort(),
    );
    expect(activeKeys(await expandScan(i, finishedDns(`api.${TARGET}`, 1), ctx(['test', shop])))).toEqual([]);
    // A public-suffix row alone approves nothing.
    expect(activeKeys(await expandScan(i, finishedDns(shop, 0), ctx(['test'])))).toEqual([]);
  });

  it("every active task carries its scope's proof: a verified scope's token, or operator_override", async () => {
    const verified: ApprovedScope = { domain: TARGET, proof: 'verified', token: 'lss-abc' };
    const plans = await expandScan(input('advanced', true), finishedDns(TARGET, 0), ctx([verified]));
    const active = plans.filter((p) => p.lane === 'active');
    expect(active.length).toBe(3);
    for (const p of active)
      expect(p.params).toMatchObject({ approvedScope: TARGET, scopeProof: 'verified', proofToken: 'lss-abc' });
    const override = await expandScan(input('advanced', true), finishedWeb(`www.${TARGET}`, 1), ctx([TARGET]));
    expect(override.filter((p) => p.lane === 'active').map((p) => p.params)).toEqual([
      expect.objectContaining({ approvedScope: TARGET, scopeProof: 'operator_override' }),
      expect.objectContaining({ approvedScope: TARGET, scopeProof: 'operator_override' }),
    ]);
  });

  it('approving only shop.<domain>: AXFR and wordlist of shop.<domain>, never of the registrable domain; probes only below it', async () => {
    const shop = `shop.${TARGET}`;
    const i = input('advanced', true, shop);
    const at0 = await expandScan(i, finishedDns(shop, 0), ctx([shop]));
    expect(activeKeys(at0)).toEqual(
      [`${SCAN_CHECKS.axfr} ${shop}`, `${SCAN_CHECKS.tcpProbe} ${shop}`, `${SCAN_CHECKS.wordlist} ${shop}`].sort(),
    );
    expect(at0.some((p) => p.lane === 'active' && p.objectKey === TARGET)).toBe(false);
    // A name of the registrable domain outside the approved scope: scanned passively, never probed.
    const api = await expandScan(i, finishedDns(`api.${TARGET}`, 1), ctx([shop]));
    expect(api.map((p) => p.check)).toContain(SCAN_CHECKS.web);
    // Its web task carries the addresses and their expiry only when the dns task gave one.
    expect(api.find((p) => p.check === SCAN_CHECKS.web)!.params).not.toHaveProperty('addresses');
    const carried = await expandScan(i, finishedDns(`api.${TARGET}`, 1, { addressesUntil: 1234 }), ctx([shop]));
    expect(carried.find((p) => p.check === SCAN_CHECKS.web)!.params).toMatchObject({
      host: `api.${TARGET}`,
      addresses: ['127.0.0.1'],
      addressesUntil: 1234,
    });
    expect(activeKeys(api)).toEqual([]);
    expect(activeKeys(await expandScan(i, finishedWeb(`www.${TARGET}`, 1), ctx([shop])))).toEqual([]);
    // Another approval of the same workspace that does not cover the target grants this scan nothing.
    expect(activeKeys(await expandScan(i, finishedDns(`blog.${TARGET}`, 1), ctx([shop, `blog.${TARGET}`])))).toEqual(
      [],
    );
    // Inside the approved scope: probed.
    expect(activeKeys(await expandScan(i, finishedDns(`api.${shop}`, 1), ctx([shop])))).toEqual([
      `${SCAN_CHECKS.tcpProbe} api.${shop}`,
    ]);
    expect(activeKeys(await expandScan(i, finishedWeb(`api.${shop}`, 1), ctx([shop])))).toEqual(
      [`${SCAN_CHECKS.tlsProtocols} api.${shop}`, `${SCAN_CHECKS.wellKnown} api.${shop}`].sort(),
    );
  });

  it('with the registrable domain approved as well, a scan of a subdomain works on the registrable domain', async () => {
    const shop = `shop.${TARGET}`;
    const plans = await expandScan(input('advanced', true, shop), finishedDns(shop, 0), ctx([shop, TARGET]));
    expect(activeKeys(plans)).toContain(`${SCAN_CHECKS.axfr} ${TARGET}`);
    expect(plans.find((p) => p.check === SCAN_CHECKS.axfr)!.params).toMatchObject({ approvedScope: TARGET });
  });
});

describe('the whole public suffix list: another owner under the same private suffix is a third party', () => {
  const ALICE = 'alice.github.io';

  it('a scan of alice.github.io works on alice.github.io only (web of its apex and www, its delegation)', () => {
    const plans = planScan(input('balanced', false, ALICE));
    expect(plans.every((p) => p.objectKey === ALICE || p.objectKey.endsWith(`.${ALICE}`))).toBe(true);
    expect(plans.map((p) => p.objectKey)).not.toContain('github.io');
    expect(plans.find((p) => p.check === SCAN_CHECKS.domain)?.objectKey).toBe(ALICE);
  });

  it('bob.github.io, found through any source, gets no task: never resolved as in scope, never web-fetched, never probed', async () => {
    for (const profile of ['deep', 'advanced'] as const) {
      const discoveries = (['mx', 'ns', 'cname', 'srv', 'spf', 'san', 'link', 'axfr', 'wordlist'] as NameSource[]).map(
        (source) => ({ name: `bob.github.io`, source }),
      );
      const fromDns = await expandScan(
        input(profile, profile === 'advanced', ALICE),
        finishedDns(ALICE, 0, { discoveries }),
        ctx([ALICE]),
      );
      const fromWeb = await expandScan(
        input(profile, profile === 'advanced', ALICE),
        finishedWeb(ALICE, 0, { discoveries }),
        ctx([ALICE]),
      );
      for (const plans of [fromDns, fromWeb])
        expect(
          plans.filter((p) => p.objectKey.includes('bob.github.io') || p.objectKey === 'github.io'),
          profile,
        ).toEqual([]);
      // Its own dns task never exists, so no web or probe task can follow from it; and an alias of
      // it is an alias of a third party: passive at most.
      const alias = await expandScan(
        input('advanced', true, ALICE),
        finishedDns(`blog.${ALICE}`, 1, { cnameTargets: ['bob.github.io'] }),
        ctx([ALICE]),
      );
      expect(alias.filter((p) => p.lane === 'active')).toEqual([]);
    }
  });
});

describe('what resolves into space the outbound guard refuses is a fact, not a lead', () => {
  it('a name whose addresses are refused (private, loopback…) gets no web and no active task', async () => {
    for (const refused of [['127.200.0.7'], ['127.200.0.7', '127.0.3.201']]) {
      const plans = await expandScan(
        input('advanced', true),
        finishedDns(`api.${TARGET}`, 1, { addresses: refused.slice(1), refusedAddresses: refused.slice(0, 1) }),
        ctx([TARGET]),
      );
      expect(
        plans.filter((p) => p.check === SCAN_CHECKS.web || p.lane === 'active'),
        refused.join(','),
      ).toEqual([]);
    }
    // The same name with a reachable address is a web and probe target.
    const ok = await expandScan(input('advanced', true), finishedDns(`api.${TARGET}`, 1), ctx([TARGET]));
    expect(ok.map((p) => p.check)).toEqual(expect.arrayContaining([SCAN_CHECKS.web, SCAN_CHECKS.tcpProbe]));
  });
});

describe('expandScan: sources, scope and hops as the profile table says', () => {
  const sources: NameSource[] = ['mx', 'ns', 'cname', 'srv', 'spf', 'san', 'link', 'axfr', 'wordlist'];

  it("follows exactly the profile's sources, and only in scope", async () => {
    for (const profile of scanProfiles) {
      const discoveries = [
        ...sources.map((s) => ({ name: `${s}-host.${TARGET}`, source: s })),
        { name: 'mx.other-provider.test', source: 'mx' as const },
      ];
      const plans = await expandScan(input(profile), finishedDns(TARGET, 0, { discoveries }), ctx());
      const scanned = plans
        .filter((p) => p.check === SCAN_CHECKS.dns)
        .map((p) => p.objectKey.split('-host.')[0])
        .sort();
      expect(scanned, profile).toEqual([...profiles[profile].sources].sort());
      expect(
        plans.some((p) => p.objectKey.includes('other-provider')),
        profile,
      ).toBe(false);
    }
  });

  it('stops at the hop limit: a name found at the last hop is recorded by its check, never scanned', async () => {
    for (const profile of scanProfiles) {
      const { hops, sources: src } = profiles[profile];
      if (src.length === 0) continue;
      const d = [{ name: `next.${TARGET}`, source: src[0]! }];
      const within = await expandScan(input(profile), finishedDns(`a.${TARGET}`, hops - 1, { discoveries: d }), ctx());
      expect(within.find((p) => p.objectKey === `next.${TARGET}`)?.distance, profile).toBe(hops);
      const beyond = await expandScan(input(profile), finishedDns(`a.${TARGET}`, hops, { discoveries: d }), ctx());
      expect(
        beyond.filter((p) => p.objectKey === `next.${TARGET}`),
        profile,
      ).toEqual([]);
    }
  });

  it("a name matching its level's wildcard leads to nothing", async () => {
    const plans = await expandScan(
      input('deep'),
      finishedDns(`ghost.${TARGET}`, 1, { match: 'match', discoveries: [{ name: `x.${TARGET}`, source: 'cname' }] }),
      ctx(),
    );
    expect(plans).toEqual([]);
  });

  it('web posture: the apex and www in balanced, every in-scope host in deep; never a service name or an unresolved name', async () => {
    const web = async (profile: ScanProfile, name: string, f: Partial<DnsFacts> = {}) =>
      (await expandScan(input(profile), finishedDns(name, 1, f), ctx()))
        .filter((p) => p.check === SCAN_CHECKS.web)
        .map((p) => p.objectKey);
    expect(await web('balanced', `www.${TARGET}`)).toEqual([`www.${TARGET}`]);
    expect(await web('balanced', `api.${TARGET}`)).toEqual([]);
    expect(await web('deep', `api.${TARGET}`)).toEqual([`api.${TARGET}`]);
    expect(await web('deep', `_sip._tcp.${TARGET}`)).toEqual([]);
    expect(await web('deep', `gone.${TARGET}`, { addresses: [] })).toEqual([]);
  });

  it('mail posture of other in-scope names with MX only where the profile asks for it', async () => {
    const mail = async (profile: ScanProfile) =>
      (await expandScan(input(profile), finishedDns(`eu.${TARGET}`, 1, { hasMx: true }), ctx())).filter(
        (p) => p.check === SCAN_CHECKS.mail,
      );
    expect(await mail('balanced')).toEqual([]);
    expect((await mail('deep')).map((p) => p.objectKey)).toEqual([`eu.${TARGET}`]);
  });

  it('active work only for advanced with the option, on approved in-scope names, never on an alias of a third party', async () => {
    const probes = async (i: ScanInput, approved: string[], f: Partial<DnsFacts> = {}) =>
      (await expandScan(i, finishedDns(`api.${TARGET}`, 1, f), ctx(approved)))
        .filter((p) => p.lane === 'active')
        .map((p) => p.check);
    expect(await probes(input('advanced', true), [TARGET])).toEqual([SCAN_CHECKS.tcpProbe]);
    expect(await probes(input('advanced', false), [TARGET])).toEqual([]);
    expect(await probes(input('deep'), [TARGET])).toEqual([]);
    expect(await probes(input('advanced', true), ['elsewhere.test'])).toEqual([]);
    expect(await probes(input('advanced', true), [TARGET], { cnameTargets: ['edge.cdn-provider.test'] })).toEqual([]);
    // An in-scope alias is not a third party.
    expect(await probes(input('advanced', true), [TARGET], { cnameTargets: [`lb.${TARGET}`] })).toEqual([
      SCAN_CHECKS.tcpProbe,
    ]);

    const webActive = async (f: Partial<WebFacts>) =>
      (await expandScan(input('advanced', true), finishedWeb(`api.${TARGET}`, 1, f), ctx([TARGET])))
        .filter((p) => p.lane === 'active')
        .map((p) => p.check)
        .sort();
    expect(await webActive({})).toEqual([SCAN_CHECKS.tlsProtocols, SCAN_CHECKS.wellKnown].sort());
    expect(await webActive({ httpsResponded: false })).toEqual([]);
    expect(await webActive({ cnameTargets: ['edge.cdn-provider.test'] })).toEqual([]);
  });

  it('a task that did not produce results plans nothing', async () => {
    for (const status of ['failed', 'timeout', 'unavailable', 'skipped'] as const) {
      const t = { ...finishedDns(TARGET, 0, { discoveries: [{ name: `mx.${TARGET}`, source: 'mx' }] }), status };
      expect(await expandScan(input('deep'), t, ctx())).toEqual([]);
    }
  });

  it('links on a page are followed by deep (a source), SANs by balanced too; both only within the hop limit', async () => {
    const discoveries = [
      { name: `linked.${TARGET}`, source: 'link' as const },
      { name: `san.${TARGET}`, source: 'san' as const },
    ];
    const balanced = await expandScan(input('balanced'), finishedWeb(TARGET, 0, { discoveries }), ctx());
    expect(balanced.filter((p) => p.check === SCAN_CHECKS.dns).map((p) => p.objectKey)).toEqual([`san.${TARGET}`]);
    const deep = await expandScan(input('deep'), finishedWeb(TARGET, 0, { discoveries }), ctx());
    expect(
      deep
        .filter((p) => p.check === SCAN_CHECKS.dns)
        .map((p) => p.objectKey)
        .sort(),
    ).toEqual([`linked.${TARGET}`, `san.${TARGET}`]);
  });
});
