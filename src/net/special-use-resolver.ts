// The resolver every product check uses, behind the special-use rule (./special-use.ts), on the
// question and on the answer.
//
// The question: a special-use name, a non-global reverse zone or an unlisted TLD is answered here,
// without a packet leaving the process, with outcome `error` (indeterminate: nothing is known, so
// no check can read it as an absence) and `notAsked` saying why. kit/runtime.ts wraps the
// process's resolver with it, so MX, NS, CNAME and SPF names a target points at, and the outbound
// guard's own host lookups, never reach the local resolver for such names.
//
// The answer: a public name can point into such a name (`x.example CNAME api.svc.cluster.local`,
// a reverse name CNAMEd into 10.in-addr.arpa, a PTR naming `db.corp.internal`), and a resolver
// that holds private zones (Route 53 private zones, local-data in Unbound or BIND, a cluster's
// DNS) follows it and answers from them: a view into the deployment's network through a name
// anyone can publish. The reply's chain is cut where it enters such a name: the record that points
// in (its CNAME, DNAME or PTR) and everything after it are dropped, because a resolver with
// private zones can also have written that record (local-data for public names, rewrite rules),
// and the public name alone is what the limitation names, with the kind of name it pointed into,
// never the name. When no record of the asked type is left, the outcome is `left_public_dns`
// (indeterminate: public DNS was not asked what lies beyond). Each cut is noted for the check or
// request it happens in (collectAnswerCuts), which adds the limitation `answer_leaves_public_dns`
// to its output once (workers/lane-runner/execute-check.ts, src/jobs/admission/admit-product.ts).
//
// What is not cut: A and AAAA records with private or loopback addresses in a public zone. Anyone
// can publish them and anyone asking any resolver sees them: they say nothing about our network,
// and the outbound guard refuses to connect to them anyway (ALLOW_PRIVATE_TARGETS). MX, NS and SRV
// records naming a special-use host are kept too: no resolver follows them into the private name
// (a product that asks about that name is refused as a question, above).
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Limitation } from '../contract/lanes.ts';
import type { DnsRecord, QueryOptions, QueryResult, RecordType, Resolver } from '../dns/types.ts';
import { specialUseOf, type SpecialUse, type SpecialUsePolicy } from './special-use.ts';

/** One reply cut where it left public DNS. */
export interface AnswerCut {
  /** The question. */
  question: string;
  type: RecordType;
  /** The public name whose record pointed out of public DNS. */
  from: string;
  reason: SpecialUse['reason'];
}

const WHY: Record<SpecialUse['reason'], string> = {
  special_use_domain: 'a special-use domain',
  non_global_reverse_zone: 'the reverse zone of a range that is not globally reachable',
  unlisted_tld: 'a TLD outside the public suffix list',
};

const bare = (n: string) => n.trim().toLowerCase().replace(/\.$/, '');

/** The name a record points at, for the types whose data a resolver follows or that name a host. */
function pointsTo(r: DnsRecord): string | null {
  if ((r.type === 'CNAME' || r.type === 'DNAME' || r.type === 'PTR') && typeof r.data === 'string') return bare(r.data);
  return null;
}

/**
 * The reply with its chain cut where it leaves public DNS (module comment), and the cut; the
 * reply itself when nothing was cut. Linear in the answer section.
 */
export function cutAtPublicBoundary(
  r: QueryResult,
  policy: SpecialUsePolicy,
): { result: QueryResult; cut: AnswerCut | null } {
  if (r.answers.length === 0) return { result: r, cut: null };
  const question = bare(r.name);
  // The names the question reaches without passing through a refused one: the question, then the
  // targets of kept CNAME/DNAME records, in the order the resolver listed the chain.
  const byOwner = new Map<string, DnsRecord[]>();
  for (const a of r.answers) {
    const owner = bare(a.name);
    byOwner.set(owner, [...(byOwner.get(owner) ?? []), a]);
  }
  const kept: DnsRecord[] = [];
  let cut: AnswerCut | null = null;
  const reached = new Set([question]);
  const queue = [question];
  for (let i = 0; i < queue.length; i++) {
    const owner = queue[i]!;
    for (const a of byOwner.get(owner) ?? []) {
      const target = pointsTo(a);
      const refused = target === null ? null : specialUseOf(target, policy);
      if (refused) {
        cut ??= { question, type: r.type, from: owner, reason: refused.reason };
        continue;
      }
      kept.push(a);
      if (target !== null && a.type !== 'PTR' && !reached.has(target)) {
        reached.add(target);
        queue.push(target);
      }
    }
  }
  // Records of owners the walk never reached (beyond a refused name) are dropped with it; a reply
  // of the stub resolver holds no others (src/dns/wire.ts answerRecords keeps the chain only).
  if (!cut) return { result: kept.length === r.answers.length ? r : { ...r, answers: kept }, cut: null };
  const answered = kept.some((a) => a.type === r.type);
  return {
    result: {
      ...r,
      answers: kept,
      ...(answered ? {} : { outcome: 'left_public_dns' as const }),
      leftPublicDns: { name: cut.from, why: WHY[cut.reason] },
    },
    cut,
  };
}

const cutsOfTheWork = new AsyncLocalStorage<AnswerCut[]>();
/** The cut behind a reply this module returned, for a reply handed out again (notingCuts). */
const cutOf = new WeakMap<QueryResult, AnswerCut>();

/**
 * `resolver` (a cache over refuseSpecialUse, src/dns/answer-cache.ts) noting the cut of every reply
 * it hands out in the work it runs in: a reply served from the cache, or shared with a concurrent
 * asker, was cut in another check's work, and this check must carry the limitation too.
 */
export function notingCuts(resolver: Resolver): Resolver {
  return {
    readiness: () => resolver.readiness(),
    retryAfterMs: () => resolver.retryAfterMs?.() ?? null,
    servfailBurst: (zone: string) => resolver.servfailBurst?.(zone) ?? false,
    async query(name, type, opts) {
      const r = await resolver.query(name, type, opts);
      const cut = cutOf.get(r);
      const noted = cutsOfTheWork.getStore();
      // The work that made the cut noted it already (refuseSpecialUse, below the cache).
      if (cut && noted && !noted.includes(cut)) noted.push(cut);
      return r;
    },
  };
}

/**
 * Runs `work` and returns, with its value, every reply cut at the public boundary while it ran
 * (its own DNS questions and its outbound guard's host lookups alike).
 */
export async function collectAnswerCuts<T>(work: () => Promise<T>): Promise<{ value: T; cuts: AnswerCut[] }> {
  const cuts: AnswerCut[] = [];
  const value = await cutsOfTheWork.run(cuts, work);
  return { value, cuts };
}

/** The limitation a check or a request carries when answers it got were cut; null when none were. */
export function answerCutLimitation(cuts: readonly AnswerCut[]): Limitation | null {
  if (cuts.length === 0) return null;
  const from = [...new Set(cuts.map((c) => c.from))];
  const why = [...new Set(cuts.map((c) => WHY[c.reason]))];
  return {
    code: 'answer_leaves_public_dns',
    message: `The DNS answer for ${from.slice(0, 5).join(', ')}${from.length > 5 ? ` and ${from.length - 5} more` : ''} pointed into ${why.join(' or ')}, which only a resolver with private zones answers: it was cut there, and nothing beyond it is reported or followed.`,
  };
}

export function refuseSpecialUse(resolver: Resolver, policy: SpecialUsePolicy): Resolver {
  return {
    readiness: () => resolver.readiness(),
    retryAfterMs: () => resolver.retryAfterMs?.() ?? null,
    servfailBurst: (zone: string) => resolver.servfailBurst?.(zone) ?? false,
    async query(name: string, type: RecordType, opts?: QueryOptions): Promise<QueryResult> {
      const refused = specialUseOf(name, policy);
      if (!refused) {
        const { result, cut } = cutAtPublicBoundary(await resolver.query(name, type, opts), policy);
        if (cut) {
          cutOf.set(result, cut);
          cutsOfTheWork.getStore()?.push(cut);
        }
        return result;
      }
      opts?.signal?.throwIfAborted();
      return {
        name: name.length > 1 && name.endsWith('.') ? name.slice(0, -1) : name,
        type,
        outcome: 'error',
        rcode: null,
        answers: [],
        flags: { aa: false, ad: false, tc: false, ra: false },
        transport: null,
        durationMs: 0,
        notAsked: `${refused.reason}: ${refused.suffix}`,
      };
    },
  };
}
