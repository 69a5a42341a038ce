// The syntax of OUTBOUND_PORT_MAP (src/net/port-map.ts applies it in the outbound guard).
export type PortMap = ReadonlyMap<number, number>;

/** "25=2525,443=8443" → Map; null when malformed. */
export function parsePortMap(text: string): Map<number, number> | null {
  const map = new Map<number, number>();
  for (const part of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^(\d{1,5})=(\d{1,5})$/.exec(part);
    if (!m) return null;
    const from = Number(m[1]);
    const to = Number(m[2]);
    if (from < 1 || from > 65535 || to < 1 || to > 65535 || map.has(from)) return null;
    map.set(from, to);
  }
  return map;
}
