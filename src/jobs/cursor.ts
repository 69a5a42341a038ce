// Page cursors (CONTRACT §10) and keyed evidence references.
//
// A cursor is a keyset position: the last `seq` a client has been given on one view of one job.
// It carries internal ids (workspace, job), so it is ENCRYPTED, not merely signed:
//
//   token  = base64url( header ‖ iv ‖ ciphertext ‖ tag )
//   header = format (1 byte, = 1) ‖ keyId (4 bytes)         — authenticated as GCM AAD
//   iv     = 12 random bytes
//   plain  = w u64 ‖ j u64 ‖ r u8 ‖ s u32 ‖ e u32 ‖ len(f) u8 ‖ f (utf8)
//            w workspace id, j job id, r route (1 results, 2 findings, 3 changes, 10 monitors,
//            11 deliveries, 12 suppressions, 13 inventory, 14 inventory findings), s last seq
//            (changes: group × 2^24 + seq; suppressions and the inventory: the last row's id),
//            e expiry (epoch seconds), f filter fingerprint ('' or the min severity)
//   tag    = AES-256-GCM tag (16 bytes)
//
// The AES key and the key id are derived from CURSOR_SECRET with HKDF-SHA256 under distinct
// labels; the key id is the "key version": it says which secret sealed the token, so a rotation
// (CURSOR_SECRET = new, CURSOR_SECRET_PREVIOUS = old) keeps outstanding cursors valid for their
// 24 h lifetime. The GCM tag (128 bits) authenticates header and payload together, so there is no
// separate HMAC: a flipped bit anywhere, a truncation, another secret or a token sealed for another
// workspace/job/route/filter all come out of decode() as null, which the route answers with
// 400 invalid_cursor. Only canonical base64url is accepted, so no two strings decode to one token.
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { base32Crockford128 } from '../contract/ids.ts';

/** The monitor routes (§14) use the same cursors: `jobId` is then the monitor's id (0 for the list). */
export type CursorRoute =
  | 'results'
  | 'findings'
  | 'changes'
  | 'monitors'
  | 'deliveries'
  | 'suppressions'
  | 'inventory'
  | 'inventory_findings';

export interface CursorScope {
  workspaceId: number;
  jobId: number;
  route: CursorRoute;
  /** Filter fingerprint: '' when unfiltered, else e.g. the minimum severity. */
  filter: string;
}

export interface CursorPosition extends CursorScope {
  lastSeq: number;
}

export interface CursorCodec {
  encode(pos: CursorPosition): string;
  /** The last seq, or null for anything tampered, truncated, expired or bound to another scope. */
  decode(token: string, expected: CursorScope): number | null;
}

export interface CursorCodecOptions {
  secret: string;
  /** The secret before a rotation: its cursors are still accepted (never issued). */
  previousSecret?: string | undefined;
  ttlSeconds?: number;
  /** Clock in epoch milliseconds (tests). */
  now?: () => number;
}

export const CURSOR_TTL_SECONDS = 24 * 60 * 60;
/** Longest token decode() looks at; real ones are ~80-90 chars. */
export const CURSOR_MAX_LENGTH = 256;

const FORMAT = 1;
const HEADER_LEN = 5;
const IV_LEN = 12;
const TAG_LEN = 16;
const FIXED_PLAIN_LEN = 8 + 8 + 1 + 4 + 4 + 1;
const MAX_FILTER_LEN = 64;
const ROUTE_CODES: Record<CursorRoute, number> = {
  results: 1,
  findings: 2,
  changes: 3,
  monitors: 10,
  deliveries: 11,
  suppressions: 12,
  inventory: 13,
  inventory_findings: 14,
};
const SALT = Buffer.from('lss-cursor', 'utf8');
const B64URL = /^[A-Za-z0-9_-]+$/;

interface SealingKey {
  id: Buffer;
  key: Buffer;
}

function deriveKey(secret: string): SealingKey {
  const ikm = Buffer.from(secret, 'utf8');
  return {
    id: Buffer.from(hkdfSync('sha256', ikm, SALT, 'lss cursor key id v1', 4)),
    key: Buffer.from(hkdfSync('sha256', ikm, SALT, 'lss cursor aes-256-gcm v1', 32)),
  };
}

export function createCursorCodec(opts: CursorCodecOptions): CursorCodec {
  const current = deriveKey(opts.secret);
  const keys = [current];
  if (opts.previousSecret && opts.previousSecret !== opts.secret) keys.push(deriveKey(opts.previousSecret));
  const ttl = opts.ttlSeconds ?? CURSOR_TTL_SECONDS;
  const now = opts.now ?? Date.now;

  return {
    encode(pos) {
      const filter = Buffer.from(pos.filter, 'utf8');
      if (filter.length > MAX_FILTER_LEN) throw new Error('cursor filter fingerprint too long');
      const plain = Buffer.alloc(FIXED_PLAIN_LEN + filter.length);
      let o = 0;
      o = plain.writeBigUInt64BE(BigInt(pos.workspaceId), o);
      o = plain.writeBigUInt64BE(BigInt(pos.jobId), o);
      o = plain.writeUInt8(ROUTE_CODES[pos.route], o);
      o = plain.writeUInt32BE(pos.lastSeq, o);
      o = plain.writeUInt32BE(Math.floor(now() / 1000) + ttl, o);
      o = plain.writeUInt8(filter.length, o);
      filter.copy(plain, o);

      const header = Buffer.concat([Buffer.of(FORMAT), current.id]);
      const iv = randomBytes(IV_LEN);
      const cipher = createCipheriv('aes-256-gcm', current.key, iv, { authTagLength: TAG_LEN });
      cipher.setAAD(header);
      const body = Buffer.concat([cipher.update(plain), cipher.final()]);
      return Buffer.concat([header, iv, body, cipher.getAuthTag()]).toString('base64url');
    },

    decode(token, expected) {
      if (typeof token !== 'string' || token.length === 0 || token.length > CURSOR_MAX_LENGTH || !B64URL.test(token))
        return null;
      const raw = Buffer.from(token, 'base64url');
      if (raw.toString('base64url') !== token) return null; // non-canonical spelling
      if (raw.length < HEADER_LEN + IV_LEN + FIXED_PLAIN_LEN + TAG_LEN || raw[0] !== FORMAT) return null;
      const header = raw.subarray(0, HEADER_LEN);
      const keyId = raw.subarray(1, HEADER_LEN);
      const iv = raw.subarray(HEADER_LEN, HEADER_LEN + IV_LEN);
      const body = raw.subarray(HEADER_LEN + IV_LEN, raw.length - TAG_LEN);
      const tag = raw.subarray(raw.length - TAG_LEN);

      let plain: Buffer | null = null;
      for (const k of keys) {
        if (!timingSafeEqual(k.id, keyId)) continue;
        plain = open(k.key, header, iv, body, tag);
        if (plain) break;
      }
      if (!plain) return null;

      let o = 0;
      const w = plain.readBigUInt64BE(o);
      o += 8;
      const j = plain.readBigUInt64BE(o);
      o += 8;
      const r = plain.readUInt8(o);
      o += 1;
      const s = plain.readUInt32BE(o);
      o += 4;
      const e = plain.readUInt32BE(o);
      o += 4;
      const fLen = plain.readUInt8(o);
      o += 1;
      if (o + fLen !== plain.length) return null;
      const f = plain.subarray(o).toString('utf8');

      if (e <= Math.floor(now() / 1000)) return null;
      if (w !== BigInt(expected.workspaceId) || j !== BigInt(expected.jobId)) return null;
      if (r !== ROUTE_CODES[expected.route] || f !== expected.filter) return null;
      return s;
    },
  };
}

function open(key: Buffer, aad: Buffer, iv: Buffer, body: Buffer, tag: Buffer): Buffer | null {
  try {
    const d = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_LEN });
    d.setAAD(aad);
    d.setAuthTag(tag);
    return Buffer.concat([d.update(body), d.final()]);
  } catch {
    return null; // authentication failed
  }
}

/**
 * Public evidence references: `ev_` + 26 Crockford base32 chars of an HMAC-SHA256 (key derived
 * from CURSOR_SECRET, its own HKDF label) of the owner's public id (obj_… or fnd_…) and the
 * evidence's index. Stable for as long as CURSOR_SECRET is; no database id goes in or comes out.
 */
export function createEvidenceRefs(secret: string): (ownerPublicId: string, index: number) => string {
  const key = Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), SALT, 'lss evidence ref v1', 32));
  return (owner, index) => {
    const mac = createHmac('sha256', key).update(`${owner}\u0000${index}`).digest();
    return `ev_${base32Crockford128(mac.subarray(0, 16))}`;
  };
}
