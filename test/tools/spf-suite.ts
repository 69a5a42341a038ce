// `node test/tools/spf-suite.ts <rfc7208-tests.yml>`: runs our static SPF evaluator
// (src/products/mail/spf-evaluate.ts) over the public RFC 7208 test suite (the OpenSPF YAML, shipped
// by SPF libraries such as pyspf as test/rfc7208-tests.yml; it is not in this repository) and
// prints, per case, whether the static verdict agrees with the suite's result, then the count.
//
// The suite evaluates one client IP; a static evaluator has none. Verdicts compare as:
// permerror ↔ permerror, none ↔ none, temperror ↔ indeterminate, and pass/fail/softfail/neutral ↔
// ok (the record is usable; which of them depends on the IP). The suite's zone data is served
// with its harness conventions (pyspf): a name with SPF-type records and no TXT serves them as
// TXT, "TXT: NONE" means no TXT, TIMEOUT answers every question the name has no records for,
// CNAMEs are followed. The cases that apply to static evaluation are re-expressed as lab
// fixtures in test/lab/mail-zones.ts (spf-suite.test) and tested in test/unit/mail-checks.test.ts.
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import type { QueryResult, RecordType } from '../../src/dns/types.ts';
import { evaluateSpf } from '../../src/products/mail/spf-evaluate.ts';

type Entry = string | Record<string, unknown>;
interface Doc {
  description?: string;
  tests?: Record<string, { mailfrom?: string; helo?: string; result: string | string[]; spec?: string }>;
  zonedata?: Record<string, Entry[]>;
}

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: node test/tools/spf-suite.ts <rfc7208-tests.yml>\n');
  process.exit(64);
}
const docs = parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJSON() as Doc);
const flags = { aa: true, ad: false, tc: false, ra: true };
let total = 0;
let agree = 0;
for (const doc of docs) {
  if (!doc?.tests) continue;
  const zone = new Map(Object.entries(doc.zonedata ?? {}).map(([k, v]) => [k.toLowerCase().replace(/\.$/, ''), v]));
  const answer = (name: string, type: RecordType, depth = 0): QueryResult => {
    const all = zone.get(name.toLowerCase());
    const base = { name, type, rcode: 'NOERROR', flags, transport: 'udp' as const, durationMs: 0 };
    if (!all) return { ...base, outcome: 'nxdomain', rcode: 'NXDOMAIN', answers: [] };
    const recs = all.filter((r) => !(typeof r === 'object' && Object.values(r)[0] === 'NONE'));
    const hasTxt = all.some((r) => typeof r === 'object' && 'TXT' in r);
    const key = type === 'TXT' && !hasTxt ? 'SPF' : type;
    const answers = recs
      .filter((r): r is Record<string, unknown> => typeof r === 'object' && key in r)
      .map((r) => {
        const v = r[key];
        const data =
          type === 'TXT'
            ? Array.isArray(v)
              ? v.map(String)
              : [String(v)]
            : type === 'MX'
              ? { preference: (v as unknown[])[0], exchange: String((v as unknown[])[1]).replace(/\.$/, '') }
              : v;
        return { name, type, ttl: 300, data };
      });
    if (answers.length === 0) {
      if (recs.includes('TIMEOUT')) return { ...base, outcome: 'timeout', rcode: null, answers: [] };
      const cname = recs.find((r): r is Record<string, unknown> => typeof r === 'object' && 'CNAME' in r);
      if (cname && depth < 8) {
        const next = answer(String(cname.CNAME).replace(/\.$/, ''), type, depth + 1);
        return { ...next, name, answers: [{ name, type: 'CNAME', ttl: 300, data: cname.CNAME }, ...next.answers] };
      }
    }
    return { ...base, outcome: answers.length > 0 ? 'answer' : 'nodata', answers };
  };
  for (const [name, t] of Object.entries(doc.tests)) {
    total++;
    const from = String(t.mailfrom ?? '');
    const domain = (from.includes('@') ? from.slice(from.lastIndexOf('@') + 1) : from || String(t.helo))
      .toLowerCase()
      .replace(/\.$/, '');
    const snapshot: Record<string, QueryResult> = {};
    let step = evaluateSpf({ domain, snapshot });
    for (let i = 0; i < 30 && step.missing.length > 0; i++) {
      for (const q of step.missing) snapshot[`${q.name}|${q.type}`] = answer(q.name, q.type);
      step = evaluateSpf({ domain, snapshot });
    }
    const v = step.evaluation.verdict;
    const ours = v === 'indeterminate' ? 'temperror' : v;
    const expected = ([] as string[])
      .concat(t.result)
      .map((e) => (['pass', 'fail', 'softfail', 'neutral'].includes(e) ? 'ok' : e));
    const same = expected.includes(ours);
    if (same) agree++;
    process.stdout.write(
      `${same ? 'same' : 'DIFF'}  ${doc.description} / ${name}: suite ${([] as string[]).concat(t.result).join('|')}, static ${v}${v === 'permerror' ? ` (${step.evaluation.permerrors.map((p) => p.reason).join(', ')})` : ''}\n`,
    );
  }
}
process.stdout.write(`${agree}/${total} cases agree\n`);
