// How sure a change of a high percentile between two sets of latencies is: a percentile bootstrap.
// A p99 of a few hundred samples is their third largest, and two such figures taken minutes apart
// on one machine differed by ±30 % with nothing changed (docs/operations.md, "Soak"): a target of
// 10 % needs the interval beside the point figure, or the figure says nothing.
//
// Where the samples come in blocks that share their moment (the soak's 10 s slices), resample the
// blocks, not the samples: a machine's hiccup of a second or two slows every request in it, so a
// tail's samples come in clusters (a full soak's samples file: 13 of the DNS tail's 130 in one
// control slice, a third of them in two of its twelve minutes), and resampling them one by one
// takes a cluster for many independent draws and gives an interval narrower than the runs' spread
// (four full soaks: DNS -2.7, +11.5, +14.6 and +18.4 %; the first's interval by request,
// -9.7 ... +6.2 %, left out every other's figure).
import { percentile as nearestRank } from './bench-kit.ts';

/** mulberry32: a small seeded generator, so that a report's interval is the same for the same samples. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function resampledPercentile(xs: readonly number[], p: number, rnd: () => number, buf: Float64Array): number {
  for (let i = 0; i < xs.length; i++) buf[i] = xs[Math.floor(rnd() * xs.length)]!;
  buf.sort();
  return nearestRank(buf, p);
}

export interface PercentileChange {
  /** (b − a) / a of the p-th percentiles, as measured. */
  change: number;
  /** The central `level` interval of that change over `rounds` resamples of both sets. */
  low: number;
  high: number;
}

/**
 * The relative change of the p-th percentile from `a` to `b` and its bootstrap interval: both sets
 * resampled with replacement `rounds` times, the change taken each time, the central `level` of
 * those changes kept. Null when either set is empty or a's percentile is 0.
 */
export function percentileChange(
  a: readonly number[],
  b: readonly number[],
  opts: IntervalOptions = {},
): PercentileChange | null {
  if (a.length === 0 || b.length === 0) return null;
  const bufA = new Float64Array(a.length);
  const bufB = new Float64Array(b.length);
  return bootstrapChange(
    Float64Array.from(a),
    Float64Array.from(b),
    (rnd, p) => [resampledPercentile(a, p, rnd, bufA), resampledPercentile(b, p, rnd, bufB)],
    opts,
  );
}

interface IntervalOptions {
  p?: number;
  rounds?: number;
  level?: number;
  seed?: number;
}

/**
 * The point change of the p-th percentile from `a` to `b`, and the central `level` of the changes
 * `draw` gives over `rounds` resamples. Null when a's percentile is 0.
 */
function bootstrapChange(
  a: Float64Array,
  b: Float64Array,
  draw: (rnd: () => number, p: number) => [number, number],
  { p = 99, rounds = 1000, level = 0.9, seed = 1 }: IntervalOptions,
): PercentileChange | null {
  const pa = nearestRank(a.sort(), p);
  if (pa === 0) return null;
  const change = (nearestRank(b.sort(), p) - pa) / pa;
  const rnd = seeded(seed);
  const changes = new Float64Array(rounds);
  let n = 0;
  for (let r = 0; r < rounds; r++) {
    const [ra, rb] = draw(rnd, p);
    if (ra === 0) continue;
    changes[n++] = (rb - ra) / ra;
  }
  const kept = changes.subarray(0, n).sort();
  const tail = ((1 - level) / 2) * 100;
  return { change, low: nearestRank(kept, tail), high: nearestRank(kept, 100 - tail) };
}

/**
 * percentileChange over sets given as blocks (the samples of one slice each): the point change of
 * the blocks' samples taken together, its interval from resampling whole blocks with replacement.
 * With a single block on either side there is nothing to resample: the interval is unbounded
 * (−∞ … +∞), never the zero width that resampling one block would give.
 */
export function blockPercentileChange(
  a: readonly (readonly number[])[],
  b: readonly (readonly number[])[],
  opts: IntervalOptions = {},
): PercentileChange | null {
  const fa = Float64Array.from(a.flat());
  const fb = Float64Array.from(b.flat());
  if (fa.length === 0 || fb.length === 0) return null;
  const resampled = (blocks: readonly (readonly number[])[], rnd: () => number, p: number) => {
    const out: number[] = [];
    for (let i = 0; i < blocks.length; i++) out.push(...blocks[Math.floor(rnd() * blocks.length)]!);
    return out.length === 0 ? 0 : nearestRank(Float64Array.from(out).sort(), p);
  };
  const r = bootstrapChange(fa, fb, (rnd, p) => [resampled(a, rnd, p), resampled(b, rnd, p)], opts);
  return r && (a.length < 2 || b.length < 2) ? { ...r, low: -Infinity, high: Infinity } : r;
}
