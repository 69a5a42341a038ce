// Where the stub resolver sends its questions: DNS_SERVERS when given, else the host's resolvers
// from /etc/resolv.conf, else 127.0.0.1 (glibc's own fallback when resolv.conf names none).
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parseServer, type DnsServer } from '../config/dns-servers.ts';

/** The `nameserver` lines of a resolv.conf, in order; [] when the file is missing or unreadable. */
export function readResolvConf(path = '/etc/resolv.conf'): DnsServer[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  const servers: DnsServer[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*nameserver\s+(\S+)/.exec(line);
    const server = m ? parseServer(m[1]!) : null;
    if (server) servers.push(server);
  }
  return servers;
}

/**
 * The servers to use. An unset or empty DNS_SERVERS means "the system's", as CONTRACT §12 says;
 * config validation has already rejected malformed entries, so any that still fail to parse are dropped.
 */
export function resolveServers(configured: readonly string[] | undefined, resolvConfPath?: string): DnsServer[] {
  if (configured && configured.length > 0) {
    return configured.map(parseServer).filter((s): s is DnsServer => s !== null);
  }
  const system = readResolvConf(resolvConfPath);
  return system.length > 0 ? system : [{ host: '127.0.0.1', port: 53 }];
}

export function formatServer(s: DnsServer): string {
  return isIP(s.host) === 6 ? `[${s.host}]:${s.port}` : `${s.host}:${s.port}`;
}
