// What an inline reply may be. A lookup answered in the request (mac, phone, ip, dns) costs no
// credit, and its reply is kept in Redis for IDEMPOTENCY_TTL_HOURS to be replayed, so its size is
// what a tenant may make the service hold for nothing: a name with 64 KiB TXT sets (control bytes
// written as \u00XX, six characters each) made 1-2 MB replies. Every inline envelope passes
// through boundInlineEnvelope (jobs/admission/admit-product.ts) after its product's own caps (the
// dns lookup's per type): past INLINE_REPLY_MAX_BYTES of JSON its result is cut as a stored
// projection is (./stored-output.ts: field caps tightening in steps, the holders marked
// `truncated: [fields]`, as a last resort `{ "truncated": ["projection"], "omittedBytes": n }`),
// the limitation `output_truncated` says so, and the envelope is `partial`, coverage incomplete:
// a cut answer is never a complete one. One serialisation in the common case.
import { INLINE_REPLY_MAX_BYTES, type Envelope } from '../../contract/envelope.ts';
import type { Limitation } from '../../contract/lanes.ts';
import { OUTPUT_TRUNCATED, boundProjection } from './stored-output.ts';

/** Limitations kept in a cut reply, and the characters of each message. */
const CUT_LIMITATIONS = { items: 50, chars: 1024 } as const;

export const INLINE_TRUNCATED: Limitation = {
  code: OUTPUT_TRUNCATED,
  message: `The answer was longer than an inline reply may be (${INLINE_REPLY_MAX_BYTES / 1024} KiB of JSON) and was cut; the objects that held what was cut list it under "truncated".`,
};

/** The envelope and its JSON text, the text at most INLINE_REPLY_MAX_BYTES whatever the product answered. */
export function boundInlineEnvelope(envelope: Envelope): { envelope: Envelope; text: string } {
  const text = JSON.stringify(envelope);
  // Bytes are at most three per UTF-16 unit: most replies need no byte count at all.
  if (text.length * 3 <= INLINE_REPLY_MAX_BYTES || Buffer.byteLength(text) <= INLINE_REPLY_MAX_BYTES)
    return { envelope, text };
  const limitations = [
    ...envelope.limitations
      .filter((l) => l.code !== OUTPUT_TRUNCATED)
      .slice(0, CUT_LIMITATIONS.items)
      .map((l) => ({ code: l.code, message: l.message.slice(0, CUT_LIMITATIONS.chars) })),
    INLINE_TRUNCATED,
  ];
  const shell: Envelope = { ...envelope, status: 'partial', coverage: { complete: false }, result: null, limitations };
  const room = INLINE_REPLY_MAX_BYTES - Buffer.byteLength(JSON.stringify(shell));
  const result =
    envelope.result !== null && typeof envelope.result === 'object' && !Array.isArray(envelope.result)
      ? boundProjection(envelope.result as Record<string, unknown>, Math.max(0, room), () => {})
      : { truncated: ['result'] };
  const cut = { ...shell, result };
  return { envelope: cut, text: JSON.stringify(cut) };
}
