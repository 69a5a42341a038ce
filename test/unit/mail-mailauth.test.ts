// mailauth behind our resolver adapter: only an authoritative NXDOMAIN/NODATA may ever read as
// "no record" (mailauth issues #34/#49 came from resolvers that said ENOTFOUND for failures).
// mailauth runs in the parse pool on the answers a check gathered, so these feed it the same
// kind of snapshot the checks produce, one per DNS outcome; and the pool tasks are run through
// a real piscina pool to prove they are registered there.
import { afterAll, describe, expect, it } from 'vitest';
import type { QueryOutcome, QueryResult, RecordType } from '../../src/dns/types.ts';
import { mailauthErrorCode, mailauthResolver } from '../../src/products/mail/mailauth-resolver.ts';
import { evaluateDmarc } from '../../src/products/mail/dmarc-policy.ts';
import { parseMtaStsTxt } from '../../src/products/mail/mta-sts-policy.ts';
import { snapshotKey, type DnsSnapshot } from '../../src/products/mail/dns-snapshot.ts';
import { createParsePool } from '../../workers/pool/parse-pool.ts';
import { loadLabCa } from '../lab/ca.ts';

const RCODE: Record<QueryOutcome, string | null> = {
  answer: 'NOERROR',
  nodata: 'NOERROR',
  nxdomain: 'NXDOMAIN',
  servfail: 'SERVFAIL',
  refused: 'REFUSED',
  formerr: 'FORMERR',
  notimp: 'NOTIMP',
  timeout: null,
  error: null,
  left_public_dns: 'NOERROR',
};

function reply(name: string, type: RecordType, outcome: QueryOutcome, txt: string[] = []): QueryResult {
  return {
    name,
    type,
    outcome,
    rcode: RCODE[outcome],
    answers: txt.map((t) => ({ name, type, ttl: 60, data: [t] })),
    flags: { aa: false, ad: false, tc: false, ra: true },
    transport: outcome === 'timeout' || outcome === 'error' ? null : 'udp',
    durationMs: 1,
  };
}

const snap = (...rs: QueryResult[]): DnsSnapshot => Object.fromEntries(rs.map((r) => [snapshotKey(r.name, r.type), r]));
const FAILURES: QueryOutcome[] = ['servfail', 'refused', 'formerr', 'notimp', 'timeout', 'error', 'left_public_dns'];

describe('the mailauth resolver adapter', () => {
  it('raises ENOTFOUND/ENODATA only for NXDOMAIN/NODATA, other codes for every failure', async () => {
    expect(mailauthErrorCode(reply('x.test', 'TXT', 'nxdomain'))).toBe('ENOTFOUND');
    expect(mailauthErrorCode(reply('x.test', 'TXT', 'nodata'))).toBe('ENODATA');
    const codes = FAILURES.map((o) => mailauthErrorCode(reply('x.test', 'TXT', o)));
    expect(codes).toEqual(['ESERVFAIL', 'EREFUSED', 'EFORMERR', 'ENOTIMP', 'ETIMEOUT', 'EBADRESP', 'EBADRESP']);
    const resolve = mailauthResolver(() => reply('x.test', 'TXT', 'answer', ['v=spf1 -all']));
    expect(await resolve('x.test', 'TXT')).toEqual([['v=spf1 -all']]);
  });

  it('MTA-STS: a failed TXT query is unknown, never "no policy"', async () => {
    for (const o of FAILURES) {
      const r = await parseMtaStsTxt({ domain: 'x.test', snapshot: snap(reply('_mta-sts.x.test', 'TXT', o)) });
      expect(r.state, o).toBe('unknown');
    }
    expect(
      (await parseMtaStsTxt({ domain: 'x.test', snapshot: snap(reply('_mta-sts.x.test', 'TXT', 'nxdomain')) })).state,
    ).toBe('absent');
    expect(
      await parseMtaStsTxt({
        domain: 'x.test',
        snapshot: snap(reply('_mta-sts.x.test', 'TXT', 'answer', ['v=STSv1; id=abc'])),
      }),
    ).toEqual({ state: 'present', id: 'abc', strict: true, error: null });
  });

  it('DMARC: a failed tree walk is unknown, never "no DMARC"; a record with a failed walk above it still applies', async () => {
    for (const o of FAILURES) {
      const ev = await evaluateDmarc({ domain: 'a.x.test', snapshot: snap(reply('_dmarc.a.x.test', 'TXT', o)) });
      expect(ev.state, o).toBe('unknown');
    }
    const absent = await evaluateDmarc({
      domain: 'a.x.test',
      snapshot: snap(
        reply('_dmarc.a.x.test', 'TXT', 'nxdomain'),
        reply('_dmarc.x.test', 'TXT', 'nodata'),
        reply('_dmarc.test', 'TXT', 'nxdomain'),
      ),
    });
    expect(absent.state).toBe('absent');
    // The walk's upper name failed: the policy still comes from x.test's own record below it.
    const inherited = await evaluateDmarc({
      domain: 'a.x.test',
      snapshot: snap(
        reply('_dmarc.a.x.test', 'TXT', 'nxdomain'),
        reply('_dmarc.x.test', 'TXT', 'answer', ['v=DMARC1; p=quarantine; sp=reject']),
        reply('_dmarc.test', 'TXT', 'servfail'),
      ),
    });
    expect(inherited.state).toBe('unknown'); // mailauth cannot tell the organisational domain without the full walk
    const own = await evaluateDmarc({
      domain: 'x.test',
      snapshot: snap(
        reply('_dmarc.x.test', 'TXT', 'answer', ['v=DMARC1; p=quarantine; sp=reject; np=reject']),
        reply('_dmarc.test', 'TXT', 'servfail'),
      ),
    });
    expect(own).toMatchObject({
      state: 'present',
      policy: { domain: 'quarantine', subdomains: 'reject', nonExistentSubdomains: 'reject' },
      organisationalDomain: null,
      error: 'ESERVFAIL',
    });
  });
});

describe('the mail pool tasks in a real piscina pool', () => {
  const pool = createParsePool(1);
  afterAll(() => pool.destroy());

  it('runs the SPF evaluator and the certificate chain parser in a worker thread', async () => {
    const step = await pool.run<{ evaluation: { verdict: string; lookups: number }; missing: unknown[] }>(
      'mailSpfEvaluate',
      {
        domain: 'x.test',
        snapshot: snap(reply('x.test', 'TXT', 'answer', ['v=spf1 ip4:127.0.0.1 include:y.test -all'])),
      },
    );
    expect(step.missing).toEqual([{ name: 'y.test', type: 'TXT' }]);
    expect(step.evaluation).toMatchObject({ verdict: 'indeterminate', lookups: 1 });
    const cert = await (await loadLabCa()).issue({ names: ['mx.x.test'] });
    const facts = await pool.run<{
      leaf: { sans: string[]; expired: boolean };
      digests: Array<{ spkiSha256: string }>;
    }>('mailCertificateChain', {
      chain: [cert.certDer.toString('base64')],
      now: new Date().toISOString(),
    });
    expect(facts.leaf).toMatchObject({ sans: ['mx.x.test'], expired: false });
    const { createHash } = await import('node:crypto');
    expect(facts.digests[0]!.spkiSha256).toBe(createHash('sha256').update(cert.spkiDer).digest('hex'));
  });
});
