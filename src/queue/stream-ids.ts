// Stream entry ids (`<ms>-<seq>`) compared as numbers: string order is wrong across digit counts.

export function parseStreamId(id: string): [bigint, bigint] {
  const m = /^(\d+)-(\d+)$/.exec(id);
  if (!m) throw new Error(`not a stream id: ${id}`);
  return [BigInt(m[1]!), BigInt(m[2]!)];
}

export function compareStreamIds(a: string, b: string): number {
  const [am, as] = parseStreamId(a);
  const [bm, bs] = parseStreamId(b);
  if (am !== bm) return am < bm ? -1 : 1;
  if (as !== bs) return as < bs ? -1 : 1;
  return 0;
}

/** The creation time (Redis clock, ms) encoded in an auto-generated id. */
export function streamIdTime(id: string): number {
  return Number(parseStreamId(id)[0]);
}

/** XREADGROUP / XAUTOCLAIM field arrays → record. */
export function fieldsToRecord(fields: readonly string[] | null | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!fields) return out;
  for (let i = 0; i + 1 < fields.length; i += 2) out[fields[i]!] = fields[i + 1]!;
  return out;
}
