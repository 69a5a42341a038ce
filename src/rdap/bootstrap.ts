// RFC 9224 bootstrap for domain names: which RDAP server answers for a name. RDAP_BOOTSTRAP_URL
// (default: IANA's published file, https://data.iana.org/rdap/dns.json) is fetched through the
// outbound guard at first use and kept for as long as its HTTP caching headers say (clamped to
// 1 h … 24 h, so at least daily), then revalidated with If-None-Match / If-Modified-Since; when a
// refresh fails the last good copy stays in use and the fetch is retried about 5 minutes later.
// Until a first copy arrives (or with RDAP_BOOTSTRAP_URL=off) the project's small snapshot of
// IANA's file (./dns-bootstrap.json, see docs/products/domain.md) answers; RDAP_BASE_URL skips
// bootstrap entirely.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { Config } from '../config/config.ts';
import type { OutboundGuard } from '../net/outbound-guard.ts';

export interface DnsBootstrap {
  version: string;
  publication: string;
  /** One entry per label string: "com" → its base URLs (https first). */
  entries: Map<string, string[]>;
}

const fileSchema = z.object({
  version: z.string(),
  publication: z.string(),
  description: z.string().optional(),
  services: z.array(z.tuple([z.array(z.string()), z.array(z.string())])),
});

/** Validates an RFC 9224 file; throws on a file that is not one. */
export function parseDnsBootstrap(raw: unknown): DnsBootstrap {
  const file = fileSchema.parse(raw);
  const entries = new Map<string, string[]>();
  for (const [labels, urls] of file.services) {
    const usable = urls.filter((u) => /^https?:\/\//i.test(u));
    // RFC 9224 §3: when both are listed, HTTPS is preferred.
    const ordered = [...usable.filter((u) => /^https:/i.test(u)), ...usable.filter((u) => !/^https:/i.test(u))];
    if (ordered.length === 0) continue;
    for (const label of labels) entries.set(label.toLowerCase().replace(/\.$/, ''), ordered);
  }
  return { version: file.version, publication: file.publication, entries };
}

/**
 * RFC 9224 §4: the entry matching the most trailing labels of the name wins ("example.co.uk"
 * tries "example.co.uk", then "co.uk", then "uk"). Null when no entry matches.
 */
export function findRdapService(b: DnsBootstrap, name: string): { entry: string; baseUrl: string } | null {
  const labels = name.toLowerCase().replace(/\.$/, '').split('.');
  for (let i = 0; i < labels.length; i++) {
    const candidate = labels.slice(i).join('.');
    const urls = b.entries.get(candidate);
    if (urls) return { entry: candidate, baseUrl: urls[0]! };
  }
  return null;
}

let snapshot: DnsBootstrap | null | undefined;

/** The shipped snapshot; null when it cannot be read (then only RDAP_BASE_URL/RDAP_BOOTSTRAP_URL help). */
export function snapshotBootstrap(): DnsBootstrap | null {
  if (snapshot === undefined) {
    try {
      const text = readFileSync(new URL('./dns-bootstrap.json', import.meta.url), 'utf8');
      const parsed = parseDnsBootstrap(JSON.parse(text));
      snapshot = parsed.entries.size > 0 ? parsed : null;
    } catch {
      snapshot = null;
    }
  }
  return snapshot;
}

export interface ActiveBootstrap {
  bootstrap: DnsBootstrap;
  origin: 'snapshot' | 'remote';
}

const HOUR_MS = 60 * 60 * 1000;
/** The freshness window the server's headers may set: at least an hour, at most a day. */
const MIN_FRESH_MS = HOUR_MS;
const MAX_FRESH_MS = 24 * HOUR_MS;
const RETRY_MS = 5 * 60 * 1000;

interface RemoteState {
  url: string;
  /** The last good copy (kept through failed refreshes). */
  value: DnsBootstrap | null;
  etag: string | null;
  lastModified: string | null;
  /** When the copy was last fetched or confirmed (200 or 304); 0: never. */
  checkedAt: number;
  /** When the next fetch or revalidation is due (0: now). */
  due: number;
  pending: Promise<void> | null;
  /** Failed attempts since the last success, and the last one's cause. */
  failures: number;
  lastError: string | null;
}
let remote: RemoteState | null = null;

export interface BootstrapFetchOptions {
  guard: OutboundGuard;
  signal?: AbortSignal;
  timeoutMs?: number;
}

type Headers = Record<string, string | string[] | undefined>;

function header(headers: Headers, name: string): string | null {
  const v = headers[name];
  const first = Array.isArray(v) ? v[0] : v;
  return first === undefined ? null : first.slice(0, 1024); // a bound on what is parsed
}

/**
 * How long a fetched (or revalidated) copy is fresh, from its response headers: Cache-Control
 * max-age (less Age), else Expires − Date; no-cache / no-store revalidate at the earliest allowed;
 * nothing usable means daily. Clamped to [1 h, 24 h]: never more often than hourly, at least daily.
 */
export function freshnessMs(headers: Headers): number {
  const cc = (header(headers, 'cache-control') ?? '').toLowerCase();
  let lifetime: number | null = null;
  for (const part of cc.split(',')) {
    const [k, v] = part.trim().split('=', 2);
    if (k === 'no-cache' || k === 'no-store') return MIN_FRESH_MS;
    if (k === 'max-age' && v !== undefined && /^\d{1,10}$/.test(v.trim())) lifetime = Number(v.trim()) * 1000;
  }
  if (lifetime !== null) {
    const age = header(headers, 'age');
    if (age !== null && /^\d{1,10}$/.test(age.trim())) lifetime -= Number(age.trim()) * 1000;
  } else {
    const expires = Date.parse(header(headers, 'expires') ?? '');
    const date = Date.parse(header(headers, 'date') ?? '');
    if (Number.isFinite(expires)) lifetime = expires - (Number.isFinite(date) ? date : Date.now());
  }
  if (lifetime === null || !Number.isFinite(lifetime)) return MAX_FRESH_MS;
  return Math.min(MAX_FRESH_MS, Math.max(MIN_FRESH_MS, lifetime));
}

type FetchResult =
  | { kind: 'fetched'; value: DnsBootstrap; etag: string | null; lastModified: string | null; freshMs: number }
  | { kind: 'not_modified'; freshMs: number }
  | { kind: 'failed'; cause: string };

async function fetchRemote(state: RemoteState, opts: BootstrapFetchOptions): Promise<FetchResult> {
  const conditional: Record<string, string> = {};
  if (state.value && state.etag) conditional['if-none-match'] = state.etag;
  if (state.value && state.lastModified) conditional['if-modified-since'] = state.lastModified;
  try {
    const res = await opts.guard.fetch(state.url, {
      // An RDAP server is the operator's or IANA's, never the target's word: any port.
      ports: 'any',
      timeoutMs: opts.timeoutMs ?? 10_000,
      maxBytes: 2 * 1024 * 1024, // IANA's full dns.json is about 100 KB
      headers: { accept: 'application/json', ...conditional },
    });
    if (res.status === 304 && state.value) return { kind: 'not_modified', freshMs: freshnessMs(res.headers) };
    if (res.status !== 200) return { kind: 'failed', cause: `HTTP ${res.status}` };
    const value = parseDnsBootstrap(JSON.parse(res.body.toString('utf8')));
    // A file that routes nothing would silently turn every lookup into "no service for the TLD".
    if (value.entries.size === 0) return { kind: 'failed', cause: 'a bootstrap file with no usable service' };
    return {
      kind: 'fetched',
      value,
      etag: header(res.headers, 'etag'),
      lastModified: header(res.headers, 'last-modified'),
      freshMs: freshnessMs(res.headers),
    };
  } catch (err) {
    return { kind: 'failed', cause: err instanceof Error ? err.message : String(err) };
  }
}

async function refresh(state: RemoteState, opts: BootstrapFetchOptions): Promise<void> {
  const r = await fetchRemote(state, opts);
  const now = Date.now();
  if (r.kind === 'failed') {
    state.failures++;
    state.lastError = r.cause;
    // The last good copy (or the snapshot) keeps answering; jitter spreads a fleet's retries.
    state.due = now + Math.round(RETRY_MS * (0.8 + 0.4 * Math.random()));
    return;
  }
  if (r.kind === 'fetched') {
    state.value = r.value;
    state.etag = r.etag;
    state.lastModified = r.lastModified;
  }
  state.checkedAt = now;
  state.due = now + r.freshMs;
  state.failures = 0;
  state.lastError = null;
}

/**
 * The bootstrap to use now: RDAP_BOOTSTRAP_URL's file when configured and fetched (shared by
 * concurrent callers, revalidated as its caching headers say, at least daily, the last good copy
 * kept while a refresh fails), else the snapshot.
 */
export async function activeBootstrap(
  config: Pick<Config, 'RDAP_BOOTSTRAP_URL'>,
  opts: BootstrapFetchOptions,
): Promise<ActiveBootstrap | null> {
  const url = config.RDAP_BOOTSTRAP_URL;
  if (url) {
    if (!remote || remote.url !== url) {
      remote = {
        url,
        value: null,
        etag: null,
        lastModified: null,
        checkedAt: 0,
        due: 0,
        pending: null,
        failures: 0,
        lastError: null,
      };
    }
    const state = remote;
    if (Date.now() >= state.due && !state.pending) {
      state.pending = refresh(state, opts).finally(() => {
        state.pending = null;
      });
    }
    // The first use waits for the fetch; later refreshes run in the background on the old value.
    if (state.pending && !state.value) await state.pending;
    if (state.value) return { bootstrap: state.value, origin: 'remote' };
  }
  const snap = snapshotBootstrap();
  return snap ? { bootstrap: snap, origin: 'snapshot' } : null;
}

export interface RemoteBootstrapStatus {
  url: string;
  /** Whether a fetched copy is in use (else the snapshot answers). */
  fetched: boolean;
  publication: string | null;
  checkedAt: number | null;
  due: number;
  failures: number;
  lastError: string | null;
}

/** What this process knows of the remote bootstrap file; null: never asked for (nothing fetched). */
export function remoteBootstrapStatus(): RemoteBootstrapStatus | null {
  if (!remote) return null;
  return {
    url: remote.url,
    fetched: remote.value !== null,
    publication: remote.value?.publication ?? null,
    checkedAt: remote.checkedAt || null,
    due: remote.due,
    failures: remote.failures,
    lastError: remote.lastError,
  };
}

/** For tests: forget the fetched bootstrap file. */
export function resetBootstrapCache(): void {
  remote = null;
}
