// lookup.phone.v1: what the numbering plan says about a phone number (libphonenumber-js with full
// metadata). It can tell format, calling code, region, validity and the range's type; it cannot
// tell carrier, porting or whether the line is in service, and says so on every answer.
import { z } from 'zod';
import type { ExecContext, ProductDefinition } from '../kit/product-contract.ts';
import type { LaneSpec, Limitation, SyncOutcome } from '../../contract/lanes.ts';
import { laneOutcome } from '../../contract/lanes.ts';
import {
  LIBPHONENUMBER_VERSION,
  hasPlus,
  invalidReasons,
  isKnownRegion,
  phoneTypes,
  readNumber,
} from './numbering-plan.ts';

const defaultRegion = z
  .string()
  .max(8)
  .transform((s) => s.trim().toUpperCase())
  .refine(isKnownRegion, {
    message: 'must be an ISO 3166-1 alpha-2 region code with numbering-plan metadata (e.g. US, GB, DE)',
  });

export const phoneInput = z
  .strictObject({
    value: z.string().min(1).max(64),
    defaultRegion: defaultRegion.optional(),
  })
  .superRefine((input, ctx) => {
    if (!hasPlus(input.value) && input.defaultRegion === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['defaultRegion'],
        message: 'is required when value does not start with "+" (the number has no country calling code of its own)',
      });
    }
  });
export type PhoneInput = z.infer<typeof phoneInput>;

export const phoneResult = z.object({
  e164: z.string().nullable(),
  international: z.string().nullable(),
  national: z.string().nullable(),
  rfc3966: z.string().nullable(),
  countryCallingCode: z.string().nullable(),
  nationalNumber: z.string().nullable(),
  extension: z.string().nullable(),
  region: z.string().nullable().describe('Region of the number; null for non-geographic calling codes or when unknown'),
  nonGeographic: z.boolean(),
  possibleRegions: z.array(z.string()),
  type: z.enum(phoneTypes),
  isPossible: z.boolean(),
  isValid: z.boolean(),
  invalidReason: z.enum(invalidReasons).nullable(),
});
export type PhoneResult = z.infer<typeof phoneResult>;

const lanes = {
  plan: {
    lane: 'numbering_plan',
    required: true,
    description: 'libphonenumber numbering plan metadata (libphonenumber-js, full metadata)',
  },
} satisfies Record<string, LaneSpec>;

const ALWAYS: Limitation[] = [
  {
    code: 'carrier_not_determined',
    message: 'The numbering plan tells the range a number was allocated from, not the carrier that serves it today.',
  },
  {
    code: 'porting_not_determined',
    message:
      'Number portability is not visible in the numbering plan: the number may have moved to another carrier or line type.',
  },
  {
    code: 'line_status_not_determined',
    message: 'A valid number is one the plan allows; whether it is assigned, active or reachable is not known.',
  },
];

async function execute(input: PhoneInput, _ctx: ExecContext): Promise<SyncOutcome<PhoneResult>> {
  const t0 = performance.now();
  const answer = readNumber(input.value, input.defaultRegion);
  const limitations = [...ALWAYS];
  if (answer.type === 'fixed_line_or_mobile') {
    limitations.push({
      code: 'line_type_ambiguous',
      message: 'This region draws fixed and mobile numbers from the same ranges; the plan cannot tell which this is.',
    });
  }
  if (answer.isValid && answer.region === null && !answer.nonGeographic) {
    limitations.push({
      code: 'region_ambiguous',
      message: 'Several regions share this calling code and the number does not single one out.',
    });
  }
  return {
    result: answer,
    lanes: [laneOutcome(lanes.plan, 'completed', { durationMs: Math.round((performance.now() - t0) * 1000) / 1000 })],
    sources: [{ source: 'libphonenumber_metadata', version: `libphonenumber-js@${LIBPHONENUMBER_VERSION}` }],
    limitations,
  };
}

export const phoneProduct: ProductDefinition<PhoneInput, PhoneResult> = {
  id: 'lookup.phone.v1',
  title: 'Phone format and region lookup',
  mode: 'sync',
  method: 'POST',
  path: '/v2/lookups/phone',
  scope: 'scan:create',
  rateClass: 'sync_lookup',
  input: phoneInput,
  echo: (i) => ({ value: i.value, defaultRegion: i.defaultRegion ?? null }),
  resultSchema: phoneResult,
  lanes: [lanes.plan],
  price: () => 0,
  readiness: () => ({ numbering_plan: 'ready' }),
  execute,
};
