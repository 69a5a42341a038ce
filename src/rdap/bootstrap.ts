// RFC 9224 bootstrap for domain names: which RDAP server answers for a name. The project ships a
// small snapshot of IANA's dns.json (./dns-bootstrap.json, see docs/products/domain.md for how
// to refresh it); RDAP_BOOTSTRAP_URL replaces it with a file fetched at first use (then daily),
// falling back to the snapshot while that fetch fails; RDAP_BASE_URL skips bootstrap entirely.
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

const REFRESH_MS = 24 * 60 * 60 * 1000;
const RETRY_MS = 5 * 60 * 1000;

interface RemoteState {
  url: string;
  value: DnsBootstrap | null;
  /** When the next fetch is due (0: never fetched). */
  due: number;
  pending: Promise<DnsBootstrap | null> | null;
}
let remote: RemoteState | null = null;

export interface BootstrapFetchOptions {
  guard: OutboundGuard;
  signal?: AbortSignal;
  timeoutMs?: number;
}

async function fetchRemote(url: string, opts: BootstrapFetchOptions): Promise<DnsBootstrap | null> {
  try {
    const res = await opts.guard.fetch(url, {
      timeoutMs: opts.timeoutMs ?? 10_000,
      maxBytes: 2 * 1024 * 1024, // IANA's full dns.json is about 100 KB
      headers: { accept: 'application/json' },
    });
    if (res.status !== 200) return null;
    return parseDnsBootstrap(JSON.parse(res.body.toString('utf8')));
  } catch {
    return null;
  }
}

/**
 * The bootstrap to use now: RDAP_BOOTSTRAP_URL's file when configured and fetchable (shared by
 * concurrent callers, refreshed daily, retried 5 minutes after a failure), else the snapshot.
 */
export async function activeBootstrap(
  config: Pick<Config, 'RDAP_BOOTSTRAP_URL'>,
  opts: BootstrapFetchOptions,
): Promise<ActiveBootstrap | null> {
  const url = config.RDAP_BOOTSTRAP_URL;
  if (url) {
    if (!remote || remote.url !== url) remote = { url, value: null, due: 0, pending: null };
    const state = remote;
    if (Date.now() >= state.due && !state.pending) {
      state.pending = fetchRemote(url, opts).then((b) => {
        state.due = Date.now() + (b ? REFRESH_MS : RETRY_MS);
        if (b) state.value = b;
        state.pending = null;
        return b;
      });
    }
    // The first use waits for the fetch; later refreshes run in the background on the old value.
    if (state.pending && !state.value) await state.pending;
    if (state.value) return { bootstrap: state.value, origin: 'remote' };
  }
  const snap = snapshotBootstrap();
  return snap ? { bootstrap: snap, origin: 'snapshot' } : null;
}

/** For tests: forget the fetched bootstrap file. */
export function resetBootstrapCache(): void {
  remote = null;
}
