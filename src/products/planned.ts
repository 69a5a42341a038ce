// Products whose public input is fixed by SERVICE.md but whose lanes are not built yet. They are
// registered so routing, validation, OpenAPI and /v2/products know them, and they answer 503
// capability_unavailable with readiness `unavailable`: honest, never a fake result.
import { z } from 'zod';
import { domainName } from '../contract/domain-name.ts';
import { ApiError } from '../contract/errors.ts';
import type { LaneSpec, ProductDefinition } from './types.ts';

const notBuilt = (lanes: LaneSpec[]) => () => Object.fromEntries(lanes.map((l) => [l.lane, 'not_built' as const]));
const lane = (name: string, required: boolean, description: string): LaneSpec => ({ lane: name, required, description });

export const scanProfiles = ['quick', 'balanced', 'deep', 'advanced'] as const;
export const scanBudgetBounds: Record<(typeof scanProfiles)[number], { min: number; max: number }> = {
  quick: { min: 5, max: 100 },
  balanced: { min: 20, max: 1000 },
  deep: { min: 50, max: 5000 },
  advanced: { min: 50, max: 10_000 },
};
const scanInput = z.strictObject({
  profile: z.enum(scanProfiles),
  target: z.strictObject({ type: z.literal('domain_name'), value: domainName }),
  options: z.strictObject({ active: z.boolean(), maxCredits: z.number() }),
}).refine((s) => !(s.options.active && s.profile !== 'advanced'), {
  message: 'options.active=true needs profile advanced', path: ['options', 'active'],
});
type ScanInput = z.infer<typeof scanInput>;
const scanLanes = [
  lane('dns', true, 'DNS records of every in-scope name'), lane('mail', false, 'Mail posture'),
  lane('web', false, 'Web and TLS posture'), lane('domain', false, 'Delegation and registration'),
  lane('active', false, 'Active probes (advanced profile)'),
];
export const scanProduct: ProductDefinition<ScanInput> = {
  id: 'scan.recursive.v1', title: 'Recursive scan', mode: 'async', method: 'POST', path: '/v2/scans',
  scope: 'scan:create', rateClass: 'scan',
  input: scanInput,
  lanes: scanLanes,
  price: (i) => i.options.maxCredits,
  check: (i) => {
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
  readiness: notBuilt(scanLanes),
};
