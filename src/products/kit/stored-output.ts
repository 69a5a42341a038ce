// What a check may store. A check's output rides in its task row, becomes the job's result, its
// objects and findings, and is served on every page read, so its size is the target's to choose
// unless it is capped here: a 22-hop redirect chain of 63 KiB Strict-Transport-Security headers
// and a page of <meta> CSP policies made a 4.1 MB projection for one 4-credit web task. Every
// async product's output passes through boundStoredOutput in the lane runner before it is
// persisted (workers/lane-runner/execute-check.ts), whatever the product:
//
//   - every string of the projection, of each object's projection, of each finding (title,
//     summary, evidence) and of each limitation message: at most STORED_CAPS.fieldChars;
//   - every list in them: at most STORED_CAPS.listItems items;
//   - how many objects, relations, findings and limitations a check returns: at most
//     STORED_CAPS.objects, .relations, .findings, .limitations (the cut lists named in the
//     projection's `truncated`, with `omitted` counts);
//   - the projection as a whole: at most STORED_CAPS.projectionBytes of JSON, and each object's
//     projection at most STORED_CAPS.objectProjectionBytes. Past it the field caps tighten in
//     steps (TIGHTER below) until it fits; as a last resort the projection is replaced by
//     `{ "truncated": ["projection"], "omittedBytes": n }`.
//
// Whatever was cut is marked where it was: the object that held the field gets
// `"truncated": ["<field>", …]` (a list of its field names that were shortened, or that hold
// shortened items), and the output gets the limitation `output_truncated`. Identities (object
// types and keys, relation ends, finding codes, limitation codes, sources) are never cut: a key
// is a natural key, and the URL and name caps of the inputs bound them. docs/api.md ("Stored
// output") lists the caps. One pass per stage over the output, linear in its size.
import type { CheckOutput } from '../../contract/tasks.ts';

export const STORED_CAPS = {
  fieldChars: 4096,
  listItems: 1000,
  projectionBytes: 256 * 1024,
  objectProjectionBytes: 64 * 1024,
  /**
   * How many of each a check may return (issue 45): the objects first (a relation, finding or
   * fold that names a dropped object goes with it), then the rest in their order. What was cut is
   * listed in the projection's `truncated` (`objects`, `relations`, `findings`, `limitations`)
   * with `omitted: { <list>: n }`.
   */
  objects: 2000,
  relations: 4000,
  findings: 1000,
  limitations: 100,
} as const;

type Counted = 'objects' | 'relations' | 'findings' | 'limitations';

/** The output's lists within the count caps; what was cut, per list. */
function boundCounts(output: CheckOutput): { output: CheckOutput; omitted: Partial<Record<Counted, number>> } {
  const omitted: Partial<Record<Counted, number>> = {};
  const over = (k: Counted) => output[k].length > STORED_CAPS[k];
  if (!over('objects') && !over('relations') && !over('findings') && !over('limitations')) return { output, omitted };
  const refOf = (r: { type: string; key: string }) => `${r.type}\u0000${r.key}`;
  const objects = output.objects.slice(0, STORED_CAPS.objects);
  let dropped: Set<string> | null = null;
  if (objects.length < output.objects.length) {
    omitted.objects = output.objects.length - objects.length;
    dropped = new Set(output.objects.slice(STORED_CAPS.objects).map(refOf));
  }
  const kept = (r: { type: string; key: string }) => dropped === null || !dropped.has(refOf(r));
  const capped = <T>(k: Counted, list: T[], keep: (x: T) => boolean): T[] => {
    const out = list.filter(keep);
    // A cut list of limitations leaves room for output_truncated, which says so.
    const cap = k === 'limitations' ? STORED_CAPS[k] - 1 : STORED_CAPS[k];
    const cut = out.length > STORED_CAPS[k] ? out.slice(0, cap) : out;
    if (cut.length < list.length) omitted[k] = list.length - cut.length;
    return cut;
  };
  return {
    output: {
      ...output,
      objects,
      relations: capped('relations', output.relations, (r) => kept(r.from) && kept(r.to)),
      findings: capped('findings', output.findings, (f) => kept(f.object)),
      limitations: capped('limitations', output.limitations, () => true),
      ...(output.folds ? { folds: output.folds.filter((f) => kept(f.object) && kept(f.into)) } : {}),
    },
    omitted,
  };
}

/** The field caps tried in turn while a projection is over its byte cap. */
const TIGHTER: ReadonlyArray<{ chars: number; items: number }> = [
  { chars: STORED_CAPS.fieldChars, items: STORED_CAPS.listItems },
  { chars: 512, items: 100 },
  { chars: 128, items: 20 },
];

export const OUTPUT_TRUNCATED = 'output_truncated';

interface Limits {
  chars: number;
  items: number;
}

/**
 * A copy of `v` within the limits. `cut()` is called when something of `v` itself was shortened
 * (its holder marks the field); `any()` whenever anything at any depth was.
 */
function bound(v: unknown, lim: Limits, cut: () => void, any: () => void): unknown {
  if (typeof v === 'string') {
    if (v.length <= lim.chars) return v;
    cut();
    any();
    return v.slice(0, lim.chars);
  }
  if (Array.isArray(v)) {
    const kept = v.length > lim.items ? v.slice(0, lim.items) : v;
    if (kept !== v) {
      cut();
      any();
    }
    // An item cut inside the list marks the list's field on its holder.
    return kept.map((x) => bound(x, lim, cut, any));
  }
  if (v !== null && typeof v === 'object') return boundObject(v as Record<string, unknown>, lim, any);
  return v;
}

function boundObject(o: Record<string, unknown>, lim: Limits, any: () => void): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const marked: string[] = [];
  for (const [k, x] of Object.entries(o)) {
    if (k === 'truncated') continue; // merged below
    out[k] = bound(
      x,
      lim,
      () => {
        if (!marked.includes(k)) marked.push(k);
      },
      any,
    );
  }
  const before = Array.isArray(o.truncated) ? o.truncated.filter((x): x is string => typeof x === 'string') : [];
  if (before.length > 0 || marked.length > 0) out.truncated = [...new Set([...before, ...marked])];
  else if ('truncated' in o) out.truncated = o.truncated;
  return out;
}

const jsonBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

/**
 * A projection within `maxBytes`: the field caps, tighter while it is over, then omitted. An
 * inline reply's result is bounded the same way (./inline-output.ts).
 */
export function boundProjection(
  p: Record<string, unknown>,
  maxBytes: number,
  onCut: () => void,
): Record<string, unknown> {
  // The common case costs one walk and one serialisation.
  for (const lim of TIGHTER) {
    let cut = false;
    const b = boundObject(p, lim, () => {
      cut = true;
    });
    if (jsonBytes(b) <= maxBytes) {
      if (cut) onCut();
      return b;
    }
  }
  onCut();
  return { truncated: ['projection'], omittedBytes: jsonBytes(p) };
}

/** The output as it may be stored: every field and every projection within STORED_CAPS. */
export function boundStoredOutput(whole: CheckOutput): CheckOutput {
  const counted = boundCounts(whole);
  const output = counted.output;
  const cutLists = Object.keys(counted.omitted);
  let cut = cutLists.length > 0;
  const onCut = () => {
    cut = true;
  };
  const field = TIGHTER[0]!;
  const text = (s: string) => {
    if (s.length <= field.chars) return s;
    cut = true;
    return s.slice(0, field.chars);
  };
  const bounded = boundProjection(output.projection, STORED_CAPS.projectionBytes, onCut);
  const marks = Array.isArray(bounded.truncated) ? (bounded.truncated as string[]) : [];
  const projection =
    cutLists.length === 0
      ? bounded
      : { ...bounded, truncated: [...new Set([...marks, ...cutLists])], omitted: counted.omitted };
  const objects = output.objects.map((o) =>
    o.projection && typeof o.projection === 'object'
      ? { ...o, projection: boundProjection(o.projection, STORED_CAPS.objectProjectionBytes, onCut) }
      : o,
  );
  const lines = <T>(list: T[]): T[] => {
    if (list.length <= field.items) return list;
    cut = true;
    return list.slice(0, field.items);
  };
  const findings = output.findings.map((f) => ({
    ...f,
    title: text(f.title),
    summary: text(f.summary),
    ...(f.evidence ? { evidence: lines(f.evidence).map((e) => ({ ...e, summary: text(e.summary) })) } : {}),
  }));
  const limitations = output.limitations.map((l) => ({ ...l, message: text(l.message) }));
  if (cut && !limitations.some((l) => l.code === OUTPUT_TRUNCATED))
    limitations.push({
      code: OUTPUT_TRUNCATED,
      message:
        'Part of what this lane recorded was longer than the stored caps (docs/api.md, "Stored output") and was cut; the objects that held it list the cut fields under "truncated".',
    });
  return { ...output, projection, objects, findings, limitations };
}
