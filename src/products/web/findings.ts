// The web product's finding codes, declared once: the checks build findings from these rows,
// src/products/findings-catalog.ts gathers them and docs/findings.md lists them (drift-tested).
// Every row says when it is raised and what never raises it: a chain or handshake that did not
// happen (timeout, refusal, DNS failure) is a lane status and a limitation, never one of these.
import type { FindingOut, ObjectRef } from '../../contract/tasks.ts';
import type { FindingKind } from '../domain/findings.ts';

const k = (code: string, severity: FindingKind['severity'], confidence: FindingKind['confidence'], title: string, description: string): FindingKind =>
  ({ code, severity, confidence, title, description });

export const webFindings = {
  web_https_redirect_missing: k('web_https_redirect_missing', 'medium', 'confirmed', 'HTTP is served without a redirect to HTTPS',
    'The http:// URL answered with a final response over plain HTTP: no hop of its chain went to https. Never raised when the http chain failed, timed out, was refused or was not attempted (explicit port).'),
  web_https_not_offered: k('web_https_not_offered', 'medium', 'firm', 'No HTTPS service',
    'The https:// URL\'s first connection was actively refused (TCP reset) while the http:// URL answered. Never raised on a timeout, a DNS failure or a refused target.'),
  web_redirect_to_http: k('web_redirect_to_http', 'medium', 'confirmed', 'Redirect from HTTPS to HTTP',
    'A redirect of either chain goes from an https URL to an http one (a downgrade a network attacker can keep).'),
  web_redirect_to_disallowed_address: k('web_redirect_to_disallowed_address', 'medium', 'confirmed', 'Redirect to a private or reserved address',
    'A redirect Location leads to a host whose address is loopback, private, link-local, metadata or otherwise reserved. The hop was refused by the outbound guard and never fetched. Not raised when the input URL itself is refused (that is a lane status).'),
  web_redirect_loop: k('web_redirect_loop', 'low', 'confirmed', 'Redirect loop',
    'A chain redirects back to a URL it already visited.'),
  web_hsts_missing: k('web_hsts_missing', 'medium', 'confirmed', 'No HSTS on HTTPS',
    'The final https response, with a verified certificate, carries no Strict-Transport-Security header. Never raised when the https chain produced no response or its certificate did not verify.'),
  web_hsts_weak: k('web_hsts_weak', 'low', 'confirmed', 'HSTS is invalid or short',
    'Strict-Transport-Security is present on the final https response but malformed (RFC 6797 §6.1) or its max-age is under 180 days (15,552,000 s).'),
  web_csp_missing: k('web_csp_missing', 'medium', 'confirmed', 'No Content Security Policy',
    'The final response is an HTML page with no enforced Content-Security-Policy (header or <meta>) and no report-only policy either.'),
  web_csp_report_only: k('web_csp_report_only', 'low', 'confirmed', 'CSP is report-only',
    'The final HTML response carries only Content-Security-Policy-Report-Only: violations are reported, nothing is blocked.'),
  web_csp_invalid: k('web_csp_invalid', 'medium', 'confirmed', 'CSP has syntax errors',
    'A Content-Security-Policy (enforced or report-only) repeats a directive (browsers ignore the repeat) or names a directive CSP does not define (e.g. a typo): the policy is not what it looks like.'),
  web_csp_unsafe_inline: k('web_csp_unsafe_inline', 'medium', 'confirmed', 'CSP allows inline or arbitrary scripts',
    'Every enforced policy lets scripts run inline (\'unsafe-inline\' without a nonce or hash), from any host or scheme (*, https:, data:…), or does not restrict scripts at all.'),
  web_csp_unsafe_eval: k('web_csp_unsafe_eval', 'low', 'confirmed', 'CSP allows eval',
    'Every enforced policy allows \'unsafe-eval\' (or does not restrict scripts).'),
  web_clickjacking_unprotected: k('web_clickjacking_unprotected', 'medium', 'confirmed', 'Page can be framed by any site',
    'The final HTML response has neither X-Frame-Options DENY/SAMEORIGIN nor a CSP frame-ancestors that excludes other sites.'),
  web_nosniff_missing: k('web_nosniff_missing', 'low', 'confirmed', 'X-Content-Type-Options: nosniff missing',
    'The final response has no X-Content-Type-Options: nosniff (absent or another value).'),
  web_referrer_policy_unsafe: k('web_referrer_policy_unsafe', 'low', 'confirmed', 'Referrer policy leaks full URLs',
    'The effective Referrer-Policy (header or <meta name=referrer>) is unsafe-url or no-referrer-when-downgrade: full URLs, query strings included, go to other sites.'),
  web_cors_wildcard: k('web_cors_wildcard', 'info', 'confirmed', 'CORS open to every origin',
    'Access-Control-Allow-Origin: * on the page or on the CORS preflight: any site may read the response (without credentials).'),
  web_cors_reflected_origin_credentials: k('web_cors_reflected_origin_credentials', 'high', 'confirmed', 'CORS reflects any origin with credentials',
    'The CORS preflight sent with a foreign Origin came back with that Origin in Access-Control-Allow-Origin and Access-Control-Allow-Credentials: true: any site can make credentialed reads. Never raised when the preflight got no answer.'),
  web_cookie_without_secure: k('web_cookie_without_secure', 'medium', 'confirmed', 'Cookie without Secure',
    'A response of the chain sets a cookie without the Secure attribute: it also travels over plain HTTP.'),
  web_cookie_session_without_httponly: k('web_cookie_session_without_httponly', 'medium', 'tentative', 'Session cookie readable by scripts',
    'A cookie whose name suggests a session or login (contains sess, login, auth or token, or is sid) is set without HttpOnly. Tentative: the name is a heuristic.'),
  web_cookie_without_samesite: k('web_cookie_without_samesite', 'low', 'confirmed', 'Cookie without SameSite',
    'A cookie is set without a SameSite attribute (browsers differ in the default they apply).'),
  web_cookie_samesite_invalid: k('web_cookie_samesite_invalid', 'low', 'confirmed', 'Cookie with an invalid SameSite',
    'A cookie\'s SameSite is not Strict, Lax or None, or is None without Secure (browsers reject that cookie).'),
  web_cookie_prefix_violation: k('web_cookie_prefix_violation', 'medium', 'confirmed', 'Cookie breaks its __Host-/__Secure- prefix',
    'A __Secure- cookie without Secure or set over http, or a __Host- cookie without Secure, with a Domain, or with a Path other than / (RFC 6265bis §4.1.3): browsers refuse it.'),
  tls_certificate_untrusted: k('tls_certificate_untrusted', 'high', 'confirmed', 'Certificate chain not trusted',
    'The certificate does not verify to a trusted root (Node\'s root store plus NODE_EXTRA_CA_CERTS): unknown issuer, incomplete chain… Expiry and self-signed certificates have their own codes. Never raised when no handshake completed.'),
  tls_certificate_self_signed: k('tls_certificate_self_signed', 'high', 'confirmed', 'Self-signed certificate',
    'The server presents a self-signed certificate (or a chain ending in an untrusted self-signed root).'),
  tls_certificate_expired: k('tls_certificate_expired', 'high', 'confirmed', 'Certificate expired',
    'The leaf certificate\'s notAfter lies in the past.'),
  tls_certificate_not_yet_valid: k('tls_certificate_not_yet_valid', 'medium', 'confirmed', 'Certificate not yet valid',
    'The leaf certificate\'s notBefore lies in the future.'),
  tls_certificate_expiring_soon: k('tls_certificate_expiring_soon', 'medium', 'confirmed', 'Certificate expires within 30 days',
    'The leaf certificate is valid now and its notAfter is less than 30 days away.'),
  tls_hostname_mismatch: k('tls_hostname_mismatch', 'high', 'confirmed', 'Certificate does not match the host name',
    'The leaf certificate is not valid for the URL\'s host name (RFC 6125 as Node checks it), whether or not the chain is trusted.'),
  tls_weak_key: k('tls_weak_key', 'medium', 'confirmed', 'Weak certificate key',
    'The leaf key is RSA or DSA under 2048 bits, or an elliptic curve under 224 bits.'),
  tls_weak_signature: k('tls_weak_signature', 'medium', 'confirmed', 'Weak certificate signature',
    'The leaf certificate is signed with SHA-1 or MD5.'),
  tls_legacy_protocol_negotiated: k('tls_legacy_protocol_negotiated', 'medium', 'confirmed', 'Only TLS 1.0 or 1.1 could be negotiated',
    'A handshake offering TLS 1.2 and 1.3 failed and one offering TLS 1.0–1.1 succeeded: the server speaks only obsolete protocols (RFC 8996).'),
  tls_legacy_protocol_enabled: k('tls_legacy_protocol_enabled', 'medium', 'confirmed', 'TLS 1.0 or 1.1 accepted',
    'tls_protocols (authorized requests): a handshake limited to TLS 1.0 or to TLS 1.1 succeeded on an address of the host (RFC 8996 deprecates both). Never raised when that handshake timed out or the address was refused.'),
  tls13_not_supported: k('tls13_not_supported', 'low', 'confirmed', 'TLS 1.3 not supported',
    'tls_protocols (authorized requests): a handshake limited to TLS 1.3 was refused by the server while another version succeeded. Never raised when every version failed or timed out.'),
} as const satisfies Record<string, FindingKind>;

export type WebFindingCode = keyof typeof webFindings;

export function webFinding(code: WebFindingCode, object: ObjectRef, summary: string, evidence: string[] = []): FindingOut {
  const f = webFindings[code];
  return {
    code: f.code, severity: f.severity, confidence: f.confidence, title: f.title, summary: summary.slice(0, 1000), object,
    ...(evidence.length ? { evidence: evidence.slice(0, 20).map((e) => ({ summary: e.slice(0, 500) })) } : {}),
  };
}
