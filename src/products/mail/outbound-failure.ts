// What an outbound-guard failure means for a mail lane. Some failures are facts about the target
// (its host name does not exist, its certificate is invalid, it redirected, it sent too much);
// the others (timeouts, refused or reset connections, DNS failures, our own address policy) say
// nothing about it and become limitations, never findings.
import { OutboundFetchError, OutboundRefusedError } from '../../net/outbound-errors.ts';

export type OutboundVerdict =
  | { kind: 'fact'; code: 'host_not_found' | 'certificate_invalid' | 'redirect' | 'too_large'; detail: string }
  | {
      kind: 'gap';
      code:
        | 'timeout'
        | 'unreachable'
        | 'connection_failed'
        | 'dns_failure'
        | 'target_not_allowed'
        | 'port_not_allowed'
        | 'aborted'
        | 'congested'
        | 'error';
      detail: string;
    };

const CERT = /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ALTNAME|certificate/i;

function causeCode(err: unknown): string {
  let e: unknown = err;
  for (let i = 0; i < 4 && e && typeof e === 'object'; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && CERT.test(code)) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return '';
}

export function judgeOutbound(err: unknown): OutboundVerdict {
  if (err instanceof OutboundRefusedError)
    return {
      kind: 'gap',
      code: err.reason === 'port_not_allowed' ? 'port_not_allowed' : 'target_not_allowed',
      detail: err.message,
    };
  if (!(err instanceof OutboundFetchError))
    return { kind: 'gap', code: 'error', detail: err instanceof Error ? err.message : String(err) };
  const cert = causeCode(err) || (CERT.test(err.message) ? err.message : '');
  switch (err.kind) {
    case 'host_not_found':
      return { kind: 'fact', code: 'host_not_found', detail: 'the host has no address (NXDOMAIN/NODATA)' };
    case 'too_many_redirects':
    case 'bad_redirect':
      return { kind: 'fact', code: 'redirect', detail: 'the server answered with a redirect' };
    case 'response_too_large':
    case 'headers_too_large':
      return { kind: 'fact', code: 'too_large', detail: err.message };
    case 'tls_failed':
      return { kind: 'fact', code: 'certificate_invalid', detail: cert || err.message };
    case 'timeout':
      return { kind: 'gap', code: 'timeout', detail: err.message };
    case 'unreachable':
      return { kind: 'gap', code: 'unreachable', detail: err.message };
    case 'aborted':
      return { kind: 'gap', code: 'aborted', detail: err.message };
    case 'congested':
      // Never attempted (our own queue): the lane gives the task back (src/net/slot-failure.ts).
      return { kind: 'gap', code: 'congested', detail: err.message };
    case 'dns_failure':
      return { kind: 'gap', code: 'dns_failure', detail: err.message };
    default:
      return cert
        ? { kind: 'fact', code: 'certificate_invalid', detail: cert }
        : { kind: 'gap', code: 'connection_failed', detail: err.message };
  }
}
