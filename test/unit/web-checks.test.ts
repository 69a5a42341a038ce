// lookup.web.v1 below the job machinery: the three checks against the web lab (real HTTP and
// HTTPS servers on 127.0.2.x with lab-CA certificates, the DNS lab, the real outbound guard),
// then plan(), assemble() and the input schema. Every finding code has a lab host that raises it
// and one that must not; hostile hosts end in timeout within their budget, never hang.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtimeFor } from '../helpers/lab-runtime.ts';
import { createWebChecks, planWeb, webInput, webProduct } from '../../src/products/web/index.ts';
import { webFindings, type WebFindingCode } from '../../src/products/web/findings.ts';
import { assembleWeb } from '../../src/products/web/assemble.ts';
import { buildEnvelope } from '../../src/contract/envelope.ts';
import type { CheckOutput, TaskOutcomeView } from '../../src/contract/tasks.ts';
import type { ProductRuntime } from '../../src/products/kit/product-contract.ts';
import { startLab, type RunningLab } from '../lab/serve.ts';
import { webLabPart, type WebLab } from '../lab/web-lab.ts';
import { WEB_ZONE, webUrl } from '../lab/web-hosts.ts';

const FETCH_MS = 1500;
const HANDSHAKE_MS = 1000;
const checks = createWebChecks({ fetchTimeoutMs: FETCH_MS, handshakeTimeoutMs: HANDSHAKE_MS });
const check = (name: string) => checks.find((c) => c.name === name)!;

let lab: RunningLab;
let web: WebLab;
let rt: ProductRuntime;

beforeAll(async () => {
  lab = await startLab({ parts: [webLabPart({ onReady: (w) => (web = w) })] });
  rt = runtimeFor(lab.env);
});

afterAll(async () => {
  await lab?.close();
});

/** `escape` is run as an authorized lookup whose approved scope is that host alone (issue 45). */
const paramsOf = (label: string): Record<string, unknown> =>
  label === 'escape'
    ? { url: webUrl(label), authorized: true, approvedScope: `escape.${WEB_ZONE}` }
    : { url: webUrl(label) };

const outputs = new Map<string, Promise<CheckOutput>>();
/** Each (check, host) runs once per file; the fixture table reads the same outputs. */
function run(name: 'web.http' | 'web.tls' | 'web.tls_protocols', label: string, runtime = rt): Promise<CheckOutput> {
  const key = `${name} ${label}`;
  if (runtime !== rt)
    return check(name).run(
      { objectKey: webUrl(label), target: webUrl(label), params: paramsOf(label) },
      { runtime, signal: new AbortController().signal },
    );
  if (!outputs.has(key))
    outputs.set(
      key,
      check(name).run(
        { objectKey: webUrl(label), target: webUrl(label), params: paramsOf(label) },
        { runtime, signal: new AbortController().signal },
      ),
    );
  return outputs.get(key)!;
}
const codes = (o: CheckOutput) => o.findings.map((f) => f.code);

// code → [lane, host that raises it, host that must not]
const FIXTURES: Record<WebFindingCode, ['web.http' | 'web.tls' | 'web.tls_protocols', string, string]> = {
  web_https_redirect_missing: ['web.http', 'none', 'strict'],
  web_https_not_offered: ['web.http', 'nohttps', 'none'],
  web_redirect_to_http: ['web.http', 'downgrade', 'strict'],
  web_redirect_to_disallowed_address: ['web.http', 'refusedhop', 'strict'],
  web_redirect_loop: ['web.http', 'loop', 'chain7'],
  web_redirect_out_of_scope: ['web.http', 'escape', 'strict'],
  web_hsts_missing: ['web.http', 'none', 'strict'],
  web_hsts_weak: ['web.http', 'badhsts', 'strict'],
  web_csp_missing: ['web.http', 'none', 'reportonly'],
  web_csp_report_only: ['web.http', 'reportonly', 'none'],
  web_csp_invalid: ['web.http', 'badcsp', 'strict'],
  web_csp_unsafe_inline: ['web.http', 'unsafe', 'strict'],
  web_csp_unsafe_eval: ['web.http', 'unsafe', 'meta'],
  web_clickjacking_unprotected: ['web.http', 'none', 'strict'],
  web_nosniff_missing: ['web.http', 'none', 'strict'],
  web_referrer_policy_unsafe: ['web.http', 'unsafe', 'meta'],
  web_cors_wildcard: ['web.http', 'cors', 'reflect'],
  web_cors_reflected_origin_credentials: ['web.http', 'reflect', 'cors'],
  web_cookie_without_secure: ['web.http', 'cookies', 'strict'],
  web_cookie_session_without_httponly: ['web.http', 'cookies', 'strict'],
  web_cookie_without_samesite: ['web.http', 'cookies', 'strict'],
  web_cookie_samesite_invalid: ['web.http', 'cookies', 'strict'],
  web_cookie_prefix_violation: ['web.http', 'cookies', 'strict'],
  tls_certificate_untrusted: ['web.tls', 'untrusted', 'strict'],
  tls_certificate_self_signed: ['web.tls', 'selfsigned', 'untrusted'],
  tls_certificate_expired: ['web.tls', 'expired', 'expiring'],
  tls_certificate_not_yet_valid: ['web.tls', 'notyet', 'strict'],
  tls_certificate_expiring_soon: ['web.tls', 'expiring', 'strict'],
  tls_hostname_mismatch: ['web.tls', 'wronghost', 'strict'],
  tls_weak_key: ['web.tls', 'weakkey', 'strict'],
  tls_weak_signature: ['web.tls', 'sha1', 'strict'],
  tls_legacy_protocol_negotiated: ['web.tls', 'tls10', 'tls13'],
  tls_legacy_protocol_enabled: ['web.tls_protocols', 'tls10', 'strict'],
  tls13_not_supported: ['web.tls_protocols', 'tls10', 'tls13'],
};

describe('every finding code: one lab host raises it, one must not', () => {
  it('the fixture table covers the whole catalog', () => {
    expect(Object.keys(FIXTURES).sort()).toEqual(Object.keys(webFindings).sort());
  });
  it.each(Object.entries(FIXTURES))('%s', async (code, [lane, raises, mustNot]) => {
    const yes = await run(lane, raises);
    expect(codes(yes), `${raises} should raise ${code}`).toContain(code);
    const f = yes.findings.find((x) => x.code === code)!;
    expect(f).toMatchObject({
      severity: webFindings[code as WebFindingCode].severity,
      confidence: webFindings[code as WebFindingCode].confidence,
    });
    // The finding's object is one the output names (persisted with it).
    expect(
      [...yes.objects, ...yes.relations.flatMap((r) => [r.from, r.to])].some(
        (o) => o.type === f.object.type && o.key === f.object.key,
      ),
    ).toBe(true);
    const no = await run(lane, mustNot);
    expect(['completed', 'partial']).toContain(no.status);
    expect(codes(no), `${mustNot} must not raise ${code}`).not.toContain(code);
  });
});

describe('web.http', () => {
  it('strict: both chains answer, http → https on the same host, every header assessed, score A+', async () => {
    const out = await run('web.http', 'strict');
    expect(out.status).toBe('completed');
    expect(out.findings).toEqual([]);
    const p = out.projection as any;
    expect(p.finalUrl).toBe(webUrl('strict'));
    expect(p.chains.http.hops[0]).toMatchObject({
      status: 301,
      schemeChange: 'http_to_https',
      hostChange: false,
      location: webUrl('strict'),
    });
    expect(p.headers.hsts).toMatchObject({
      present: true,
      valid: true,
      maxAge: 63072000,
      includeSubDomains: true,
      preload: true,
      preloadEligible: { eligible: true, unmet: [] },
      preloaded: null,
    });
    expect(p.headers.csp).toMatchObject({
      enforced: true,
      source: 'header',
      objectSrcNone: true,
      baseUriRestricted: true,
      frameAncestors: ["'none'"],
    });
    expect(p.headers.crossOriginOpenerPolicy).toBe('same-origin');
    expect(p.score).toMatchObject({
      algorithm: 'mdn-http-observatory/4',
      score: 135,
      grade: 'A+',
      observatoryWouldGrade: true,
    });
    expect(out.limitations.map((l) => l.code)).toContain('hsts_preload_list_not_configured');
    const types = out.objects.map((o) => o.type);
    expect(types).toEqual(expect.arrayContaining(['host', 'url', 'web_posture']));
  });

  it('none: every missing header is a finding and the score is F (10)', async () => {
    const p = (await run('web.http', 'none')).projection as any;
    expect(p.score).toMatchObject({ score: 10, grade: 'F' });
    expect(p.score.tests.find((t: any) => t.test === 'redirection')).toMatchObject({
      result: 'redirection-missing',
      modifier: -20,
    });
  });

  it('a redirect to a loopback address outside the allowlist is refused and never fetched', async () => {
    const before = web.requests.length;
    const out = await run('web.http', 'refusedhop');
    expect(out.status).toBe('unavailable');
    expect(out.reason).toBe('target_not_allowed');
    expect(codes(out)).toContain('web_redirect_to_disallowed_address');
    expect(web.refusedConnections()).toBe(0);
    expect(web.requests.slice(before).every((r) => r.address.startsWith('127.0.2.'))).toBe(true);
    expect(out.limitations.map((l) => l.code)).toEqual(
      expect.arrayContaining(['http_chain_refused', 'https_chain_refused']),
    );
  });

  it('a seven-hop chain is followed to its end, as the Observatory follows up to ten', async () => {
    const out = await run('web.http', 'chain7');
    expect(out.status).toBe('completed');
    const p = out.projection as any;
    expect(p.chains.http.outcome).toBe('response');
    expect(p.chains.http.hops).toHaveLength(8);
    expect(p.score).toMatchObject({ observatoryWouldGrade: true, score: expect.any(Number) });
    expect(out.limitations.map((l) => l.code)).not.toContain('redirect_limit_reached');
  });

  it('a redirect loop stops after ten redirects: a finding and a limitation, never a finding of absence', async () => {
    const out = await run('web.http', 'loop');
    expect((out.projection as any).chains.http.hops).toHaveLength(11);
    expect(out.limitations.map((l) => l.code)).toContain('redirect_limit_reached');
    expect(codes(out)).toContain('web_redirect_loop');
    expect(codes(out)).not.toContain('web_https_redirect_missing');
  });

  it('a site that speaks only TLS 1.0: no response, but what the target did is measured (CONTRACT §9)', async () => {
    const out = await run('web.http', 'tls10');
    expect(out.status).toBe('unavailable');
    expect(out.measured).toBe(true);
    const https = (out.projection as any).chains.https;
    expect(https.outcome).toBe('failed');
    expect(https.failure.kind).toMatch(/tls_failed|connection_failed/);
  });

  it.each(['slowheaders', 'slowbody', 'silent'])(
    'hostile %s: timeout within the chain budget, no findings; the stall is a measured fact',
    async (label) => {
      const t0 = performance.now();
      const out = await run('web.http', label);
      expect(out.status).toBe('timeout');
      expect(out.measured).toBe(true);
      expect(out.findings).toEqual([]);
      expect(performance.now() - t0).toBeLessThan(check('web.http').timeoutMs);
    },
  );

  it('a certificate that does not verify: headers still read, marked unverified; no HSTS verdict', async () => {
    const out = await run('web.http', 'expired');
    expect((out.projection as any).certificateVerified).toBe(false);
    expect(codes(out)).not.toContain('web_hsts_missing');
  });

  it('<meta> CSP and referrer are read from the page', async () => {
    const p = (await run('web.http', 'meta')).projection as any;
    expect(p.headers.csp).toMatchObject({ enforced: true, source: 'meta' });
    expect(p.headers.referrerPolicy).toMatchObject({ policy: 'strict-origin', source: 'meta' });
    expect(p.page).toMatchObject({ scripts: 1, scriptsWithIntegrity: 1 });
  });

  it('without the allowlist every lab host is refused before any connection', async () => {
    const before = web.requests.length;
    const out = await run('web.http', 'strict', runtimeFor(lab.env, { ALLOW_PRIVATE_TARGETS: '' }));
    expect(out).toMatchObject({ status: 'unavailable', reason: 'target_not_allowed', findings: [] });
    // Our policy refused it: nothing about the target was learnt.
    expect(out.measured).toBeUndefined();
    expect(web.requests.length).toBe(before);
  });
});

describe('web.tls', () => {
  it('strict: trusted, name matches, TLS 1.3, EC key, no caps', async () => {
    const out = await run('web.tls', 'strict');
    expect(out.status).toBe('completed');
    expect(out.projection).toMatchObject({
      chainTrusted: true,
      hostnameMatch: true,
      validNow: true,
      protocol: 'TLSv1.3',
      caps: [],
      ocspStapled: false,
    });
    expect((out.projection as any).certificate).toMatchObject({
      keyType: 'ec',
      keyBits: 256,
      sans: ['strict.weblab.test'],
    });
    expect(out.objects.some((o) => o.type === 'certificate')).toBe(true);
    expect(out.relations).toContainEqual(
      expect.objectContaining({ relation: 'san_of', from: { type: 'host', key: 'strict.weblab.test' } }),
    );
  });

  it('caps are facts: expired, mismatch, weak key, legacy protocol', async () => {
    expect((await run('web.tls', 'expired')).projection).toMatchObject({
      caps: expect.arrayContaining(['expired', 'untrusted']),
    });
    expect((await run('web.tls', 'wronghost')).projection).toMatchObject({
      chainTrusted: true,
      hostnameMatch: false,
      caps: ['hostname_mismatch'],
    });
    expect((await run('web.tls', 'weakkey')).projection).toMatchObject({ caps: expect.arrayContaining(['weak_key']) });
    expect((await run('web.tls', 'tls10')).projection).toMatchObject({
      protocol: 'TLSv1',
      negotiatedWith: 'legacy_client_tls1.0_1.1',
      caps: ['legacy_protocol'],
    });
  });

  it('a 1024-bit RSA key that Node refuses: the real cause in trustError, not an untrusted chain', async () => {
    const out = await run('web.tls', 'weakkey');
    expect(out.projection).toMatchObject({
      chainTrusted: true,
      trustError: 'EE_KEY_TOO_SMALL',
      certificate: { keyType: 'rsa', keyBits: 1024 },
    });
    expect((out.projection as any).caps).toEqual(['weak_key']);
    expect(codes(out)).toContain('tls_weak_key');
    expect(codes(out)).not.toContain('tls_certificate_untrusted');
    // The same for a SHA-1 signature; a chain that does not reach a root stays untrusted.
    const sha1 = await run('web.tls', 'sha1');
    expect(sha1.projection).toMatchObject({
      chainTrusted: true,
      trustError: 'CA_MD_TOO_WEAK',
      caps: ['weak_signature'],
    });
    expect(codes(sha1)).not.toContain('tls_certificate_untrusted');
    expect((await run('web.tls', 'untrusted')).projection).toMatchObject({ chainTrusted: false });
  });

  it('nothing on 443: unavailable with a limitation, no finding; a silent peer: timeout', async () => {
    expect(await run('web.tls', 'nohttps')).toMatchObject({
      status: 'unavailable',
      reason: 'connection_refused',
      findings: [],
      measured: true,
    });
    const silent = await run('web.tls', 'silent');
    expect(silent).toMatchObject({ status: 'timeout', findings: [] });
    // A handshake that never finished may be a lost route as well as a silent peer.
    expect(silent.measured).toBeUndefined();
  });
});

describe('web.tls_protocols', () => {
  it('per address and version: TLS 1.0 only, TLS 1.3 only, modern', async () => {
    const v = async (label: string) =>
      ((await run('web.tls_protocols', label)).projection as any).addresses[0].versions;
    expect(await v('tls10')).toMatchObject({
      TLSv1: { outcome: 'accepted' },
      'TLSv1.1': { outcome: 'rejected' },
      'TLSv1.2': { outcome: 'rejected' },
      'TLSv1.3': { outcome: 'rejected' },
    });
    expect(await v('tls13')).toMatchObject({
      TLSv1: { outcome: 'rejected' },
      'TLSv1.1': { outcome: 'rejected' },
      'TLSv1.2': { outcome: 'rejected' },
      'TLSv1.3': { outcome: 'accepted' },
    });
    expect(await v('strict')).toMatchObject({
      TLSv1: { outcome: 'rejected' },
      'TLSv1.2': { outcome: 'accepted' },
      'TLSv1.3': { outcome: 'accepted' },
    });
    expect((await run('web.tls_protocols', 'strict')).limitations.map((l) => l.code)).toContain(
      'tls_versions_not_probed',
    );
  });

  it('a silent peer: every version unknown, lane timeout, no finding', async () => {
    const out = await run('web.tls_protocols', 'silent');
    expect(out).toMatchObject({ status: 'timeout', findings: [] });
  });
});

describe('plan, price, assemble, input', () => {
  it('tls_protocols is planned (and paid) only when authorized', () => {
    const url = webUrl('strict');
    expect(planWeb({ url, authorized: false }).map((p) => [p.productLane, p.unitCost])).toEqual([
      ['http', 2],
      ['tls', 2],
    ]);
    expect(planWeb({ url, authorized: true }).map((p) => [p.productLane, p.unitCost])).toEqual([
      ['http', 2],
      ['tls', 2],
      ['tls_protocols', 4],
    ]);
    expect(webProduct.price({ url, authorized: false })).toBe(4);
    expect(webProduct.price({ url, authorized: true })).toBe(8);
    const long = `https://strict.weblab.test/${'a'.repeat(1000)}`;
    const [p] = planWeb({ url: long, authorized: false });
    expect(p!.objectKey).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(p!.params).toEqual({ url: long, authorized: false });
  });

  it('assemble: an unauthorized request skips tls_protocols as not applicable and can be complete', async () => {
    const view = async (lane: string, check: 'web.http' | 'web.tls'): Promise<TaskOutcomeView> => {
      const output = await run(check, 'strict');
      return {
        check,
        productLane: lane,
        required: lane === 'http',
        objectKey: webUrl('strict'),
        status: output.status,
        output,
      };
    };
    const outcome = assembleWeb(webUrl('strict'), [await view('http', 'web.http'), await view('tls', 'web.tls')]);
    expect(outcome.lanes.map((l) => [l.lane, l.status, l.reason])).toEqual([
      ['http', 'completed', undefined],
      ['tls', 'completed', undefined],
      ['tls_protocols', 'skipped', 'not_applicable'],
    ]);
    const env = buildEnvelope(webProduct, { url: webUrl('strict'), authorized: false }, outcome, 'req_x', 4);
    expect(env.coverage.complete).toBe(true);
    expect(env.input).toEqual({ url: webUrl('strict'), authorized: false });
  });

  it.each([
    ['ftp://weblab.test/'],
    ['javascript:alert(1)'],
    ['https://user:pw@strict.weblab.test/'],
    ['https://@strict.weblab.test/'],
    ['http://2130706433/'],
    ['http://0x7f.1/'],
    ['http://017700000001/'],
    ['http://127.1/'],
    ['http://%31%32%37.0.0.1/'],
    ['http://１２７.０.０.１/'],
    [`https://strict.weblab.test/${'a'.repeat(2048)}`],
    ['https:///path'],
    ['https://'],
    ['not a url'],
    [' https://strict.weblab.test/'],
  ])('the input schema refuses %s', (url) => {
    expect(webInput.safeParse({ url }).success).toBe(false);
  });

  it('accepts http(s) URLs with names, canonical IPv4, IPv6 literals and ports; authorized must be a boolean', () => {
    for (const url of [
      'https://strict.weblab.test/',
      'http://127.0.2.1/',
      'https://[::1]:8443/x?y=1',
      'HTTPS://Strict.Weblab.Test',
    ])
      expect(webInput.safeParse({ url }).success, url).toBe(true);
    expect(webInput.safeParse({ url: 'https://x.test/', authorized: 'yes' }).success).toBe(false);
    expect(webInput.safeParse({ url: 'https://x.test/', authorized: true, extra: 1 }).success).toBe(false);
    expect(webInput.safeParse({}).success).toBe(false);
  });
});
