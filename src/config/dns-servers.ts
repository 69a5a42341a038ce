// The syntax of one resolver address (DNS_SERVERS entries and resolv.conf `nameserver` lines).
import { isIP } from 'node:net';

export interface DnsServer {
  host: string;
  port: number;
}

/** `ip`, `ip:port`, `[v6]` or `[v6]:port`; a bare IPv6 address has no port. null when invalid. */
export function parseServer(entry: string): DnsServer | null {
  const s = entry.trim();
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(s);
  if (bracketed) return checked(bracketed[1]!, bracketed[2]);
  // More than one colon and no brackets: a bare IPv6 address, never "v6:port" (ambiguous).
  if (s.indexOf(':') !== s.lastIndexOf(':')) return checked(s, undefined);
  const [host, port] = s.split(':');
  return checked(host!, port);
}

function checked(host: string, port: string | undefined): DnsServer | null {
  // A scope id (fe80::1%eth0) is legal in resolv.conf; isIP accepts it, and so do the sockets.
  if (isIP(host) === 0) return null;
  const p = port === undefined ? 53 : Number(port);
  if (!Number.isInteger(p) || p < 1 || p > 65535) return null;
  return { host, port: p };
}
