// The comparison's pure parts (CONTRACT §13): what counts as a changed field, when an absence
// is observed, and the chunked merge of two sorted streams.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addedFields, changedFields } from '../../src/jobs/changes/compare-projection.ts';
import { mergePages } from '../../src/jobs/changes/compare-chunk.ts';
import {
  baselineGap,
  coverageGap,
  missingLaneReason,
  observeAbsence,
  partTally,
  reasonOfOutcome,
  type PartedTask,
  type TaskTally,
} from '../../src/jobs/changes/observe-absence.ts';
import { packPosition, unpackPosition } from '../../src/jobs/changes/changes-repo.ts';
import { groupOf, kindOfGroup, markOfGroup } from '../../src/jobs/changes/change-codes.ts';
import { scanChangeRules } from '../../src/products/scan/changes.ts';
import { webChangeRules } from '../../src/products/web/changes.ts';
import { mailChangeRules } from '../../src/products/mail/changes.ts';
import { domainChangeRules } from '../../src/products/domain/changes.ts';
import { readFileSync } from 'node:fs';
import { chainGap } from '../../src/products/web/http-check.ts';
import type { ChainEvidence } from '../../src/products/web/evidence.ts';

const rules = { volatile: ['ttl', 'daysToExpiry', 'foundVia'], ordered: ['chain'] };

describe('changed fields', () => {
  it('only top-level fields that differ, volatile facts (at any depth) left out', () => {
    expect(
      changedFields(
        { name: 'a', records: { A: { data: ['1'], ttl: 60 } }, daysToExpiry: 80, foundVia: 'mx' },
        { name: 'a', records: { A: { data: ['1'], ttl: 300 } }, daysToExpiry: 79, foundVia: 'link' },
        rules,
      ),
    ).toEqual([]);
    expect(
      changedFields(
        { name: 'a', records: { A: { data: ['1'] } } },
        { name: 'a', records: { A: { data: ['2'] } } },
        rules,
      ),
    ).toEqual(['records']);
  });

  it('arrays are sets, except the ones whose order means something', () => {
    expect(changedFields({ sans: ['a', 'b'] }, { sans: ['b', 'a'] }, rules)).toEqual([]);
    expect(changedFields({ hosts: [{ h: 'a' }, { h: 'b' }] }, { hosts: [{ h: 'b' }, { h: 'a' }] }, rules)).toEqual([]);
    expect(changedFields({ chain: ['a', 'b'] }, { chain: ['b', 'a'] }, rules)).toEqual(['chain']);
    expect(changedFields({ sans: ['a'] }, { sans: ['a', 'c'] }, rules)).toEqual(['sans']);
  });

  it('a field gone is a change only when this job covered the object as the baseline did', () => {
    expect(changedFields({ name: 'a', records: {} }, { name: 'a' }, rules)).toEqual(['records']);
    expect(changedFields({ name: 'a', records: {} }, { name: 'a' }, rules, true)).toEqual([]);
    // A field that is there and differs is a change whatever the coverage.
    expect(changedFields({ name: 'a' }, { name: 'b' }, rules, true)).toEqual(['name']);
    expect(changedFields({ name: 'a' }, { name: 'a', added: 1 }, rules, true)).toEqual(['added']);
  });

  it('a failed outcome is a gap, never data: only what both jobs observed is compared (issue 44, item 2)', () => {
    const scan = scanChangeRules;
    const answer = (data: string[]) => ({ outcome: 'answer', rcode: 'NOERROR', data });
    const baseline = {
      name: 'dual.example',
      exists: true,
      wildcard: 'real',
      records: { A: answer(['127.0.6.1']), AAAA: answer(['::ffff:7f00:601']), TXT: { outcome: 'nodata', data: [] } },
    };
    // The AAAA question timed out this time (and the wildcard comparison could not be made): not changed.
    const timedOut = {
      ...baseline,
      wildcard: 'unknown',
      records: { ...baseline.records, AAAA: { outcome: 'timeout', rcode: null, data: [] } },
    };
    expect(changedFields(baseline, timedOut, scan)).toEqual([]);
    // Either way round: a baseline that could not look is no data to differ from.
    expect(changedFields(timedOut, baseline, scan)).toEqual([]);
    // What both observed and differs is a change, beside a gap.
    const moved = { ...timedOut, records: { ...timedOut.records, A: answer(['127.0.6.2']) } };
    expect(changedFields(baseline, moved, scan)).toEqual(['records']);
    // An alias whose target's servers fail: the CNAME was observed (changed), the addresses were not.
    const aliased = {
      ...baseline,
      records: {
        ...baseline.records,
        A: { outcome: 'servfail', rcode: 'SERVFAIL', data: [] },
        AAAA: { outcome: 'servfail', rcode: 'SERVFAIL', data: [] },
        CNAME: answer(['x.broken.example']),
      },
    };
    expect(
      changedFields(
        { ...baseline, records: { ...baseline.records, CNAME: { outcome: 'nodata', data: [] } } },
        aliased,
        scan,
      ),
    ).toEqual(['records']);
    expect(
      changedFields(
        baseline,
        { ...baseline, records: { ...baseline.records, AAAA: { outcome: 'refused', data: [] } } },
        scan,
      ),
    ).toEqual([]);
    // The domain lookup keeps its questions the same way ({ outcome, rcode, answers }).
    const rows = (outcome: string, data: string[]) => ({
      outcome,
      rcode: outcome === 'timeout' ? null : 'NOERROR',
      answers: data.map((d) => ({ type: 'AAAA', data: d })),
    });
    expect(
      changedFields(
        { name: 'a.example', records: { AAAA: rows('answer', ['::ffff:7f00:601']) } },
        { name: 'a.example', records: { AAAA: rows('timeout', []) } },
        domainChangeRules,
      ),
    ).toEqual([]);
  });
});

describe('gaps of the mail and web lookups (issue 44)', () => {
  it('mail: an MX host whose addresses are unknown, SMTP sessions never held, summaries marked unobserved', () => {
    const mail = mailChangeRules;
    const resolved = {
      name: 'mx2.example',
      preference: 20,
      addresses: ['127.0.6.24'],
      resolution: 'resolved',
      tlsa: 'absent',
      starttls: [{ address: '127.0.6.24', state: 'tls', protocol: 'TLSv1.3' }],
    };
    const unknown = { ...resolved, addresses: [], resolution: 'unknown', starttls: [] };
    expect(changedFields(resolved, unknown, mail)).toEqual([]);
    expect(changedFields(unknown, resolved, mail)).toEqual([]);
    // Observed both times and different: a change, beside the gap.
    expect(changedFields(resolved, { ...unknown, preference: 30 }, mail)).toEqual(['preference']);
    expect(changedFields(resolved, { ...resolved, addresses: ['127.0.6.25'] }, mail)).toEqual(['addresses']);
    // A session that timed out is a gap; one the server answered without STARTTLS is a fact.
    const session = (state: string) => ({ ...resolved, starttls: [{ address: '127.0.6.24', state, protocol: null }] });
    expect(changedFields(resolved, session('connect_timeout'), mail)).toEqual([]);
    expect(changedFields(resolved, session('no_starttls'), mail)).toEqual(['starttls']);
    expect(changedFields(resolved, { ...resolved, tlsa: 'indeterminate' }, mail)).toEqual([]);
    expect(changedFields(resolved, { ...resolved, tlsa: 'present' }, mail)).toEqual(['tlsa']);
    // The posture: an SPF tree that got no answer somewhere, a DMARC summary marked unobserved.
    const posture = {
      domain: 'example',
      spf: { state: 'present', verdict: 'ok', lookups: 3, lookupsLowerBound: false },
      dmarc: { state: 'present', policy: 'reject', recordDomain: 'example' },
      mta_sts: { txt: 'present', id: '1', mode: 'enforce', maxAge: 86400 },
    };
    const blind = {
      ...posture,
      spf: { state: 'present', verdict: 'indeterminate', lookups: 1, lookupsLowerBound: true },
      dmarc: { state: 'absent', policy: null, recordDomain: null, unobserved: true },
      mta_sts: { txt: 'present', id: '1', unobserved: ['mode', 'maxAge'] },
    };
    expect(changedFields(posture, blind, mail)).toEqual([]);
    expect(changedFields(blind, posture, mail)).toEqual([]);
    expect(
      changedFields(posture, { ...blind, mta_sts: { txt: 'present', id: '2', unobserved: ['mode', 'maxAge'] } }, mail),
    ).toEqual(['mta_sts']);
  });

  it("web: a chain that failed for a reason not the target's leaves the posture facts it decides unobserved", () => {
    const chain = (outcome: ChainEvidence['outcome'], failure: Partial<NonNullable<ChainEvidence['failure']>> | null) =>
      ({
        start: 'https://a.example/',
        outcome,
        hops: [],
        verified: null,
        body: null,
        failure: failure && {
          kind: 'failed',
          phase: null,
          code: null,
          reason: null,
          range: null,
          host: null,
          ...failure,
        },
      }) as ChainEvidence;
    expect(chainGap(chain('failed', { kind: 'timeout', phase: 'headers' }))).toBe(true);
    expect(chainGap(chain('failed', { kind: 'dns_failure' }))).toBe(true);
    expect(chainGap(chain('refused', { kind: 'refused', reason: 'target_not_allowed' }))).toBe(true);
    expect(chainGap(chain('failed', { kind: 'connection_failed', code: 'ETIMEDOUT' }))).toBe(true);
    // The target's answers: observations.
    expect(chainGap(chain('failed', { kind: 'connection_failed', code: 'ECONNREFUSED' }))).toBe(false);
    expect(chainGap(chain('failed', { kind: 'connection_failed', code: 'ECONNRESET' }))).toBe(false);
    expect(chainGap(chain('failed', { kind: 'tls_failed' }))).toBe(false);
    expect(chainGap(chain('response', null))).toBe(false);
    const posture = { url: 'https://a.example/', finalUrl: 'https://a.example/', status: 200, grade: 'A', score: 100 };
    const fallback = {
      url: 'https://a.example/',
      finalUrl: 'http://a.example/',
      status: 200,
      grade: 'F',
      score: 0,
      unobserved: ['finalUrl', 'status', 'score', 'grade', 'observatoryWouldGrade'],
    };
    expect(changedFields(posture, fallback, webChangeRules)).toEqual([]);
    expect(changedFields(fallback, posture, webChangeRules)).toEqual([]);
    expect(changedFields(posture, { ...posture, grade: 'B', score: 80 }, webChangeRules)).toEqual(['grade', 'score']);
  });
});

describe("the baseline's side of a gap (issue 44)", () => {
  it('a field only this job holds is compared only where the baseline observed its absence', () => {
    const base = { name: 'recovers.example', inScope: true };
    const cur = { ...base, exists: true, records: {}, wildcard: 'real' };
    expect(addedFields(base, cur, scanChangeRules).sort()).toEqual(['exists', 'records', 'wildcard']);
    expect(changedFields(base, cur, scanChangeRules)).toEqual(['exists', 'records', 'wildcard']);
    expect(changedFields(base, cur, scanChangeRules, false, true)).toEqual([]);
    // What both hold and differs is a change, whatever the baseline's coverage.
    expect(changedFields({ ...base, inScope: false }, cur, scanChangeRules, false, true)).toEqual(['inScope']);
  });

  it("the baseline's lane wrote nothing on the object: its tasks there say why", () => {
    const now = [{ lane: 'dns', status: 'completed' }];
    // Its DNS task got SERVFAIL: indeterminate. Never ran: not rechecked.
    expect(baselineGap([], now, [tally('dns', 'unavailable', true, 'dns_servfail')])).toBe('indeterminate');
    expect(baselineGap([], now, [tally('dns', 'timeout', true)])).toBe('indeterminate');
    expect(baselineGap([], now, [])).toBe('not_rechecked');
    expect(
      baselineGap(
        [{ lane: 'spf', status: 'timeout' }],
        [{ lane: 'spf', status: 'completed' }],
        [tally('spf', 'timeout', true)],
      ),
    ).toBe('indeterminate');
    // It completed (and did not write the object), or the target answered with a refusal: observed.
    expect(baselineGap([], now, [tally('dns', 'completed', true)])).toBeNull();
    expect(
      baselineGap(
        [],
        [{ lane: 'tls', status: 'completed' }],
        [tally('tls', 'unavailable', true, 'connection_refused')],
      ),
    ).toBeNull();
    // A lane that wrote the object partial marked its own gaps: coverage (a :443 refusal, then HTTPS gained).
    expect(baselineGap([{ lane: 'web', status: 'partial' }], [{ lane: 'web', status: 'completed' }], [])).toBeNull();
    // An own completed task counts before a related one.
    expect(
      baselineGap([], now, [tally('dns', 'unavailable', true, 'dns_servfail'), tally('dns', 'completed', false)]),
    ).toBe('indeterminate');
  });
});

const tally = (
  productLane: string,
  status: TaskTally['status'],
  own = false,
  reason: string | null = null,
): TaskTally => ({
  productLane,
  own,
  status,
  reason,
  n: 1,
});

describe('gone only when observed', () => {
  it('a completed check on the object itself observed its absence (a name that answered NXDOMAIN)', () => {
    expect(observeAbsence([tally('dns', 'completed', true), tally('dns', 'partial')], ['dns'], 'related')).toEqual({
      seen: 'absent',
    });
  });

  it('SERVFAIL, timeouts and refusals are indeterminate: never gone', () => {
    expect(observeAbsence([tally('dns', 'unavailable', true, 'dns_servfail')], ['dns'], 'related')).toEqual({
      seen: 'nothing',
      reason: 'indeterminate',
    });
    expect(observeAbsence([tally('dns', 'timeout', true, 'dns_timeout')], ['dns'], 'related')).toMatchObject({
      reason: 'indeterminate',
    });
    expect(reasonOfOutcome('unavailable', 'not_configured')).toBe('lane_unavailable');
    expect(reasonOfOutcome('failed', null)).toBe('lane_unavailable');
    expect(reasonOfOutcome('partial', null)).toBe('lane_partial');
  });

  it('no check ran (budget, cap, cancel, never planned): not rechecked', () => {
    expect(observeAbsence([], ['dns'], 'related')).toEqual({ seen: 'nothing', reason: 'not_rechecked' });
    expect(observeAbsence([tally('dns', 'budget_exhausted', true)], ['dns'], 'related')).toMatchObject({
      reason: 'not_rechecked',
    });
    expect(observeAbsence([tally('web', 'completed', true)], ['dns'], 'related')).toMatchObject({
      reason: 'not_rechecked',
    });
  });

  it('observed through related objects only when every one of their checks completed', () => {
    // An address two names resolved to: one name's DNS timed out, so it may still resolve there.
    expect(observeAbsence([tally('dns', 'completed'), tally('dns', 'timeout')], ['dns'], 'related')).toMatchObject({
      seen: 'nothing',
      reason: 'indeterminate',
    });
    expect(observeAbsence([tally('dns', 'completed'), tally('dns', 'completed')], ['dns'], 'related')).toEqual({
      seen: 'absent',
    });
  });

  it('a lookup (one target): any completed lane that examined it observed it', () => {
    expect(observeAbsence([tally('mx', 'completed'), tally('dane', 'partial')], ['mx', 'dane'], 'job')).toEqual({
      seen: 'absent',
    });
    expect(observeAbsence([tally('dkim', 'partial')], ['dkim'], 'job')).toMatchObject({ reason: 'lane_partial' });
  });

  it('a held object whose lanes did not cover it as before: the reason of the lane that fell short', () => {
    const base = [
      { lane: 'dns', status: 'completed' },
      { lane: 'web', status: 'completed' },
    ];
    expect(coverageGap(base, base)).toEqual({ reasons: [], missing: [] });
    expect(
      coverageGap(base, [
        { lane: 'dns', status: 'completed' },
        { lane: 'web', status: 'partial' },
      ]),
    ).toEqual({
      reasons: ['lane_partial'],
      missing: [],
    });
    expect(coverageGap(base, [{ lane: 'web', status: 'completed' }])).toEqual({ reasons: [], missing: ['dns'] });
    // A lane that was partial in the baseline too is no gap: the same coverage as before.
    expect(coverageGap([{ lane: 'dkim', status: 'partial' }], [{ lane: 'dkim', status: 'partial' }]).reasons).toEqual(
      [],
    );
    expect(missingLaneReason([tally('dns', 'unavailable', true, 'dns_servfail')], ['dns'])).toBe('indeterminate');
    expect(missingLaneReason([], ['dns'])).toBe('not_rechecked');
  });
});

describe("a finding raised by one part of a composed task (a scan's mail task)", () => {
  // A deep scan's mail task: DKIM selectors can only be probed, so the task is at best partial;
  // each of its lanes kept its own outcome.
  const mailTask = (dmarc: string, reason?: string, own = true): PartedTask => ({
    productLane: 'mail',
    own,
    status: 'partial',
    reason: null,
    parts: [
      { lane: 'mx', status: 'completed' },
      { lane: 'spf', status: 'completed' },
      { lane: 'dmarc', status: dmarc, ...(reason ? { reason } : {}) },
      { lane: 'dkim', status: 'partial' },
    ],
  });
  const observePart = (tasks: PartedTask[], part: string) =>
    observeAbsence(
      tasks.map((t) => partTally(t, part)),
      ['mail'],
      'related',
    );

  it("is observed gone when that part completed on its subject, whatever the task's other parts did", () => {
    // The task as a whole: partial, so a DMARC finding that disappeared could never be resolved.
    expect(observeAbsence([tally('mail', 'partial', true)], ['mail'], 'related')).toEqual({
      seen: 'nothing',
      reason: 'lane_partial',
    });
    expect(observePart([mailTask('completed')], 'dmarc')).toEqual({ seen: 'absent' });
    expect(observePart([mailTask('completed')], 'dkim')).toEqual({ seen: 'nothing', reason: 'lane_partial' });
  });

  it('stays unconfirmed with the reason of that part when it did not complete', () => {
    expect(observePart([mailTask('partial')], 'dmarc')).toEqual({ seen: 'nothing', reason: 'lane_partial' });
    expect(observePart([mailTask('timeout')], 'dmarc')).toEqual({ seen: 'nothing', reason: 'indeterminate' });
    expect(observePart([mailTask('unavailable', 'dns_servfail')], 'dmarc')).toEqual({
      seen: 'nothing',
      reason: 'indeterminate',
    });
    expect(observePart([mailTask('unavailable', 'not_configured')], 'dmarc')).toMatchObject({
      reason: 'lane_unavailable',
    });
    // Through related names only (an MX host's finding, observed by its domains' mail tasks): all
    // of them must have completed that part.
    expect(
      observePart([mailTask('completed', undefined, false), mailTask('timeout', undefined, false)], 'dmarc'),
    ).toEqual({ seen: 'nothing', reason: 'indeterminate' });
    expect(
      observePart([mailTask('completed', undefined, false), mailTask('completed', undefined, false)], 'dmarc'),
    ).toEqual({ seen: 'absent' });
  });

  it('a part the task did not run, a task that kept no parts or did not finish: never more than the task', () => {
    expect(partTally(mailTask('completed'), 'bimi')).toMatchObject({ status: 'skipped' });
    expect(observePart([mailTask('completed')], 'bimi')).toEqual({ seen: 'nothing', reason: 'not_rechecked' });
    const bare: PartedTask = { productLane: 'mail', own: true, status: 'partial', reason: null, parts: null };
    expect(partTally(bare, 'dmarc')).toEqual({ productLane: 'mail', own: true, status: 'partial', reason: null, n: 1 });
    const timedOut: PartedTask = { ...mailTask('completed'), status: 'timeout', reason: 'check_timeout' };
    expect(observePart([timedOut], 'dmarc')).toEqual({ seen: 'nothing', reason: 'indeterminate' });
    const cancelled: PartedTask = { ...mailTask('completed'), status: 'cancelled' };
    expect(observePart([cancelled], 'dmarc')).toEqual({ seen: 'nothing', reason: 'not_rechecked' });
    expect(partTally({ ...mailTask('completed'), parts: [{ lane: 'dmarc', status: 'bogus' }] }, 'dmarc').status).toBe(
      'skipped',
    );
  });
});

describe('the merge of two sorted streams, a chunk at a time', () => {
  const h = (s: string) => createHash('sha256').update(s).digest();
  const sorted = (keys: string[]) =>
    [...new Set(keys)].map((k) => ({ k, hash: h(k) })).sort((a, b) => Buffer.compare(a.hash, b.hash));

  it('every identity of either side exactly once, paired when both have it, whatever the chunk size', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ maxLength: 4 }), { maxLength: 60 }),
        fc.array(fc.string({ maxLength: 4 }), { maxLength: 60 }),
        fc.integer({ min: 1, max: 9 }),
        (a, b, limit) => {
          const base = sorted(a);
          const cur = sorted(b);
          const seen: string[] = [];
          let after: Buffer | null = null;
          for (let guard = 0; guard < 1000; guard++) {
            const page = <T extends { hash: Buffer }>(list: T[]) =>
              list.filter((o) => after === null || Buffer.compare(o.hash, after) > 0).slice(0, limit);
            const { pairs, boundary } = mergePages(page(base), page(cur), limit);
            for (const p of pairs) {
              if (p.base && p.cur) expect(p.base.k).toBe(p.cur.k);
              seen.push(`${p.base ? 'b' : '-'}${p.cur ? 'c' : '-'}${(p.base ?? p.cur)!.k}`);
            }
            if (boundary === null) break;
            after = boundary;
          }
          const expected = sorted([...a, ...b]).map(
            (o) => `${base.some((x) => x.k === o.k) ? 'b' : '-'}${cur.some((x) => x.k === o.k) ? 'c' : '-'}${o.k}`,
          );
          expect(seen).toEqual(expected);
        },
      ),
      { numRuns: 300, seed: 28 },
    );
  });
});

describe('storage codes', () => {
  it('a (group, seq) position packs into the cursor and back', () => {
    for (const p of [
      { grp: 0, seq: 0 },
      { grp: 13, seq: 16_777_215 },
      { grp: 8, seq: 42 },
    ])
      expect(unpackPosition(packPosition(p))).toEqual(p);
    expect(() => packPosition({ grp: 1, seq: 2 ** 24 })).toThrow();
  });

  it('groups order objects before findings, each mark in the documented order', () => {
    expect(groupOf('object', 'new')).toBeLessThan(groupOf('object', 'gone'));
    expect(groupOf('object', 'unchanged')).toBeLessThan(groupOf('finding', 'new'));
    expect(kindOfGroup(groupOf('finding', 'resolved'))).toBe('finding');
    expect(markOfGroup(groupOf('finding', 'resolved'))).toBe('resolved');
  });
});

describe("products' rules", () => {
  it('the scan observes a URL and its web posture on their host, an address through the names that resolved to it', () => {
    expect(scanChangeRules.subjectsOf!({ type: 'web_posture', key: 'https://a.example.com/' })).toEqual([
      'a.example.com',
    ]);
    expect(scanChangeRules.subjectsOf!({ type: 'service', key: 'a.example.com:443/tcp' })).toEqual(['a.example.com']);
    expect(scanChangeRules.observedBy!('ip_address')).toEqual(['dns']);
    expect(scanChangeRules.absent!('host', { exists: false })).toBe(true);
    expect(scanChangeRules.absent!('host', { exists: true })).toBe(false);
    expect(scanChangeRules.absent!('url', { exists: false })).toBe(false);
    // Of the dns lane, only a name's own DNS task observes it: a level's wildcard probe, keyed by
    // the same name, asks random names under it (issue 44, item 1).
    expect(scanChangeRules.observingChecks!('dns')).toEqual(['scan.dns']);
    expect(scanChangeRules.observingChecks!('web')).toBeUndefined();
    // An address: by the address part of those tasks.
    expect(scanChangeRules.partOf!('ip_address')).toBe('addresses');
    expect(scanChangeRules.partOf!('host')).toBeUndefined();
  });

  it('every product names a versioned fingerprint, leaves the clock out, and docs/findings.md says so', () => {
    const md = readFileSync(new URL('../../docs/findings.md', import.meta.url), 'utf8');
    const section = md.slice(md.indexOf('## Change fingerprints'));
    for (const r of [scanChangeRules, webChangeRules, mailChangeRules, domainChangeRules]) {
      expect(r.fingerprint).toMatch(/^[a-z]+\.[a-z]+\.v1\/\d+$/);
      expect(r.volatile).toContain('daysToExpiry');
      // The registration's count of days to its expiry moves every day.
      expect(r.volatile).toContain('daysUntilExpiration');
      const product = r.fingerprint.split('/')[0]!;
      const entry = section.slice(section.indexOf(`**${product}**`)).split('\n- **')[0]!;
      expect(entry, product).toContain(`fingerprint \`${r.fingerprint}\``);
      for (const v of r.volatile) expect(entry, `${product} ${v}`).toContain(`\`${v}\``);
    }
  });
});
