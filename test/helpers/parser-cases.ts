// Every parser of target-controlled text, with its cap and the shapes that hurt backtracking
// parsers: an input is prefix + unit repeated + suffix, cut to a size up to the cap. Used by
// test/unit/parser-bounds.test.ts (fast-check picks the pieces and the size) through
// ./parser-cost-worker.ts, which times a case in a worker thread so that a quadratic parser can be
// stopped instead of hanging the run. Only entry points that exist since before issue 18 are
// called, so the same cases time the old code too.
import { answerRecords, type Reply } from '../../src/dns/wire.ts';
import type { QueryResult, RecordType, Resolver } from '../../src/dns/types.ts';
import type { CheckContext } from '../../src/products/kit/product-contract.ts';
import { runBimiCheck } from '../../src/products/mail/bimi-check.ts';
import { runDmarcCheck } from '../../src/products/mail/dmarc-check.ts';
import { parseDkimKey } from '../../src/products/mail/dkim-key.ts';
import { DnsAsker, snapshotKey, type DnsSnapshot } from '../../src/products/mail/dns-snapshot.ts';
import { parseMtaStsPolicy, parseMtaStsTxt } from '../../src/products/mail/mta-sts-policy.ts';
import { parseReportUris } from '../../src/products/mail/report-uris.ts';
import { evaluateSpf } from '../../src/products/mail/spf-evaluate.ts';
import { runTlsRptCheck, tlsRptErrors } from '../../src/products/mail/tls-rpt-check.ts';
import { assessWebEvidence } from '../../src/products/web/assess.ts';
import { assessCookies } from '../../src/products/web/cookies.ts';
import { parseCspHeader } from '../../src/products/web/csp.ts';
import type { WebEvidence } from '../../src/products/web/evidence.ts';
import { assessHsts, assessIsolation, assessReferrer } from '../../src/products/web/header-checks.ts';
import { readPageMeta } from '../../src/products/web/html-meta.ts';
import { buildHttpOutput } from '../../src/products/web/http-check.ts';
import { boundStoredOutput } from '../../src/products/kit/stored-output.ts';
import { hostileWebEvidence } from './hostile-web-evidence.ts';

const KIB = 1024;
/** A response head (every header together) is capped at 64 KiB: src/net/guarded-fetch.ts. */
const HEAD_CAP = 64 * KIB;
/** A body is capped at 1 MiB: src/products/web/collect-evidence.ts. */
const BODY_CAP = 1024 * KIB;
/** A DNS reply over TCP is at most 65,535 bytes, so is any record text in it. */
const DNS_CAP = 64 * KIB;

export interface ParserCase {
  name: string;
  /** Where the parser runs: a pool thread (a deadline bounds it) or a lane's main thread (nothing does). */
  thread: 'pool' | 'main';
  capBytes: number;
  prefixes: string[];
  units: string[];
  suffixes: string[];
  /** [prefix, unit, suffix] indexes of the shapes known to be worst, always run at the cap. */
  worst: Array<[number, number, number]>;
  /**
   * ms per KiB allowed, when not the default: parse5 (the WHATWG tree builder) is linear but needs
   * 0.5–5 ms per KiB of deep nesting depending on the machine's load; a quadratic parser needs
   * hundreds at these sizes.
   */
  limitMsPerKib?: number;
  run(input: string): unknown;
}

export function buildInput(c: ParserCase, p: number, u: number, s: number, size: number): string {
  const prefix = c.prefixes[p]!;
  const suffix = c.suffixes[s]!;
  const unit = c.units[u]!;
  const room = Math.max(0, size - prefix.length - suffix.length);
  return prefix + unit.repeat(Math.ceil(room / unit.length)).slice(0, room) + suffix;
}

function txtReply(name: string, value: string | null, type: RecordType = 'TXT'): QueryResult {
  return {
    name,
    type,
    outcome: value === null ? 'nxdomain' : 'answer',
    rcode: value === null ? 'NXDOMAIN' : 'NOERROR',
    answers: value === null ? [] : [{ name, type, ttl: 60, data: [value] }],
    flags: { aa: true, ad: false, tc: false, ra: true },
    transport: 'tcp',
    durationMs: 1,
  };
}

const snapshot = (name: string, value: string): DnsSnapshot => ({ [snapshotKey(name, 'TXT')]: txtReply(name, value) });

/** A check's DNS as the loopback lab would answer it: this TXT record at this name, NXDOMAIN elsewhere. */
function asker(name: string, value: string): DnsAsker {
  const resolver = {
    query: async (q: string, type: RecordType) => txtReply(q, q === name && type === 'TXT' ? value : null, type),
    readiness: () => 'ready',
  } as unknown as Resolver;
  return new DnsAsker(resolver, new AbortController().signal);
}

const ctx = { runtime: {}, signal: new AbortController().signal } as unknown as CheckContext;

function page(csp: string, body: string): WebEvidence {
  const hop = {
    url: 'https://h.test/',
    status: 200,
    location: null,
    next: null,
    schemeChange: null,
    hostChange: false,
    hsts: null,
    tlsVerified: true,
    headers: { 'content-type': 'text/html', 'content-security-policy': csp },
  };
  return {
    url: 'https://h.test/',
    host: 'h.test',
    http: { start: 'http://h.test/', outcome: 'not_attempted', hops: [], verified: null, body: null, failure: null },
    https: { start: 'https://h.test/', outcome: 'response', verified: true, failure: null, body, hops: [hop] },
    primary: 'https',
    preflight: null,
  } as unknown as WebEvidence;
}

/** A reply of CNAMEs (about 18 bytes each on the wire), listed from the last link to the first. */
function cnameReply(input: string): Reply {
  const n = Math.max(1, Math.floor(input.length / 18));
  const answers: Array<{ name: string; type: string; ttl: number; data: string }> = [];
  const loop = input.startsWith('loop');
  for (let i = n; i >= 1; i--)
    answers.push({ name: i === 1 ? 'q.test' : `c${i - 1}.test`, type: 'CNAME', ttl: 1, data: `c${i}.test` });
  if (loop) answers.push({ name: `c${n}.test`, type: 'CNAME', ttl: 1, data: 'q.test' });
  return { answers } as unknown as Reply;
}

const BLANKS = [' ', '\t', '\n', '\f', '\r', ' \t'];

export const parserCases: ParserCase[] = [
  {
    name: 'CSP header (parseCspHeader)',
    thread: 'pool',
    capBytes: HEAD_CAP,
    prefixes: ['script-src a', "default-src 'self'; script-src", '', 'a,'],
    units: [...BLANKS, ';', ',', ' ;', "'", 'a '],
    suffixes: ['b', '', ';x', ',b'],
    worst: [
      [0, 0, 0],
      [0, 2, 0],
    ],
    run: (input) => parseCspHeader([input]),
  },
  {
    name: 'web page assessment (CSP header and <meta>, cookies, HSTS, score)',
    thread: 'pool',
    capBytes: BODY_CAP,
    prefixes: ['<meta http-equiv="content-security-policy" content="script-src a', '<html><body>'],
    units: [' ', '\t', '<b><i>', '<table><tr><td>', '<a>', '<meta http-equiv=content-security-policy content=a>'],
    suffixes: ['b">', ''],
    worst: [[0, 0, 0]],
    limitMsPerKib: 20,
    // The header carries the same run (within the 64 KiB head): both the header and the <meta> policy.
    run: (input) => assessWebEvidence(page(`script-src a${input.slice(0, HEAD_CAP - 200)}b`, input)),
  },
  {
    // Issue 30 item 7: the lane's whole output from a host at every cap (22 responses whose HSTS
    // header is the input, the input as the page), then cut to the stored caps.
    name: 'web http output, stored (buildHttpOutput, boundStoredOutput)',
    thread: 'pool',
    capBytes: BODY_CAP,
    prefixes: ['max-age=1; ', '<meta http-equiv="content-security-policy" content="script-src a'],
    units: [' ', 'a ', ';', '"', '<b>', 'x'],
    suffixes: ['', 'b">'],
    worst: [
      [0, 1, 0],
      [1, 1, 1],
    ],
    limitMsPerKib: 20,
    run: (input) => {
      const e = hostileWebEvidence({ bodyChars: input.length });
      for (const chain of [e.http, e.https])
        for (const hop of chain.hops) {
          hop.hsts = input.slice(0, HEAD_CAP - 1024);
          hop.headers['strict-transport-security'] = hop.hsts;
        }
      e.https.body = input;
      return boundStoredOutput(buildHttpOutput(e, assessWebEvidence(e)));
    },
  },
  {
    name: 'HTML meta scan (parse5)',
    thread: 'pool',
    capBytes: BODY_CAP,
    prefixes: ['', '<!doctype html><head>'],
    units: ['<b><i>', '<div>', '<a>', '<table><tr><td>', '<script src=x integrity=y>', '<a href="http://a.', ' '],
    suffixes: ['', '</b>'],
    worst: [[0, 0, 0]],
    limitMsPerKib: 20,
    run: (input) => readPageMeta(input),
  },
  {
    name: 'HSTS (assessHsts)',
    thread: 'pool',
    capBytes: HEAD_CAP,
    prefixes: ['max-age="', 'max-age=1; ', ''],
    units: [' ', ';', '"', '=', 'max-age=1;', '\t', 'a'],
    suffixes: ['\n', '', '"'],
    worst: [[0, 6, 0]],
    run: (input) => assessHsts(input),
  },
  {
    name: 'Set-Cookie (assessCookies)',
    thread: 'pool',
    capBytes: HEAD_CAP,
    prefixes: ['a=b;', 'a', 'a=b; SameSite='],
    units: [' ', ';', '=', 'SameSite=x;', '; Path=/', '/', 'a'],
    suffixes: ['x', '=b', '; Path=/'],
    worst: [
      [0, 0, 0],
      [2, 0, 2],
    ],
    run: (input) => assessCookies([{ url: 'https://a.test/', setCookie: [input] }]),
  },
  {
    name: 'Referrer-Policy and Permissions-Policy',
    thread: 'pool',
    capBytes: HEAD_CAP,
    prefixes: ['', 'no-referrer,'],
    units: [' ,', ',', 'a', '=', '-', ' '],
    suffixes: ['', '!'],
    worst: [[0, 0, 0]],
    run: (input) => [assessReferrer([input], []), assessIsolation({ 'permissions-policy': input })],
  },
  {
    name: 'DMARC/TLS-RPT report URIs (parseReportUris)',
    thread: 'main',
    capBytes: DNS_CAP,
    prefixes: ['mailto:a@', 'https://', 'mailto:'],
    units: ['?', '#', '!', '1', ',', '@', 'a.'],
    suffixes: ['\nx', '', '!10m'],
    worst: [[0, 0, 0]],
    run: (input) => parseReportUris(input),
  },
  {
    name: 'DMARC check (record, report URIs)',
    thread: 'main',
    capBytes: DNS_CAP,
    prefixes: ['v=DMARC1; p=none; rua=mailto:a@', 'v=DMARC1; p=none; ruf=mailto:a@b.test,'],
    units: ['?', ' ', ';', '=', 'a'],
    suffixes: ['\nx', ''],
    worst: [[0, 0, 0]],
    run: (input) => runDmarcCheck('x.test', asker('_dmarc.x.test', input), ctx),
  },
  {
    name: 'SPF evaluation (terms, mailauth validator)',
    thread: 'pool',
    capBytes: DNS_CAP,
    prefixes: ['v=spf1 ', 'v=spf1 include:a.', 'v=spf1 a:', 'v=spf1 redirect=a.', 'v=spf1 -'],
    units: ['a', 'a.', '-', '/', '1', '%{d}', ' ', 'a-'],
    suffixes: ['\n', '!', '', ' -all'],
    worst: [
      [0, 0, 0],
      [1, 0, 1],
    ],
    run: (input) => evaluateSpf({ domain: 'x.test', snapshot: snapshot('x.test', input) }),
  },
  {
    name: 'TLS-RPT record (tlsRptErrors, check)',
    thread: 'main',
    capBytes: DNS_CAP,
    prefixes: ['v=TLSRPTv1; rua=', 'v=TLSRPTv1; rua=mailto:a@'],
    units: ['a', '=', ';', '\n', '?', ' '],
    suffixes: ['\n', '\nx', ''],
    worst: [[1, 4, 1]],
    run: (input) => [tlsRptErrors(input), runTlsRptCheck('x.test', asker('_smtp._tls.x.test', input), ctx)],
  },
  {
    name: 'MTA-STS record',
    thread: 'pool',
    capBytes: DNS_CAP,
    prefixes: ['v=STSv1; id=1; ext=a', 'v=STSv1;', 'V=STSV1; id=1;'],
    units: [' ', '\t', ';', '=', 'a', ' ;'],
    suffixes: ['b;', '', 'b'],
    worst: [[0, 0, 0]],
    run: (input) => parseMtaStsTxt({ domain: 'x.test', snapshot: snapshot('_mta-sts.x.test', input) }),
  },
  {
    name: 'MTA-STS policy',
    thread: 'pool',
    capBytes: 64 * KIB,
    prefixes: ['version: STSv1\nmode: enforce\nmax_age: 86400\nmx: a', 'version: STSv1\nmode: enforce\nmx: '],
    units: [' ', '\t', 'a-', 'mx: a\n', '\r\n', ':', 'a.'],
    suffixes: ['b\n', '!\n', ''],
    worst: [[0, 0, 0]],
    run: (input) => parseMtaStsPolicy({ body: input, hosts: ['mx.x.test', 'mx2.x.test'] }),
  },
  {
    name: 'BIMI check (tag-list)',
    thread: 'main',
    capBytes: DNS_CAP,
    prefixes: ['v=BIMI1; l=a', 'v=BIMI1; a=', 'v=BIMI1;'],
    units: [' ', '\t', ';', '=', '\r\n', 'a'],
    suffixes: ['b', '', ';'],
    worst: [[0, 0, 0]],
    run: (input) => runBimiCheck('x.test', asker('default._bimi.x.test', input), ctx),
  },
  {
    name: 'DKIM key record',
    thread: 'pool',
    capBytes: DNS_CAP,
    prefixes: ['v=DKIM1; k=rsa; p=', 'v=DKIM1; t=y:'],
    units: ['A', ' ', ';', '=', ':'],
    suffixes: ['!', ''],
    worst: [[0, 0, 0]],
    run: (input) => parseDkimKey({ name: 's._domainkey.x.test', snapshot: snapshot('s._domainkey.x.test', input) }),
  },
  {
    name: 'DNS answer section (CNAME chain)',
    thread: 'main',
    capBytes: DNS_CAP,
    prefixes: ['chain', 'loop'],
    units: ['x'],
    suffixes: [''],
    worst: [[0, 0, 0]],
    run: (input) => answerRecords(cnameReply(input), 'q.test', 'A'),
  },
];
