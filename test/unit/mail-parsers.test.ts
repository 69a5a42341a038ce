// Our linear MTA-STS and BIMI parsers (issue 18) read records exactly as mailauth's did: fast-check
// builds small records and policies from the pieces that matter (versions in both cases, blanks
// around delimiters, repeated fields, bad ids and patterns, CRLF) and both readings must agree.
// Small inputs only: mailauth's versions are the quadratic ones (docs/products/mail.md).
import fc from 'fast-check';
import mtaSts from 'mailauth/lib/mta-sts.js';
import dkimTags from 'mailauth/lib/parse-dkim-headers.js';
import { describe, expect, it } from 'vitest';
import type { QueryResult } from '../../src/dns/types.ts';
import { bimiTags } from '../../src/products/mail/bimi-check.ts';
import { snapshotKey } from '../../src/products/mail/dns-snapshot.ts';
import { parseMtaStsPolicy, parseMtaStsTxt, type MtaStsTxt } from '../../src/products/mail/mta-sts-policy.ts';

const DOMAIN = 'x.test';
const NAME = `_mta-sts.${DOMAIN}`;

function reply(records: string[]): QueryResult {
  return {
    name: NAME,
    type: 'TXT',
    outcome: records.length ? 'answer' : 'nodata',
    rcode: 'NOERROR',
    answers: records.map((r) => ({ name: NAME, type: 'TXT', ttl: 60, data: [r] })),
    flags: { aa: true, ad: false, tc: false, ra: true },
    transport: 'udp',
    durationMs: 1,
  };
}

/** What parseMtaStsTxt answered before issue 18: mailauth's resolvePolicy, lax then strict. */
async function mailauthTxt(records: string[]): Promise<MtaStsTxt> {
  const resolver = async () => {
    if (records.length === 0) throw Object.assign(new Error('nodata'), { code: 'ENODATA' });
    return records.map((r) => [r]);
  };
  try {
    const id = await mtaSts.resolvePolicy(DOMAIN, { resolver, strict: false });
    if (!id) {
      const tagged = records.some((r) => /^v=STSv1/i.test(r.trim()));
      return { state: tagged ? 'invalid' : 'absent', id: null, strict: false, error: tagged ? 'no valid id' : null };
    }
    const strictId = await mtaSts.resolvePolicy(DOMAIN, { resolver, strict: true }).catch(() => false);
    return { state: 'present', id: String(id), strict: strictId === id, error: null };
  } catch (err) {
    const code = (err as { code?: string }).code ?? 'error';
    return code === 'multi_sts_records'
      ? { state: 'multiple', id: null, strict: false, error: code }
      : { state: 'unknown', id: null, strict: false, error: code };
  }
}

/** What parseMtaStsPolicy answered before issue 18: mailauth's parsePolicy, strict then lax. */
function mailauthPolicy(body: string, hosts: string[]) {
  let policy: { mode: string; version: string; maxAge: number; mx?: string[] };
  let lax = false;
  try {
    policy = mtaSts.parsePolicy(body, { strict: true }) as typeof policy;
  } catch {
    try {
      policy = mtaSts.parsePolicy(body, { strict: false }) as typeof policy;
      lax = true;
    } catch (err) {
      return { policy: null, error: (err as { code?: string }).code ?? 'invalid_policy', lax: false, coverage: [] };
    }
  }
  const coverage = hosts.map((host) => {
    const v = mtaSts.validateMx(host, policy as never) as { valid: boolean; match?: string };
    return { host, covered: v.valid, match: v.match ?? null };
  });
  return {
    policy: { version: policy.version, mode: policy.mode, maxAge: policy.maxAge, mx: policy.mx ?? [] },
    error: null,
    lax,
    coverage,
  };
}

const piece = (xs: string[]) => fc.constantFrom(...xs);
const TXT_PIECES = [
  'v=STSv1',
  'V=stsv1',
  ';',
  '; ',
  ' ;',
  '\t',
  ' ',
  'id=',
  'id=abc123',
  'id=a-b',
  'ext=x',
  'x',
  '=',
  'ID=9',
];
const POLICY_LINES = [
  'version: STSv1',
  'Version: STSv1',
  'version:STSv1 ',
  'version: stsv1',
  'mode: enforce',
  'mode: Testing',
  'mode: none',
  ' mode: enforce',
  'max_age: 86400',
  'max_age: 1e5',
  'max_age:  604800 ',
  'max_age: 99999999999',
  'max_age:',
  'mx: mx.x.test',
  'mx: *.x.test',
  'mx: -bad-.x.test',
  'mx: MX.X.TEST',
  'mx:mx2.x.test',
  'mx: mx.x.test.',
  'MX: a.x.test',
  'foo: bar',
  'no colon here',
];

describe('our MTA-STS and BIMI parsers read as mailauth did', () => {
  it('MTA-STS TXT records', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.array(piece(TXT_PIECES), { maxLength: 8 }).map((p) => p.join('')),
          { maxLength: 2 },
        ),
        async (records) => {
          const ours = parseMtaStsTxt({ domain: DOMAIN, snapshot: { [snapshotKey(NAME, 'TXT')]: reply(records) } });
          expect(ours).toEqual(await mailauthTxt(records));
        },
      ),
      { numRuns: 400 },
    );
  });

  it('MTA-STS policies', () => {
    fc.assert(
      fc.property(fc.array(piece(POLICY_LINES), { maxLength: 8 }), fc.constantFrom('\n', '\r\n'), (lines, eol) => {
        const body = lines.join(eol);
        const hosts = ['mx.x.test', 'mx2.x.test', 'a.x.test'];
        expect(parseMtaStsPolicy({ body, hosts })).toEqual(mailauthPolicy(body, hosts));
      }),
      { numRuns: 600 },
    );
  });

  it('BIMI tag-lists', () => {
    const old = (record: string) => {
      const tags: Record<string, string> = {};
      for (const t of dkimTags.parseTagList(record).tags)
        if (t.name.trim()) tags[t.name.trim().toLowerCase()] = String(t.value ?? '').trim();
      return { l: tags.l ?? null, a: tags.a || null };
    };
    fc.assert(
      fc.property(
        fc.array(piece(['v=BIMI1', ';', ' ', '\t', '\r\n ', 'l=', 'a=', 'L=', 'https://x.test/a.svg', ' x ', '=']), {
          maxLength: 10,
        }),
        (parts) => {
          const record = parts.join('');
          const tags = bimiTags(record);
          expect({ l: tags.get('l') ?? null, a: tags.get('a') || null }).toEqual(old(record));
        },
      ),
      { numRuns: 600 },
    );
  });
});
