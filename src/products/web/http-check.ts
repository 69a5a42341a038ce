import type { CheckContext } from '../kit/product-contract.ts';
import type { CheckOutput, FindingOut, ObjectOut, ObjectRef, RelationOut } from '../../contract/tasks.ts';
import type { LaneStatus, Limitation } from '../../contract/lanes.ts';
import { assessWebEvidence, type WebAssessment } from './assess.ts';
import { collectWebEvidence, type CollectOptions } from './collect-evidence.ts';
import type { ChainEvidence, WebEvidence } from './evidence.ts';
import { webFinding } from './findings.ts';
import { HSTS_SIX_MONTHS } from './header-checks.ts';
import { inApprovedScope } from '../../auth/approved-scopes.ts';
import { MAX_META_CSP, MAX_META_CSP_CHARS } from './html-meta.ts';
import { UNOBSERVED } from '../kit/change-rules.ts';

export interface HttpCheckOptions extends Omit<CollectOptions, 'signal' | 'ports' | 'inScope'> {
  /**
   * An authorized lookup's approved scope: active work, so the active guard (ACTIVE_DENY_CIDRS
   * refused), any port, and every hop's host inside this scope (a redirect out of it stops the
   * chain: redirect_out_of_scope). Absent: passive, every hop on the passive ports.
   */
  authorizedScope?: string;
}

const SOURCE = { source: 'http_fetch' };
const ref = (type: string, key: string): ObjectRef => ({ type, key });

function chainSummary(c: ChainEvidence) {
  return {
    start: c.start,
    outcome: c.outcome,
    ...(c.skippedReason ? { skippedReason: c.skippedReason } : {}),
    certificateVerified: c.verified,
    hops: c.hops.map((h) => ({
      url: h.url,
      status: h.status,
      location: h.location,
      schemeChange: h.schemeChange,
      hostChange: h.hostChange,
      hsts: h.hsts,
      tlsVerified: h.tlsVerified,
    })),
    failure: c.failure,
  };
}

function failureText(c: ChainEvidence): string {
  const f = c.failure;
  if (!f) return c.outcome;
  if (f.kind === 'refused')
    return `refused by the outbound guard (${f.reason}${f.range ? `, ${f.range} address` : ''}${f.host ? ` for ${f.host}` : ''})`;
  if (f.kind === 'timeout') return `timed out${f.phase ? ` (${f.phase})` : ''}`;
  return `${f.kind}${f.code ? ` (${f.code})` : ''}`;
}

/** Lane status when no chain produced a response. */
function noResponseStatus(e: WebEvidence): { status: LaneStatus; reason: string } {
  const tried = [e.http, e.https].filter((c) => c.outcome !== 'not_attempted');
  if (tried.some((c) => c.failure?.kind === 'timeout')) return { status: 'timeout', reason: 'http_timeout' };
  const first = tried[0]?.failure;
  if (tried.every((c) => c.failure?.kind === 'refused'))
    return { status: 'unavailable', reason: first?.reason ?? 'target_not_allowed' };
  const kinds = tried.map((c) => c.failure?.kind ?? 'failed');
  const reason = kinds.includes('host_not_found')
    ? 'host_not_found'
    : kinds.includes('dns_failure')
      ? 'dns_failure'
      : (kinds[0] ?? 'connection_failed');
  return { status: 'unavailable', reason };
}

/** Failures that are the target's doing, not ours: it answered, refused, reset or has no address. */
const TARGET_FAILURES = new Set([
  'tls_failed',
  'host_not_found',
  'headers_too_large',
  'response_too_large',
  'bad_redirect',
  'too_many_redirects',
]);
const TARGET_SOCKET_ERRORS = /^(ECONNREFUSED|ECONNRESET|EPIPE|EPROTO)$|^ERR_(SSL|TLS)_/;

/**
 * Whether a chain that produced no response still measured the target (CONTRACT §9): it answered
 * before failing, refused or reset the connection, failed the TLS handshake (legacy TLS only), has
 * no address, or accepted the request and then stalled. A refusal by our guard, an indeterminate
 * DNS answer or a connect timeout says nothing about the target.
 */
export function chainMeasured(c: ChainEvidence): boolean {
  if (c.hops.length > 0) return true;
  const f = c.failure;
  if (!f || c.outcome !== 'failed') return false;
  if (TARGET_FAILURES.has(f.kind)) return true;
  if (f.kind === 'connection_failed') return TARGET_SOCKET_ERRORS.test(f.code ?? '');
  return f.kind === 'timeout' && (f.phase === 'headers' || f.phase === 'body');
}

const isRefusedConnection = (c: ChainEvidence) =>
  c.outcome === 'failed' &&
  c.hops.length === 0 &&
  c.failure?.kind === 'connection_failed' &&
  c.failure.code === 'ECONNREFUSED';

/**
 * A chain that produced no final response for a reason that is ours or unknown (refused by the
 * guard, a DNS failure, a timeout in any phase, a connection lost without the target's refusal
 * or reset): what it would have shown was not observed. A target's own answer (a refused or
 * reset connection, a TLS failure, no such host, too many redirects…) is an observation.
 */
export function chainGap(c: ChainEvidence): boolean {
  if (c.outcome === 'refused') return true;
  if (c.outcome !== 'failed') return false;
  const f = c.failure;
  if (!f || f.kind === 'timeout') return true;
  if (TARGET_FAILURES.has(f.kind)) return false;
  if (f.kind === 'connection_failed') return !TARGET_SOCKET_ERRORS.test(f.code ?? '');
  return true;
}

/** The web posture's facts a gap in this chain leaves unobserved (the https chain: all of them, as the http one stood in). */
const POSTURE_FROM = {
  https: ['finalUrl', 'status', 'score', 'grade', 'observatoryWouldGrade'],
  http: ['score', 'grade', 'observatoryWouldGrade'],
} as const;

/** One finding per (object, code): the persistence layer keeps only the first, so later ones add evidence. */
function mergeFindings(findings: FindingOut[]): FindingOut[] {
  const out = new Map<string, FindingOut>();
  for (const f of findings) {
    const k = `${f.object.type}\u0000${f.object.key}\u0000${f.code}`;
    const prev = out.get(k);
    if (!prev) out.set(k, { ...f, evidence: [...(f.evidence ?? [])] });
    else prev.evidence = [...(prev.evidence ?? []), ...(f.evidence ?? [])].slice(0, 20);
  }
  return [...out.values()];
}

export async function runHttpCheck(target: string, ctx: CheckContext, opts: HttpCheckOptions): Promise<CheckOutput> {
  const { authorizedScope, ...phases } = opts;
  const active = authorizedScope !== undefined;
  const guard = active ? ctx.runtime.services.activeOutbound : ctx.runtime.services.outbound;
  if (!guard) {
    return {
      status: 'unavailable',
      reason: 'outbound_not_configured',
      projection: {},
      objects: [],
      relations: [],
      findings: [],
      limitations: [{ code: 'http_unavailable', message: 'No outbound guard in this process: nothing was fetched.' }],
      sources: [],
    };
  }
  const input = new URL(target);
  // Both chains, their redirects and the preflight mostly ask for one host: DNS once per host.
  const scope: Pick<CollectOptions, 'ports' | 'inScope'> = active
    ? { ports: 'any', inScope: (host) => inApprovedScope(host, [authorizedScope]) }
    : { ports: 'passive' };
  const evidence = await collectWebEvidence(input, guard.forCheck(ctx.signal), {
    ...phases,
    ...scope,
    signal: ctx.signal,
  });
  const assessment = evidence.primary
    ? ctx.runInPool
      ? await ctx.runInPool<WebAssessment | null>('assessWebEvidence', evidence)
      : assessWebEvidence(evidence)
    : null;
  return buildHttpOutput(evidence, assessment);
}

/** Pure: evidence + assessment → the lane's output. */
export function buildHttpOutput(e: WebEvidence, a: WebAssessment | null): CheckOutput {
  const limitations: Limitation[] = [];
  const findings: FindingOut[] = [];
  const objects: ObjectOut[] = [];
  const relations: RelationOut[] = [];
  const inputUrl = ref('url', e.url);
  const hostRef = ref('host', e.host);
  objects.push({ type: 'host', key: e.host, distance: 0, projection: { name: e.host } });
  objects.push({ type: 'url', key: e.url, distance: 0, projection: { url: e.url } });
  relations.push({ from: inputUrl, relation: 'discovered_from', to: hostRef });

  // Every URL met in a chain, each redirect target discovered from the hop that named it.
  const seenUrls = new Set([e.url]);
  for (const chain of [e.http, e.https]) {
    for (let i = 0; i < chain.hops.length; i++) {
      const hop = chain.hops[i]!;
      if (!seenUrls.has(hop.url)) {
        seenUrls.add(hop.url);
        objects.push({ type: 'url', key: hop.url, distance: 1, projection: { url: hop.url } });
      }
      const prev = i > 0 ? chain.hops[i - 1]!.url : null;
      if (prev && prev !== hop.url)
        relations.push({ from: ref('url', hop.url), relation: 'discovered_from', to: ref('url', prev) });
      objects.find((o) => o.type === 'url' && o.key === hop.url)!.projection.status = hop.status;
    }
    // The URL a chain with a gap stopped at, if it is an object here (its start: the input URL):
    // its status was not observed (UNOBSERVED), which is no "no answer".
    if (chainGap(chain)) {
      const stopped = chain.hops.at(-1)?.next ?? (chain.hops.length === 0 ? chain.start : null);
      const o = objects.find((x) => x.type === 'url' && x.key === stopped);
      if (o && o.projection.status === undefined) o.projection[UNOBSERVED] = ['status'];
    }
    // Facts of the chain itself, whatever its outcome.
    const visited = new Set<string>();
    let looped = false;
    for (const hop of chain.hops) {
      if (visited.has(hop.url)) looped = true;
      visited.add(hop.url);
      if (hop.schemeChange === 'https_to_http') {
        findings.push(
          webFinding(
            'web_redirect_to_http',
            ref('url', hop.url),
            `${hop.url} redirects to ${hop.next} (HTTPS to HTTP).`,
            [`${hop.status} Location: ${hop.location}`],
          ),
        );
      }
    }
    const nextOfLast = chain.hops.at(-1)?.next;
    if (
      chain.outcome === 'failed' &&
      chain.failure?.kind === 'too_many_redirects' &&
      nextOfLast &&
      visited.has(nextOfLast)
    )
      looped = true;
    if (looped)
      findings.push(
        webFinding(
          'web_redirect_loop',
          ref('url', chain.start),
          `The chain from ${chain.start} redirects back to a URL it already visited.`,
          chain.hops.map((h) => `${h.status} ${h.url} → ${h.location}`),
        ),
      );
    if (chain.outcome === 'refused' && chain.hops.length > 0 && chain.failure?.reason === 'target_not_allowed') {
      const last = chain.hops.at(-1)!;
      findings.push(
        webFinding(
          'web_redirect_to_disallowed_address',
          ref('url', last.url),
          `${last.url} redirects to ${last.next ?? last.location}, whose address is ${chain.failure.range ?? 'not allowed'}; the hop was not fetched.`,
          [
            `${last.status} Location: ${last.location}`,
            `refused: ${chain.failure.range ?? 'not public'} address of ${chain.failure.host}`,
          ],
        ),
      );
    }
    if (chain.outcome === 'refused' && chain.hops.length > 0 && chain.failure?.reason === 'out_of_scope') {
      const last = chain.hops.at(-1)!;
      const to = last.next ?? last.location;
      findings.push(
        webFinding(
          'web_redirect_out_of_scope',
          ref('url', last.url),
          `${last.url} redirects to ${to}, outside the approved scope this lookup was authorized for; the hop was not fetched.`,
          [`${last.status} Location: ${last.location}`, `refused: ${chain.failure.host} is outside the approved scope`],
        ),
      );
      limitations.push({
        code: 'redirect_out_of_scope',
        message: `The chain from ${chain.start} stopped at a redirect to ${to}: ${chain.failure.host} is outside the approved scope, so nothing was sent to it. What it would have shown is unknown.`,
      });
    }
    if (chain.outcome === 'refused' || chain.outcome === 'failed') {
      const scheme = chain.start.startsWith('https:') ? 'https' : 'http';
      const code =
        chain.failure?.kind === 'too_many_redirects'
          ? 'redirect_limit_reached'
          : chain.failure?.kind === 'refused'
            ? `${scheme}_chain_refused`
            : `${scheme}_chain_${chain.failure?.kind === 'timeout' ? 'timeout' : 'failed'}`;
      limitations.push({
        code,
        message: `The ${scheme} chain from ${chain.start} produced no final response: ${failureText(chain)}${chain.hops.length ? ` after ${chain.hops.length} response(s)` : ''}. What it would have shown is unknown.`,
      });
    }
  }

  if (!e.primary || !a) {
    const { status, reason } = noResponseStatus(e);
    const measured = chainMeasured(e.http) || chainMeasured(e.https);
    return {
      status,
      reason,
      ...(measured ? { measured } : {}),
      projection: { requestedUrl: e.url, chains: { http: chainSummary(e.http), https: chainSummary(e.https) } },
      objects,
      relations,
      findings: mergeFindings(findings),
      limitations,
      sources: [SOURCE],
    };
  }

  // The http side answered over plain HTTP: no hop went to https.
  if (e.http.outcome === 'response' && !e.http.hops.some((h) => h.url.startsWith('https:'))) {
    findings.push(
      webFinding(
        'web_https_redirect_missing',
        ref('url', e.http.start),
        `${e.http.start} answers ${e.http.hops.at(-1)!.status} over HTTP without redirecting to HTTPS.`,
        e.http.hops.map((h) => `${h.status} ${h.url}`),
      ),
    );
  }
  if (e.http.outcome === 'response' && isRefusedConnection(e.https)) {
    findings.push(
      webFinding(
        'web_https_not_offered',
        ref('url', e.https.start),
        `${e.https.start}: the connection was refused while ${e.http.start} answered.`,
        [failureText(e.https)],
      ),
    );
  }

  const posture = ref('web_posture', e.url);
  const html = a.page !== null;
  const overHttps = a.final.url.startsWith('https:');
  if (overHttps && a.final.tlsVerified !== false) {
    if (!a.hsts.present)
      findings.push(
        webFinding('web_hsts_missing', posture, `${a.final.url} sends no Strict-Transport-Security header.`),
      );
    else if (!a.hsts.valid || (a.hsts.maxAge ?? 0) < HSTS_SIX_MONTHS)
      findings.push(
        webFinding(
          'web_hsts_weak',
          posture,
          `Strict-Transport-Security on ${a.final.url} is ${a.hsts.valid ? `max-age=${a.hsts.maxAge} (under 180 days)` : `malformed: ${a.hsts.problems.join('; ')}`}.`,
          [`Strict-Transport-Security: ${a.hsts.raw}`],
        ),
      );
  }
  const metaSkipped = a.unparsed.metaCsp;
  if (metaSkipped.count > 0)
    limitations.push({
      code: 'csp_meta_not_assessed',
      message: `${metaSkipped.count} <meta> Content Security Policy value(s) of ${a.final.url} were not parsed: over the caps of ${MAX_META_CSP} policies or ${MAX_META_CSP_CHARS} characters each (the longest has ${metaSkipped.longest}). The CSP facts, findings and score leave them out.`,
    });
  // A policy we did not read may be the page's CSP: no "missing" finding then.
  if (html && !a.csp.enforced && metaSkipped.count === 0) {
    if (a.csp.reportOnly.length > 0)
      findings.push(
        webFinding('web_csp_report_only', posture, `${a.final.url} has only a report-only Content Security Policy.`),
      );
    else
      findings.push(
        webFinding('web_csp_missing', posture, `${a.final.url} is an HTML page without a Content Security Policy.`),
      );
  }
  if (a.csp.problems.length > 0)
    findings.push(
      webFinding(
        'web_csp_invalid',
        posture,
        `The Content Security Policy of ${a.final.url} has syntax problems.`,
        a.csp.problems,
      ),
    );
  if (a.csp.enforced && (a.csp.scripts.unsafeInline || a.csp.scripts.broadSources)) {
    findings.push(
      webFinding(
        'web_csp_unsafe_inline',
        posture,
        `The Content Security Policy of ${a.final.url} lets ${a.csp.scripts.unsafeInline ? 'inline scripts run' : 'scripts load from any source'}.`,
      ),
    );
  }
  if (a.csp.enforced && a.csp.scripts.unsafeEval)
    findings.push(
      webFinding('web_csp_unsafe_eval', posture, `The Content Security Policy of ${a.final.url} allows eval().`),
    );
  if (html && !a.framing.protected)
    findings.push(
      webFinding(
        'web_clickjacking_unprotected',
        posture,
        `${a.final.url} can be framed by any site (no X-Frame-Options DENY/SAMEORIGIN, no restrictive frame-ancestors).`,
        [`X-Frame-Options: ${a.framing.xFrameOptions ?? '(absent)'}`],
      ),
    );
  if (!a.nosniff.nosniff)
    findings.push(
      webFinding('web_nosniff_missing', posture, `${a.final.url} does not send X-Content-Type-Options: nosniff.`, [
        `X-Content-Type-Options: ${a.nosniff.raw ?? '(absent)'}`,
      ]),
    );
  if (a.referrer.leaksPath)
    findings.push(
      webFinding(
        'web_referrer_policy_unsafe',
        posture,
        `The referrer policy of ${a.final.url} is ${a.referrer.policy}: full URLs go to other sites.`,
        [`Referrer-Policy: ${a.referrer.raw}`],
      ),
    );
  if (a.cors.reflectedWithCredentials) {
    findings.push(
      webFinding(
        'web_cors_reflected_origin_credentials',
        posture,
        `${a.final.url} answers a CORS preflight from ${a.cors.preflight!.origin} with that origin and credentials allowed.`,
        [`Access-Control-Allow-Origin: ${a.cors.preflight!.allowOrigin}`, 'Access-Control-Allow-Credentials: true'],
      ),
    );
  } else if (a.cors.wildcard) {
    findings.push(
      webFinding('web_cors_wildcard', posture, `${a.final.url} allows every origin (Access-Control-Allow-Origin: *).`),
    );
  }
  for (const c of a.cookies) {
    const where = `cookie ${c.name} set by ${c.setBy}`;
    if (!c.secure)
      findings.push(webFinding('web_cookie_without_secure', posture, `The ${where} has no Secure attribute.`, [where]));
    if (c.sessionLike && !c.httpOnly)
      findings.push(
        webFinding(
          'web_cookie_session_without_httponly',
          posture,
          `The ${where} looks like a session cookie and has no HttpOnly attribute.`,
          [where],
        ),
      );
    if (c.sameSite === null)
      findings.push(
        webFinding('web_cookie_without_samesite', posture, `The ${where} has no SameSite attribute.`, [where]),
      );
    else if (c.sameSite === 'invalid' || (c.sameSite === 'none' && !c.secure))
      findings.push(
        webFinding(
          'web_cookie_samesite_invalid',
          posture,
          `The ${where} has ${c.sameSite === 'invalid' ? 'an invalid SameSite value' : 'SameSite=None without Secure'}.`,
          [where],
        ),
      );
    if (c.prefixValid === false)
      findings.push(
        webFinding(
          'web_cookie_prefix_violation',
          posture,
          `The ${where} breaks the rules of its ${c.prefix} prefix; browsers refuse it.`,
          [where],
        ),
      );
  }
  if (a.cookiesTruncated)
    limitations.push({
      code: 'cookies_truncated',
      message: 'More cookies were set than are reported; the first 100 were assessed.',
    });
  if (!e.preflight)
    limitations.push({
      code: 'cors_preflight_unanswered',
      message: 'The CORS preflight got no answer: whether the site reflects foreign origins is unknown.',
    });
  limitations.push({
    code: 'hsts_preload_list_not_configured',
    message:
      'No HSTS preload list is configured: preload membership is not checked (eligibility is reported from the header).',
  });

  const projection = {
    requestedUrl: e.url,
    finalUrl: a.final.url,
    status: a.final.status,
    contentType: a.final.contentType,
    certificateVerified: a.final.tlsVerified,
    chains: { http: chainSummary(e.http), https: chainSummary(e.https) },
    headers: {
      csp: {
        enforced: a.csp.enforced,
        source: a.csp.source,
        reportOnly: a.csp.reportOnly.length > 0,
        policies: a.csp.policies.map((p) => p.directives),
        reportOnlyPolicies: a.csp.reportOnly.map((p) => p.directives),
        problems: a.csp.problems,
        scripts: a.csp.scripts,
        objectSrcNone: a.csp.objectSrcNone,
        baseUriRestricted: a.csp.baseUriRestricted,
        frameAncestors: a.csp.frameAncestors,
        formActionRestricted: a.csp.formActionRestricted,
        upgradeInsecureRequests: a.csp.upgradeInsecureRequests,
        directives: a.csp.directiveNames,
      },
      hsts: { ...a.hsts, preloadEligible: hstsPreloadEligible(e, a), preloaded: null },
      framing: a.framing,
      contentTypeOptions: a.nosniff,
      referrerPolicy: a.referrer,
      permissionsPolicy: a.isolation.permissionsPolicy,
      crossOriginResourcePolicy: a.isolation.crossOriginResourcePolicy,
      crossOriginOpenerPolicy: a.isolation.crossOriginOpenerPolicy,
      crossOriginEmbedderPolicy: a.isolation.crossOriginEmbedderPolicy,
      cors: a.cors,
    },
    cookies: a.cookies,
    page: a.page,
    score: a.score,
  };
  const unobserved = [
    ...new Set([...(chainGap(e.https) ? POSTURE_FROM.https : []), ...(chainGap(e.http) ? POSTURE_FROM.http : [])]),
  ];
  const httpOk = e.http.outcome === 'response' || e.http.outcome === 'not_attempted';
  const httpsOk = e.https.outcome === 'response' || e.https.outcome === 'not_attempted';
  objects.push({
    type: 'web_posture',
    key: e.url,
    distance: 0,
    projection: {
      url: e.url,
      finalUrl: a.final.url,
      status: a.final.status,
      score: a.score?.score ?? null,
      grade: a.score?.grade ?? null,
      algorithm: a.score?.algorithm ?? null,
      // As in the job's result: the grader would not grade this reply (a 404…), so compare with care.
      observatoryWouldGrade: a.score?.observatoryWouldGrade ?? null,
      // A chain that failed for a reason not the target's: the facts it would have decided are
      // gaps (../kit/change-rules.ts UNOBSERVED), never a change of the site.
      ...(unobserved.length > 0 ? { [UNOBSERVED]: unobserved } : {}),
    },
  });
  relations.push({ from: posture, relation: 'discovered_from', to: ref('url', a.final.url) });
  return {
    status: httpOk && httpsOk ? 'completed' : 'partial',
    projection,
    objects,
    relations,
    findings: mergeFindings(findings),
    limitations,
    sources: [SOURCE],
  };
}

/** hstspreload.org's header and redirect requirements, as far as one response shows them. */
function hstsPreloadEligible(e: WebEvidence, a: WebAssessment): { eligible: boolean; unmet: string[] } {
  const unmet: string[] = [];
  if (!a.final.url.startsWith('https:') || a.final.tlsVerified === false)
    unmet.push('a valid certificate on the final https response');
  if (!a.hsts.valid) unmet.push('a valid Strict-Transport-Security header');
  if ((a.hsts.maxAge ?? 0) < 31_536_000) unmet.push('max-age of at least 31536000');
  if (!a.hsts.includeSubDomains) unmet.push('includeSubDomains');
  if (!a.hsts.preload) unmet.push('the preload directive');
  const first = e.http.hops[0];
  if (e.http.outcome === 'response' && !(first?.schemeChange === 'http_to_https' && !first.hostChange))
    unmet.push('http:// redirecting to https:// on the same host first');
  return { eligible: unmet.length === 0, unmet };
}
