// The recursive scan's own finding codes (its web, mail and domain checks raise those products'
// codes). Declared once: the scan checks build findings from these rows, the catalog gathers them
// and docs/findings.md lists them (drift-tested). Every row says when it is raised and what never
// raises it: a question that got no authoritative answer is a limitation, never one of these.
import { findingFactory, type FindingKind } from '../kit/findings.ts';

const k = (
  code: string,
  severity: FindingKind['severity'],
  confidence: FindingKind['confidence'],
  title: string,
  description: string,
): FindingKind => ({ code, severity, confidence, title, description });

export const scanFindings = {
  scan_dangling_cname: k(
    'scan_dangling_cname',
    'medium',
    'confirmed',
    'CNAME points at a name that does not exist',
    'An in-scope host is an alias (CNAME) whose target answered an authoritative NXDOMAIN: whoever registers or claims the target controls the host. Never raised when the target answered SERVFAIL, timed out or answered NOERROR without records, nor for service and policy names (_tcp, _udp, _dmarc, _domainkey…).',
  ),
  scan_takeover_fingerprint: k(
    'scan_takeover_fingerprint',
    'high',
    'firm',
    'Subdomain takeover: the provider serves its unclaimed-name page',
    "An in-scope host is an alias of a documented provider (the CNAME target's suffix) AND its web response carries that provider's page for an unclaimed name. Providers where a claim works only in some setups raise scan_takeover_fingerprint_edge_case instead. Never raised on the body string alone, nor for service names.",
  ),
  scan_takeover_fingerprint_edge_case: k(
    'scan_takeover_fingerprint_edge_case',
    'low',
    'tentative',
    'Possible subdomain takeover (edge-case provider)',
    'As scan_takeover_fingerprint, for a provider whose unclaimed names can be taken over only in some configurations (docs/products/scan.md lists them).',
  ),
  scan_wildcard_dns: k(
    'scan_wildcard_dns',
    'info',
    'confirmed',
    'Wildcard DNS',
    'Every random label probed under a zone level answered with the same data: the level answers any name. Names whose every record matches the wildcard are collapsed into one wildcard object. Not raised for a level whose probes were indeterminate or answered differently (those are limitations).',
  ),
  scan_cname_loop: k(
    'scan_cname_loop',
    'info',
    'confirmed',
    'CNAME loop',
    "An in-scope host's CNAME chain comes back to a name it already passed: the name resolves to nothing. Recorded once, the chain is not followed further.",
  ),
  scan_cname_chain_runaway: k(
    'scan_cname_chain_runaway',
    'info',
    'confirmed',
    'CNAME chain longer than the limit',
    "An in-scope host's CNAME chain is longer than 16 aliases: the scan stops following it there (resolvers give up on far shorter chains).",
  ),
  scan_zone_transfer_allowed: k(
    'scan_zone_transfer_allowed',
    'high',
    'confirmed',
    'Zone transfer (AXFR) allowed',
    "An in-scope name server of the zone answered an AXFR request with the zone's records (advanced scans only). Never raised on a refusal, a timeout or a server out of scope (those are not asked).",
  ),
  scan_sensitive_port_open: k(
    'scan_sensitive_port_open',
    'medium',
    'confirmed',
    'Database or remote-administration port reachable',
    'A TCP connection to a database, cache or remote-administration port (docs/products/scan.md lists them) of an in-scope, approved host succeeded (advanced scans only). A refused, filtered or timed-out port raises nothing.',
  ),
  scan_exposed_git_repository: k(
    'scan_exposed_git_repository',
    'high',
    'confirmed',
    'Git repository exposed over HTTP',
    'GET /.git/HEAD on an in-scope web host answered 200 with a Git HEAD (a "ref: refs/…" line or a commit id), not an HTML page (advanced scans only).',
  ),
  scan_exposed_env_file: k(
    'scan_exposed_env_file',
    'high',
    'firm',
    'Environment file exposed over HTTP',
    'GET /.env on an in-scope web host answered 200 with KEY=value lines, not an HTML page (advanced scans only).',
  ),
  scan_security_txt_missing: k(
    'scan_security_txt_missing',
    'info',
    'firm',
    'No security.txt',
    'GET /.well-known/security.txt on an in-scope HTTPS host answered 404 or 410 (RFC 9116). Never raised on an error status, a timeout or a refused connection (advanced scans only).',
  ),
} as const satisfies Record<string, FindingKind>;

export type ScanFindingCode = keyof typeof scanFindings;

export const scanFinding = findingFactory(scanFindings);
