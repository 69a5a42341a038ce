// DMARC policy discovery over gathered answers (parse pool): mailauth's DMARCbis tree walk and
// record parser, replaying the TXT replies the dmarc check already got, so mailauth can neither
// reach the network nor read a failed query as "no record" (./mailauth-resolver.ts). What it
// leaves out, we add: several records at one name (which DMARC discards), the effective policy
// for the domain, its subdomains and its non-existent subdomains, t=y, removed tags.
import getDmarcRecord, { type ParsedDmarc } from 'mailauth/lib/dmarc/get-dmarc-record.js';
import { presence } from '../../dns/presence.ts';
import { replay, txtValues, type DnsSnapshot } from './dns-snapshot.ts';
import { mailauthResolver } from './mailauth-resolver.ts';

/** The names a DMARCbis tree walk may query, longest first (RFC 9989 §4.10: at most 8). */
export function treeWalkNames(domain: string): string[] {
  let labels = domain.split('.');
  const names = [labels.join('.')];
  if (labels.length > 7) labels = labels.slice(-7);
  else labels = labels.slice(1);
  while (labels.length > 0) {
    names.push(labels.join('.'));
    labels = labels.slice(1);
  }
  return [...new Set(names)];
}

type Policy = 'none' | 'quarantine' | 'reject';
const POLICIES = new Set(['none', 'quarantine', 'reject']);
const VERSION = /^[vV][ \t]*=[ \t]*DMARC1[ \t]*(?:;|$)/;
export const REMOVED_TAGS = ['pct', 'rf', 'ri'] as const;

export interface DmarcEvaluation {
  /** Each walked name: what its TXT reply proved and the DMARC records it held. */
  walk: Array<{ name: string; presence: 'present' | 'absent' | 'indeterminate'; outcome: string; records: string[] }>;
  state: 'present' | 'absent' | 'unknown';
  /** Names of the walk that hold more than one DMARC record (discarded by receivers). */
  multiple: string[];
  record: { domain: string; raw: string; tags: Record<string, string | number>; inherited: boolean } | null;
  /** null when no policy applies (no record, or a record without a valid p and without rua). */
  valid: boolean;
  policy: {
    domain: Policy | null;
    subdomains: Policy | null;
    nonExistentSubdomains: Policy | null;
    testing: boolean;
  } | null;
  /** DMARCbis organisational domain (tree walk); null when the walk was cut by a DNS failure. */
  organisationalDomain: string | null;
  removedTags: string[];
  /** The walk ended on a DNS failure (mailauth's error code, e.g. ESERVFAIL). */
  error: string | null;
}

function policyOf(v: unknown): Policy | null {
  return typeof v === 'string' && POLICIES.has(v) ? (v as Policy) : null;
}

export async function evaluateDmarc(input: { domain: string; snapshot: DnsSnapshot }): Promise<DmarcEvaluation> {
  const { domain, snapshot } = input;
  const get = replay(snapshot);
  const walk = treeWalkNames(domain).map((name) => {
    const r = get(`_dmarc.${name}`, 'TXT');
    const p = presence(r);
    return {
      name,
      presence: p,
      outcome: r.outcome,
      records:
        p === 'present'
          ? txtValues(r)
              .map((v) => v.trim())
              .filter((v) => VERSION.test(v))
          : [],
    };
  });
  const multiple = walk.filter((w) => w.records.length > 1).map((w) => w.name);
  const lookup = getDmarcRecord.createRecordLookup(mailauthResolver(get));
  let discovery: Awaited<ReturnType<typeof getDmarcRecord.discoverPolicy>>;
  try {
    discovery = await getDmarcRecord.discoverPolicy(domain, lookup);
  } catch (err) {
    const code = (err as { code?: string }).code ?? 'error';
    return {
      walk,
      state: 'unknown',
      multiple,
      record: null,
      valid: false,
      policy: null,
      organisationalDomain: null,
      removedTags: [],
      error: code,
    };
  }
  const rec = discovery.record as ParsedDmarc | false;
  const error = discovery.error ? (discovery.error.code ?? 'error') : null;
  if (!rec) {
    // An empty walk is only an absence when every name of it was answered.
    const complete = walk.every((w) => w.presence !== 'indeterminate');
    return {
      walk,
      state: complete ? 'absent' : 'unknown',
      multiple,
      record: null,
      valid: false,
      policy: null,
      organisationalDomain: discovery.orgDomain,
      removedTags: [],
      error,
    };
  }
  const recordDomain = discovery.recordDomain ?? domain;
  const tags: Record<string, string | number> = {};
  for (const [k, v] of Object.entries(rec))
    if (k !== 'rr' && (typeof v === 'string' || typeof v === 'number')) tags[k] = v;
  const applied = getDmarcRecord.getPolicyTags(rec);
  const inherited = recordDomain !== domain;
  const p = policyOf(applied?.p);
  const sp = policyOf(applied?.sp) ?? p;
  const np = policyOf(applied?.np) ?? sp;
  const policy = applied
    ? { domain: inherited ? sp : p, subdomains: sp, nonExistentSubdomains: np, testing: rec.t === 'y' }
    : null;
  return {
    walk,
    state: 'present',
    multiple,
    record: { domain: recordDomain, raw: rec.rr, tags, inherited },
    valid:
      policyOf(rec.p) !== null &&
      (rec.sp === undefined || policyOf(rec.sp) !== null) &&
      (rec.np === undefined || policyOf(rec.np) !== null),
    policy,
    organisationalDomain: discovery.orgDomain,
    removedTags: REMOVED_TAGS.filter((t) => t in rec),
    error,
  };
}
