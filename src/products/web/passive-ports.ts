// The ports a passive web lookup may touch: the web's own (80, 443 and their usual alternates 8080,
// 8443). Any other port is active work: what a lookup records about it (refused, timed out,
// answered) tells open, closed and filtered ports apart, which is a port scan one URL at a time.
// Without `authorized: true` the input URL must use one of these ports (admission answers 403
// active_authorization_required otherwise), and every redirect hop too (the guard refuses a hop
// to another port, so a page on 443 cannot send the lookup to port 22).
export const PASSIVE_WEB_PORTS: readonly number[] = [80, 443, 8080, 8443];

/** The port a URL connects to, as written (before the lab's OUTBOUND_PORT_MAP). */
export function urlPort(u: URL): number {
  if (u.port !== '') return Number(u.port);
  return u.protocol === 'https:' ? 443 : 80;
}

export function isPassivePort(u: URL): boolean {
  return PASSIVE_WEB_PORTS.includes(urlPort(u));
}
