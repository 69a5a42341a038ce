// Wildcard DNS, decided on answer sets, not on "does a random name resolve" (BBOT and Amass learnt
// this the hard way: a zone can CNAME every name to one target, answer random names with rotating
// data, or have a wildcard for some types only).
//
// A probe asks K random labels under a zone level for each type and classifies, per type:
//   none      every label NXDOMAIN: no wildcard at this level
//   nodata    every label exists without records of the type (a wildcard without this type)
//   wildcard  every label answered, with the same answer set (CNAME targets + records)
//   possible  labels answered with different data, or some did and some did not: the level may
//             answer any name, in a pattern the probe cannot pin down
//   unknown   a question was indeterminate (SERVFAIL, timeout…): nothing can be said
// A name under the level then `match`es the wildcard (every type's set equals the wildcard's:
// it collapses into one wildcard object), is `real` (some type differs: real hosts under a
// wildcard survive), `possible` (kept, marked) or `unknown` (kept, with a limitation).
import { presence, recordsOf } from '../../../dns/presence.ts';
import type { QueryResult, RecordType } from '../../../dns/types.ts';

export const WILDCARD_TYPES = ['A', 'AAAA', 'CNAME', 'MX', 'TXT'] as const satisfies readonly RecordType[];
export type WildcardType = (typeof WILDCARD_TYPES)[number];
export const PROBE_LABELS = 3;

export type TypeState = 'none' | 'nodata' | 'wildcard' | 'possible' | 'unknown';

export interface WildcardProbe {
  level: string;
  state: 'none' | 'wildcard' | 'possible' | 'unknown';
  types: Record<WildcardType, { state: TypeState; answers: string[] }>;
}

export type WildcardMatch = 'match' | 'real' | 'possible' | 'unknown';

/** The comparable content of a reply: the CNAME targets of its chain and the records of its type. */
export function answerSet(r: QueryResult): string[] {
  const targets = r.answers
    .filter((a) => a.type === 'CNAME' && r.type !== 'CNAME')
    .map((a) => `CNAME ${String(a.data).toLowerCase().replace(/\.$/, '')}`);
  const records = recordsOf(r).map((a) => `${a.type} ${JSON.stringify(a.data).toLowerCase()}`);
  return [...new Set([...targets, ...records])].sort();
}

const same = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

export function classifyType(results: readonly QueryResult[]): { state: TypeState; answers: string[] } {
  if (results.some((r) => presence(r) === 'indeterminate')) return { state: 'unknown', answers: [] };
  if (results.every((r) => r.outcome === 'nxdomain')) return { state: 'none', answers: [] };
  const present = results.filter((r) => presence(r) === 'present');
  if (present.length === 0)
    return { state: results.every((r) => r.outcome !== 'nxdomain') ? 'nodata' : 'possible', answers: [] };
  if (present.length < results.length) return { state: 'possible', answers: [] };
  const sets = present.map(answerSet);
  return sets.every((s) => same(s, sets[0]!))
    ? { state: 'wildcard', answers: sets[0]! }
    : { state: 'possible', answers: [] };
}

export function classifyProbe(level: string, byType: Record<WildcardType, readonly QueryResult[]>): WildcardProbe {
  const types = Object.fromEntries(WILDCARD_TYPES.map((t) => [t, classifyType(byType[t])])) as WildcardProbe['types'];
  const states = Object.values(types).map((t) => t.state);
  let state: WildcardProbe['state'] = 'none';
  if (states.includes('unknown')) state = 'unknown';
  else if (states.includes('wildcard') || states.includes('nodata'))
    state = states.includes('possible') ? 'possible' : 'wildcard';
  else if (states.includes('possible')) state = 'possible';
  return { level, state, types };
}

/** How a name's own answers compare with its level's wildcard. */
export function matchWildcard(probe: WildcardProbe | null, name: Record<WildcardType, QueryResult>): WildcardMatch {
  if (!probe || probe.state === 'unknown') return 'unknown';
  if (probe.state === 'none') return 'real';
  let possible = probe.state === 'possible';
  for (const t of WILDCARD_TYPES) {
    const w = probe.types[t];
    const r = name[t];
    const p = presence(r);
    if (p === 'indeterminate') return 'unknown';
    if (w.state === 'wildcard') {
      if (p !== 'present' || !same(answerSet(r), w.answers)) return 'real';
    } else if (w.state === 'nodata' || w.state === 'none') {
      if (p === 'present') return 'real';
    } else {
      possible = true; // this type answers random names unpredictably: it proves nothing either way
    }
  }
  return possible ? 'possible' : 'match';
}

/** Random labels that cannot collide with a real name (a fixed prefix so logs show what they are). */
export function probeLabel(random: () => string): string {
  return `lss-wc-${random()}`;
}

const bare = (n: string) => n.trim().toLowerCase().replace(/\.$/, '');

/**
 * The reply a question about `target` would get, read off a question about its alias: a resolver
 * answering the alias follows the CNAME chain and returns the records of the type at its end, so
 * the part of the chain from `target` on is the target's own answer. Indeterminate when the
 * alias's reply was, or when its chain does not pass through `target` (it moved between questions).
 */
function targetReply(alias: QueryResult, target: string): QueryResult {
  const indeterminate: QueryResult = { ...alias, name: target, outcome: 'error', answers: [] };
  if (presence(alias) === 'indeterminate') return indeterminate;
  const next = new Map<string, string>();
  for (const a of alias.answers) if (a.type === 'CNAME') next.set(bare(a.name), bare(String(a.data)));
  const chain: string[] = [];
  for (let at: string | undefined = bare(alias.name); at !== undefined && !chain.includes(at); at = next.get(at)) {
    chain.push(at);
    if (chain.length > 32) break;
  }
  const from = chain.indexOf(target);
  if (from < 0) return indeterminate;
  const onChain = new Set(chain.slice(from));
  const answers = alias.answers.filter((a) => onChain.has(bare(a.name)));
  const outcome = alias.outcome === 'nxdomain' ? 'nxdomain' : answers.length > 0 ? 'answer' : 'nodata';
  return { ...alias, name: target, outcome, answers };
}

/**
 * How an alias's CNAME target compares with the wildcard of its level, without asking the target:
 * from the alias's own replies (targetReply), its CNAME type from the chain of the A reply. Only
 * a target on the probe's level can be judged ('unknown' otherwise): a name beyond the profile's
 * hops gets no dns task of its own, so this is the one place its collapse can be seen.
 */
export function aliasTargetMatch(
  probe: WildcardProbe | null,
  target: string,
  alias: Record<WildcardType, QueryResult>,
): WildcardMatch {
  const t = bare(target);
  if (!probe || !t.includes('.') || t.slice(t.indexOf('.') + 1) !== probe.level) return 'unknown';
  const replies = {} as Record<WildcardType, QueryResult>;
  for (const type of WILDCARD_TYPES) {
    if (type === 'CNAME') continue;
    replies[type] = targetReply(alias[type], t);
  }
  // The target's own CNAME, if any, is the next link of the A reply's chain; none when it ends there.
  const a = replies.A;
  const own = a.answers.filter((r) => r.type === 'CNAME' && bare(r.name) === t);
  replies.CNAME =
    presence(a) === 'indeterminate'
      ? { ...a, type: 'CNAME' }
      : {
          ...a,
          type: 'CNAME',
          outcome: a.outcome === 'nxdomain' ? 'nxdomain' : own.length > 0 ? 'answer' : 'nodata',
          answers: own,
        };
  return matchWildcard(probe, replies);
}
