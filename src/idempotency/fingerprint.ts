// CONTRACT §4: the fingerprint binds method, normalised path and the canonical JSON of the body as
// sent (keys sorted, no insignificant whitespace, defaults NOT filled in).
import { createHash } from 'node:crypto';

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).filter((k) => obj[k] !== undefined).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
}

/** Routing ignores case, so the fingerprint does too (public ids are upper case by construction). */
export function normalizePath(path: string): string {
  const bare = path.split('?')[0]!.replace(/\/+/g, '/').toLowerCase();
  return bare.length > 1 ? bare.replace(/\/$/, '') : bare;
}

export function requestFingerprint(method: string, path: string, body: unknown): Buffer {
  return createHash('sha256')
    .update(`${method.toUpperCase()}\n${normalizePath(path)}\n${canonicalJson(body ?? {})}`)
    .digest();
}

/** 1–255 visible ASCII characters (0x21–0x7E). */
export function isValidIdempotencyKey(value: string | undefined): value is string {
  return typeof value === 'string' && /^[\x21-\x7e]{1,255}$/.test(value);
}
