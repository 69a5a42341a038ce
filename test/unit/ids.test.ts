import { describe, expect, it } from 'vitest';
import { base32Crockford128, publicId, PUBLIC_ID_RE } from '../../src/contract/ids.ts';

/** Reference encoding through BigInt, independent of the fast path. */
function reference(bytes: Uint8Array): string {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let out = '';
  for (let i = 0; i < 26; i++) {
    out = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'[Number(n & 31n)] + out;
    n >>= 5n;
  }
  return out;
}

describe('public ids', () => {
  it('encodes 128 bits exactly like the reference', () => {
    const samples = [
      new Uint8Array(16),
      new Uint8Array(16).fill(0xff),
      Uint8Array.from({ length: 16 }, (_, i) => i * 17),
    ];
    for (let i = 0; i < 200; i++) samples.push(crypto.getRandomValues(new Uint8Array(16)));
    for (const s of samples) expect(base32Crockford128(s)).toBe(reference(s));
    expect(base32Crockford128(new Uint8Array(16).fill(0xff))).toBe('7ZZZZZZZZZZZZZZZZZZZZZZZZZ');
  });

  it('mints well-formed, distinct ids across pool refills', () => {
    const ids = new Set(Array.from({ length: 2000 }, () => publicId('req')));
    expect(ids.size).toBe(2000);
    for (const id of ids) expect(id).toMatch(PUBLIC_ID_RE);
  });
});
