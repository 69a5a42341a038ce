// How an inventory row is found by `q` (CONTRACT §16: a name, it and every key below it, URLs by
// host): the host of its key, labels reversed, each followed by a '.', so that a name and all
// names below it are one index range: www.example.com → `com.example.www.`, and
// `q=example.com` is [`com.example.`, `com.example/`) ('/' is the character after '.'). An
// address is its own range (`ip:192.0.2.7.`); a key without a host (a certificate digest) has
// none ('') and is found by no `q`.
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { hostOfKey } from '../suppressions/suppression-key.ts';

const MAX = 255;

export function reversedHost(key: string): string {
  const host = hostOfKey(key);
  if (isIP(host)) return `ip:${host.toLowerCase()}.`.slice(0, MAX);
  if (!/^[a-z0-9_.-]+$/i.test(host) || !host.includes('.')) return /^[a-z0-9_-]+$/i.test(host) ? `${host}.` : '';
  return `${host.toLowerCase().split('.').reverse().join('.')}.`.slice(0, MAX);
}

/** The [from, to) range of `q` on rhost; null when q names nothing a row could be found by. */
export function qRange(q: string): { from: string; to: string } | null {
  const from = reversedHost(q.trim().replace(/\.$/, ''));
  if (from === '') return null;
  return { from, to: `${from.slice(0, -1)}/` };
}

/** A finding's identity across jobs (CONTRACT §13: code, and its object's type and key). */
export function findingIdentity(code: string, type: string, key: string): Buffer {
  return createHash('sha256').update(`${code}\n${type}\n${key}`).digest();
}
