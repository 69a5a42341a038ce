// mail.spf: the domain's SPF record and its include/redirect tree. The tree is evaluated in the
// parse pool (./spf-evaluate.ts) on the answers gathered so far; the questions it still needs are
// asked here in parallel, and the loop repeats until nothing is missing (breadth-first).
import { presence } from '../../dns/presence.ts';
import type { CheckContext } from '../kit/product-contract.ts';
import type { CheckOutput, ObjectRef } from '../../contract/tasks.ts';
import { outcomeText, queryStatus } from '../kit/dns-replies.ts';
import { evidenceLine, taggedTxt, type DnsAsker } from './dns-snapshot.ts';
import { mailFinding, type MailFindingCode } from './findings.ts';
import { LaneOutput, postureObjects } from './output.ts';
import { inPool } from './pool.ts';
import type { SpfPermerror, SpfStep } from './spf-evaluate.ts';
import { spfSize, type SpfSize } from './spf-size.ts';
import type { SpfProjection } from './schema.ts';

/** DNS questions one SPF evaluation may ask (10 lookups, their void checks, a few over). */
const MAX_QUERIES = 120;
const MAX_ROUNDS = 16;

const PERMERROR_FINDING: Record<SpfPermerror, MailFindingCode> = {
  syntax: 'spf_syntax_error',
  lookup_limit: 'spf_lookup_limit_exceeded',
  loop: 'spf_include_loop',
  void_limit: 'spf_void_lookup_limit_exceeded',
  mx_limit: 'spf_mx_limit_exceeded',
  include_no_record: 'spf_include_without_record',
  multiple_records: 'spf_multiple_records',
};

const SPF = /^v=spf1(?: |$)/i;

export async function runSpfCheck(domain: string, asker: DnsAsker, ctx: CheckContext): Promise<CheckOutput> {
  const out = new LaneOutput();
  const root = await asker.ask(domain, 'TXT');
  const domainRef = { type: 'domain', key: domain };
  if (presence(root) === 'indeterminate') {
    out.failed([root], {
      code: 'spf_unknown',
      message: `The TXT query for ${domain} got ${outcomeText(root)}: whether it publishes SPF is unknown, not missing.`,
    });
    postureObjects(out, domain, 'spf', null);
    return out.done({
      domain,
      state: 'unknown',
      query: queryStatus(root),
      records: [],
      evaluation: null,
      size: null,
    } satisfies SpfProjection);
  }

  let step: SpfStep = await inPool(ctx, 'mailSpfEvaluate', { domain, snapshot: asker.snapshot });
  let asked = Object.keys(asker.snapshot).length;
  for (let round = 0; step.missing.length > 0 && round < MAX_ROUNDS && asked < MAX_QUERIES; round++) {
    const batch = step.missing.slice(0, MAX_QUERIES - asked);
    asked += batch.length;
    await Promise.all(batch.map((q) => asker.ask(q.name, q.type)));
    step = await inPool(ctx, 'mailSpfEvaluate', { domain, snapshot: asker.snapshot });
  }
  const ev = step.evaluation;
  if (step.missing.length > 0) {
    out.partial({
      code: 'spf_walk_truncated',
      message: `The SPF tree of ${domain} needed more than ${MAX_QUERIES} DNS questions; the lookup count is a lower bound.`,
    });
  }
  const { records } = taggedTxt(root, SPF);
  const state: SpfProjection['state'] = records.length === 0 ? 'absent' : records.length > 1 ? 'multiple' : 'present';

  for (const q of ev.indeterminate) {
    out.partial({
      code: 'dns_indeterminate',
      message: `${q.type} ${q.name} (SPF tree): ${q.outcome}; the branch is not counted, so the lookup count is a lower bound.`,
    });
  }
  if (ev.macros.length > 0 && ev.lookupsLowerBound) {
    out.limit({
      code: 'spf_macro_not_expanded',
      message: `Terms with macros need the sender to expand (${ev.macros.slice(0, 5).join(', ')}); the records they name are not counted.`,
    });
  }

  const posture = postureObjects(out, domain, 'spf', {
    state,
    verdict: ev.verdict,
    lookups: ev.lookups,
    lookupsLowerBound: ev.lookupsLowerBound,
  });
  if (state === 'absent') {
    out.finding(mailFinding('spf_missing', domainRef, `${domain} publishes no SPF record.`, [evidenceLine(root)]));
  }
  const seen = new Set<MailFindingCode>();
  for (const p of ev.permerrors) {
    const code = PERMERROR_FINDING[p.reason];
    if (seen.has(code)) continue; // one finding per code, its evidence lists every occurrence
    seen.add(code);
    const all = ev.permerrors
      .filter((x) => PERMERROR_FINDING[x.reason] === code)
      .map((x) => `${x.domain}: ${x.detail}`);
    out.finding(mailFinding(code, posture, `SPF of ${domain} ends in permerror: ${p.detail}.`, all));
  }
  if (state === 'present' && ev.all === null && ev.verdict !== 'indeterminate') {
    out.finding(
      mailFinding(
        'spf_all_neutral',
        posture,
        `The SPF record of ${domain} has no all term and no redirect: unlisted senders get neutral.`,
        [records[0]!],
      ),
    );
  } else if (ev.all?.qualifier === '+') {
    out.finding(
      mailFinding(
        'spf_all_pass',
        posture,
        `The SPF record of ${domain} ends in +all (from ${ev.all.domain}): every host passes.`,
        [records[0]!],
      ),
    );
  } else if (ev.all?.qualifier === '?') {
    out.finding(
      mailFinding(
        'spf_all_neutral',
        posture,
        `The SPF record of ${domain} ends in ?all (from ${ev.all.domain}): unlisted senders get neutral.`,
        [records[0]!],
      ),
    );
  }
  const size = state === 'absent' ? null : spfSize(root, ev.tree, asker.snapshot);
  if (size && (size.over512 || size.targetsOver512.length > 0)) sizeFinding(out, posture, domain, size);
  if (ev.usesPtr) {
    out.finding(mailFinding('spf_ptr_deprecated', posture, `The SPF tree of ${domain} uses the ptr mechanism.`));
  }
  return out.done({
    domain,
    state,
    query: queryStatus(root),
    records,
    evaluation: ev as unknown as SpfProjection['evaluation'],
    size,
  } satisfies SpfProjection);
}

function sizeFinding(out: LaneOutput, posture: ObjectRef, domain: string, size: SpfSize): void {
  const over = [
    ...(size.over512 ? [{ domain, answerBytes: size.answerBytes, txtRecords: size.txtRecords }] : []),
    ...size.targetsOver512,
  ];
  out.finding(
    mailFinding(
      'spf_dns_answer_over_512',
      posture,
      `The SPF TXT answer of ${over.map((o) => `${o.domain} (${o.answerBytes} bytes)`).join(', ')} exceeds 512 bytes: receivers without EDNS must retry over TCP.`,
      [
        ...over.map((o) => `TXT ${o.domain}: ${o.txtRecords} record(s), at least ${o.answerBytes} bytes in a response`),
        `SPF record at ${domain}: ${size.recordBytes} bytes in ${size.strings.length} string(s) (${size.strings.join(', ')})`,
      ],
    ),
  );
}
