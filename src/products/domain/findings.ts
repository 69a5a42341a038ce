// The domain product's finding codes, declared once: the checks build findings from these rows
// and docs/products/domain.md lists them (docs/findings.md takes the same table).
import { findingFactory, type FindingKind } from '../kit/findings.ts';

export const domainFindings = {
  dns_delegation_missing: {
    code: 'dns_delegation_missing',
    severity: 'medium',
    confidence: 'confirmed',
    title: 'Domain is not delegated',
    description:
      "The resolver answered NXDOMAIN for the registrable domain's NS query: the name does not exist in the DNS. Only an NXDOMAIN reply raises it; SERVFAIL, timeouts and errors never do (they make the lane unavailable or timeout).",
  },
  dns_single_nameserver: {
    code: 'dns_single_nameserver',
    severity: 'low',
    confidence: 'confirmed',
    title: 'Only one name server',
    description:
      'The delegation lists a single NS host; RFC 1034 §4.1 and registry policies ask for at least two, so one outage takes the domain off the DNS.',
  },
  dns_nameserver_nxdomain: {
    code: 'dns_nameserver_nxdomain',
    severity: 'medium',
    confidence: 'confirmed',
    title: 'Name server host does not exist',
    description:
      'An NS host of the delegation got NXDOMAIN for both A and AAAA. Whoever registers that name can answer for the domain.',
  },
  dnssec_not_signed: {
    code: 'dnssec_not_signed',
    severity: 'info',
    confidence: 'firm',
    title: 'Delegation is not signed (no DS)',
    description:
      'The DS query for the registrable domain answered NODATA: there is no DNSSEC chain of trust to the zone. Not raised when the DS query failed or timed out.',
  },
  domain_expired: {
    code: 'domain_expired',
    severity: 'high',
    confidence: 'firm',
    title: 'Registration has expired',
    description:
      'The RDAP expiration event of the registrable domain lies in the past. Registries keep expired names in grace or redemption periods for a while; the name can be lost.',
  },
  domain_expiring_soon: {
    code: 'domain_expiring_soon',
    severity: 'medium',
    confidence: 'firm',
    title: 'Registration expires within 30 days',
    description: 'The RDAP expiration event of the registrable domain is less than 30 days away.',
  },
} as const satisfies Record<string, FindingKind>;

export type DomainFindingCode = keyof typeof domainFindings;

export const finding = findingFactory(domainFindings);
