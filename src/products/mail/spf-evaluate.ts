// A static SPF evaluator: what RFC 7208's check_host() would meet for a sender that matches no
// mechanism (the worst case a receiver can reach), as a tree with the cost of each branch.
//
// Pure: it reads DNS answers from a snapshot and says which questions it still needs. The spf
// check asks them (in parallel, on the event loop) and runs this again in the parse pool until
// nothing is missing, so the walk is breadth-first and the evaluation never touches the network.
//
// Counting (RFC 7208 §4.6.4): include, a, mx, ptr and exists mechanisms and the redirect modifier
// each cost one lookup toward the limit of 10, over the whole tree; exp and ip4/ip6/all cost none.
// An mx target with more than 10 MX records is a permerror (each mx may cause at most 10 further
// lookups); ptr's own sub-limit depends on the client's PTR records and cannot be known here.
// A lookup answered NXDOMAIN or NODATA is void; more than 2 void lookups is a permerror.
// Syntax is checked with mailauth's RFC 7208 term validator. A branch whose DNS is indeterminate
// (SERVFAIL, timeout…) makes the count a lower bound and the verdict `indeterminate`, never `ok`;
// a macro in an include/redirect target (it needs the sender) makes it a lower bound too.
import mailauthSpf from 'mailauth/lib/spf/syntax.js';
import type { QueryResult, RecordType } from '../../dns/types.ts';
import { presence, recordsOf } from '../../dns/presence.ts';
import { replay, snapshotKey, txtValues, type DnsSnapshot } from './dns-snapshot.ts';

export const SPF_LOOKUP_LIMIT = 10;
export const SPF_VOID_LIMIT = 2;
export const SPF_MX_LIMIT = 10;
/** Records walked at most (a tree past this is far over the limit anyway). */
const MAX_NODES = 40;
const MAX_DEPTH = 12;

export type SpfTermKind =
  | 'all'
  | 'include'
  | 'a'
  | 'mx'
  | 'ptr'
  | 'exists'
  | 'ip4'
  | 'ip6'
  | 'redirect'
  | 'exp'
  | 'modifier'
  | 'invalid';

export interface SpfTerm {
  term: string;
  kind: SpfTermKind;
  qualifier: '+' | '-' | '~' | '?' | null;
  target: string | null;
  /** Lookups this term costs toward the limit of 10. */
  lookups: number;
  /** The term's lookup was answered NXDOMAIN/NODATA; null when unknown or not applicable. */
  void: boolean | null;
  note: string | null;
}

export type SpfPermerror =
  | 'syntax'
  | 'lookup_limit'
  | 'void_limit'
  | 'mx_limit'
  | 'include_no_record'
  | 'multiple_records'
  | 'loop';

export interface SpfNode {
  domain: string;
  via: 'root' | 'include' | 'redirect';
  query: { outcome: QueryResult['outcome']; rcode: string | null } | null;
  status: 'ok' | 'absent' | 'multiple' | 'indeterminate' | 'syntax_error' | 'loop' | 'not_followed' | 'pending';
  record: string | null;
  terms: SpfTerm[];
  /** Lookups of this record's own terms. */
  lookups: number;
  /** This record's lookups plus every descendant's: the cost of the branch. */
  total: number;
  voids: number;
  errors: string[];
  children: SpfNode[];
}

export interface SpfEvaluation {
  verdict: 'ok' | 'permerror' | 'none' | 'indeterminate';
  permerrors: Array<{ reason: SpfPermerror; domain: string; detail: string }>;
  lookups: number;
  /** The count misses branches that could not be walked (indeterminate DNS, macros, caps). */
  lookupsLowerBound: boolean;
  voidLookups: number;
  /** The top-level all that applies to unlisted senders (through redirect); null = none (neutral). */
  all: { qualifier: '+' | '-' | '~' | '?'; domain: string } | null;
  usesPtr: boolean;
  macros: string[];
  indeterminate: Array<{ name: string; type: string; outcome: string }>;
  tree: SpfNode;
}

export interface SpfStep {
  evaluation: SpfEvaluation;
  /** Questions the evaluation needs and the snapshot lacks. */
  missing: Array<{ name: string; type: RecordType }>;
}

const VERSION = /^v=spf1(?: |$)/i;
const MECHANISMS = new Set(['all', 'include', 'a', 'mx', 'ptr', 'exists', 'ip4', 'ip6']);
/** Terms that cost one lookup toward the limit (RFC 7208 §4.6.4). */
const LOOKUP_KINDS = new Set<SpfTermKind>(['include', 'redirect', 'a', 'mx', 'ptr', 'exists']);

interface Walk {
  snapshot: DnsSnapshot;
  get: (name: string, type: RecordType) => QueryResult;
  missing: Map<string, { name: string; type: RecordType }>;
  nodes: number;
  lookups: number;
  voids: number;
  lowerBound: boolean;
  usesPtr: boolean;
  macros: Set<string>;
  permerrors: SpfEvaluation['permerrors'];
  indeterminate: SpfEvaluation['indeterminate'];
}

function need(w: Walk, name: string, type: RecordType): QueryResult | null {
  const key = snapshotKey(name, type);
  if (key in w.snapshot) return w.get(name, type);
  w.missing.set(key, { name, type });
  return null;
}

function permerror(w: Walk, reason: SpfPermerror, domain: string, detail: string): void {
  if (!w.permerrors.some((p) => p.reason === reason && p.domain === domain && p.detail === detail))
    w.permerrors.push({ reason, domain, detail });
}

function noteIndeterminate(w: Walk, r: QueryResult): void {
  w.lowerBound = true;
  if (!w.indeterminate.some((x) => x.name === r.name && x.type === r.type))
    w.indeterminate.push({ name: r.name, type: r.type, outcome: r.outcome });
}

const normalize = (name: string) => mailauthSpf.normalizeTargetName(name).toLowerCase();

const isAlnum = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);

/**
 * Splits one term into kind, qualifier and target; syntax is checked separately by mailauth. An
 * index walk: /^([+\-~?]?)([a-z0-9]+)(.*)$/ gave back one character at a time when (.*)$ failed at
 * a line break, so a 60 KB term cost seconds (issue 18).
 */
function classify(raw: string, domain: string): Omit<SpfTerm, 'lookups' | 'void' | 'note'> {
  const eq = raw.indexOf('=');
  const sep = raw.search(/[:/]/);
  if (eq > 0 && (sep < 0 || eq < sep)) {
    const name = raw.slice(0, eq).toLowerCase();
    const value = raw.slice(eq + 1);
    if (name === 'redirect') return { term: raw, kind: 'redirect', qualifier: null, target: normalize(value) };
    if (name === 'exp') return { term: raw, kind: 'exp', qualifier: null, target: normalize(value) };
    return { term: raw, kind: 'modifier', qualifier: null, target: null };
  }
  const q = '+-~?'.includes(raw.charAt(0)) && raw.length > 0 ? 1 : 0;
  let j = q;
  while (j < raw.length && isAlnum(raw.charCodeAt(j))) j++;
  const mech = raw.slice(q, j).toLowerCase();
  if (j === q || !MECHANISMS.has(mech)) return { term: raw, kind: 'invalid', qualifier: null, target: null };
  const qualifier = (q ? raw.charAt(0) : '+') as SpfTerm['qualifier'];
  const rest = raw.slice(j);
  let target: string | null = null;
  if (mech === 'include' || mech === 'exists' || mech === 'ptr' || mech === 'a' || mech === 'mx') {
    const spec = rest.startsWith(':') ? rest.slice(1).replace(/\/\/?\d*(\/\/\d*)?$/, '') : '';
    target = spec ? normalize(spec) : mech === 'include' || mech === 'exists' ? null : domain;
  }
  return { term: raw, kind: mech as SpfTermKind, qualifier, target };
}

/** RFC 1035 §2.3.4: a label is at most 63 octets (RFC 7208 §4.3 calls a longer one malformed). */
const MAX_LABEL = 63;
const SPEC_MECHANISMS = new Set(['include', 'exists', 'a', 'mx', 'ptr']);

/** The domain-spec of a term (include/exists/a/mx/ptr after ":", redirect/exp after "="), or null. */
function domainSpecOf(term: string): string | null {
  const eq = term.indexOf('=');
  const sep = term.search(/[:/]/);
  if (eq > 0 && (sep < 0 || eq < sep)) {
    const name = term.slice(0, eq).toLowerCase();
    return name === 'redirect' || name === 'exp' ? term.slice(eq + 1) : null;
  }
  if (sep < 0 || term.charAt(sep) !== ':') return null;
  const mech = term.slice('+-~?'.includes(term.charAt(0)) ? 1 : 0, sep).toLowerCase();
  return SPEC_MECHANISMS.has(mech) ? term.slice(sep + 1) : null;
}

/**
 * Why one term is refused before mailauth's validator sees it, or null. mailauth's TOPLABEL regex
 * ("[a-z0-9]* [a-z] [a-z0-9]*" in one alternative) backtracks quadratically over a long last
 * label (a 60 KB label cost 16 s); every label of a domain-spec is held to 63 characters first,
 * so it only ever sees short ones. Terms are visible ASCII (RFC 7208 §4.6.1, §12); mailauth
 * throws on a control character or line break instead of reporting it.
 */
function preCheck(term: string): string | null {
  if (!/^[\x21-\x7e]+$/.test(term))
    return `invalid character in term "${term.replace(/[^\x20-\x7e]/g, '?').slice(0, 60)}"`;
  const spec = domainSpecOf(term);
  if (spec === null) return null;
  let label = 0;
  for (let i = 0; i < spec.length; i++) {
    if (spec.charCodeAt(i) === 46) label = 0;
    else if (++label > MAX_LABEL)
      return `label too long (over ${MAX_LABEL} characters) in term "${term.slice(0, 60)}…"`;
  }
  return null;
}

/** The syntax error of one term (our pre-checks, then mailauth's RFC 7208 validator), or null. */
function termError(term: string): string | null {
  const pre = preCheck(term);
  if (pre) return pre;
  try {
    return mailauthSpf.validateTerms([term]) || null;
  } catch (err) {
    return `unparseable term (${err instanceof Error ? err.message : String(err)})`;
  }
}

/**
 * Each term's syntax error, each term validated once; and the record's first error (a term's, or
 * a repeated redirect/exp modifier, as mailauth's validateTerms reports it), or false.
 */
function termsErrors(terms: string[]): { record: string | false; perTerm: Array<string | null> } {
  const perTerm = terms.map(termError);
  const first = perTerm.find((e) => e !== null);
  if (first) return { record: first, perTerm };
  for (const modifier of ['redirect', 'exp']) {
    const n = terms.filter((t) => t.toLowerCase().startsWith(`${modifier}=`)).length;
    if (n > 1) return { record: `more than 1 ${modifier} found`, perTerm };
  }
  return { record: false, perTerm };
}

function blankNode(domain: string, via: SpfNode['via'], status: SpfNode['status']): SpfNode {
  return {
    domain,
    via,
    query: null,
    status,
    record: null,
    terms: [],
    lookups: 0,
    total: 0,
    voids: 0,
    errors: [],
    children: [],
  };
}

/** An a/mx/exists lookup: void when every question it makes is answered without records. */
function lookupVoid(w: Walk, questions: QueryResult[]): boolean | null {
  if (questions.some((q) => presence(q) === 'indeterminate')) {
    for (const q of questions) if (presence(q) === 'indeterminate') noteIndeterminate(w, q);
    return null;
  }
  return questions.every((q) => presence(q) === 'absent');
}

/**
 * An include/redirect target's TXT lookup is a lookup too (RFC 7208 §4.6.4): void when answered
 * NXDOMAIN or without any TXT record; a TXT answer with no SPF record among it is not void (it
 * is still a permerror, include_no_record). Unknown when the target was not asked (a loop, a cap)
 * or its reply was indeterminate.
 */
function targetVoid(w: Walk, child: SpfNode): boolean | null {
  if (child.query === null) return null;
  const p = presence(w.get(child.domain, 'TXT'));
  return p === 'indeterminate' ? null : p === 'absent';
}

function walkRecord(w: Walk, domain: string, via: SpfNode['via'], path: readonly string[]): SpfNode {
  if (path.includes(domain)) {
    permerror(w, 'loop', domain, `${path.join(' → ')} → ${domain}`);
    return blankNode(domain, via, 'loop');
  }
  if (w.nodes >= MAX_NODES || path.length >= MAX_DEPTH) {
    w.lowerBound = true;
    return blankNode(domain, via, 'not_followed');
  }
  w.nodes++;
  const txt = need(w, domain, 'TXT');
  if (!txt) return blankNode(domain, via, 'pending');
  const node = blankNode(domain, via, 'ok');
  node.query = { outcome: txt.outcome, rcode: txt.rcode };
  const p = presence(txt);
  if (p === 'indeterminate') {
    noteIndeterminate(w, txt);
    node.status = 'indeterminate';
    return node;
  }
  const records = p === 'present' ? txtValues(txt).filter((v) => VERSION.test(v)) : [];
  if (records.length === 0) {
    node.status = 'absent';
    if (via !== 'root')
      permerror(
        w,
        'include_no_record',
        domain,
        `${via} target ${domain} has no SPF record (${txt.outcome === 'nxdomain' ? 'NXDOMAIN' : 'no v=spf1 TXT'})`,
      );
    return node;
  }
  if (records.length > 1) {
    node.status = 'multiple';
    node.record = records[0]!;
    permerror(w, 'multiple_records', domain, `${records.length} SPF records at ${domain}`);
    return node;
  }
  node.record = records[0]!;
  const raw = node.record
    .slice(6)
    .split(' ')
    .filter((t) => t.length > 0);
  const syntax = termsErrors(raw);
  const terms = raw.map((t) => classify(t, domain));
  if (syntax.record) {
    node.status = 'syntax_error';
    node.errors.push(syntax.record);
    permerror(w, 'syntax', domain, syntax.record);
    // A record with a syntax error is not evaluated (RFC 7208 §4.6): list its terms, follow nothing.
    node.terms = terms.map((t, i) => ({ ...t, lookups: 0, void: null, note: syntax.perTerm[i] ?? null }));
    return node;
  }
  const hasAll = terms.some((t) => t.kind === 'all');
  for (const t of terms) {
    const term: SpfTerm = { ...t, lookups: 0, void: null, note: null };
    node.terms.push(term);
    const macro = t.target?.includes('%');
    if (macro) w.macros.add(t.term);
    if (t.kind === 'ptr') w.usesPtr = true;
    const costs = LOOKUP_KINDS.has(t.kind) && !(t.kind === 'redirect' && hasAll);
    if (costs) term.lookups = 1;
    if (costs && macro) {
      // The sender is needed to expand it: counted, never asked. An include/redirect's record is
      // then unseen, so the count becomes a lower bound.
      term.note =
        t.kind === 'include' || t.kind === 'redirect'
          ? 'macro target not expanded (needs the sender): its record is not counted'
          : 'macro target not expanded (needs the sender)';
      if (t.kind === 'include' || t.kind === 'redirect') w.lowerBound = true;
    }
    switch (macro ? 'macro' : t.kind) {
      // biome-ignore lint/suspicious/noFallthroughSwitchClause: a redirect that applies is walked like an include
      case 'redirect':
        if (hasAll) {
          term.note = 'ignored: the record has an all mechanism (RFC 7208 §6.1)';
          break;
        }
      // falls through: a redirect that applies is walked like an include
      case 'include': {
        if (!mailauthSpf.isValidTargetName(t.target!)) {
          term.note = 'invalid target name';
          permerror(w, 'include_no_record', domain, `${t.kind} target "${t.target}" is not a valid domain name`);
          break;
        }
        const child = walkRecord(w, t.target!, t.kind as 'include' | 'redirect', [...path, domain]);
        node.children.push(child);
        term.void = targetVoid(w, child);
        break;
      }
      case 'a': {
        const a = need(w, t.target!, 'A');
        const aaaa = need(w, t.target!, 'AAAA');
        if (a && aaaa) term.void = lookupVoid(w, [a, aaaa]);
        break;
      }
      case 'mx': {
        const mx = need(w, t.target!, 'MX');
        if (!mx) break;
        term.void = lookupVoid(w, [mx]);
        const n = recordsOf(mx).length;
        if (n > SPF_MX_LIMIT) {
          term.note = `${n} MX records: more than ${SPF_MX_LIMIT} address lookups`;
          permerror(w, 'mx_limit', domain, `mx:${t.target} has ${n} MX records`);
        }
        break;
      }
      case 'exists': {
        const a = need(w, t.target!, 'A');
        if (a) term.void = lookupVoid(w, [a]);
        break;
      }
      case 'ptr':
        term.note = 'deprecated (RFC 7208 §5.5); its PTR sub-limit depends on the client';
        break;
      default:
        break;
    }
    node.lookups += term.lookups;
    if (term.void === true) node.voids++;
  }
  w.lookups += node.lookups;
  w.voids += node.voids;
  node.total = node.lookups + node.children.reduce((s, c) => s + c.total, 0);
  return node;
}

/** The all that decides for unlisted senders: the root's, else its redirect target's (recursively). */
function effectiveAll(node: SpfNode): SpfEvaluation['all'] {
  const all = node.terms.find((t) => t.kind === 'all');
  if (all) return { qualifier: all.qualifier ?? '+', domain: node.domain };
  const redirect = node.children.find((c) => c.via === 'redirect');
  return redirect ? effectiveAll(redirect) : null;
}

export function evaluateSpf(input: { domain: string; snapshot: DnsSnapshot }): SpfStep {
  const w: Walk = {
    snapshot: input.snapshot,
    get: replay(input.snapshot),
    missing: new Map(),
    nodes: 0,
    lookups: 0,
    voids: 0,
    lowerBound: false,
    usesPtr: false,
    macros: new Set(),
    permerrors: [],
    indeterminate: [],
  };
  const tree = walkRecord(w, input.domain.toLowerCase(), 'root', []);
  if (w.lookups > SPF_LOOKUP_LIMIT)
    permerror(
      w,
      'lookup_limit',
      input.domain,
      `${w.lookups}${w.lowerBound ? ' or more' : ''} lookups (limit ${SPF_LOOKUP_LIMIT})`,
    );
  if (w.voids > SPF_VOID_LIMIT)
    permerror(w, 'void_limit', input.domain, `${w.voids} void lookups (limit ${SPF_VOID_LIMIT})`);
  let verdict: SpfEvaluation['verdict'];
  if (tree.status === 'absent') verdict = 'none';
  else if (w.permerrors.length > 0) verdict = 'permerror';
  else if (w.indeterminate.length > 0 || tree.status === 'indeterminate' || w.missing.size > 0)
    verdict = 'indeterminate';
  else verdict = 'ok';
  return {
    evaluation: {
      verdict,
      permerrors: w.permerrors,
      lookups: w.lookups,
      lookupsLowerBound: w.lowerBound || w.missing.size > 0,
      voidLookups: w.voids,
      all: tree.status === 'ok' ? effectiveAll(tree) : null,
      usesPtr: w.usesPtr,
      macros: [...w.macros],
      indeterminate: w.indeterminate,
      tree,
    },
    missing: [...w.missing.values()],
  };
}
