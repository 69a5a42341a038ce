// One delivery attempt of one event (Standard Webhooks; CONTRACT §14): POST of the event's fixed
// body to the monitor's URL through the outbound guard, signed with the monitor's secret(s) under
// the event's webhook-id and this attempt's timestamp. 2xx within 10 s is delivered; 410 disables
// the webhook; anything else is retried, a 429's or 503's Retry-After honoured within the
// schedule. Redirects are never followed (a 3xx is a failed attempt), plain http only inside
// ALLOW_PRIVATE_TARGETS, and the host is resolved and vetted again at every attempt (a name
// rebound to a refused address since creation receives nothing).
import {
  OutboundFetchError,
  OutboundRefusedError,
  type GuardedResponse,
  type OutboundGuard,
} from '../../net/outbound-guard.ts';
import { retryAfterSeconds } from './retry-schedule.ts';
import { signatureHeader } from './webhook-secrets.ts';

export const DELIVERY_TIMEOUT_MS = 10_000;
/** What is read of a receiver's answer: nothing of it is kept but its status. */
const RESPONSE_BYTES = 1024;

export type AttemptOutcome =
  | { kind: 'delivered'; statusCode: number }
  | { kind: 'gone'; statusCode: 410 }
  | { kind: 'failed'; statusCode: number | null; error: string; retryAfterSeconds?: number };

export interface AttemptRequest {
  url: string;
  webhookId: string;
  body: string;
  /** The current secret first, then the previous one while a rotation's overlap lasts. */
  secrets: readonly string[];
  signal?: AbortSignal;
  /** Clock (ms), for tests. */
  now?: () => number;
}

export async function deliverOnce(guard: OutboundGuard, req: AttemptRequest): Promise<AttemptOutcome> {
  const now = req.now ?? Date.now;
  const timestamp = Math.floor(now() / 1000);
  let res: GuardedResponse;
  try {
    res = await guard.fetch(req.url, {
      method: 'POST',
      body: req.body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': req.webhookId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(req.secrets, req.webhookId, timestamp, req.body),
      },
      redirects: 'return',
      plainHttp: 'allow-listed-only',
      timeoutMs: DELIVERY_TIMEOUT_MS,
      connectTimeoutMs: DELIVERY_TIMEOUT_MS,
      headersTimeoutMs: DELIVERY_TIMEOUT_MS,
      bodyIdleTimeoutMs: DELIVERY_TIMEOUT_MS,
      maxBytes: RESPONSE_BYTES,
      bodyOverflow: 'truncate',
      ...(req.signal ? { signal: req.signal } : {}),
    });
  } catch (err) {
    return { kind: 'failed', statusCode: null, error: failureText(err) };
  }
  const status = res.status;
  if (status >= 200 && status < 300) return { kind: 'delivered', statusCode: status };
  if (status === 410) return { kind: 'gone', statusCode: 410 };
  if (status >= 300 && status < 400)
    return { kind: 'failed', statusCode: status, error: `redirect not followed (${status})` };
  const wait = status === 429 || status === 503 ? retryAfterSeconds(res.headers['retry-after'], now()) : undefined;
  return {
    kind: 'failed',
    statusCode: status,
    error: `the receiver answered ${status}`,
    ...(wait !== undefined ? { retryAfterSeconds: wait } : {}),
  };
}

/** A short public text for the deliveries log: what happened, never an internal address or stack. */
function failureText(err: unknown): string {
  if (err instanceof OutboundRefusedError) {
    if (err.reason === 'scheme_not_allowed') return 'refused: http outside the allowed private targets';
    if (err.reason === 'target_not_allowed') return 'refused: the host resolves to an address that may not be reached';
    return `refused: ${err.reason}`;
  }
  if (err instanceof OutboundFetchError) {
    switch (err.kind) {
      case 'timeout':
        return `no answer within ${DELIVERY_TIMEOUT_MS / 1000} s${err.phase ? ` (${err.phase})` : ''}`;
      case 'host_not_found':
        return 'the host has no address';
      case 'dns_failure':
        return 'the host could not be resolved';
      case 'tls_failed':
        return `TLS failed${err.code ? `: ${err.code}` : ''}`;
      case 'connection_failed':
        return `connection failed${err.code ? `: ${err.code}` : ''}`;
      case 'aborted':
        return 'attempt abandoned (shutdown)';
      default:
        return err.kind.replaceAll('_', ' ');
    }
  }
  return 'attempt failed';
}
