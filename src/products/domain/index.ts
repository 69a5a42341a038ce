// lookup.domain.v1: where a name is delegated, who registered it and what it points to. Runs as a
// job on the `domain` worker lane: three checks (./checks.ts), one per product lane, assembled
// into the CONTRACT §7 envelope (./assemble.ts). Price 2 = delegation 1 + registration 1 +
// records 0; a lane that ends unavailable/timeout/skipped is not captured.
import { z } from 'zod';
import { domainChangeRules } from './changes.ts';
import { domainName } from '../../contract/domain-name.ts';
import { snapshotBootstrap } from '../../rdap/bootstrap.ts';
import type { AsyncProduct, ProductDefinition, ProductRuntime } from '../kit/product-contract.ts';
import type { LaneReadiness } from '../../contract/lanes.ts';
import type { TaskPlan } from '../../contract/tasks.ts';
import { assembleDomain, domainLanes } from './assemble.ts';
import { DOMAIN_CHECKS } from './checks.ts';
import { resolverOf } from '../kit/dns-replies.ts';
import { nameParts } from '../kit/name-parts.ts';
import { domainResult, type DomainResult } from './schema.ts';

export { domainChecks, createDomainChecks } from './checks.ts';
export { domainResult } from './schema.ts';
export { domainFindings } from './findings.ts';

export const domainInput = z.strictObject({ value: domainName });
export type DomainInput = z.infer<typeof domainInput>;

export const DOMAIN_DEADLINE_MS = 120_000;

export function planDomain(input: DomainInput): TaskPlan[] {
  const key = nameParts(input.value).name;
  const task = (check: string, spec: { lane: string; required: boolean }, unitCost: number): TaskPlan => ({
    check,
    lane: 'domain',
    productLane: spec.lane,
    required: spec.required,
    unitCost,
    objectKey: key,
    distance: 0,
  });
  return [
    task(DOMAIN_CHECKS.delegation, domainLanes.delegation, 1),
    task(DOMAIN_CHECKS.registration, domainLanes.registration, 1),
    task(DOMAIN_CHECKS.records, domainLanes.records, 0),
  ];
}

function dnsReadiness(runtime: ProductRuntime): LaneReadiness {
  return resolverOf(runtime)?.readiness() ?? 'unconfigured';
}

/** RDAP is usable with RDAP_BASE_URL, RDAP_BOOTSTRAP_URL (the snapshot covers its failures) or the snapshot. */
export function registrationReadiness(runtime: ProductRuntime): LaneReadiness {
  const c = runtime.config;
  if (c.RDAP_BASE_URL || c.RDAP_BOOTSTRAP_URL) return 'ready';
  return snapshotBootstrap() ? 'ready' : 'unconfigured';
}

const job: AsyncProduct<DomainInput> = {
  workerLanes: ['domain'],
  target: (i) => ({ type: 'domain_name', value: i.value }),
  plan: planDomain,
  assemble: (i, tasks) => assembleDomain(i.value, tasks),
  deadlineMs: DOMAIN_DEADLINE_MS,
  changes: domainChangeRules,
};

export const domainProduct: ProductDefinition<DomainInput, DomainResult> = {
  id: 'lookup.domain.v1',
  title: 'Domain core lookup',
  mode: 'async',
  method: 'POST',
  path: '/v2/lookups/domain',
  scope: 'scan:create',
  rateClass: 'async_lookup',
  input: domainInput,
  echo: (i) => ({ value: i.value }),
  targetNames: (i) => [{ path: 'value', name: i.value }],
  resultSchema: domainResult,
  lanes: [domainLanes.delegation, domainLanes.registration, domainLanes.records],
  price: () => 2,
  readiness: (runtime) => ({
    dns_delegation: dnsReadiness(runtime),
    registration: registrationReadiness(runtime),
    dns_records: dnsReadiness(runtime),
  }),
  job,
};
