// The ports a fetch may use unless its caller does active work: the web's own, 80 and 443 and their
// usual alternates 8080 and 8443 (docs/products/web.md). What a fetch records about any other
// port (refused, timed out, answered by something that is not the web) tells open, closed and
// filtered ports apart: a port scan, one URL at a time, on the word of whoever wrote the URL (a
// BIMI record, an MTA-STS host, a redirect, a link). So this is the outbound guard's rule, not
// each caller's: OutboundGuard.fetch holds every hop of every fetch to these ports, redirects
// included, and refuses another before resolving or connecting (port_not_allowed), unless the
// caller says `ports: 'any'` (an authorized web lookup, an operator's RDAP server).
export const PASSIVE_PORTS: readonly number[] = [80, 443, 8080, 8443];

/** The port a URL connects to, as written (before the lab's OUTBOUND_PORT_MAP). */
export function urlPort(u: URL): number {
  if (u.port !== '') return Number(u.port);
  return u.protocol === 'https:' ? 443 : 80;
}

export function isPassivePort(u: URL): boolean {
  return PASSIVE_PORTS.includes(urlPort(u));
}
