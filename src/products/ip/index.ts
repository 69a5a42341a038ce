// lookup.ip.v1: what the IANA special-purpose registries and the address architecture say about
// one address, plus (when asked) ASN/country context from the shipped dataset (or an
// operator-supplied one, IP_CONTEXT_DB) and the PTR names the DNS holds for it.
import { z } from 'zod';
import type { Resolver } from '../../dns/types.ts';
import type { ExecContext, ProductDefinition, ProductRuntime } from '../kit/product-contract.ts';
import type { LaneOutcome, LaneSpec, Limitation, SourceRef, SyncOutcome } from '../../contract/lanes.ts';
import { laneOutcome } from '../../contract/lanes.ts';
import { formatIp, parseIp, reverseName, type IpAddress } from './address.ts';
import { classify } from './classify.ts';
import { DatasetUnreadableError, contextDataset, contextDatasetUsable, lookupContext } from './context-dataset.ts';
import { PACKAGED_CONTEXT_ATTRIBUTION, contextPackage, packagedContextUsable } from './context-package.ts';
import { reverseLookup } from './reverse-dns.ts';
import { mayAskReverse } from '../../net/special-use.ts';
import { REGISTRY_VERSION, scopes } from './special-registry.ts';

export const ipInput = z.strictObject({
  value: z
    .string()
    .min(1)
    .max(64)
    .superRefine((v, ctx) => {
      if (v.length === 0 || v.length > 64) return; // already reported by min/max
      const parsed = parseIp(v);
      if (!parsed.ok) ctx.addIssue({ code: 'custom', message: parsed.message });
    }),
  includeContext: z.boolean().default(false),
  reverseDns: z.boolean().default(false),
});
export type IpInput = z.infer<typeof ipInput>;

const bool3 = z.boolean().nullable();

const specialPurposeSchema = z.object({
  addressBlock: z.string(),
  name: z.string(),
  rfc: z.string(),
  allocationDate: z.string(),
  terminationDate: z.string().nullable(),
  source: bool3,
  destination: bool3,
  forwardable: bool3,
  globallyReachable: bool3.describe('null where the registry says N/A or the row is terminated'),
  reservedByProtocol: bool3,
  note: z.string().nullable(),
});

const contextSchema = z.object({
  asn: z.number().int().nullable(),
  asName: z.string().nullable(),
  country: z.string().nullable(),
  routed: z.boolean().nullable(),
  range: z.object({ start: z.string(), end: z.string() }).nullable(),
  lookedUp: z.string().describe('The address looked up (the embedded IPv4 address for an IPv4-mapped IPv6 address)'),
});

export const ipResult = z.object({
  normalized: z.string(),
  version: z.union([z.literal(4), z.literal(6)]),
  specialPurpose: z
    .array(specialPurposeSchema)
    .describe('Every matching special-purpose registry row, most specific first'),
  scope: z.enum(scopes),
  globallyReachable: bool3,
  addressSpace: z.object({ block: z.string(), name: z.string(), rfc: z.string() }),
  multicast: z
    .object({
      scope: z.string(),
      block: z.string().nullable(),
      group: z.string().nullable(),
      flags: z
        .object({ transient: z.boolean(), prefixBased: z.boolean(), rendezvousPointEmbedded: z.boolean() })
        .nullable(),
    })
    .nullable(),
  embeddedIpv4: z
    .object({
      address: z.string(),
      mechanism: z.enum(['ipv4_mapped', 'nat64_well_known_prefix', '6to4', 'teredo']),
      teredoServer: z.string().optional(),
      teredoClientPort: z.number().int().optional(),
      scope: z.enum(scopes),
      globallyReachable: bool3,
    })
    .nullable(),
  context: contextSchema.nullable(),
  ptr: z
    .array(z.string())
    .nullable()
    .describe('null when reverse DNS was not asked for or got no authoritative answer'),
});
export type IpResult = z.infer<typeof ipResult>;
type ContextResult = z.infer<typeof contextSchema>;

const lanes = {
  registry: {
    lane: 'address_registry',
    required: true,
    description: 'IANA IPv4/IPv6 special-purpose address registries and address-space structure',
  },
  context: {
    lane: 'context',
    required: false,
    description: 'ASN / country: the shipped ip-location-db dataset, or IP_CONTEXT_DB (iptoasn.com TSV) when set',
  },
  reverse: { lane: 'reverse_dns', required: false, description: 'PTR through the project resolver' },
} satisfies Record<string, LaneSpec>;

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

function resolverOf(runtime: ProductRuntime): Resolver | undefined {
  return runtime.services.resolver;
}

interface LaneResult<T> {
  outcome: LaneOutcome;
  value: T;
  limitations: Limitation[];
  sources: SourceRef[];
}

/** One row of whichever dataset answers: `asn` null when no ASN row covers the address. */
interface ContextHit {
  asn: number | null;
  asName: string | null;
  country: string | null;
  start: bigint;
  end: bigint;
}
interface ContextSource {
  lookup(version: 4 | 6, value: bigint): ContextHit | null;
  source: SourceRef;
}

/** IP_CONTEXT_DB when set (the operator's choice wins), else the shipped dataset; null: neither. */
async function contextSource(runtime: ProductRuntime): Promise<ContextSource | null> {
  const path = runtime.config.IP_CONTEXT_DB;
  if (path) {
    const ds = await contextDataset(path);
    return {
      lookup: (version, value) => {
        const row = lookupContext(ds, version, value);
        return row && { ...row, asName: row.description };
      },
      source: { source: 'ip_context_dataset', version: ds.version },
    };
  }
  const pkg = contextPackage();
  if (!pkg) return null;
  // Loaded on the first lookup that asks for context, in the processes that answer one.
  const { packagedContextTable } = await import('./packaged-context.ts');
  const { lookupAsn } = await import('./asn-table.ts');
  const table = await packagedContextTable(runtime.log);
  return {
    lookup: (version, value) => lookupAsn(table, version, value),
    source: { source: 'ip_context_dataset', version: table.version, attribution: PACKAGED_CONTEXT_ATTRIBUTION },
  };
}

async function contextLane(address: IpAddress, runtime: ProductRuntime): Promise<LaneResult<ContextResult | null>> {
  const t0 = performance.now();
  const path = runtime.config.IP_CONTEXT_DB;
  try {
    const ds = await contextSource(runtime);
    if (!ds) {
      return {
        outcome: laneOutcome(lanes.context, 'unavailable', { reason: 'not_configured' }),
        value: null,
        limitations: [
          {
            code: 'ip_context_unavailable',
            message: 'No IP context dataset is installed or configured: ASN, network name and country are not known.',
          },
        ],
        sources: [],
      };
    }
    // An IPv4-mapped IPv6 address names an IPv4 host; the dataset lists it under IPv4.
    const mapped = address.version === 6 && address.value >> 32n === 0xffffn;
    const target: IpAddress = mapped ? { version: 4, value: address.value & 0xffffffffn } : address;
    const row = ds.lookup(target.version, target.value);
    const limitations: Limitation[] = [];
    const lookedUp = formatIp(target);
    let value: ContextResult;
    if (!row || row.asn === null) {
      value = {
        asn: null,
        asName: null,
        country: row?.country ?? null,
        routed: null,
        range: row
          ? {
              start: formatIp({ version: target.version, value: row.start }),
              end: formatIp({ version: target.version, value: row.end }),
            }
          : null,
        lookedUp,
      };
      limitations.push({
        code: 'ip_context_no_row',
        message: `The IP context dataset has no ASN row covering ${lookedUp}; its ASN${row?.country ? '' : ' and country'} are unknown.`,
      });
    } else {
      const routed = row.asn !== 0;
      value = {
        asn: routed ? row.asn : null,
        asName: routed ? row.asName : null,
        country: routed ? row.country : null,
        routed,
        range: {
          start: formatIp({ version: target.version, value: row.start }),
          end: formatIp({ version: target.version, value: row.end }),
        },
        lookedUp,
      };
      if (!routed)
        limitations.push({
          code: 'ip_context_not_routed',
          message: 'The dataset marks this range as not routed (AS 0) at the time it was built.',
        });
    }
    limitations.push({
      code: 'ip_context_snapshot',
      message:
        'ASN and country come from a dataset snapshot of routing announcements; they may be stale and the country is where the network is registered, not where the host is.',
    });
    return {
      outcome: laneOutcome(lanes.context, 'completed', { durationMs: round(performance.now() - t0) }),
      value,
      limitations,
      sources: [ds.source],
    };
  } catch (err) {
    runtime.log.warn({ err, path: path ?? 'packaged' }, 'ip context dataset unreadable');
    return {
      outcome: laneOutcome(lanes.context, 'unavailable', {
        reason: 'dataset_unreadable',
        durationMs: round(performance.now() - t0),
      }),
      value: null,
      limitations: [
        {
          code: 'ip_context_unavailable',
          message:
            err instanceof DatasetUnreadableError
              ? 'The configured IP context dataset could not be read: ASN, network name and country are not known.'
              : 'The IP context dataset failed: ASN, network name and country are not known.',
        },
      ],
      sources: [],
    };
  }
}

async function reverseLane(
  address: IpAddress,
  normalized: string,
  ctx: ExecContext,
): Promise<LaneResult<string[] | null>> {
  // The reverse zones of private, loopback, link-local… ranges are answered by the resolver we run
  // next to: their names describe our network, not the target. No question is sent for them.
  if (!mayAskReverse(normalized, ctx.runtime.config.ALLOW_PRIVATE_TARGETS)) {
    return {
      outcome: laneOutcome(lanes.reverse, 'skipped', { reason: 'not_globally_reachable' }),
      value: null,
      limitations: [
        {
          code: 'reverse_dns_not_global',
          message: `${normalized} is not globally reachable: its PTR name would come from the resolver the service runs next to, not from the public DNS, so it was not asked.`,
        },
      ],
      sources: [],
    };
  }
  const t0 = performance.now();
  const r = await reverseLookup(resolverOf(ctx.runtime), reverseName(address), ctx.signal);
  return {
    outcome: laneOutcome(lanes.reverse, r.status, {
      durationMs: round(performance.now() - t0),
      ...(r.reason && r.status !== 'completed' ? { reason: r.reason } : {}),
    }),
    value: r.ptr,
    limitations: r.limitations,
    sources: r.status === 'completed' ? [{ source: 'dns_resolver' }] : [],
  };
}

function skipped(spec: LaneSpec): LaneResult<null> {
  return {
    outcome: laneOutcome(spec, 'skipped', { reason: 'not_applicable' }),
    value: null,
    limitations: [],
    sources: [],
  };
}

async function execute(input: IpInput, ctx: ExecContext): Promise<SyncOutcome<IpResult>> {
  const parsed = parseIp(input.value);
  if (!parsed.ok) throw new Error(`ip input passed the schema but does not parse: ${parsed.message}`);
  const address = parsed.address;

  const t0 = performance.now();
  const c = classify(address);
  const registryOutcome = laneOutcome(lanes.registry, 'completed', { durationMs: round(performance.now() - t0) });

  const [context, reverse] = await Promise.all([
    input.includeContext ? contextLane(address, ctx.runtime) : Promise.resolve(skipped(lanes.context)),
    input.reverseDns ? reverseLane(address, c.normalized, ctx) : Promise.resolve(skipped(lanes.reverse)),
  ]);

  const limitations: Limitation[] = [];
  if (c.specialPurpose[0]?.terminationDate) {
    limitations.push({
      code: 'registry_row_terminated',
      message: `The most specific registry row (${c.specialPurpose[0].addressBlock}, ${c.specialPurpose[0].name}) was terminated on ${c.specialPurpose[0].terminationDate}; the registry gives no reachability for it.`,
    });
  }
  if (c.specialPurpose.length === 0 && c.scope === 'public') {
    limitations.push({
      code: 'allocation_not_checked',
      message:
        'Not a special-purpose address. Whether the block is allocated, announced or in use is not checked by the registry lane.',
    });
  }
  limitations.push(...context.limitations, ...reverse.limitations);

  return {
    result: {
      ...c,
      context: context.value,
      ptr: reverse.value,
    },
    lanes: [registryOutcome, context.outcome, reverse.outcome],
    sources: [{ source: 'iana_special_registry', version: REGISTRY_VERSION }, ...context.sources, ...reverse.sources],
    limitations,
  };
}

export const ipProduct: ProductDefinition<IpInput, IpResult> = {
  id: 'lookup.ip.v1',
  title: 'IP context lookup',
  mode: 'sync',
  method: 'POST',
  path: '/v2/lookups/ip',
  scope: 'scan:create',
  rateClass: 'sync_lookup',
  input: ipInput,
  echo: (i) => ({ value: i.value, includeContext: i.includeContext, reverseDns: i.reverseDns }),
  resultSchema: ipResult,
  lanes: [lanes.registry, lanes.context, lanes.reverse],
  price: () => 0,
  readiness: (runtime) => {
    const path = runtime.config.IP_CONTEXT_DB;
    return {
      address_registry: 'ready',
      context: (path ? contextDatasetUsable(path) : packagedContextUsable()) ? 'ready' : 'unconfigured',
      reverse_dns: resolverOf(runtime)?.readiness() ?? 'unconfigured',
    };
  },
  execute,
};
