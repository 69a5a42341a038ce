// The scan planner: what runs at distance 0 (planScan) and what a finished task leads to
// (expandScan), from the profile's data (profiles.ts). Pure: the orchestrator calls expandScan
// under the job row lock and then deduplicates (one task per (check, name)), budgets and gates
// what it returns, so nothing of a job lives in process memory.
//
// Rules:
//   - Scope is the target's registrable domain. An out-of-scope name is recorded (by the check
//     that saw it, at distance 1) and never gets a task of its own: never expanded, never probed.
//   - A name is scanned (a dns task) when it is in scope, came from one of the profile's sources
//     and is at most `hops` away from the target; its distance is the shortest path found (a name
//     found again closer resets to the closer distance: the writer keeps the minimum).
//   - Every name but the target waits for the wildcard probe of its parent level (a gate): only
//     then is it resolved and compared with the wildcard's answer set, before anything fans out
//     from it. A name that matches the wildcard leads to nothing.
//   - Web, mail and active work follow from a name's own DNS answers (it resolves to addresses the
//     outbound guard may reach, it has MX). A name that resolves only into space the guard refuses
//     (private, loopback… outside ALLOW_PRIVATE_TARGETS) is recorded with its addresses and gets
//     no web or active task.
//   - Active work (advanced, options.active) only inside the approved scope that covers the target
//     (activeScopeOf: the widest approved scope covering it that approves names at all; the
//     admission gate picks it by the same rule), each active task carrying that scope's proof,
//     never for a name at distance 1 that is out of scope (none get tasks), never for an alias of
//     a third party. The zone transfer and the wordlist are of that scope's apex, planned once the
//     target's own DNS answered: approving shop.example.com never transfers example.com.
import type { ExpandContext } from '../../kit/product-contract.ts';
import type { FinishedTask, TaskPlan, WorkerLane } from '../../../contract/tasks.ts';
import {
  activeScopeOf,
  inApprovedScope,
  isHostName,
  isServiceName,
  normalName,
  parentLevel,
  scopeOf,
  type Scope,
} from './names.ts';
import { profiles, unitCosts, type NameSource, type ProfileSpec, type ScanProfile } from './profiles.ts';

export interface ScanInput {
  profile: ScanProfile;
  target: { type: 'domain_name'; value: string };
  options: { active: boolean; maxCredits: number };
}

import { SCAN_CHECKS } from './check-names.ts';

export { SCAN_CHECKS };

/** A name a check saw, and where. */
export interface Discovery {
  name: string;
  source: NameSource;
}

/** What the dns check reports about its name (the projection expandScan reads). */
export interface DnsFacts {
  name: string;
  /** How the name compares with its level's wildcard; 'n/a' for the target. */
  match: 'match' | 'real' | 'possible' | 'unknown' | 'n/a';
  /** Addresses the outbound guard may reach. */
  addresses: string[];
  /** Addresses it refuses (private, loopback…): kept as facts, never connected to. */
  refusedAddresses?: string[];
  /**
   * Until when (epoch ms) `addresses` are what the name's A and AAAA questions answer (their
   * least TTL, bounded: checks/dns-check.ts addressesUntil); absent when either question was
   * indeterminate. The web task carries them, so lane-web does not ask again (posture-checks.ts).
   */
  addressesUntil?: number;
  hasMx: boolean;
  cnameTargets: string[];
  discoveries: Discovery[];
  /**
   * The outcomes of the task's parts (change detection reads them: CONTRACT §13): `addresses`,
   * whether its A and AAAA questions were answered. Absent from a task that did not resolve.
   */
  lanes?: TaskPart[];
}

/** One part of a task and how it ended (a lane status and its reason). */
export interface TaskPart {
  lane: string;
  status: string;
  reason?: string;
}

/** What the web check reports for expansion. */
export interface WebFacts {
  host: string;
  httpsResponded: boolean;
  discoveries: Discovery[];
  /** The host's CNAME chain (from its dns task): an alias of a third party gets no active work. */
  cnameTargets: string[];
}

export interface ScanParams {
  target: string;
  scope: string;
  profile: ScanProfile;
  sourceCap: number;
  [k: string]: unknown;
}

interface Ctx {
  input: ScanInput;
  p: ProfileSpec;
  scope: Scope;
  target: string;
  common: ScanParams;
}

function context(input: ScanInput): Ctx {
  const target = normalName(input.target.value);
  const scope = scopeOf(target);
  const p = profiles[input.profile];
  return {
    input,
    p,
    scope,
    target,
    common: { target, scope: scope.registrable, profile: input.profile, sourceCap: p.sourceCap },
  };
}

const task = (
  c: Ctx,
  check: string,
  lane: WorkerLane,
  productLane: string,
  unitCost: number,
  objectKey: string,
  distance: number,
  params: Record<string, unknown> = {},
  extra: Partial<TaskPlan> = {},
): TaskPlan => ({
  check,
  lane,
  productLane,
  required: false,
  unitCost,
  objectKey,
  distance,
  params: { ...c.common, ...params },
  ...extra,
});

/** A wildcard probe of a level at or below the registrable domain; none above it (a public suffix). */
function wildcardProbe(c: Ctx, level: string, distance: number): TaskPlan | null {
  if (!level || !c.scope.inScope(level)) return null;
  return task(c, SCAN_CHECKS.wildcard, 'dns', 'dns', unitCosts.dns, level, distance);
}

/**
 * A name to resolve: the probe of its level first, itself gated on it. `via`: how it was found
 * (`baseline`: it is a name of the job this one is compared with, rechecked so that its absence
 * is observed, not guessed: CONTRACT §13).
 */
function resolveName(c: Ctx, name: string, distance: number, via?: NameSource | 'baseline'): TaskPlan[] {
  const level = parentLevel(name);
  const probe = wildcardProbe(c, level, distance);
  const dns = task(
    c,
    SCAN_CHECKS.dns,
    'dns',
    'dns',
    unitCosts.dns,
    name,
    distance,
    via ? { via } : {},
    probe ? { gate: { check: SCAN_CHECKS.wildcard, objectKey: level } } : {},
  );
  return probe ? [probe, dns] : [dns];
}

function active(c: Ctx): boolean {
  return c.input.profile === 'advanced' && c.input.options.active;
}

export function planScan(input: ScanInput): TaskPlan[] {
  const c = context(input);
  const { target, scope, p } = c;
  // The target's own DNS is the one required task: without it the scan has nothing to stand on.
  const plans: TaskPlan[] = [
    task(
      c,
      SCAN_CHECKS.dns,
      'dns',
      'dns',
      unitCosts.dns,
      target,
      0,
      { srvProbes: target === scope.registrable },
      { required: true },
    ),
  ];
  plans.push(task(c, SCAN_CHECKS.mail, 'mail', 'mail', unitCosts.mail, target, 0, { dkim: p.dkimProbes }));
  if (p.domain) plans.push(task(c, SCAN_CHECKS.domain, 'domain', 'domain', unitCosts.domain, scope.registrable, 0));
  if (p.web !== 'none') {
    // The apex and www are web targets whatever led to them; they are resolved first like any name.
    for (const name of [scope.registrable, `www.${scope.registrable}`])
      if (name !== target) plans.push(...resolveName(c, name, 1));
  }
  return plans;
}

/**
 * The baseline's names, rechecked (discovery source `baseline`): each in-scope host name within
 * the profile's hops gets its DNS task (and its level's wildcard probe) at its baseline distance,
 * planned after planScan's tasks and budgeted like them, so that a budget or an object cap that
 * stops the recheck leaves the names it did not reach unconfirmed (not_rechecked), never gone.
 * What each name's DNS answers then leads to (web, mail…) is expanded as for any name.
 */
export function recheckBaseline(
  input: ScanInput,
  names: ReadonlyArray<{ name: string; distance: number }>,
): TaskPlan[] {
  const c = context(input);
  if (c.p.hops === 0) return [];
  const out: TaskPlan[] = [];
  for (const n of names) {
    const name = normalName(n.name);
    if (name === c.target || !c.scope.inScope(name) || !isHostName(name)) continue;
    const distance = Math.min(Math.max(1, n.distance), c.p.hops);
    out.push(...resolveName(c, name, distance, 'baseline'));
  }
  return out;
}

function followDiscoveries(c: Ctx, from: number, discoveries: readonly Discovery[] | undefined): TaskPlan[] {
  const next = from + 1;
  if (next > c.p.hops) return [];
  const out: TaskPlan[] = [];
  for (const d of discoveries ?? []) {
    const name = normalName(d.name);
    if (!c.p.sources.includes(d.source) || !c.scope.inScope(name) || !isHostName(name)) continue;
    out.push(...resolveName(c, name, next, d.source));
  }
  return out;
}

function wantsWeb(c: Ctx, name: string): boolean {
  if (c.p.web === 'none' || !c.scope.inScope(name) || isServiceName(name)) return false;
  if (c.p.web === 'every_host') return true;
  return name === c.scope.registrable || name === `www.${c.scope.registrable}` || name === c.target;
}

export async function expandScan(input: ScanInput, t: FinishedTask, ctx: ExpandContext): Promise<TaskPlan[]> {
  if (t.status !== 'completed' && t.status !== 'partial') return [];
  const c = context(input);
  const projection = t.output?.projection ?? {};
  // The approved scope active work stays in; read only when active work is possible at all.
  const activeScope = async () => (active(c) ? activeScopeOf(c.target, await ctx.approvedScopes()) : null);
  const approved = async (host: string) => {
    const s = await activeScope();
    return s !== null && inApprovedScope(host, [s.domain]);
  };
  // Every active task carries the scope it runs under and its proof: the lane asks DNS again for a
  // verified scope's token before anything is sent (src/products/kit/active-admission.ts).
  const scopeParams = async () => {
    const s = (await activeScope())!;
    return { approvedScope: s.domain, scopeProof: s.proof, ...(s.token ? { proofToken: s.token } : {}) };
  };
  switch (t.check) {
    case SCAN_CHECKS.dns: {
      const f = projection as unknown as DnsFacts;
      if (f.match === 'match') return []; // a wildcard answer, not a host: nothing fans out from it
      const name = normalName(f.name ?? t.objectKey);
      const plans: TaskPlan[] = [];
      // Reachable: some address, and none the guard refuses (it refuses a host with any refused address).
      const resolves = (f.addresses ?? []).length > 0 && (f.refusedAddresses ?? []).length === 0;
      if (name === c.target && t.distance === 0) {
        const s = await activeScope();
        if (s !== null) {
          const params = await scopeParams();
          plans.push(task(c, SCAN_CHECKS.axfr, 'active', 'active', unitCosts.active, s.domain, 0, params));
          plans.push(task(c, SCAN_CHECKS.wordlist, 'active', 'active', unitCosts.active, s.domain, 0, params));
        }
      }
      if (resolves && wantsWeb(c, name)) {
        plans.push(
          task(c, SCAN_CHECKS.web, 'web', 'web', unitCosts.web, name, t.distance, {
            url: `https://${name}/`,
            host: name,
            cnameTargets: f.cnameTargets ?? [],
            ...(f.addressesUntil ? { addresses: f.addresses, addressesUntil: f.addressesUntil } : {}),
          }),
        );
      }
      if (f.hasMx && c.p.mailEveryDomain && name !== c.target && c.scope.inScope(name)) {
        plans.push(
          task(c, SCAN_CHECKS.mail, 'mail', 'mail', unitCosts.mail, name, t.distance, { dkim: c.p.dkimProbes }),
        );
      }
      // A name that is an alias of an out-of-scope name (a CDN) reaches someone else's address:
      // passive checks may visit it like a browser, active work never touches it.
      const aliasOfThirdParty = (f.cnameTargets ?? []).some((t) => !c.scope.inScope(t));
      if (resolves && !isServiceName(name) && !aliasOfThirdParty && (await approved(name))) {
        plans.push(
          task(c, SCAN_CHECKS.tcpProbe, 'active', 'active', unitCosts.active, name, t.distance, {
            host: name,
            ...(await scopeParams()),
          }),
        );
      }
      plans.push(...followDiscoveries(c, t.distance, f.discoveries));
      return plans;
    }
    case SCAN_CHECKS.web: {
      const f = projection as unknown as WebFacts;
      const plans = followDiscoveries(c, t.distance, f.discoveries);
      if (f.httpsResponded && !thirdPartyAlias(c, t) && (await approved(f.host))) {
        const url = `https://${f.host}/`;
        plans.push(
          task(c, SCAN_CHECKS.tlsProtocols, 'active', 'active', unitCosts.active, f.host, t.distance, {
            url,
            ...(await scopeParams()),
          }),
        );
        plans.push(
          task(c, SCAN_CHECKS.wellKnown, 'active', 'active', unitCosts.active, f.host, t.distance, {
            url,
            ...(await scopeParams()),
          }),
        );
      }
      return plans;
    }
    case SCAN_CHECKS.axfr:
    case SCAN_CHECKS.wordlist:
      return followDiscoveries(c, t.distance, (projection as { discoveries?: Discovery[] }).discoveries);
    default:
      return [];
  }
}

/** The web task carries its host's CNAME targets (params): an alias of a third party? */
function thirdPartyAlias(c: Ctx, t: FinishedTask): boolean {
  const targets = (t.output?.projection as { cnameTargets?: string[] } | undefined)?.cnameTargets ?? [];
  return targets.some((x) => !c.scope.inScope(x));
}

/**
 * The objects a job keeps (CONTRACT §11): quick and balanced a fixed number; deep and advanced
 * two per credit of maxCredits, never fewer than the profile's floor (5,000 and 10,000). A host
 * costs about 3 credits (its dns task 1, its web task 2) and records about 3.5 objects (the host,
 * its URLs, its web posture), so one object per credit stopped a budget that paid for a zone's
 * tasks just short of its objects: the generated 20,000-host zone costs 61,608 credits and records
 * 68,786 objects (`npm run bench:scan`). What a larger cap costs is MySQL rows
 * (docs/operations.md), not process memory.
 */
export function scanObjectCap(input: ScanInput): number {
  const p = profiles[input.profile];
  return Math.max(p.objectCap, p.objectCapPerCredit * input.options.maxCredits);
}
