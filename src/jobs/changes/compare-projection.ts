// What differs between two projections of one object (CONTRACT §13): the top-level fields whose
// values differ once the volatile facts are dropped (at any depth) and every array that is a set
// is put in one order. A field the baseline had and this job lacks counts only when the lanes
// that examined the object this time covered what the baseline's did: a field missing because a
// check did not complete is missing coverage, never a change. Likewise a value either job holds
// as a failed observation (rules.gap: a DNS question that timed out, whatever the other job's
// answer was): both sides lose that key before they are compared, so `changed` means an observed
// value differs, never that one job could not look. And a field only this job has counts only
// when the baseline observed its absence (`baseGapped` false): where the baseline's check on
// the object wrote nothing or failed (./observe-absence.ts baselineGap), the baseline could not
// have seen it.
import type { ChangeRules } from '../../products/kit/change-rules.ts';

type Rules = Pick<ChangeRules, 'volatile' | 'ordered' | 'gap'>;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Both values without the keys, at any depth of objects both hold, where either holds a gap
 * (rules.gap). Arrays are left whole: an element is no observation of its own.
 */
export function withoutGaps(a: unknown, b: unknown, rules: Rules): [unknown, unknown] {
  if (!rules.gap || !isObject(a) || !isObject(b)) return [a, b];
  const outA: Record<string, unknown> = {};
  const outB: Record<string, unknown> = {};
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (rules.gap(k, a[k], a) || rules.gap(k, b[k], b)) continue;
    const [x, y] = withoutGaps(a[k], b[k], rules);
    if (Object.hasOwn(a, k)) outA[k] = x;
    if (Object.hasOwn(b, k)) outB[k] = y;
  }
  return [outA, outB];
}

/** A value in canonical form: volatile keys dropped, object keys sorted, set-like arrays sorted. */
export function canonical(v: unknown, rules: Rules, key = ''): unknown {
  if (Array.isArray(v)) {
    const items = v.map((x) => canonical(x, rules));
    if (rules.ordered?.includes(key)) return items;
    return items
      .map((x) => [JSON.stringify(x), x] as const)
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      .map(([, x]) => x);
  }
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v as Record<string, unknown>).sort()) {
      if (rules.volatile.includes(k)) continue;
      out[k] = canonical((v as Record<string, unknown>)[k], rules, k);
    }
    return out;
  }
  return v === undefined ? null : v;
}

const holds = (o: Record<string, unknown>, k: string) => Object.hasOwn(o, k) && o[k] !== undefined;

/**
 * The top-level fields that differ, sorted. `partial`: this job's lanes did not cover the
 * object as the baseline's did, so a field only the baseline has is not a difference.
 * `baseGapped`: the baseline's did not cover it as this job's do, so a field only this job has
 * is not one either.
 */
export function changedFields(
  base: Record<string, unknown>,
  cur: Record<string, unknown>,
  rules: Rules,
  partial = false,
  baseGapped = false,
): string[] {
  const keys = new Set([...Object.keys(base), ...Object.keys(cur)]);
  const out: string[] = [];
  for (const k of keys) {
    if (rules.volatile.includes(k)) continue;
    if (!holds(cur, k) && partial) continue;
    if (!holds(base, k) && baseGapped) continue;
    if (rules.gap?.(k, base[k], base) || rules.gap?.(k, cur[k], cur)) continue;
    const [x, y] = withoutGaps(base[k], cur[k], rules);
    const a = JSON.stringify(canonical(x, rules, k));
    const b = JSON.stringify(canonical(y, rules, k));
    if (a !== b) out.push(k);
  }
  return out.sort();
}

/**
 * The compared fields only this job holds (not volatile, not gaps): those a baseline that did
 * not cover the object could not have seen, so the comparison asks what the baseline's checks did.
 */
export function addedFields(base: Record<string, unknown>, cur: Record<string, unknown>, rules: Rules): string[] {
  return Object.keys(cur).filter(
    (k) => holds(cur, k) && !holds(base, k) && !rules.volatile.includes(k) && !rules.gap?.(k, cur[k], cur),
  );
}
