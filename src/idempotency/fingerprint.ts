// CONTRACT §4: the fingerprint binds method, normalised path and the canonical JSON of the body as
// sent (keys sorted, no insignificant whitespace, defaults NOT filled in).
import { hash } from 'node:crypto';

type Frame = { text: string } | { value: unknown };

/**
 * Iterative on purpose: a body nested thousands deep (which JSON.parse accepts) must not be able
 * to exhaust the stack here, whatever bound the HTTP layer puts in front of it.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  const stack: Frame[] = [{ value }];
  while (stack.length > 0) {
    const f = stack.pop()!;
    if ('text' in f) {
      out.push(f.text);
      continue;
    }
    const v = f.value;
    if (v === null || typeof v !== 'object') {
      out.push(JSON.stringify(v) ?? 'null');
    } else if (Array.isArray(v)) {
      // Pushed in reverse so they pop in order: "[", item, ",", item, …, "]".
      stack.push({ text: ']' });
      for (let i = v.length - 1; i >= 0; i--) {
        stack.push({ value: v[i] });
        if (i > 0) stack.push({ text: ',' });
      }
      stack.push({ text: '[' });
    } else {
      const obj = v as Record<string, unknown>;
      const keys = Object.keys(obj)
        .filter((k) => obj[k] !== undefined)
        .sort();
      stack.push({ text: '}' });
      for (let i = keys.length - 1; i >= 0; i--) {
        stack.push({ value: obj[keys[i]!] });
        stack.push({ text: `${JSON.stringify(keys[i])}:` });
        if (i > 0) stack.push({ text: ',' });
      }
      stack.push({ text: '{' });
    }
  }
  return out.join('');
}

/** True when `value` nests arrays/objects deeper than `max` levels (iterative, stops early). */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth + 1 > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}

/** A path already in normal form: lower case, no query, no empty segment, no trailing slash. */
const NORMAL_PATH = /^(?:\/[a-z0-9._~-]+)+$/;

/** Routing ignores case, so the fingerprint does too (public ids are upper case by construction). */
export function normalizePath(path: string): string {
  if (NORMAL_PATH.test(path)) return path;
  const bare = path.split('?')[0]!.replace(/\/+/g, '/').toLowerCase();
  return bare.length > 1 ? bare.replace(/\/$/, '') : bare;
}

/** Hex SHA-256 of method, normalised path and canonical body (one-shot: no Hash object per request). */
export function requestFingerprint(method: string, path: string, body: unknown): string {
  return hash('sha256', `${method.toUpperCase()}\n${normalizePath(path)}\n${canonicalJson(body ?? {})}`, 'hex');
}

/** 1–255 visible ASCII characters (0x21–0x7E). */
export function isValidIdempotencyKey(value: string | undefined): value is string {
  return typeof value === 'string' && /^[\x21-\x7e]{1,255}$/.test(value);
}
