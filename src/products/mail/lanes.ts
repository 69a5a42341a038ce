// The ten product lanes of lookup.mail.v1, their check names and their share of the price.
// Price 4 = mx 1 + spf 1 + dmarc 1 + smtp_starttls 1: the four lanes that do the most work a
// client pays for (the MX walk every other lane leans on, the SPF tree, the DMARC tree walk with
// its report authorizations, live SMTP sessions). The six others cost 0. A lane that ends
// unavailable, timeout or skipped is not captured, so a partial lookup costs less.
import type { LaneSpec } from '../../contract/lanes.ts';

export interface MailLane extends LaneSpec {
  check: string;
  unitCost: number;
}

const lane = (name: string, required: boolean, unitCost: number, description: string): MailLane => ({
  lane: name,
  required,
  unitCost,
  check: `mail.${name}`,
  description,
});

export const mailLanes = {
  mx: lane(
    'mx',
    true,
    1,
    'MX hosts in preference order, null MX (RFC 7505), CNAME and IP-literal targets, addresses of each host, forward-confirmed reverse DNS of the tested addresses',
  ),
  spf: lane(
    'spf',
    false,
    1,
    'SPF record, include/redirect tree walked statically with RFC 7208 §4.6.4 lookup, void and MX sub-limits per branch, the size of its TXT answers',
  ),
  dmarc: lane(
    'dmarc',
    false,
    1,
    'DMARCbis tree walk and RFC 7489 organisational domain, effective policy, external report authorizations, whether report destinations receive mail',
  ),
  mta_sts: lane('mta_sts', false, 0, 'MTA-STS TXT record and HTTPS policy (mode, max_age, MX coverage)'),
  tls_rpt: lane('tls_rpt', false, 0, 'TLS-RPT record syntax and reporting URIs'),
  dkim: lane(
    'dkim',
    false,
    0,
    'DKIM keys at a documented list of common selectors plus selectors inferred from MX and SPF providers (at best partial)',
  ),
  bimi: lane(
    'bimi',
    false,
    0,
    'BIMI assertion record (default selector); the logo (SVG Tiny PS) and the mark certificate (VMC/CMC) fetched through the outbound guard and checked',
  ),
  dane: lane(
    'dane',
    false,
    0,
    'TLSA records at _25._tcp of each MX host (RFC 7672 usages 2 and 3) and their DNSSEC state (DS at the parent, AD from a declared validator)',
  ),
  smtp_starttls: lane(
    'smtp_starttls',
    false,
    1,
    'SMTP sessions per MX address: banner, EHLO, STARTTLS, TLS protocol, cipher and certificate; port 465 when STARTTLS is missing',
  ),
  zone: lane(
    'zone',
    false,
    0,
    "The domain's zone: NS, SOA, DS at the parent (signed or not), and SOA serial and NS set asked of each name server directly",
  ),
} satisfies Record<string, MailLane>;

export type MailLaneName = keyof typeof mailLanes;
export const mailLaneList: readonly MailLane[] = Object.values(mailLanes);
export const MAIL_PRICE = mailLaneList.reduce((sum, l) => sum + l.unitCost, 0);
