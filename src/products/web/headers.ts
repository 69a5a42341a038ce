// Response headers as the guard hands them over (lower-case names; a repeated header is an array)
// and the two ways the assessments read them.
export type HeaderMap = Record<string, string | string[] | undefined>;

/** Every value of a header, repeated headers included, in order. */
export function allValues(h: HeaderMap, name: string): string[] {
  const v = h[name];
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

/** The first value of a header, or null. */
export function firstValue(h: HeaderMap, name: string): string | null {
  return allValues(h, name)[0] ?? null;
}

/** Headers as strings only (repeats joined by ", " as HTTP allows, set-cookie kept apart). */
export function flatHeaders(h: HeaderMap): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h))
    if (v !== undefined && k !== 'set-cookie') out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}
