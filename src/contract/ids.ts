// Public identifiers: prefix + 26 Crockford base32 chars of 128 random bits (CONTRACT §1).
import { randomFillSync } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** 128 bits → 26 chars, most significant first; the first char carries the top 3 bits. */
export function base32Crockford128(bytes: Uint8Array): string {
  let out = CROCKFORD[(bytes[0]! >> 5) & 0x07]!;
  let acc = bytes[0]! & 0x1f;
  let bits = 5;
  for (let i = 1; i < 16; i++) {
    acc = (acc << 8) | bytes[i]!;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += CROCKFORD[(acc >> bits) & 0x1f];
    }
    acc &= (1 << bits) - 1;
  }
  return out;
}

// One getrandom call per 256 ids instead of one per id: ids are minted on every request.
const pool = Buffer.allocUnsafe(16 * 256);
let offset = pool.length;

function random16(): Uint8Array {
  if (offset >= pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const out = pool.subarray(offset, offset + 16);
  offset += 16;
  return out;
}

export function publicId(
  prefix: 'job' | 'obj' | 'fnd' | 'ev' | 'req' | 'ws' | 'app' | 'key' | 'mon' | 'msg' | 'sup',
): string {
  return `${prefix}_${base32Crockford128(random16())}`;
}

export const PUBLIC_ID_RE = /^(job|obj|fnd|ev|req|ws|app|key|mon|msg|sup)_[0-9A-HJKMNP-TV-Z]{26}$/;
