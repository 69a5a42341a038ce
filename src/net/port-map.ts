// OUTBOUND_PORT_MAP: where a connection to a well-known port really goes. Empty in production.
// The lab serves SMTP, HTTPS and MTA-STS hosts on unprivileged ports of distinct 127.x addresses,
// while the protocols fix the ports (25 for MX hosts, 443 for MTA-STS policies): the map sends
// "port 25" to the lab's SMTP port without the products knowing. It is applied in the guard only,
// after the address was vetted, so it can never widen what may be reached.
export type PortMap = ReadonlyMap<number, number>;

export const NO_PORT_MAP: PortMap = new Map();

/** "25=2525,443=8443" → Map; null when malformed. */
export function parsePortMap(text: string): Map<number, number> | null {
  const map = new Map<number, number>();
  for (const part of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^(\d{1,5})=(\d{1,5})$/.exec(part);
    if (!m) return null;
    const from = Number(m[1]);
    const to = Number(m[2]);
    if (from < 1 || from > 65535 || to < 1 || to > 65535 || map.has(from)) return null;
    map.set(from, to);
  }
  return map;
}

export function mapPort(map: PortMap, port: number): number {
  return map.get(port) ?? port;
}
