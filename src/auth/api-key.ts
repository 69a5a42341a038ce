// API key format (CONTRACT §2): lsk_ + 32 base62 random chars + _ + 6-char base62 CRC32 of the
// rest. The checksum lets a typo or a truncated paste be refused without touching the database.
import { createHmac, randomInt } from 'node:crypto';
import { crc32 } from 'node:zlib';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_RE = /^lsk_([0-9A-Za-z]{32})_([0-9A-Za-z]{6})$/;

function base62Fixed(n: number, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = BASE62[n % 62]! + out;
    n = Math.floor(n / 62);
  }
  return out;
}

function checksum(body: string): string {
  return base62Fixed(crc32(body), 6);
}

export function generateApiKey(): { key: string; hint: string } {
  let random = '';
  for (let i = 0; i < 32; i++) random += BASE62[randomInt(62)];
  const body = `lsk_${random}`;
  return { key: `${body}_${checksum(body)}`, hint: random.slice(0, 8) };
}

/** Syntactic check including the checksum; false means "not a key", no database read needed. */
export function isWellFormedApiKey(key: string): boolean {
  const m = KEY_RE.exec(key);
  if (!m) return false;
  return checksum(`lsk_${m[1]}`) === m[2];
}

export function hashApiKey(key: string, pepper: string): Buffer {
  return createHmac('sha256', pepper).update(key).digest();
}
