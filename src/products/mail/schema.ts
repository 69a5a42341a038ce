// The result of lookup.mail.v1 (the `result` of its job), one part per lane. A lane that did not
// run contributes null and its limitations: null never means "nothing there". Presence values
// are the DNS rule of src/dns/presence.ts: absent only from NXDOMAIN/NODATA.
import { z } from 'zod';
import { soaRecordSchema } from '../kit/dns-record-schemas.ts';
import { QUERY_OUTCOMES } from '../../dns/types.ts';

const outcome = z.enum(QUERY_OUTCOMES);
const query = z.object({ outcome, rcode: z.string().nullable() });
const presenceEnum = z.enum(['present', 'absent', 'indeterminate']);

export const mxProjection = z.object({
  domain: z.string(),
  state: z
    .enum(['mx', 'null_mx', 'no_mx', 'unknown'])
    .describe('null_mx: RFC 7505, accepts no mail; no_mx: answered without MX (implicit MX); unknown: no usable reply'),
  query,
  hosts: z
    .array(
      z.object({
        name: z.string(),
        preference: z.number().int(),
        ipLiteral: z.boolean(),
        addresses: z.array(z.string()),
        resolution: z.enum(['resolved', 'nxdomain', 'no_addresses', 'unknown', 'ip_literal', 'not_resolved']),
        cname: z.string().nullable().describe('The alias target when the exchange is a CNAME'),
        reverse: z
          .array(
            z.object({
              address: z.string(),
              state: z
                .enum(['pass', 'fail', 'permerror', 'temperror', 'not_asked'])
                .describe(
                  'iprev (RFC 8601 §2.7.3): pass, a PTR name resolves back; fail, none does; permerror, no PTR (NXDOMAIN/NODATA); temperror, a DNS failure; not_asked, outside the reverse-DNS policy (not globally reachable, not in ALLOW_PRIVATE_TARGETS)',
                ),
              ptr: z.array(z.string()).describe('PTR names followed (first 3)'),
              confirmedBy: z.string().nullable(),
            }),
          )
          .describe(
            'Forward-confirmed reverse DNS of the tested addresses (first 5 hosts, one IPv4 and one IPv6 each)',
          ),
      }),
    )
    .describe('Preference order'),
  implicit: z
    .object({ addresses: z.array(z.string()), resolution: z.enum(['resolved', 'nxdomain', 'no_addresses', 'unknown']) })
    .nullable()
    .describe("Without MX: the domain's own addresses (RFC 5321 §5.1)"),
});
export type MxProjection = z.infer<typeof mxProjection>;

const spfTerm = z.object({
  term: z.string(),
  kind: z.string(),
  qualifier: z.enum(['+', '-', '~', '?']).nullable(),
  target: z.string().nullable(),
  lookups: z.number().int(),
  void: z.boolean().nullable(),
  note: z.string().nullable(),
});
// One record of the SPF tree. Its children (include and redirect targets) have this same shape;
// the OpenAPI document describes them as objects because component schemas cannot recurse here.
const spfNode = z.object({
  domain: z.string(),
  via: z.enum(['root', 'include', 'redirect']),
  query: query.nullable(),
  status: z.string().describe('ok | absent | multiple | indeterminate | syntax_error | loop | not_followed | pending'),
  record: z.string().nullable(),
  terms: z.array(spfTerm),
  lookups: z.number().int().describe("Lookups of this record's own terms"),
  total: z.number().int().describe("This record's lookups plus its descendants': the cost of the branch"),
  voids: z.number().int(),
  errors: z.array(z.string()),
  children: z
    .array(z.record(z.string(), z.unknown()))
    .describe('Include and redirect targets: nodes of this same shape'),
});

export const spfProjection = z.object({
  domain: z.string(),
  state: z.enum(['present', 'absent', 'multiple', 'unknown']),
  query,
  records: z.array(z.string()).describe('Every v=spf1 record at the domain'),
  evaluation: z
    .object({
      verdict: z
        .enum(['ok', 'permerror', 'none', 'indeterminate'])
        .describe(
          'ok: within every limit, no syntax error; indeterminate: a branch got no usable DNS reply (never a pass)',
        ),
      permerrors: z.array(z.object({ reason: z.string(), domain: z.string(), detail: z.string() })),
      lookups: z.number().int(),
      lookupsLowerBound: z.boolean(),
      voidLookups: z.number().int(),
      all: z.object({ qualifier: z.enum(['+', '-', '~', '?']), domain: z.string() }).nullable(),
      usesPtr: z.boolean(),
      macros: z.array(z.string()),
      indeterminate: z.array(z.object({ name: z.string(), type: z.string(), outcome: z.string() })),
      tree: spfNode,
    })
    .nullable(),
  size: z
    .object({
      strings: z.array(z.number().int()).describe('Bytes of each character-string of the SPF record'),
      recordBytes: z.number().int().describe('The record once its strings are joined'),
      txtRecords: z.number().int().describe('TXT records at the domain, SPF or not: all travel in the answer'),
      answerBytes: z
        .number()
        .int()
        .describe(
          'The smallest DNS response carrying the TXT answer (header, question, compressed owners): a lower bound',
        ),
      over512: z.boolean().describe('Past 512 bytes a receiver without EDNS gets a truncated reply (RFC 1035 §4.2.1)'),
      transport: z.enum(['udp', 'tcp']).nullable().describe("The resolver's (EDNS 1232): a hint only"),
      targetsOver512: z.array(
        z.object({
          domain: z.string(),
          via: z.enum(['root', 'include', 'redirect']),
          txtRecords: z.number().int(),
          answerBytes: z.number().int(),
        }),
      ),
    })
    .nullable()
    .describe('Sizes of the TXT answers (RFC 7208 §3.4); null when the domain has no SPF record or its TXT is unknown'),
});
export type SpfProjection = z.infer<typeof spfProjection>;

const policy = z.enum(['none', 'quarantine', 'reject']);
export const dmarcProjection = z.object({
  domain: z.string(),
  walk: z
    .array(z.object({ name: z.string(), presence: presenceEnum, outcome: z.string(), records: z.array(z.string()) }))
    .describe('DMARCbis tree walk: each name asked (_dmarc.<name>), at most 8'),
  organisationalDomain: z.object({
    dmarcbis: z.string().nullable().describe('From the tree walk; null when a DNS failure cut it'),
    rfc7489: z.string().describe('From the public suffix list (ICANN section)'),
    differ: z.boolean(),
  }),
  state: z.enum(['present', 'absent', 'unknown']),
  multiple: z.array(z.string()).describe('Names holding more than one DMARC record (discarded by receivers)'),
  record: z
    .object({
      domain: z.string(),
      raw: z.string(),
      tags: z.record(z.string(), z.union([z.string(), z.number()])),
      inherited: z.boolean(),
    })
    .nullable(),
  valid: z.boolean(),
  policy: z
    .object({
      domain: policy.nullable(),
      subdomains: policy.nullable(),
      nonExistentSubdomains: policy.nullable(),
      testing: z.boolean(),
    })
    .nullable()
    .describe('Effective p / sp / np for the domain, its subdomains and non-existent subdomains; testing = t=y'),
  removedTags: z.array(z.string()),
  reporting: z.array(
    z.object({
      uri: z.string(),
      tag: z.enum(['rua', 'ruf']),
      scheme: z.string(),
      destination: z.string().nullable(),
      external: z.boolean(),
      authorization: z.enum(['not_needed', 'authorized', 'not_authorized', 'unknown']),
      accepts: z
        .enum(['mx', 'implicit_mx', 'null_mx', 'no_mail', 'unknown', 'not_checked'])
        .describe(
          'Whether a mailto: destination domain receives mail: MX, implicit MX (its own address, RFC 5321 §5.1), null MX (RFC 7505), neither (no_mail), unknown (DNS failure); not_checked for https: URIs',
        ),
    }),
  ),
});
export type DmarcProjection = z.infer<typeof dmarcProjection>;

export const mtaStsProjection = z.object({
  domain: z.string(),
  query,
  txt: z
    .object({
      state: z.enum(['present', 'absent', 'multiple', 'invalid', 'unknown']),
      id: z.string().nullable(),
      strict: z.boolean(),
      error: z.string().nullable(),
    })
    .nullable(),
  policy: z
    .object({
      url: z.string(),
      fetched: z.boolean(),
      status: z.number().int().nullable(),
      contentType: z.string().nullable(),
      failure: z.string().nullable(),
      mode: z.enum(['enforce', 'testing', 'none']).nullable(),
      maxAge: z.number().nullable(),
      mx: z.array(z.string()),
      lax: z.boolean(),
    })
    .nullable(),
  coverage: z.array(z.object({ host: z.string(), covered: z.boolean(), match: z.string().nullable() })),
});
export type MtaStsProjection = z.infer<typeof mtaStsProjection>;

export const tlsRptProjection = z.object({
  domain: z.string(),
  query,
  state: z.enum(['present', 'absent', 'multiple', 'invalid', 'unknown', 'not_applicable']),
  record: z.string().nullable(),
  rua: z.array(z.object({ uri: z.string(), scheme: z.string(), valid: z.boolean() })),
  errors: z.array(z.string()),
});
export type TlsRptProjection = z.infer<typeof tlsRptProjection>;

export const dkimProjection = z.object({
  domain: z.string(),
  probed: z.number().int(),
  probes: z.array(z.string()).describe('Every selector asked: a key under another selector is not seen'),
  selectors: z.array(
    z.object({
      selector: z.string(),
      source: z.string().describe('common, or mx:/spf:<provider> it was inferred from'),
      name: z.string(),
      state: z.enum(['key', 'revoked', 'invalid']),
      keyType: z.string().nullable(),
      bits: z.number().int().nullable(),
      testing: z.boolean(),
      error: z.string().nullable(),
    }),
  ),
});
export type DkimProjection = z.infer<typeof dkimProjection>;

const fetched = {
  url: z.string(),
  fetched: z.boolean().describe('A 200 response of the expected kind was read'),
  status: z.number().int().nullable(),
  contentType: z.string().nullable(),
  bytes: z.number().int().nullable(),
  hops: z.array(z.object({ url: z.string(), status: z.number().int() })).describe('Every response of the chain'),
  failure: z
    .string()
    .nullable()
    .describe(
      'Why it was not usable: host_not_found, certificate_invalid, redirect, redirect_off_https, too_large, http_status (facts), or unreachable (no answer from the host: refused, reset, timed out or not TLS, deliberately not told apart), timeout, dns_failure, target_not_allowed, port_not_allowed (a port other than 80, 443, 8080, 8443: never connected to) (gaps: a limitation)',
    ),
};
const svgCheck = z.object({
  valid: z.boolean().describe('No violation of SVG Tiny PS as checked (draft-svg-tiny-ps-abrotman §2)'),
  violations: z.array(z.string()).describe('The first 20'),
  moreViolations: z.boolean(),
  advice: z.array(z.string()),
  title: z.string().nullable(),
  viewBox: z.array(z.number()).nullable(),
  square: z.boolean().nullable(),
  bytes: z.number().int().describe('Of the SVG itself, inflated when it came gzipped'),
  compressed: z.boolean(),
  sha256: z.string().nullable(),
});

export const bimiProjection = z.object({
  domain: z.string(),
  queried: z.array(z.object({ name: z.string(), outcome, rcode: z.string().nullable() })),
  state: z.enum(['present', 'absent', 'declined', 'invalid', 'unknown']),
  recordName: z.string().nullable(),
  record: z.string().nullable(),
  location: z.string().nullable().describe('l=: the logo URL'),
  authority: z.string().nullable().describe('a=: the mark certificate URL'),
  logo: z
    .object({ ...fetched, compressed: z.boolean().nullable(), svg: svgCheck.nullable() })
    .nullable()
    .describe('The l= logo, fetched through the outbound guard and checked against SVG Tiny PS; null when not fetched'),
  certificate: z
    .object({
      ...fetched,
      facts: z
        .object({
          certificates: z.number().int(),
          kind: z.enum(['VMC', 'CMC']).nullable(),
          markType: z.string().nullable(),
          chainTrusted: z
            .boolean()
            .describe('Each certificate signed by the next, the last by a BIMI trust anchor, all in validity'),
          trustError: z.string().nullable(),
          bimiEku: z
            .boolean()
            .describe('The leaf has id-kp-BrandIndicatorforMessageIdentification (1.3.6.1.5.5.7.3.31)'),
          sans: z.array(z.string()),
          domainMatch: z.boolean(),
          subject: z.string().nullable(),
          organization: z.string().nullable(),
          issuer: z.string().nullable(),
          notAfter: z.string().nullable(),
          fingerprint256: z.string().nullable(),
          logo: z
            .object({
              mediaType: z.string().nullable(),
              hashAlgorithm: z.string().nullable(),
              declaredHash: z.string().nullable(),
              hashValid: z.boolean().nullable(),
              svg: svgCheck.nullable(),
              error: z.string().nullable(),
            })
            .nullable()
            .describe('The logotype extension (RFC 3709): the embedded SVG, its declared hash, and SVG Tiny PS'),
          logoMatch: z.boolean().nullable().describe('The l= logo is the certificate logo (same SHA-256)'),
          problems: z.array(z.string()),
        })
        .nullable(),
    })
    .nullable()
    .describe(
      'The a= mark certificate (VMC/CMC), fetched through the outbound guard and verified; null when not fetched',
    ),
  dmarcPrerequisite: z
    .object({ met: z.boolean().nullable(), reason: z.string().nullable() })
    .optional()
    .describe('Set at assembly from the dmarc lane; met null when the DMARC lane gave no answer'),
});
export type BimiProjection = z.infer<typeof bimiProjection>;

export const daneProjection = z.object({
  domain: z.string(),
  hosts: z.array(
    z.object({
      host: z.string(),
      query,
      presence: presenceEnum,
      ad: z.boolean().describe('AD flag as the resolver reported it (the query asks for it, RFC 6840 §5.7)'),
      dnssec: z
        .enum(['secure', 'insecure', 'unknown'])
        .describe(
          'secure: AD from a resolver declared validating (DNS_RESOLVER_VALIDATES); insecure: that resolver answered without AD, or the zone has no DS at its parent; DANE applies only when secure (RFC 7672 §2.2)',
        ),
      ds: z.object({ zone: z.string(), state: z.enum(['present', 'absent', 'unknown']) }),
      records: z.array(
        z.object({
          usage: z.number().int(),
          selector: z.number().int(),
          matchingType: z.number().int(),
          data: z.string(),
          usable: z.boolean(),
        }),
      ),
      match: z
        .enum(['matched', 'not_matched', 'no_certificate', 'no_usable_records', 'no_records'])
        .optional()
        .describe('Set at assembly: the usable records against the certificate the smtp_starttls lane was presented'),
    }),
  ),
  validation: z
    .enum(['validated_by_resolver', 'not_validated'])
    .describe(
      'validated_by_resolver: DNS_RESOLVER_VALIDATES is set, so AD is read as validated; signatures are never checked here',
    ),
});
export type DaneProjection = z.infer<typeof daneProjection>;

export const zoneProjection = z.object({
  zone: z
    .string()
    .describe('The zone holding the mail records: the registrable domain (as the domain lookup reads it)'),
  queries: z.object({ NS: query, SOA: query, DS: query }),
  nameservers: z.array(z.string()),
  soa: soaRecordSchema.nullable(),
  ds: z
    .enum(['present', 'absent', 'unknown'])
    .describe('DS at the parent: present (a chain of trust starts), absent (NODATA: not signed), unknown'),
  validated: z
    .boolean()
    .nullable()
    .describe('AD on the SOA answer from a resolver declared validating (DNS_RESOLVER_VALIDATES); null otherwise'),
  servers: z
    .array(
      z.object({
        name: z.string(),
        address: z.string().nullable(),
        state: z
          .enum([
            'answered',
            'not_authoritative',
            'failed',
            'timeout',
            'unreachable',
            'not_allowed',
            'no_address',
            'unknown_address',
          ])
          .describe(
            'answered: SOA and NS with the AA bit; not_authoritative: REFUSED or no AA (a lame server); the others: nothing is known of its copy',
          ),
        serial: z.number().int().nullable(),
        ns: z.array(z.string()),
        detail: z.string().nullable(),
      }),
    )
    .describe('Each name server (first 4) asked SOA and NS directly over TCP through the outbound guard'),
});
export type ZoneProjection = z.infer<typeof zoneProjection>;

const digest = z.object({
  certSha256: z.string(),
  certSha512: z.string(),
  spkiSha256: z.string(),
  spkiSha512: z.string(),
  certHex: z.string().nullable(),
  spkiHex: z.string().nullable(),
});
const leaf = z.object({
  subject: z.string(),
  issuer: z.string(),
  sans: z.array(z.string()),
  sanCount: z.number().int(),
  validFrom: z.string(),
  validTo: z.string(),
  expired: z.boolean(),
  notYetValid: z.boolean(),
  keyType: z.string().nullable(),
  keyBits: z.number().nullable(),
  signatureAlgorithm: z.string().nullable(),
  fingerprint256: z.string(),
  serialNumber: z.string(),
  selfIssued: z.boolean(),
});
const sessionState = z.enum([
  'tls',
  'no_starttls',
  'starttls_refused',
  'tls_failed',
  'unreachable',
  'connect_timeout',
  'not_allowed',
  'banner_timeout',
  'greeting_rejected',
  'ehlo_failed',
  'command_timeout',
  'protocol_violation',
  'aborted',
]);
export const smtpProjection = z.object({
  domain: z.string(),
  limits: z.object({ hosts: z.number().int(), addressesPerHost: z.number().int() }),
  implicitMx: z.boolean(),
  hosts: z.array(
    z.object({
      host: z.string(),
      resolution: z.enum(['resolved', 'no_address', 'unknown', 'not_allowed']),
      addresses: z.array(z.string()),
      sessions: z.array(
        z.object({
          address: z.string(),
          state: sessionState.describe(
            'unreachable / connect_timeout: port 25 could not be reached (not "no STARTTLS"); no_starttls: EHLO answered without it',
          ),
          banner: z.string().nullable(),
          ehloExtensions: z.array(z.string()),
          starttlsAdvertised: z.boolean().nullable(),
          phases: z.array(z.object({ phase: z.string(), ms: z.number() })),
          detail: z.string().nullable(),
          pipeliningBeforeTls: z
            .object({
              detected: z.boolean(),
              bytes: z.number().int(),
              sample: z.string().nullable().describe('The first 64 bytes, escaped as in a JSON string'),
            })
            .nullable()
            .describe(
              'pipelining_before_tls: what the server sent after its 220 to STARTTLS and before TLS (it should send nothing: the STARTTLS injection class of CVE-2011-0411); never read as TLS or as replies. null when STARTTLS was not answered 220',
            ),
          tls: z
            .object({
              protocol: z.string().nullable(),
              cipher: z.string().nullable(),
              chainTrusted: z.boolean(),
              trustError: z.string().nullable(),
              hostnameMatch: z.boolean().nullable(),
              certificate: leaf.nullable(),
              chainDigests: z.array(digest),
              certificateError: z.string().nullable(),
            })
            .nullable(),
          implicitTls: z
            .object({
              state: z
                .enum(['tls', 'refused', 'timeout', 'tls_failed', 'not_smtp', 'unreachable', 'not_allowed', 'aborted'])
                .describe('tls: a handshake and a 220 banner on port 465; refused: nothing listens there'),
              banner: z.string().nullable(),
              protocol: z.string().nullable(),
              cipher: z.string().nullable(),
              chainTrusted: z.boolean().nullable(),
              trustError: z.string().nullable(),
              hostnameMatch: z.boolean().nullable(),
              detail: z.string().nullable(),
            })
            .nullable()
            .describe(
              'Port 465 (implicit TLS, RFC 8314 §3.3), probed only after no_starttls on 25: a fact that never changes the STARTTLS verdict (relaying MTAs use 25); null when not probed',
            ),
        }),
      ),
    }),
  ),
});
export type SmtpProjection = z.infer<typeof smtpProjection>;

export const mailResult = z.object({
  domain: z.string(),
  mx: mxProjection.nullable(),
  spf: spfProjection.nullable(),
  dmarc: dmarcProjection.nullable(),
  mtaSts: mtaStsProjection.nullable(),
  tlsRpt: tlsRptProjection.nullable(),
  dkim: dkimProjection.nullable(),
  bimi: bimiProjection.nullable(),
  dane: daneProjection.nullable(),
  smtpStarttls: smtpProjection.nullable(),
  zone: zoneProjection.nullable(),
});
export type MailResult = z.infer<typeof mailResult>;
