// lookup.web.v1's input and result. The input URL is judged as written (src/net/url-policy.ts):
// anything the guard would refuse by form is a 400 before anything is reserved.
import { z } from 'zod';
import { checkUrl, MAX_URL_LENGTH, URL_PROBLEM_TEXT } from '../../net/url-policy.ts';

export const webUrl = z
  .string()
  .max(MAX_URL_LENGTH, `at most ${MAX_URL_LENGTH} characters`)
  .superRefine((u, ctx) => {
    const v = checkUrl(u);
    if (!v.ok) ctx.addIssue({ code: 'custom', message: URL_PROBLEM_TEXT[v.problem] });
  })
  .describe(
    'An absolute http or https URL, at most 2,048 characters, without user information; a numeric host only in canonical dotted-decimal form',
  );

export const webInput = z.strictObject({
  url: webUrl,
  authorized: z
    .boolean()
    .default(false)
    .describe(
      'true asks for active work (TLS protocol enumeration): needs the active-work gates and the host in approved scope',
    ),
});
export type WebInput = z.infer<typeof webInput>;

const part = (what: string) =>
  z
    .record(z.string(), z.unknown())
    .nullable()
    .describe(
      `${what}; null when the lane produced no fact (see lanes and limitations). A lane that did not complete but measured the target (refused, stalled, legacy TLS only) says what happened instead`,
    );

export const webResult = z.object({
  url: z.string().describe('The normalised input URL'),
  http: part(
    'Both request chains (every hop), the final response, its security headers assessed, cookies, CORS and the Observatory-style score (docs/products/web.md)',
  ),
  tls: part(
    'Certificate (subject, SANs, issuer, validity), chain trust, host name match, negotiated protocol and cipher, stapled OCSP, SSL Labs-style caps as facts',
  ),
  tlsProtocols: part('TLS 1.0-1.3 accepted per address (authorized requests only)'),
});
export type WebResult = z.infer<typeof webResult>;
