// lookup.dns.v1: what the configured resolver says about a name, per record type: the rcode,
// the answers with their TTLs and the AA/AD flags, never a verdict.
//
// Partial answers. Eight questions go out; each is present, absent or indeterminate
// (src/dns/presence.ts: only records, NXDOMAIN or NODATA say anything about the name). Lanes:
// - `resolver` (required) is about reachability: completed when at least one of the eight got a
//   reply of any rcode, or when all eight timed out while the resolver itself is reachable (its
//   breaker closed, src/dns/stub-resolver.ts): the name's own servers did not answer, which is the
//   target's fact (issue 31: a tenant's dead zone is no outage of ours), so the lookup is a 200
//   `partial` with eight indeterminate types. Otherwise (failures reaching the resolver, or it is
//   down) it is `unavailable` / resolver_unreachable and the route answers 503: eight empty rows
//   would read as "this name has no records".
// - `record_types` (optional) is about coverage: completed only when every type is present or
//   absent; `partial` when any type is indeterminate (SERVFAIL, REFUSED, FORMERR, NOTIMP, timeout,
//   no usable reply). CONTRACT §7 fails the route on any required lane that is not `completed`,
//   so carrying the gap on the required lane would turn a mostly-answered name into a 503; carried
//   on an optional lane, it makes the envelope `partial` with coverage.complete false, and each
//   indeterminate type gets a `dns_indeterminate` limitation naming it. A name whose server
//   answers SERVFAIL for everything is therefore `partial`, never a complete answer.
import { z } from 'zod';
import { soaRecordSchema } from '../kit/dns-record-schemas.ts';
import { domainName } from '../../contract/domain-name.ts';
import type { QueryResult, RecordType, Resolver } from '../../dns/types.ts';
import { indeterminateLimitation, presence } from '../../dns/presence.ts';
import type { ExecContext, ProductDefinition, ProductRuntime } from '../kit/product-contract.ts';
import type { LaneOutcome, LaneSpec, Limitation, SyncOutcome } from '../../contract/lanes.ts';
import { laneOutcome } from '../../contract/lanes.ts';
import { QUERY_OUTCOMES } from '../../dns/types.ts';
import { OUTPUT_TRUNCATED } from '../kit/stored-output.ts';

export const dnsTypes = [
  'A',
  'AAAA',
  'CNAME',
  'MX',
  'NS',
  'TXT',
  'CAA',
  'SOA',
] as const satisfies readonly RecordType[];
type DnsType = (typeof dnsTypes)[number];

/**
 * One type's answers in the reply: at most this many, and this many bytes of JSON (a TXT set of
 * 64 KiB whose control bytes are written \u00XX is six times that). Eight types at most 12 KiB
 * each keep the reply under INLINE_REPLY_MAX_BYTES with room for the rest of the envelope.
 */
export const DNS_TYPE_CAPS = { answers: 100, bytes: 12 * 1024 } as const;

export const dnsInput = z.strictObject({ value: domainName });
export type DnsInput = z.infer<typeof dnsInput>;

const outcomeSchema = z
  .enum(QUERY_OUTCOMES)
  .describe(
    'answer | nodata (name exists, no records of the type) | nxdomain | servfail | refused | formerr | notimp; timeout and error mean no reply: nothing is known about the type; left_public_dns: the chain pointed into a special-use name or a non-global reverse zone and was cut there (limitation answer_leaves_public_dns): nothing is known beyond it',
  );
const mxData = z.object({ preference: z.number().int(), exchange: z.string() });

const caaData = z.object({ flags: z.number().int(), tag: z.string(), value: z.string() });
const txtData = z
  .array(z.string())
  .describe('The character-strings of one TXT record, each decoded as UTF-8 (join them for SPF/DKIM values)');

/** One type's rows. A CNAME met on the way is listed with the records (type CNAME, data its target). */
function typeResult<T extends z.ZodType>(data: T) {
  return z.object({
    outcome: outcomeSchema,
    rcode: z
      .string()
      .nullable()
      .describe('The rcode mnemonic of the reply (NOERROR, NXDOMAIN…); null when no reply arrived'),
    answers: z.array(
      z.object({ name: z.string(), type: z.string(), ttl: z.number().int(), data: z.union([data, z.string()]) }),
    ),
    authoritative: z.boolean().describe('AA flag of the reply'),
    authenticatedData: z.boolean().describe('AD flag as the resolver set it; not validated locally'),
    truncated: z
      .array(z.literal('answers'))
      .optional()
      .describe(
        `Present when the answers were cut to the caps of one type (${DNS_TYPE_CAPS.answers} answers, ${DNS_TYPE_CAPS.bytes / 1024} KiB of JSON): the first ones are listed, omittedAnswers says how many are not (limitation output_truncated)`,
      ),
    omittedAnswers: z.number().int().optional().describe('How many answers of the reply are not listed'),
  });
}

export const dnsResult = z.object({
  name: z.string(),
  records: z.object({
    A: typeResult(z.string()),
    AAAA: typeResult(z.string()),
    CNAME: typeResult(z.string()),
    MX: typeResult(mxData),
    NS: typeResult(z.string()),
    TXT: typeResult(txtData),
    CAA: typeResult(caaData),
    SOA: typeResult(soaRecordSchema),
  }),
  dnssecValidation: z.literal('not_validated_locally'),
});
export type DnsResult = z.infer<typeof dnsResult>;
type TypeRows = DnsResult['records'][DnsType];

const lanes = {
  resolver: {
    lane: 'resolver',
    required: true,
    description:
      "The project stub resolver over DNS_SERVERS: at least one record type answered, or every type timed out while the resolver itself answers (the name's servers are silent: every type indeterminate)",
  },
  recordTypes: {
    lane: 'record_types',
    required: false,
    description:
      'Every one of the eight record types present or absent (answers, NXDOMAIN or NODATA); partial when any is indeterminate',
  },
} satisfies Record<string, LaneSpec>;

const TYPE_TRUNCATED: Limitation = {
  code: OUTPUT_TRUNCATED,
  message: `Some record types had more answers than a reply lists (${DNS_TYPE_CAPS.answers} answers or ${DNS_TYPE_CAPS.bytes / 1024} KiB of JSON per type): each such type lists its first answers, marked "truncated" with omittedAnswers.`,
};

function resolverOf(runtime: ProductRuntime): Resolver | undefined {
  return runtime.services.resolver;
}

const replied = (r: QueryResult) => r.outcome !== 'timeout' && r.outcome !== 'error';

function rows(r: QueryResult): TypeRows {
  const answers: Array<TypeRows['answers'][number]> = [];
  let bytes = 0;
  for (const a of r.answers) {
    const row = { name: a.name, type: a.type, ttl: a.ttl, data: a.data as never };
    if (answers.length >= DNS_TYPE_CAPS.answers) break;
    bytes += Buffer.byteLength(JSON.stringify(row)) + 1;
    if (bytes > DNS_TYPE_CAPS.bytes) break;
    answers.push(row);
  }
  const omitted = r.answers.length - answers.length;
  return {
    outcome: r.outcome,
    rcode: r.rcode,
    answers,
    authoritative: r.flags.aa,
    authenticatedData: r.flags.ad,
    ...(omitted > 0 ? { truncated: ['answers' as const], omittedAnswers: omitted } : {}),
  } as TypeRows;
}

const AD_LIMITATION: Limitation = {
  code: 'ad_flag_not_validated',
  message: 'AD is reported as the resolver set it; DNSSEC is not validated locally.',
};

async function execute(input: DnsInput, ctx: ExecContext): Promise<SyncOutcome<DnsResult>> {
  const name = input.value;
  const resolver = resolverOf(ctx.runtime);
  if (!resolver) {
    return {
      result: emptyResult(name),
      lanes: [
        laneOutcome(lanes.resolver, 'unavailable', { reason: 'not_configured' }),
        laneOutcome(lanes.recordTypes, 'unavailable', { reason: 'not_configured' }),
      ],
      sources: [],
      limitations: [AD_LIMITATION],
    };
  }
  const t0 = performance.now();
  // Concurrent: the eight share one deadline instead of adding up. A caller abort rejects here.
  const results = await Promise.all(dnsTypes.map((type) => resolver.query(name, type, { signal: ctx.signal })));
  const durationMs = Math.round((performance.now() - t0) * 1000) / 1000;

  const answered = results.filter(replied);
  const indeterminate = results.filter((r) => presence(r) === 'indeterminate');
  const limitations: Limitation[] = [AD_LIMITATION, ...indeterminate.map((r) => indeterminateLimitation(r))];

  // Eight timeouts, none a failure to reach the resolver, and the resolver reachable: the name's
  // servers are silent (or backed off after being silent). Indeterminate, not an outage.
  const zoneSilent =
    answered.length === 0 && results.every((r) => r.outcome === 'timeout') && resolver.readiness() === 'ready';
  let outcomes: LaneOutcome[];
  if (answered.length === 0 && !zoneSilent) {
    outcomes = [
      laneOutcome(lanes.resolver, 'unavailable', { durationMs, reason: 'resolver_unreachable' }),
      laneOutcome(lanes.recordTypes, 'unavailable', { durationMs, reason: 'resolver_unreachable' }),
    ];
  } else {
    outcomes = [
      laneOutcome(lanes.resolver, 'completed', { durationMs }),
      indeterminate.length === 0
        ? laneOutcome(lanes.recordTypes, 'completed', { durationMs })
        : laneOutcome(lanes.recordTypes, 'partial', { durationMs, reason: 'some_types_indeterminate' }),
    ];
  }

  const records = Object.fromEntries(results.map((r) => [r.type, rows(r)])) as DnsResult['records'];
  // A type whose answers were cut is not all listed: record_types is partial (coverage incomplete).
  if (Object.values(records).some((t) => t.truncated)) {
    limitations.push(TYPE_TRUNCATED);
    const types = outcomes[1]!;
    if (types.status === 'completed')
      outcomes[1] = laneOutcome(lanes.recordTypes, 'partial', { durationMs, reason: 'answers_truncated' });
  }
  return {
    result: { name, records, dnssecValidation: 'not_validated_locally' },
    lanes: outcomes,
    // Never the resolver's address: it is the operator's infrastructure.
    sources: [{ source: 'dns_resolver' }],
    limitations,
  };
}

function emptyResult(name: string): DnsResult {
  const none: TypeRows = { outcome: 'error', rcode: null, answers: [], authoritative: false, authenticatedData: false };
  return {
    name,
    records: Object.fromEntries(dnsTypes.map((t) => [t, none])) as DnsResult['records'],
    dnssecValidation: 'not_validated_locally',
  };
}

export const dnsProduct: ProductDefinition<DnsInput, DnsResult> = {
  id: 'lookup.dns.v1',
  title: 'DNS lookup',
  mode: 'sync',
  method: 'POST',
  path: '/v2/lookups/dns',
  scope: 'scan:create',
  rateClass: 'sync_lookup',
  input: dnsInput,
  echo: (i) => ({ value: i.value }),
  targetNames: (i) => [{ path: 'value', name: i.value }],
  resultSchema: dnsResult,
  lanes: [lanes.resolver, lanes.recordTypes],
  price: () => 0,
  readiness: (runtime) => {
    const r = resolverOf(runtime)?.readiness() ?? 'unconfigured';
    return { resolver: r, record_types: r };
  },
  execute,
};
