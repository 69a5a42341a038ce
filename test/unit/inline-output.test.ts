// Issue 45 item 2: every inline reply is at most INLINE_REPLY_MAX_BYTES of JSON, whatever its
// product answered (the dns lookup's own caps per type come first: dns-lookup.test.ts). Hostile
// results of every shape (long strings of control characters, long lists, deep objects) are cut,
// the cut said in the reply (`truncated`, limitation output_truncated, partial, coverage
// incomplete); a reply within the bound is sent as it is, byte for byte.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { INLINE_REPLY_MAX_BYTES, type Envelope } from '../../src/contract/envelope.ts';
import { boundInlineEnvelope } from '../../src/products/kit/inline-output.ts';

const envelope = (result: unknown): Envelope => ({
  product: 'lookup.ip.v1',
  status: 'completed',
  input: { value: '192.0.2.1' },
  result,
  lanes: [{ lane: 'address_registry', required: true, status: 'completed' }],
  sources: [],
  limitations: [],
  coverage: { complete: true },
  credits: { charged: 0 },
  requestId: 'req_test',
  completedAt: '2026-12-07T00:00:00.000Z',
});

describe('boundInlineEnvelope', () => {
  it('a reply within the bound is sent as it is', () => {
    const e = envelope({ names: ['a', 'b'], note: 'x'.repeat(1000) });
    const out = boundInlineEnvelope(e);
    expect(out.envelope).toBe(e);
    expect(out.text).toBe(JSON.stringify(e));
  });

  it('control characters written \\u00XX: 60 KB of them (360 KB of JSON) is cut and marked', () => {
    const e = envelope({ records: Array.from({ length: 240 }, () => ({ data: '\u0001'.repeat(250) })) });
    expect(Buffer.byteLength(JSON.stringify(e))).toBeGreaterThan(300_000);
    const out = boundInlineEnvelope(e);
    expect(Buffer.byteLength(out.text)).toBeLessThanOrEqual(INLINE_REPLY_MAX_BYTES);
    expect(JSON.parse(out.text)).toEqual(out.envelope);
    expect(out.envelope).toMatchObject({ status: 'partial', coverage: { complete: false } });
    expect(out.envelope.limitations.map((l) => l.code)).toEqual(['output_truncated']);
    expect((out.envelope.result as { truncated?: string[] }).truncated).toEqual(['records']);
  });

  it('any result, however large or deep: at most INLINE_REPLY_MAX_BYTES', () => {
    const leaf = fc.oneof(
      fc.string({ maxLength: 20 }),
      fc.integer({ min: 1, max: 40_000 }).map((n) => '\u0007'.repeat(n)),
      fc.integer(),
    );
    const tree = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        leaf,
        fc.array(tie('node'), { maxLength: 12 }),
        fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), tie('node'), { maxKeys: 8 }),
      ),
    })).node;
    fc.assert(
      fc.property(fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), tree, { maxKeys: 6 }), (result) => {
        const out = boundInlineEnvelope(envelope(result));
        expect(Buffer.byteLength(out.text)).toBeLessThanOrEqual(INLINE_REPLY_MAX_BYTES);
      }),
      { numRuns: 20 },
    );
  });
});
