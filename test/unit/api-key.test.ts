// CONTRACT §2 key format: lsk_ + 32 base62 + _ + 6-char base62 CRC32, HMAC-SHA256 with a pepper,
// and a typo refused before any database read.
import { describe, expect, it } from 'vitest';
import { generateApiKey, hashApiKey, isWellFormedApiKey } from '../../src/auth/api-key.ts';
import { Authenticator } from '../../src/auth/authenticator.ts';
import type { Db } from '../../src/db/database.ts';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_RE = /^lsk_[0-9A-Za-z]{32}_[0-9A-Za-z]{6}$/;
const PEPPER_A = 'pepper-a-0123456789abcdefghijklmnopqrstuv';
const PEPPER_B = 'pepper-b-0123456789abcdefghijklmnopqrstuv';

/** A database on which any use at all fails the test. */
function untouchableDb(): { db: Db; touched: string[] } {
  const touched: string[] = [];
  const db = new Proxy(
    {},
    {
      get(_t, prop) {
        touched.push(String(prop));
        throw new Error(`database touched: ${String(prop)}`);
      },
      has(_t, prop) {
        touched.push(String(prop));
        throw new Error(`database touched: ${String(prop)}`);
      },
    },
  ) as unknown as Db;
  return { db, touched };
}

describe('generateApiKey', () => {
  it('has the CONTRACT §2 format and a valid checksum', () => {
    for (let i = 0; i < 200; i++) {
      const { key } = generateApiKey();
      expect(key).toMatch(KEY_RE);
      expect(key).toHaveLength(4 + 32 + 1 + 6);
      expect(isWellFormedApiKey(key)).toBe(true);
    }
  });

  it('the hint is the first 8 random characters (never the whole key)', () => {
    const { key, hint } = generateApiKey();
    expect(hint).toHaveLength(8);
    expect(hint).toBe(key.slice(4, 12));
    expect(hint).toMatch(/^[0-9A-Za-z]{8}$/);
  });

  it('is random: no repeats and every base62 character in use', () => {
    const keys = Array.from({ length: 2000 }, () => generateApiKey().key);
    expect(new Set(keys).size).toBe(keys.length);
    const seen = new Set(keys.flatMap((k) => [...k.slice(4, 36)]));
    expect(seen.size).toBe(62);
  });
});

describe('isWellFormedApiKey', () => {
  it('detects every single-character substitution in a sample of keys', () => {
    let checked = 0;
    for (let n = 0; n < 25; n++) {
      const { key } = generateApiKey();
      for (let pos = 0; pos < key.length; pos++) {
        for (const c of `${BASE62}_-`) {
          if (c === key[pos]) continue;
          const typo = key.slice(0, pos) + c + key.slice(pos + 1);
          if (isWellFormedApiKey(typo))
            throw new Error(`substitution at ${pos} (${key[pos]} → ${c}) not detected: ${typo}`);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(25 * 43 * 60);
  });

  it('detects transpositions of adjacent distinct characters', () => {
    for (let n = 0; n < 25; n++) {
      const { key } = generateApiKey();
      for (let pos = 4; pos < 35; pos++) {
        if (key[pos] === key[pos + 1]) continue;
        const swapped = key.slice(0, pos) + key[pos + 1] + key[pos] + key.slice(pos + 2);
        expect(isWellFormedApiKey(swapped)).toBe(false);
      }
    }
  });

  it.each([
    ['empty', ''],
    ['the prefix only', 'lsk_'],
    ['a wrong prefix', () => `lsx_${generateApiKey().key.slice(4)}`],
    ['upper-case prefix', () => `LSK_${generateApiKey().key.slice(4)}`],
    ['a truncated key', () => generateApiKey().key.slice(0, -1)],
    ['an extra character', () => `${generateApiKey().key}0`],
    ['surrounding whitespace', () => ` ${generateApiKey().key}`],
    ['a trailing newline', () => `${generateApiKey().key}\n`],
    [
      'a dropped separator',
      () => {
        const k = generateApiKey().key;
        return k.slice(0, 36) + k.slice(37);
      },
    ],
  ])('refuses %s', (_name, value) => {
    expect(isWellFormedApiKey(typeof value === 'function' ? value() : value)).toBe(false);
  });
});

describe('hashApiKey', () => {
  it('is an HMAC-SHA256: 32 bytes, deterministic per pepper, different across peppers and keys', () => {
    const { key } = generateApiKey();
    const a1 = hashApiKey(key, PEPPER_A);
    const a2 = hashApiKey(key, PEPPER_A);
    const b = hashApiKey(key, PEPPER_B);
    expect(a1).toHaveLength(32);
    expect(a1.equals(a2)).toBe(true);
    expect(a1.equals(b)).toBe(false);
    expect(a1.equals(hashApiKey(generateApiKey().key, PEPPER_A))).toBe(false);
  });

  it('never contains the key or its random part', () => {
    const { key } = generateApiKey();
    const h = hashApiKey(key, PEPPER_A);
    expect(h.toString('latin1')).not.toContain(key.slice(4, 36));
    expect(h.toString('hex')).not.toContain(Buffer.from(key).toString('hex'));
  });
});

describe('Authenticator.verify', () => {
  it.each([
    ['a malformed key', 'not-a-key'],
    ['an empty string', ''],
    [
      'a bad checksum',
      () => {
        const k = generateApiKey().key;
        return k.slice(0, -1) + (k.endsWith('0') ? '1' : '0');
      },
    ],
    [
      'one substituted random char',
      () => {
        const k = generateApiKey().key;
        return `lsk_${k[4] === 'a' ? 'b' : 'a'}${k.slice(5)}`;
      },
    ],
    ['a 10 KB string', 'lsk_'.padEnd(10_000, 'A')],
  ])('returns null for %s without touching the database', async (_name, value) => {
    const { db, touched } = untouchableDb();
    const auth = new Authenticator(db, PEPPER_A, 5000);
    await expect(auth.verify(typeof value === 'function' ? value() : value)).resolves.toBeNull();
    expect(touched).toEqual([]);
  });

  it('does touch the database for a well-formed key (so the check above is meaningful)', async () => {
    const { db, touched } = untouchableDb();
    const auth = new Authenticator(db, PEPPER_A, 5000);
    await expect(auth.verify(generateApiKey().key)).rejects.toThrow(/database touched/);
    expect(touched.length).toBeGreaterThan(0);
  });
});
