// Public identifiers: prefix + 26 Crockford base32 chars of 128 random bits (CONTRACT §1).
import { randomBytes } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

export function base32Crockford128(bytes: Uint8Array): string {
  // 128 bits → 26 chars (the first carries 3 bits): left-pad to 130 bits.
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let out = '';
  for (let i = 0; i < 26; i++) {
    out = CROCKFORD[Number(n & 31n)]! + out;
    n >>= 5n;
  }
  return out;
}

export function publicId(prefix: 'job' | 'obj' | 'fnd' | 'ev' | 'req' | 'ws' | 'app' | 'key'): string {
  return `${prefix}_${base32Crockford128(randomBytes(16))}`;
}

export const PUBLIC_ID_RE = /^(job|obj|fnd|ev|req|ws|app|key)_[0-9A-HJKMNP-TV-Z]{26}$/;
