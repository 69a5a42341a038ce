// OUTBOUND_PORT_MAP: where a connection to a well-known port really goes. Empty in production.
// The lab serves SMTP, HTTPS and MTA-STS hosts on unprivileged ports of distinct 127.x addresses,
// while the protocols fix the ports (25 for MX hosts, 443 for MTA-STS policies): the map sends
// "port 25" to the lab's SMTP port without the products knowing. It is applied in the guard only,
// after the address was vetted, so it can never widen what may be reached.
import type { PortMap } from '../config/port-map.ts';

export const NO_PORT_MAP: PortMap = new Map();

export function mapPort(map: PortMap, port: number): number {
  return map.get(port) ?? port;
}
