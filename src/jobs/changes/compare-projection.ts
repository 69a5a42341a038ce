// What differs between two projections of one object (CONTRACT §13): the top-level fields whose
// values differ once the volatile facts are dropped (at any depth) and every array that is a set
// is put in one order. A field the baseline had and this job lacks counts only when the lanes
// that examined the object this time covered what the baseline's did: a field missing because a
// check did not complete is missing coverage, never a change. Likewise a value either job holds
// as a failed observation (rules.gap: a DNS question that timed out, whatever the other job's
// answer was): both sides lose that key before they are compared, so `changed` means an observed
// value differs, never that one job could not look.
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
    if (rules.gap(k, a[k]) || rules.gap(k, b[k])) continue;
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

/**
 * The top-level fields that differ, sorted. `partial`: this job's lanes did not cover the
 * object as the baseline's did, so a field only the baseline has is not a difference.
 */
export function changedFields(
  base: Record<string, unknown>,
  cur: Record<string, unknown>,
  rules: Rules,
  partial = false,
): string[] {
  const keys = new Set([...Object.keys(base), ...Object.keys(cur)]);
  const out: string[] = [];
  for (const k of keys) {
    if (rules.volatile.includes(k)) continue;
    const inCur = Object.hasOwn(cur, k) && cur[k] !== undefined;
    if (!inCur && partial) continue;
    if (rules.gap?.(k, base[k]) || rules.gap?.(k, cur[k])) continue;
    const [x, y] = withoutGaps(base[k], cur[k], rules);
    const a = JSON.stringify(canonical(x, rules, k));
    const b = JSON.stringify(canonical(y, rules, k));
    if (a !== b) out.push(k);
  }
  return out.sort();
}
