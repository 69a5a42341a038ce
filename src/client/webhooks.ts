// For receivers of monitor events (CONTRACT §14, Standard Webhooks): verifyWebhook checks that a
// request came from the service with the monitor's secret and is fresh, and returns the event.
//
//   const event = verifyWebhook(process.env.LSS_WEBHOOK_SECRET!, req.headers, rawBody);
//
// `body` must be the raw bytes as received (re-serialising parsed JSON changes them). The
// signature is v1 = base64(HMAC-SHA256(key, "{webhook-id}.{webhook-timestamp}.{body}")), the key
// being the base64 after `whsec_`; during a secret rotation the header carries two signatures,
// space-separated, and either verifies. Comparison is constant-time; a timestamp further than
// `toleranceSeconds` (default 300) from now is refused, so a captured request cannot be replayed
// later. Self-contained: nothing of the service's code runs in a receiver.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { MonitorEvent } from './types.ts';

export interface VerifyOptions {
  /** How far webhook-timestamp may be from now, seconds (default 300). */
  toleranceSeconds?: number;
  /** Now, in ms since the epoch (tests). */
  now?: number;
}

export type WebhookErrorReason =
  | 'missing_headers'
  | 'bad_timestamp'
  | 'timestamp_out_of_tolerance'
  | 'bad_signature'
  | 'bad_secret'
  | 'bad_body';

export class LssWebhookError extends Error {
  readonly reason: WebhookErrorReason;
  constructor(reason: WebhookErrorReason, message: string) {
    super(message);
    this.name = 'LssWebhookError';
    this.reason = reason;
  }
}

/** A fetch Headers, Node's IncomingHttpHeaders, or a plain record (names in any case). */
export type WebhookHeaders = { get(name: string): string | null } | Record<string, string | string[] | undefined>;

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const rec = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(rec).find((k) => k.toLowerCase() === name);
  const v = key === undefined ? undefined : rec[key];
  return Array.isArray(v) ? v[0] : v;
}

/** A verified request: its event, and the webhook-id to de-duplicate by. */
export interface VerifiedWebhook {
  /**
   * The same on every delivery attempt of one event, and on a captured request replayed within
   * the tolerance (which verifies, being the same bytes): keep the ids seen for the tolerance
   * window and answer 2xx without acting again on one already seen.
   */
  webhookId: string;
  /** webhook-timestamp, unix seconds. */
  timestamp: number;
  event: MonitorEvent;
}

/** Verifies a webhook request and returns its event; throws LssWebhookError otherwise. */
export function verifyWebhook(
  secret: string,
  headers: WebhookHeaders,
  body: string | Uint8Array,
  opts: VerifyOptions = {},
): MonitorEvent {
  return verifyWebhookRequest(secret, headers, body, opts).event;
}

/** verifyWebhook, with the webhook-id receivers de-duplicate by (a replay within the tolerance verifies). */
export function verifyWebhookRequest(
  secret: string,
  headers: WebhookHeaders,
  body: string | Uint8Array,
  opts: VerifyOptions = {},
): VerifiedWebhook {
  const id = header(headers, 'webhook-id');
  const ts = header(headers, 'webhook-timestamp');
  const sigs = header(headers, 'webhook-signature');
  if (!id || !ts || !sigs) {
    throw new LssWebhookError('missing_headers', 'webhook-id, webhook-timestamp and webhook-signature are required');
  }
  if (!/^\d{1,12}$/.test(ts)) throw new LssWebhookError('bad_timestamp', 'webhook-timestamp is not unix seconds');
  const tolerance = opts.toleranceSeconds ?? 300;
  const nowSeconds = Math.floor((opts.now ?? Date.now()) / 1000);
  if (Math.abs(nowSeconds - Number(ts)) > tolerance) {
    throw new LssWebhookError('timestamp_out_of_tolerance', `webhook-timestamp is more than ${tolerance} s from now`);
  }
  const keyText = secret.startsWith('whsec_') ? secret.slice(6) : secret;
  const key = Buffer.from(keyText, 'base64');
  if (key.length === 0) throw new LssWebhookError('bad_secret', 'the secret is not a whsec_ secret');
  const raw = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body);
  const expected = createHmac('sha256', key).update(`${id}.${ts}.`).update(raw).digest();
  let ok = false;
  for (const part of sigs.split(' ')) {
    const comma = part.indexOf(',');
    if (comma < 0 || part.slice(0, comma) !== 'v1') continue;
    const given = Buffer.from(part.slice(comma + 1), 'base64');
    // Every candidate is compared (no early exit), each in constant time.
    if (given.length === expected.length && timingSafeEqual(given, expected)) ok = true;
  }
  if (!ok) throw new LssWebhookError('bad_signature', 'no webhook-signature matches the secret');
  try {
    return { webhookId: id, timestamp: Number(ts), event: JSON.parse(raw.toString('utf8')) as MonitorEvent };
  } catch {
    throw new LssWebhookError('bad_body', 'the body is not JSON');
  }
}
