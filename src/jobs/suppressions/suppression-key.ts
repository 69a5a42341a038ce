// The key a suppression names (CONTRACT §15), checked and normalized once at creation, and how a
// finding's object key is matched against it. A key is one of the forms the checks write object
// keys in (docs/findings.md, "Identities"): a name, an address, an http(s) URL, a certificate's
// SHA-256, a service (`host:port/tcp`); or a pattern `*.example.com`, every name below
// example.com and not example.com itself. Objects whose key holds a host (a URL, a service) are
// matched by that host too, so `*.example.com` and `www.example.com` both cover
// `https://www.example.com/`; any other key matches only the same key.
import { isIP } from 'node:net';
import { normalizeDomainName } from '../../contract/domain-name.ts';

export type KeyCheck = { ok: true; key: string } | { ok: false; message: string };

const SERVICE = /^(.{1,253}):(\d{1,5})\/(tcp|udp)$/;
const DIGEST = /^[0-9a-f]{64}$/;
const MAX_KEY = 512;

/** The normalized form a suppression stores, or why the key is malformed. */
export function normalizeSuppressionKey(input: string): KeyCheck {
  const raw = input.trim();
  if (raw.length === 0 || raw.length > MAX_KEY) return { ok: false, message: `must be 1-${MAX_KEY} characters` };
  if (raw.startsWith('*.')) {
    const name = normalizeDomainName(raw.slice(2));
    if (!name.ok) return { ok: false, message: `the pattern's name ${name.message}` };
    if (!name.name.includes('.')) return { ok: false, message: 'a pattern must name a domain below a top-level one' };
    return { ok: true, key: `*.${name.name}` };
  }
  if (/^https?:\/\//i.test(raw)) {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return { ok: false, message: 'is not a valid URL' };
    }
    if (url.username || url.password) return { ok: false, message: 'a URL key carries no user info' };
    return { ok: true, key: url.href };
  }
  if (isIP(raw) === 4) return { ok: true, key: raw };
  if (isIP(raw) === 6) return { ok: true, key: raw.toLowerCase() };
  if (DIGEST.test(raw.toLowerCase())) return { ok: true, key: raw.toLowerCase() };
  const service = SERVICE.exec(raw);
  if (service) {
    const host = hostKey(service[1]!);
    if (!host || Number(service[2]) > 65_535) return { ok: false, message: 'is not a valid host:port/tcp service' };
    return { ok: true, key: `${host}:${Number(service[2])}/${service[3]}` };
  }
  const name = normalizeDomainName(raw);
  if (!name.ok) return { ok: false, message: `is not a name, an address, a URL or *.name: ${name.message}` };
  return { ok: true, key: name.name };
}

function hostKey(host: string): string | null {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (isIP(bare)) return bare.toLowerCase();
  const n = normalizeDomainName(bare);
  return n.ok ? n.name : null;
}

/** The host an object key names: a URL's or a service's; otherwise the key itself. */
export function hostOfKey(key: string): string {
  if (key.startsWith('http://') || key.startsWith('https://')) {
    try {
      const h = new URL(key).hostname;
      return h.startsWith('[') ? h.slice(1, -1) : h;
    } catch {
      return key;
    }
  }
  const service = SERVICE.exec(key);
  return service ? service[1]! : key;
}

/**
 * The suppressions of one workspace, indexed for matching a job's findings: by code, then by
 * exact key, with the patterns of each code apart. Built once per job's terminal work.
 */
export interface SuppressionRule {
  publicId: string;
  code: string;
  key: string;
  product: string | null;
  reason: string;
  expiresAt: Date | null;
  /** Creation order: of two that match, the older one is reported (a stable choice). */
  id: number;
}

export class SuppressionMatcher {
  private readonly exact = new Map<string, SuppressionRule[]>();
  private readonly suffixes = new Map<string, SuppressionRule[]>();
  readonly size: number;

  constructor(rules: readonly SuppressionRule[], product: string) {
    const applicable = rules.filter((r) => r.product === null || r.product === product).sort((a, b) => a.id - b.id);
    for (const r of applicable) {
      const into = r.key.startsWith('*.') ? this.suffixes : this.exact;
      const k = r.key.startsWith('*.') ? `${r.code}\n${r.key.slice(1)}` : `${r.code}\n${r.key}`;
      const list = into.get(k);
      if (list) list.push(r);
      else into.set(k, [r]);
    }
    this.size = applicable.length;
  }

  /** The suppression that covers a finding of `code` on the object keyed `key`, if any. */
  match(code: string, key: string): SuppressionRule | null {
    const exact = this.exact.get(`${code}\n${key}`)?.[0];
    if (exact) return exact;
    // A URL or a service is also covered by a suppression of its host.
    const host = hostOfKey(key);
    const byHost = host === key ? undefined : this.exact.get(`${code}\n${host}`)?.[0];
    if (byHost) return byHost;
    if (this.suffixes.size === 0 || isIP(host)) return null;
    // Every proper parent of the host: `.b.example.com`, `.example.com`, `.com`.
    let best: SuppressionRule | null = null;
    for (let i = host.indexOf('.'); i >= 0; i = host.indexOf('.', i + 1)) {
      const r = this.suffixes.get(`${code}\n${host.slice(i)}`)?.[0];
      if (r && (best === null || r.id < best.id)) best = r;
    }
    return best;
  }
}
