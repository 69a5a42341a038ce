// The scan's precision rules, without the network: wildcard decisions on answer sets (including
// rotating "pattern" answers and indeterminate replies), takeover fingerprints (suffix AND body,
// label boundaries, service names never, edge-case providers), and scope per the public suffix list.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  aliasTargetMatch,
  answerSet,
  classifyProbe,
  classifyType,
  matchWildcard,
  WILDCARD_TYPES,
  type WildcardType,
} from '../../src/products/scan/rules/wildcard.ts';
import { fingerprintMatch, providerFor, takeoverProviders } from '../../src/products/scan/rules/takeover.ts';
import {
  activeScopeOf,
  inApprovedScope,
  isHostName,
  isServiceName,
  parentLevel,
  registrableOf,
  scopeOf,
} from '../../src/products/scan/rules/names.ts';
import type { ApprovedScope } from '../../src/auth/approved-scopes.ts';
import type { QueryOutcome, QueryResult, RecordType } from '../../src/dns/types.ts';

const flags = { aa: true, ad: false, tc: false, ra: true };
function reply(
  name: string,
  type: RecordType,
  outcome: QueryOutcome,
  answers: Array<{ type: string; data: unknown }> = [],
): QueryResult {
  return {
    name,
    type,
    outcome,
    rcode: outcome === 'nxdomain' ? 'NXDOMAIN' : outcome === 'servfail' ? 'SERVFAIL' : 'NOERROR',
    answers: answers.map((a) => ({ name, ttl: 60, ...a })),
    flags,
    transport: 'udp',
    durationMs: 1,
  };
}
const a = (name: string, ip: string) => reply(name, 'A', 'answer', [{ type: 'A', data: ip }]);
const nx = (name: string, type: RecordType) => reply(name, type, 'nxdomain');
const nodata = (name: string, type: RecordType) => reply(name, type, 'nodata');

/** Probe results: for each type, K labels answered by `answer(type, k)`. */
function probe(level: string, answer: (type: WildcardType, k: number) => QueryResult) {
  return classifyProbe(
    level,
    Object.fromEntries(WILDCARD_TYPES.map((t) => [t, [0, 1, 2].map((k) => answer(t, k))])) as Record<
      WildcardType,
      QueryResult[]
    >,
  );
}
/** A name's own answers, one per type. */
function own(answer: (type: WildcardType) => QueryResult) {
  return Object.fromEntries(WILDCARD_TYPES.map((t) => [t, answer(t)])) as Record<WildcardType, QueryResult>;
}

describe('wildcard DNS on answer sets', () => {
  const classic = probe('w.test', (t, k) => (t === 'A' ? a(`r${k}.w.test`, '127.0.0.9') : nodata(`r${k}.w.test`, t)));

  /** The replies of an alias `cdn.w.test` whose CNAME chain is `chain`, ending with `end` records of each type. */
  const alias = (chain: string[], end: Partial<Record<WildcardType, { type: string; data: unknown }>>) =>
    own((t) => {
      const links = chain.slice(0, -1).map((from, i) => ({ name: from, ttl: 60, type: 'CNAME', data: chain[i + 1] }));
      if (t === 'CNAME') return reply(chain[0]!, 'CNAME', 'answer', [{ type: 'CNAME', data: chain[1] }]);
      const last = end[t] ? [{ name: chain.at(-1)!, ttl: 60, ...end[t]! }] : [];
      return { ...reply(chain[0]!, t, 'answer'), answers: [...links, ...last] };
    });

  it("an alias's CNAME target is judged from the alias's own replies (issue 30 item 10)", () => {
    const wildcardAddress = { type: 'A', data: '127.0.0.9' };
    // The target answers only what the wildcard answers: it collapses.
    expect(aliasTargetMatch(classic, 'c-1.w.test', alias(['cdn.w.test', 'c-1.w.test'], { A: wildcardAddress }))).toBe(
      'match',
    );
    // Its own data: a real host.
    expect(
      aliasTargetMatch(
        classic,
        'c-1.w.test',
        alias(['cdn.w.test', 'c-1.w.test'], { A: { type: 'A', data: '127.0.0.10' } }),
      ),
    ).toBe('real');
    // A target that is itself an alias (its CNAME is not the wildcard's answer): real.
    expect(
      aliasTargetMatch(
        classic,
        'c-1.w.test',
        alias(['cdn.w.test', 'c-1.w.test', 'end.other.test'], { A: wildcardAddress }),
      ),
    ).toBe('real');
    // Another level than the probe's, or a chain that does not pass through it: nothing is said.
    expect(
      aliasTargetMatch(classic, 'c-1.x.w.test', alias(['cdn.w.test', 'c-1.x.w.test'], { A: wildcardAddress })),
    ).toBe('unknown');
    expect(aliasTargetMatch(classic, 'c-2.w.test', alias(['cdn.w.test', 'c-1.w.test'], { A: wildcardAddress }))).toBe(
      'unknown',
    );
    // An indeterminate reply of the alias leaves the target unknown.
    const broken = alias(['cdn.w.test', 'c-1.w.test'], { A: wildcardAddress });
    broken.MX = reply('cdn.w.test', 'MX', 'servfail');
    expect(aliasTargetMatch(classic, 'c-1.w.test', broken)).toBe('unknown');
    expect(aliasTargetMatch(null, 'c-1.w.test', alias(['cdn.w.test', 'c-1.w.test'], { A: wildcardAddress }))).toBe(
      'unknown',
    );
  });

  it('no wildcard: every random label NXDOMAIN; every name under it is real', () => {
    const none = probe('n.test', (t, k) => nx(`r${k}.n.test`, t));
    expect(none.state).toBe('none');
    expect(
      matchWildcard(
        none,
        own((t) => nodata('x.n.test', t)),
      ),
    ).toBe('real');
  });

  it('a classic wildcard: same A for every label, the other types exist without data', () => {
    expect(classic.state).toBe('wildcard');
    expect(classic.types.A).toEqual({ state: 'wildcard', answers: ['A "127.0.0.9"'] });
    expect(classic.types.MX.state).toBe('nodata');
  });

  it('a name whose every type matches collapses; different data, or data where the wildcard has none, is a real host', () => {
    expect(
      matchWildcard(
        classic,
        own((t) => (t === 'A' ? a('ghost.w.test', '127.0.0.9') : nodata('ghost.w.test', t))),
      ),
    ).toBe('match');
    expect(
      matchWildcard(
        classic,
        own((t) => (t === 'A' ? a('real.w.test', '127.0.0.10') : nodata('real.w.test', t))),
      ),
    ).toBe('real');
    expect(
      matchWildcard(
        classic,
        own((t) =>
          t === 'A'
            ? a('mx.w.test', '127.0.0.9')
            : t === 'MX'
              ? reply('mx.w.test', 'MX', 'answer', [{ type: 'MX', data: { preference: 10, exchange: 'm.w.test' } }])
              : nodata('mx.w.test', t),
        ),
      ),
    ).toBe('real');
  });

  it("a CNAME-only wildcard compares the chain's targets, not only the final address", () => {
    const viaCname = (name: string, target: string, ip: string) =>
      reply(name, 'A', 'answer', [
        { type: 'CNAME', data: `${target}.` },
        { type: 'A', data: ip },
      ]);
    const cnw = probe('cnw.test', (t, k) =>
      t === 'A' ? viaCname(`r${k}.cnw.test`, 'target.cnw.test', '127.0.0.5') : nodata(`r${k}.cnw.test`, t),
    );
    expect(cnw.state).toBe('wildcard');
    expect(cnw.types.A.answers).toContain('CNAME target.cnw.test');
    // Same address through another alias: a real name, not the wildcard.
    expect(
      matchWildcard(
        cnw,
        own((t) => (t === 'A' ? viaCname('x.cnw.test', 'other.cnw.test', '127.0.0.5') : nodata('x.cnw.test', t))),
      ),
    ).toBe('real');
    expect(
      matchWildcard(
        cnw,
        own((t) => (t === 'A' ? viaCname('y.cnw.test', 'target.cnw.test', '127.0.0.5') : nodata('y.cnw.test', t))),
      ),
    ).toBe('match');
  });

  it('a pattern wildcard (different data per label) is "possible", and names under it are possible, never collapsed', () => {
    const pat = probe('pat.test', (t, k) =>
      t === 'A' ? a(`r${k}.pat.test`, `127.0.3.${10 + k}`) : nodata(`r${k}.pat.test`, t),
    );
    expect(pat.state).toBe('possible');
    expect(
      matchWildcard(
        pat,
        own((t) => (t === 'A' ? a('y.pat.test', '127.0.3.77') : nodata('y.pat.test', t))),
      ),
    ).toBe('possible');
  });

  it('some labels answering and some NXDOMAIN is possible, not a wildcard', () => {
    expect(classifyType([a('r0.m.test', '127.0.0.1'), nx('r1.m.test', 'A'), a('r2.m.test', '127.0.0.1')]).state).toBe(
      'possible',
    );
  });

  it('an indeterminate probe (SERVFAIL, timeout) says nothing: unknown, and the name is unknown too', () => {
    const broken = probe('b.test', (t, k) => (k === 1 ? reply(`r${k}.b.test`, t, 'servfail') : nx(`r${k}.b.test`, t)));
    expect(broken.state).toBe('unknown');
    expect(
      matchWildcard(
        broken,
        own((t) => nodata('x.b.test', t)),
      ),
    ).toBe('unknown');
    // And a name's own indeterminate answer under a real wildcard is unknown, not a match.
    expect(
      matchWildcard(
        classic,
        own((t) => reply('x.w.test', t, 'timeout')),
      ),
    ).toBe('unknown');
  });

  it('answer sets ignore order and case (generative)', () => {
    fc.assert(
      fc.property(fc.array(fc.ipV4(), { minLength: 1, maxLength: 6 }), (ips) => {
        const r1 = reply(
          'x.test',
          'A',
          'answer',
          ips.map((ip) => ({ type: 'A', data: ip })),
        );
        const r2 = reply(
          'x.test',
          'A',
          'answer',
          [...ips].reverse().map((ip) => ({ type: 'A', data: ip })),
        );
        expect(answerSet(r1)).toEqual(answerSet(r2));
      }),
      { seed: 7, numRuns: 200 },
    );
  });
});

describe('takeover fingerprints: suffix and body, precisely', () => {
  const gh = takeoverProviders.find((p) => p.name === 'GitHub Pages')!;

  it("needs both the provider suffix (on a label boundary) and the provider's unclaimed-name body", () => {
    expect(fingerprintMatch('blog.example.test', ['lss-lab.github.io'], `<p>${gh.fingerprints[0]}</p>`)?.name).toBe(
      'GitHub Pages',
    );
    expect(fingerprintMatch('blog.example.test', ['lss-lab.github.io'], '<p>Welcome</p>')).toBeNull();
    expect(fingerprintMatch('blog.example.test', ['lss-lab.evilgithub.io'], gh.fingerprints[0]!)).toBeNull();
    expect(fingerprintMatch('blog.example.test', ['cdn.example.test'], gh.fingerprints[0]!)).toBeNull();
    expect(fingerprintMatch('blog.example.test', ['lss-lab.github.io'], null)).toBeNull();
  });

  it('service and policy names never raise a takeover', () => {
    for (const name of [
      '_sip._tcp.example.test',
      '_dmarc.example.test',
      's1._domainkey.example.test',
      '_mta-sts.example.test',
    ]) {
      expect(fingerprintMatch(name, ['lss-lab.github.io'], gh.fingerprints[0]!)).toBeNull();
    }
  });

  it('edge-case providers are marked so (at most low / tentative)', () => {
    expect(providerFor('app.herokuapp.com')?.edgeCase).toBe(true);
    expect(providerFor('x.github.io')?.edgeCase).toBe(false);
    expect(providerFor('github.io.example.test')).toBeNull();
  });
});

describe('names and scope', () => {
  it('scope is the registrable domain (public suffix list)', () => {
    const s = scopeOf('www.shop.example.co.uk');
    expect(s.registrable).toBe('example.co.uk');
    expect(s.inScope('api.example.co.uk')).toBe(true);
    expect(s.inScope('example.co.uk.')).toBe(true);
    expect(s.inScope('notexample.co.uk')).toBe(false);
    expect(s.inScope('co.uk')).toBe(false);
    expect(registrableOf('co.uk')).toBeNull();
  });

  it('scope follows the private section too: another owner under the same private suffix is a third party', () => {
    const s = scopeOf('alice.github.io');
    expect(s.registrable).toBe('alice.github.io');
    expect(s.inScope('www.alice.github.io')).toBe(true);
    expect(s.inScope('bob.github.io')).toBe(false);
    expect(s.inScope('github.io')).toBe(false);
    expect(scopeOf('shop.alice.github.io').registrable).toBe('alice.github.io');
    expect(scopeOf('bucket.s3.amazonaws.com').registrable).toBe('bucket.s3.amazonaws.com');
    // Public suffixes of either section have no registrable domain.
    for (const suffix of ['github.io', 's3.amazonaws.com', 'herokuapp.com', 'blogspot.com', 'co.uk', 'com'])
      expect(registrableOf(suffix), suffix).toBeNull();
  });

  it('the approved scope that holds active work: the widest covering the target that approves names', () => {
    const op = (...domains: string[]): ApprovedScope[] =>
      domains.map((domain) => ({ domain, proof: 'operator_override', token: null }));
    const scope = (target: string, approved: ApprovedScope[]) => activeScopeOf(target, approved)?.domain ?? null;
    expect(scope('shop.example.com', op('shop.example.com'))).toBe('shop.example.com');
    expect(scope('api.shop.example.com', op('shop.example.com'))).toBe('shop.example.com');
    expect(scope('shop.example.com', op('shop.example.com', 'example.com'))).toBe('example.com');
    expect(scope('shop.example.com', op('blog.example.com', 'other.test'))).toBeNull();
    expect(scope('example.com', op('shop.example.com'))).toBeNull();
    expect(scope('example.com', [])).toBeNull();
    // Issue 30: rows stored before the CLI refused them approve nothing here either, as in
    // inApprovedScope. Before, `com` beside shop.example.com made the active scope example.com
    // (the widest row, clamped to the registrable domain), and `github.io` approved alice.github.io.
    expect(scope('shop.example.com', op('com', 'shop.example.com'))).toBe('shop.example.com');
    expect(scope('alice.github.io', op('github.io'))).toBeNull();
    expect(scope('10.0.0.1', op('0.1'))).toBeNull();
    expect(scope('shop.-foo.com', op('-foo.com'))).toBeNull();
  });

  it('a numeric suffix approves no address literal; an address is never in an approved scope (issue 30)', () => {
    expect(inApprovedScope('10.0.0.1', ['0.1'])).toBe(false);
    expect(inApprovedScope('8.8.8.8', ['8.8'])).toBe(false);
    expect(inApprovedScope('[2001:db8::1]', ['db8::1'])).toBe(false);
    expect(inApprovedScope('x.-foo.com', ['-foo.com'])).toBe(false);
  });

  it("wildcard levels stop at the name's parent; service labels are recognised anywhere", () => {
    expect(parentLevel('a.b.example.test')).toBe('b.example.test');
    expect(parentLevel('test')).toBe('');
    expect(isServiceName('_xmpp-server._tcp.example.test')).toBe(true);
    expect(isServiceName('www.example.test')).toBe(false);
  });

  it('host names: lengths, labels, never an address', () => {
    expect(isHostName('a.example.test')).toBe(true);
    expect(isHostName(`${'a'.repeat(64)}.test`)).toBe(false);
    expect(isHostName(`${'a.'.repeat(127)}test`)).toBe(false);
    expect(isHostName('127.0.0.1')).toBe(false);
    expect(isHostName('-bad.test')).toBe(false);
    expect(isHostName('::1')).toBe(false);
  });

  it('approved scopes cover the suffix and below, on a label boundary', () => {
    expect(inApprovedScope('api.example.test', ['example.test'])).toBe(true);
    expect(inApprovedScope('example.test', ['example.test'])).toBe(true);
    expect(inApprovedScope('badexample.test', ['example.test'])).toBe(false);
    expect(inApprovedScope('api.example.test', [])).toBe(false);
  });

  it('a public suffix stored as an approved scope (before the CLI refused them) approves nothing', () => {
    expect(inApprovedScope('bob.github.io', ['github.io'])).toBe(false);
    expect(inApprovedScope('shop.example.co.uk', ['co.uk'])).toBe(false);
    expect(inApprovedScope('bob.github.io', ['github.io', 'bob.github.io'])).toBe(true);
  });
});
