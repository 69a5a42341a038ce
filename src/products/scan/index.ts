// scan.recursive.v1: bounded, budgeted, recursive attack-surface discovery of a domain (CONTRACT
// §11). The planner (src/products/scan/rules/planner.ts) decides what runs at distance 0 and what each finished
// task leads to; the orchestrator expands as results arrive (deduped, budgeted, gated on wildcard
// probes). Lanes: dns (required: the target's DNS), mail, web, domain, active (advanced only).
// The reservation is options.maxCredits; every task captures its unit cost once when it did work.
import { z } from 'zod';
import { domainName } from '../../contract/domain-name.ts';
import { ApiError } from '../../contract/errors.ts';
import type { AsyncProduct, ProductDefinition, ProductRuntime, WorkerLiveness } from '../kit/product-contract.ts';
import type { LaneReadiness, LaneSpec } from '../../contract/lanes.ts';
import { suffixParts } from '../../contract/public-suffix.ts';
import { expandScan, planScan, recheckBaseline, scanObjectCap, type ScanInput } from './rules/planner.ts';
import { scanChangeRules } from './changes.ts';
import { profiles, scanBudgetBounds, scanProfiles } from './rules/profiles.ts';

export { scanFindings } from './findings.ts';

export const scanInput = z
  .strictObject({
    profile: z.enum(scanProfiles),
    target: z.strictObject({
      type: z.literal('domain_name'),
      // Not a public suffix either: checked after the schema (publicSuffixRefusal), with its own reason.
      value: domainName,
    }),
    options: z.strictObject({
      active: z.boolean(),
      maxCredits: z
        .number()
        .describe(
          `Credits reserved for the scan, an integer within the profile's bounds (${scanProfiles
            .map((p) => `${p} ${scanBudgetBounds[p].min}–${scanBudgetBounds[p].max}`)
            .join(
              ', ',
            )}; else scan_credit_budget_invalid with details.bounds). Deep and advanced keep two objects per credit, at least ${profiles.deep.objectCap} and ${profiles.advanced.objectCap}.`,
        ),
    }),
  })
  .refine((s) => !(s.options.active && s.profile !== 'advanced'), {
    message: 'options.active=true needs profile advanced',
    path: ['options', 'active'],
  });

/**
 * A public suffix of either section of the list (co.uk, github.io, s3.amazonaws.com) has no
 * registrable domain to scope a scan to, and belongs to nobody: a scan of github.io would be a scan
 * of every GitHub Pages site. 400 invalid_request, details.reason public_suffix.
 */
export function publicSuffixRefusal(target: string): void {
  const p = suffixParts(target);
  if (p.registrable !== null) return;
  const message = `${target} is a public suffix (${p.section === 'unlisted' ? 'a top-level domain outside the public suffix list' : `public suffix list, ${p.section} section`}): a scan needs a name below one`;
  throw new ApiError('invalid_request', {
    message: `The scan target ${message}.`,
    details: {
      reason: 'public_suffix',
      section: p.section,
      suffix: p.suffix,
      issues: [{ path: 'target.value', message }],
    },
  });
}

const lane = (name: string, required: boolean, description: string): LaneSpec => ({
  lane: name,
  required,
  description,
});

export const scanLanes = {
  dns: lane(
    'dns',
    true,
    "DNS records of every in-scope name within the profile's hops, wildcard probes per zone level",
  ),
  mail: lane(
    'mail',
    false,
    'Mail posture of the target (and, deep and advanced, of every in-scope name with MX records)',
  ),
  web: lane(
    'web',
    false,
    'Web and TLS posture of the apex and www (balanced) or of every in-scope host (deep, advanced)',
  ),
  domain: lane('domain', false, 'Delegation and registration of the registrable domain (balanced and up)'),
  active: lane(
    'active',
    false,
    'Advanced with options.active only: TCP probes, TLS protocol enumeration, AXFR, wordlist, well-known paths',
  ),
} satisfies Record<string, LaneSpec>;

/** The worker lanes a profile's scan needs running; without one the profile is unavailable. */
export function workerLanesFor(
  i: Pick<ScanInput, 'profile' | 'options'>,
): Array<'dns' | 'mail' | 'web' | 'domain' | 'active'> {
  const p = profiles[i.profile];
  return [
    'dns',
    'mail',
    ...(p.web !== 'none' ? ['web' as const] : []),
    ...(p.domain ? ['domain' as const] : []),
    ...(i.options.active ? ['active' as const] : []),
  ];
}

function liveness(runtime: ProductRuntime): WorkerLiveness | undefined {
  return runtime.services.laneHealth;
}

function scanReadiness(runtime: ProductRuntime): Record<string, LaneReadiness> {
  const resolver = runtime.services.resolver?.readiness() ?? 'unconfigured';
  const outbound = runtime.services.outbound ? 'ready' : 'unconfigured';
  const alive = (l: string): LaneReadiness => (liveness(runtime)?.accepting(l) ? 'ready' : 'down');
  const worst = (...r: LaneReadiness[]): LaneReadiness => r.find((x) => x !== 'ready') ?? 'ready';
  return {
    dns: resolver,
    mail: worst(resolver, outbound, alive('mail')),
    web: worst(resolver, outbound, alive('web')),
    domain: worst(resolver, alive('domain')),
    active: worst(resolver, outbound, alive('active')),
  };
}

const job: AsyncProduct<ScanInput> = {
  // The dns lane is what every profile needs; the others are checked per profile at admission.
  workerLanes: ['dns'],
  lanesFor: (i) => workerLanesFor(i),
  target: (i) => ({ type: 'domain_name', value: i.target.value }),
  profile: (i) => i.profile,
  plan: planScan,
  expand: expandScan,
  objectCap: scanObjectCap,
  deadlineMs: 120 * 60_000,
  deadlineFor: (i) => profiles[i.profile].deadlineMs,
  changes: scanChangeRules,
  recheck: recheckBaseline,
};

export const scanProduct: ProductDefinition<ScanInput> = {
  id: 'scan.recursive.v1',
  title: 'Recursive scan',
  mode: 'async',
  method: 'POST',
  path: '/v2/scans',
  scope: 'scan:create',
  rateClass: 'scan',
  input: scanInput as unknown as z.ZodType<ScanInput>,
  echo: (i) => ({ profile: i.profile, target: i.target, options: i.options }),
  lanes: Object.values(scanLanes),
  price: (i) => i.options.maxCredits,
  targetNames: (i) => [{ path: 'target.value', name: i.target.value }],
  check: (i) => {
    publicSuffixRefusal(i.target.value);
    const bounds = scanBudgetBounds[i.profile];
    const m = i.options.maxCredits;
    if (!Number.isInteger(m) || m < bounds.min || m > bounds.max) {
      throw new ApiError('scan_credit_budget_invalid', { details: { bounds, profile: i.profile } });
    }
  },
  activeWork: (i) => ({
    active: i.profile === 'advanced' && i.options.active,
    authorizationMissing: i.profile === 'advanced' && !i.options.active,
    requiresResponsibleUse: true,
    targetHost: i.target.value,
  }),
  readiness: scanReadiness,
  job,
};
