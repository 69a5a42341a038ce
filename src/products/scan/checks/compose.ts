// A scan task that runs several product checks at once (web = http + tls, mail = its lanes,
// domain = delegation + registration) reports them as one CheckOutput: everything they found,
// every limitation, and a status that says how much of it ran. Names the product checks record
// as mx_host / ns_host become plain `host` objects, so that a name is one object per scan whatever
// role led to it (the relations mx_of, ns_of… keep the role).
import type { CheckOutput, ObjectOut, ObjectRef, RelationOut } from '../../../contract/tasks.ts';
import type { LaneStatus } from '../../../contract/lanes.ts';

const NAME_TYPES = new Set(['mx_host', 'ns_host']);

function asHost<T extends ObjectRef>(ref: T): T {
  return NAME_TYPES.has(ref.type) ? { ...ref, type: 'host' } : ref;
}

/** completed only when every part completed; unavailable/timeout when none produced anything. */
export function combinedStatus(parts: readonly LaneStatus[]): LaneStatus {
  if (parts.every((s) => s === 'completed' || s === 'skipped')) return 'completed';
  if (parts.some((s) => s === 'completed' || s === 'partial')) return 'partial';
  if (parts.every((s) => s === 'timeout')) return 'timeout';
  return parts.includes('failed') ? 'failed' : 'unavailable';
}

export function composeOutputs(
  parts: readonly CheckOutput[],
  projection: Record<string, unknown>,
  status = combinedStatus(parts.map((p) => p.status)),
): CheckOutput {
  const objects: ObjectOut[] = [];
  const relations: RelationOut[] = [];
  const out: CheckOutput = { status, projection, objects, relations, findings: [], limitations: [], sources: [] };
  const seenLimit = new Set<string>();
  const seenSource = new Set<string>();
  for (const p of parts) {
    objects.push(...p.objects.map(asHost));
    relations.push(...p.relations.map((r) => ({ ...r, from: asHost(r.from), to: asHost(r.to) })));
    out.findings.push(...p.findings.map((f) => ({ ...f, object: asHost(f.object) })));
    for (const l of p.limitations) {
      const k = `${l.code}\n${l.message}`;
      if (!seenLimit.has(k)) {
        seenLimit.add(k);
        out.limitations.push(l);
      }
    }
    for (const s of p.sources) {
      if (!seenSource.has(s.source)) {
        seenSource.add(s.source);
        out.sources.push(s);
      }
    }
  }
  if (status !== 'completed' && status !== 'partial') {
    const reason = parts.find((p) => p.reason)?.reason;
    if (reason) out.reason = reason;
  }
  return out;
}

/** Caps a list at `cap`; `truncated` says whether anything was dropped. */
export function capped<T>(list: readonly T[], cap: number): { kept: T[]; truncated: boolean } {
  return { kept: list.slice(0, cap), truncated: list.length > cap };
}

/**
 * The product checks place their own target at distance 0 and what it points at at 1; in a scan
 * their target is `distance` hops from the scan's target. In-scope names move by that much;
 * out-of-scope names stay at 1 (CONTRACT §11: recorded adjacent to the estate, never expanded).
 */
export function placeObjects(out: CheckOutput, distance: number, inScope: (name: string) => boolean): CheckOutput {
  for (const o of out.objects) {
    const isName = o.type === 'host' || o.type === 'domain' || NAME_TYPES.has(o.type);
    if (isName && !o.key.startsWith('*.') && !inScope(o.key)) {
      o.distance = 1;
      o.projection = { ...o.projection, inScope: false };
    } else {
      o.distance = (o.distance ?? 0) + distance;
    }
  }
  return out;
}
