// The result of lookup.domain.v1 (the `result` of its job), one part per lane. A lane that did not
// complete contributes null and its limitations: null never means "nothing there".
import { z } from 'zod';
import { soaRecordSchema } from '../kit/dns-record-schemas.ts';
import { QUERY_OUTCOMES } from '../../dns/types.ts';

const outcome = z
  .enum(QUERY_OUTCOMES)
  .describe('answer | nodata | nxdomain are replies about the name; the others mean nothing is known');

const queryStatus = z.object({
  outcome,
  rcode: z.string().nullable().describe('rcode mnemonic of the reply; null when no reply arrived'),
});

const dsData = z.object({
  keyTag: z.number().int(),
  algorithm: z.number().int(),
  digestType: z.number().int(),
  digest: z.string(),
});
const mxData = z.object({ preference: z.number().int(), exchange: z.string() });
const caaData = z.object({ flags: z.number().int(), tag: z.string(), value: z.string() });
const txtData = z.array(z.string()).describe('The character-strings of one TXT record');

export const delegationProjection = z.object({
  zone: z
    .string()
    .describe(
      'The name whose delegation was checked: the registrable domain (or the target when it is a public suffix)',
    ),
  state: z
    .enum(['delegated', 'not_delegated', 'no_nameservers', 'unknown'])
    .describe(
      'delegated: NS records answered; not_delegated: NXDOMAIN; no_nameservers: the name exists without NS records; unknown: no usable reply',
    ),
  nameservers: z.array(
    z.object({
      name: z.string(),
      addresses: z.array(z.string()),
      resolution: z.enum(['resolved', 'nxdomain', 'no_addresses', 'unknown']),
    }),
  ),
  soa: soaRecordSchema.nullable(),
  dnssec: z.object({
    ds: z.enum(['present', 'absent', 'unknown']).describe('absent only on an answered NODATA'),
    records: z.array(dsData),
    validation: z.literal('not_validated_locally'),
  }),
  queries: z.object({ NS: queryStatus, SOA: queryStatus, DS: queryStatus }),
});
export type DelegationProjection = z.infer<typeof delegationProjection>;

export const registrationProjection = z.object({
  domain: z.string().describe('The registrable domain asked about'),
  registered: z.boolean().describe('false only when the RDAP server answered 404 for the name'),
  handle: z.string().nullable(),
  registrar: z.object({ name: z.string().nullable(), ianaId: z.string().nullable() }).nullable(),
  events: z.object({
    registration: z.string().nullable(),
    expiration: z.string().nullable(),
    lastChanged: z.string().nullable(),
  }),
  daysUntilExpiration: z.number().int().nullable(),
  status: z.array(z.string()).describe('EPP/RDAP status values as the registry reports them'),
  nameservers: z.array(z.string()),
  secureDNS: z.object({ delegationSigned: z.boolean().nullable() }),
  source: z.literal('rdap'),
});
export type RegistrationProjection = z.infer<typeof registrationProjection>;

function rows<T extends z.ZodType>(data: T) {
  return z.object({
    outcome,
    rcode: z.string().nullable(),
    answers: z
      .array(z.object({ name: z.string(), type: z.string(), ttl: z.number().int(), data: z.union([data, z.string()]) }))
      .describe('Records of the type; a CNAME met on the way is listed too (type CNAME, data its target)'),
  });
}

export const recordTypes = ['A', 'AAAA', 'MX', 'TXT', 'CAA'] as const;
export type DomainRecordType = (typeof recordTypes)[number];

export const recordsProjection = z.object({
  name: z.string(),
  records: z.object({
    A: rows(z.string()),
    AAAA: rows(z.string()),
    MX: rows(mxData),
    TXT: rows(txtData),
    CAA: rows(caaData),
  }),
});
export type RecordsProjection = z.infer<typeof recordsProjection>;
export type RecordRows = RecordsProjection['records'][DomainRecordType];

export const domainResult = z.object({
  name: z.string(),
  registrableDomain: z
    .string()
    .nullable()
    .describe('The registration (public suffix list, ICANN section); null when the name is itself a public suffix'),
  publicSuffix: z.string().nullable().describe('ICANN section'),
  suffixSection: z
    .enum(['icann', 'private', 'unlisted'])
    .describe(
      "The section of the whole public suffix list that matched the name's longest suffix: private for names under suffixes such as github.io; unlisted when the TLD is in neither section",
    ),
  privateSuffix: z
    .string()
    .nullable()
    .describe('The private-section suffix the name is under (github.io); null unless suffixSection is private'),
  privateRegistrableDomain: z
    .string()
    .nullable()
    .describe(
      "The owner's name under that private suffix (alice.github.io): a scan's scope; null unless the name is below a private suffix",
    ),
  delegation: delegationProjection.nullable(),
  registration: registrationProjection.nullable(),
  records: recordsProjection.nullable(),
});
export type DomainResult = z.infer<typeof domainResult>;
