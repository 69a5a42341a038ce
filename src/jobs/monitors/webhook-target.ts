// A webhook URL is a target like any other (STYLE.md: every receiver is a target): judged at
// creation (and at a PATCH of the URL) by the outbound guard's own rules, and again at every
// delivery attempt (the delivery worker's fetch goes through the guard: rebinding). At creation:
// the URL's form (src/net/url-policy.ts: no user info, no odd host forms), a port of the web's own
// (80, 443, 8080, 8443: src/net/passive-ports.ts — what the deliveries log says of any other
// port would make webhooks a port scanner), https unless every address of the host is inside
// ALLOW_PRIVATE_TARGETS, and every address allowed. A refusal is
// 400 invalid_request with `details.reason`; nothing is sent to the URL.
import { ApiError } from '../../contract/errors.ts';
import { inAllowList } from '../../net/address-policy.ts';
import { OutboundFetchError, OutboundRefusedError, type OutboundGuard } from '../../net/outbound-guard.ts';
import { checkUrl, URL_PROBLEM_TEXT } from '../../net/url-policy.ts';
import { isPassivePort, PASSIVE_PORTS } from '../../net/passive-ports.ts';

export type WebhookRefusal =
  | 'webhook_url_invalid'
  | 'webhook_scheme_not_allowed'
  | 'webhook_port_not_allowed'
  | 'webhook_target_not_allowed'
  | 'webhook_host_unresolvable';

function refuse(reason: WebhookRefusal, message: string): ApiError {
  return new ApiError('invalid_request', {
    message: `The webhook URL is refused: ${message}.`,
    details: { reason, issues: [{ path: 'webhook.url', message }] },
  });
}

/** Throws 400 invalid_request unless deliveries to `text` would be allowed now. Returns the URL. */
export async function assertWebhookTarget(guard: OutboundGuard, text: string): Promise<string> {
  const v = checkUrl(text);
  if (!v.ok) {
    const reason = v.problem === 'scheme_not_allowed' ? 'webhook_scheme_not_allowed' : 'webhook_url_invalid';
    throw refuse(reason, URL_PROBLEM_TEXT[v.problem]);
  }
  if (!isPassivePort(v.url)) {
    throw refuse('webhook_port_not_allowed', `webhooks are sent to ports ${PASSIVE_PORTS.join(', ')} only`);
  }
  const host = v.url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: string[];
  try {
    addresses = await guard.resolve(host, AbortSignal.timeout(10_000));
  } catch (err) {
    if (err instanceof OutboundRefusedError)
      throw refuse('webhook_target_not_allowed', 'it resolves to an address that may not be reached');
    const why =
      err instanceof OutboundFetchError && err.kind === 'host_not_found'
        ? 'the host has no address'
        : 'the host could not be resolved';
    throw refuse('webhook_host_unresolvable', why);
  }
  if (v.url.protocol === 'http:' && !addresses.every((a) => inAllowList(a, guard.allow))) {
    throw refuse('webhook_scheme_not_allowed', 'webhooks are sent over https (http only inside ALLOW_PRIVATE_TARGETS)');
  }
  return v.url.href;
}
