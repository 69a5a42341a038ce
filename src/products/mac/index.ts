// lookup.mac.v1: IEEE assignment of a MAC address, plus what its first octet says about it.
import { z } from 'zod';
import type { ExecContext, ProductDefinition, ProductRuntime } from '../kit/product-contract.ts';
import type { LaneOutcome, LaneSpec, Limitation, SourceRef, SyncOutcome } from '../../contract/lanes.ts';
import { laneOutcome } from '../../contract/lanes.ts';
import { formatMac, macBits, parseMac, type SlapQuadrant } from './mac-address.ts';
import {
  OUI_DATA_VERSION,
  isRegistrationAuthorityBlock,
  matchIeeeRegistry,
  ouiTable,
  type Assignment,
} from './oui-registry.ts';
import { loadExtendedRegistry, matchExtended, type ExtendedRegistry } from './oui-extended.ts';

export const macInput = z.strictObject({
  value: z
    .string()
    .max(64)
    .refine((v) => parseMac(v) !== null, {
      message: 'must be a MAC address: 12 hex digits, optionally separated by ":", "-" or "." (e.g. 00:1A:2B:3C:4D:5E)',
    }),
});
export type MacInput = z.infer<typeof macInput>;

const assignmentSchema = z.object({
  block: z.enum(['MA-L', 'MA-M', 'MA-S', 'IAB', 'CID']),
  prefix: z.string(),
  prefixBits: z.number().int(),
  registry: z.string(),
});

export const macResult = z.object({
  normalized: z.string(),
  oui: z.string(),
  assignment: assignmentSchema.nullable(),
  organization: z.string().nullable(),
  address: z.array(z.string()),
  country: z.string().nullable(),
  isPrivateRegistration: z.boolean(),
  isMulticast: z.boolean(),
  isLocallyAdministered: z.boolean(),
  slapQuadrant: z.enum(['ELI', 'SAI', 'AAI', 'reserved']).nullable(),
  isRandomizedHint: z.boolean(),
});
export type MacResult = z.infer<typeof macResult>;

const lanes = {
  registry: {
    lane: 'oui_registry',
    required: true,
    description: 'IEEE MA-L, MA-M and MA-S registries (oui-data package)',
  },
  extended: {
    lane: 'oui_extended',
    required: false,
    description: 'IEEE IAB and CID registries from OUI_EXTRA_CSV_DIR',
  },
} satisfies Record<string, LaneSpec>;

// Loaded once per process and per directory: the files are read at first use, not per request.
const extendedCache = new Map<string, ExtendedRegistry | null>();
export function extendedRegistry(runtime: ProductRuntime): ExtendedRegistry | null {
  const dir = runtime.config.OUI_EXTRA_CSV_DIR;
  if (!dir) return null;
  if (!extendedCache.has(dir)) extendedCache.set(dir, loadExtendedRegistry(dir));
  return extendedCache.get(dir) ?? null;
}

function registryName(a: Assignment): string {
  return a.block === 'IAB' ? 'IEEE IAB' : a.block === 'CID' ? 'IEEE CID' : `IEEE ${a.block}`;
}

function randomizedHint(
  local: boolean,
  multicast: boolean,
  quadrant: SlapQuadrant | null,
  matched: Assignment | null,
): boolean {
  // Private (randomised) MACs of phones and laptops are locally administered unicast addresses;
  // an ELI address whose CID is assigned is a company's, not a random one.
  return local && !multicast && !(quadrant === 'ELI' && matched?.block === 'CID');
}

async function execute(input: MacInput, ctx: ExecContext): Promise<SyncOutcome<MacResult>> {
  const hex = parseMac(input.value)!;
  const bits = macBits(hex);
  const outcomes: LaneOutcome[] = [];
  const sources: SourceRef[] = [{ source: 'ieee_ma_registries', version: `oui-data@${OUI_DATA_VERSION}` }];
  const limitations: Limitation[] = [];

  let t0 = performance.now();
  // A locally administered address is, by definition, not assigned from MA-L/MA-M/MA-S.
  const ieee = bits.isLocallyAdministered ? null : matchIeeeRegistry(hex);
  outcomes.push(laneOutcome(lanes.registry, 'completed', { durationMs: round(performance.now() - t0) }));

  let best = ieee;
  const extendedApplies = ieee === null || isRegistrationAuthorityBlock(ieee);
  if (extendedApplies) {
    t0 = performance.now();
    const ext = extendedRegistry(ctx.runtime);
    if (!ext) {
      outcomes.push(laneOutcome(lanes.extended, 'unavailable', { reason: 'not_configured' }));
      limitations.push({
        code: 'oui_extended_unavailable',
        message: ieee
          ? 'The matching block is held by the IEEE Registration Authority for IAB or sub-allocations; the IAB/CID registries are not configured, so the actual assignee is unknown.'
          : 'No MA-L/MA-M/MA-S block matches; the IAB/CID registries are not configured, so an IAB or CID assignment cannot be ruled out.',
      });
    } else {
      const hit = matchExtended(ext, hex);
      if (hit) best = hit;
      outcomes.push(laneOutcome(lanes.extended, 'completed', { durationMs: round(performance.now() - t0) }));
      sources.push({ source: 'ieee_iab_cid_csv', version: ext.version });
    }
  } else {
    outcomes.push(laneOutcome(lanes.extended, 'skipped', { reason: 'not_applicable' }));
  }

  if (!best) {
    limitations.push({
      code: 'no_registry_assignment',
      message: bits.isLocallyAdministered
        ? 'The address is locally administered: no vendor assignment exists for it.'
        : 'No assignment in the registries consulted; this does not prove the prefix is unassigned.',
    });
  }
  if (best && !best.organization)
    limitations.push({ code: 'registry_entry_incomplete', message: 'The registry entry has no organization name.' });

  return {
    result: {
      normalized: formatMac(hex),
      oui: formatMac(hex).slice(0, 8),
      assignment: best
        ? { block: best.block, prefix: best.prefix, prefixBits: best.prefixBits, registry: registryName(best) }
        : null,
      organization: best?.organization || null,
      address: best?.address ?? [],
      country: best?.country ?? null,
      isPrivateRegistration: best?.isPrivate ?? false,
      isMulticast: bits.isMulticast,
      isLocallyAdministered: bits.isLocallyAdministered,
      slapQuadrant: bits.slapQuadrant,
      isRandomizedHint: randomizedHint(bits.isLocallyAdministered, bits.isMulticast, bits.slapQuadrant, best),
    },
    lanes: outcomes,
    sources,
    limitations,
  };
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

export const macProduct: ProductDefinition<MacInput, MacResult> = {
  id: 'lookup.mac.v1',
  title: 'MAC / OUI lookup',
  mode: 'sync',
  method: 'POST',
  path: '/v2/lookups/mac',
  scope: 'scan:create',
  rateClass: 'sync_lookup',
  input: macInput,
  echo: (i) => ({ value: i.value }),
  resultSchema: macResult,
  lanes: [lanes.registry, lanes.extended],
  price: () => 0,
  readiness: (runtime) => ({
    oui_registry: 'ready',
    oui_extended: extendedRegistry(runtime) ? 'ready' : 'unconfigured',
  }),
  execute,
  warm: () => {
    ouiTable();
  },
};
