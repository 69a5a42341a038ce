// Implicit TLS on port 465 for an MX host that offers no STARTTLS (RFC 8314 §3.3): probed on the
// same address, after the port-25 session ended `no_starttls`, through the outbound guard. A fact
// beside the verdict: relaying MTAs deliver on port 25 only (RFC 5321, RFC 3207), so TLS on the
// submissions port never makes up for missing STARTTLS (smtp_starttls_missing is still raised;
// smtp_implicit_tls_only says what 465 offers). A timeout or refusal on 465 is a state of the fact,
// not a gap of the lane: the lane's question, STARTTLS on 25, was answered.
import type { OutboundGuard } from '../../net/outbound-guard.ts';
import { implicitTlsProbe, type SessionResult, type SmtpLimits } from '../../smtp/smtp-session.ts';
import type { SmtpProjection } from './schema.ts';

type ImplicitTls = SmtpProjection['hosts'][number]['sessions'][number]['implicitTls'];

export async function implicitTlsFor(
  guard: OutboundGuard,
  host: string,
  sessions: readonly SessionResult[],
  limits: SmtpLimits,
  signal: AbortSignal,
): Promise<ImplicitTls[]> {
  return Promise.all(
    sessions.map(async (s): Promise<ImplicitTls> => {
      if (s.state !== 'no_starttls') return null;
      const r = await implicitTlsProbe(guard, { host, address: s.address }, { limits, signal });
      return {
        state: r.state,
        banner: r.banner,
        protocol: r.tls?.protocol ?? null,
        cipher: r.tls?.cipher?.standardName ?? r.tls?.cipher?.name ?? null,
        chainTrusted: r.tls?.chainTrusted ?? null,
        trustError: r.tls?.trustError ?? null,
        hostnameMatch: r.tls?.hostnameMatch ?? null,
        detail: r.detail,
      };
    }),
  );
}

export function implicitTlsEvidence(t: ImplicitTls): string[] {
  if (!t) return [];
  if (t.state !== 'tls') return [`port 465 (implicit TLS): ${t.state.replace(/_/g, ' ')}`];
  return [
    `port 465 (implicit TLS): ${t.protocol}, certificate ${t.chainTrusted ? 'trusted' : `not trusted (${t.trustError ?? 'unknown issuer'})`}${t.hostnameMatch === false ? ', not valid for the host name' : ''}; not used by relaying MTAs`,
  ];
}
