import { describe, expect, it } from 'vitest';
import {
  CURSOR_TTL_SECONDS,
  createCursorCodec,
  createEvidenceRefs,
  type CursorPosition,
  type CursorScope,
} from '../../src/jobs/cursor.ts';

const SECRET = 'unit-cursor-secret-0123456789abcdefghijklmnopqrstuv';
const OTHER = 'unit-cursor-secret-other-0123456789abcdefghijklmnop';
const T0 = Date.UTC(2026, 10, 22, 10, 0, 0);

const scope: CursorScope = { workspaceId: 7, jobId: 123456789, route: 'findings', filter: 'high' };
const pos: CursorPosition = { ...scope, lastSeq: 4242 };

function codec(opts: { secret?: string; previousSecret?: string; at?: number } = {}) {
  return createCursorCodec({
    secret: opts.secret ?? SECRET,
    previousSecret: opts.previousSecret,
    now: () => opts.at ?? T0,
  });
}

describe('page cursors', () => {
  it('round-trips the position and is opaque (no id or seq readable in it)', () => {
    const c = codec();
    const token = c.encode(pos);
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(token.length).toBeLessThan(120);
    expect(c.decode(token, scope)).toBe(4242);
    const raw = Buffer.from(token, 'base64url');
    for (const needle of ['123456789', 'high', 'findings']) expect(raw.includes(Buffer.from(needle))).toBe(false);
    expect(raw.includes(Buffer.from([0x07, 0x5b, 0xcd, 0x15]))).toBe(false); // 123456789 big-endian
  });

  it('handles the extremes: seq 0, seq 2^32-1, large ids, empty filter', () => {
    const c = codec();
    const s: CursorScope = { workspaceId: 2 ** 53 - 1, jobId: 2 ** 40 + 3, route: 'results', filter: '' };
    expect(c.decode(c.encode({ ...s, lastSeq: 0 }), s)).toBe(0);
    expect(c.decode(c.encode({ ...s, lastSeq: 2 ** 32 - 1 }), s)).toBe(2 ** 32 - 1);
  });

  it('uses a fresh IV: two encodings of one position differ and both decode', () => {
    const c = codec();
    const a = c.encode(pos);
    const b = c.encode(pos);
    expect(a).not.toBe(b);
    expect(c.decode(a, scope)).toBe(4242);
    expect(c.decode(b, scope)).toBe(4242);
  });

  it('rejects every single-bit flip of the token bytes', () => {
    const c = codec();
    const raw = Buffer.from(c.encode(pos), 'base64url');
    let checked = 0;
    for (let i = 0; i < raw.length; i++) {
      for (let bit = 0; bit < 8; bit++) {
        const t = Buffer.from(raw);
        t[i]! ^= 1 << bit;
        expect(c.decode(t.toString('base64url'), scope), `byte ${i} bit ${bit}`).toBeNull();
        checked++;
      }
    }
    expect(checked).toBe(raw.length * 8);
  });

  it('rejects every single-character change of the token string (no non-canonical spelling slips through)', () => {
    const c = codec();
    const token = c.encode(pos);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    for (let i = 0; i < token.length; i++) {
      for (const ch of alphabet) {
        if (ch === token[i]) continue;
        const t = token.slice(0, i) + ch + token.slice(i + 1);
        expect(c.decode(t, scope), `position ${i} → ${ch}`).toBeNull();
      }
    }
  });

  it('rejects every truncation and extension, and junk', () => {
    const c = codec();
    const token = c.encode(pos);
    for (let n = 0; n < token.length; n++) expect(c.decode(token.slice(0, n), scope), `first ${n} chars`).toBeNull();
    expect(c.decode(`${token}A`, scope)).toBeNull();
    expect(c.decode(`${token}AAAA`, scope)).toBeNull();
    expect(c.decode(`${token}=`, scope)).toBeNull();
    const standard = Buffer.from(token, 'base64url').toString('base64');
    if (standard !== token) expect(c.decode(standard, scope)).toBeNull();
    for (const junk of ['', ' ', 'null', '0', 'a'.repeat(5000), '%00', '../../etc', `${token} `])
      expect(c.decode(junk, scope)).toBeNull();
  });

  it('is bound to workspace, job, route and filter', () => {
    const c = codec();
    const token = c.encode(pos);
    expect(c.decode(token, { ...scope, workspaceId: 8 })).toBeNull();
    expect(c.decode(token, { ...scope, jobId: 123456788 })).toBeNull();
    expect(c.decode(token, { ...scope, route: 'results' })).toBeNull();
    expect(c.decode(token, { ...scope, filter: '' })).toBeNull();
    expect(c.decode(token, { ...scope, filter: 'critical' })).toBeNull();
    expect(c.decode(token, { ...scope, filter: 'High' })).toBeNull();
  });

  it('expires after 24 h', () => {
    const token = codec().encode(pos);
    expect(codec({ at: T0 + (CURSOR_TTL_SECONDS - 1) * 1000 }).decode(token, scope)).toBe(4242);
    expect(codec({ at: T0 + CURSOR_TTL_SECONDS * 1000 }).decode(token, scope)).toBeNull();
    expect(codec({ at: T0 + 30 * 86_400_000 }).decode(token, scope)).toBeNull();
  });

  it('rejects a token sealed with another secret', () => {
    const foreign = codec({ secret: OTHER }).encode(pos);
    expect(codec().decode(foreign, scope)).toBeNull();
  });

  it('accepts cursors of the previous secret during a rotation, and issues only with the new one', () => {
    const old = codec({ secret: OTHER }).encode(pos);
    const rotated = codec({ secret: SECRET, previousSecret: OTHER });
    expect(rotated.decode(old, scope)).toBe(4242);
    const fresh = rotated.encode(pos);
    expect(codec({ secret: SECRET }).decode(fresh, scope)).toBe(4242);
    expect(codec({ secret: OTHER }).decode(fresh, scope)).toBeNull();
    // After the rotation ends, the old secret's cursors are refused.
    expect(codec({ secret: SECRET }).decode(old, scope)).toBeNull();
  });
});

describe('evidence references', () => {
  it('are stable, keyed, distinct per owner and index, and shaped ev_ + 26 base32', () => {
    const a = createEvidenceRefs(SECRET);
    const b = createEvidenceRefs(SECRET);
    const other = createEvidenceRefs(OTHER);
    const owner = 'obj_01HZY3M8W6Q5V4T2R1P0N9K8J7';
    expect(a(owner, 0)).toMatch(/^ev_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(a(owner, 0)).toBe(b(owner, 0));
    expect(a(owner, 0)).not.toBe(a(owner, 1));
    expect(a(owner, 0)).not.toBe(a('obj_01HZY3M8W6Q5V4T2R1P0N9K8J8', 0));
    expect(a(owner, 0)).not.toBe(other(owner, 0));
  });
});
