// The soak's interval for a p99 change (test/bench/p99-interval.ts): it must hold 0 when nothing
// changed, leave it out when the tail moved, and be the same for the same samples.
import { describe, expect, it } from 'vitest';
import { blockPercentileChange, percentileChange } from '../bench/p99-interval.ts';

/** Latencies with a long tail, as a service's: mostly 2-8 ms, one in 40 between 10 and 40 ms. */
function tailed(n: number, seed: number, scale = 1): number[] {
  let s = seed;
  const rnd = () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
  return Array.from({ length: n }, () => (rnd() < 0.025 ? 10 + rnd() * 30 : 2 + rnd() * 6) * scale);
}

describe('percentileChange', () => {
  it('holds 0 for two samples of one distribution, and the point change lies inside its interval', () => {
    const r = percentileChange(tailed(1000, 7), tailed(1000, 99))!;
    expect(r.low).toBeLessThanOrEqual(0);
    expect(r.high).toBeGreaterThanOrEqual(0);
    expect(r.change).toBeGreaterThanOrEqual(r.low);
    expect(r.change).toBeLessThanOrEqual(r.high);
  });

  it('leaves 0 out when every latency is twice as long', () => {
    const r = percentileChange(tailed(4000, 7), tailed(4000, 99, 2))!;
    expect(r.change).toBeGreaterThan(0.5);
    expect(r.low).toBeGreaterThan(0);
  });

  it('is narrower with more samples', () => {
    const small = percentileChange(tailed(250, 3), tailed(250, 5))!;
    const large = percentileChange(tailed(4000, 3), tailed(4000, 5))!;
    expect(large.high - large.low).toBeLessThan(small.high - small.low);
  });

  it('is the same for the same samples, and null without any', () => {
    const a = tailed(500, 11);
    const b = tailed(500, 12);
    expect(percentileChange(a, b)).toEqual(percentileChange(a, b));
    expect(percentileChange([], b)).toBeNull();
    expect(percentileChange(a, [])).toBeNull();
  });
});

describe('blockPercentileChange', () => {
  /** 72 blocks of 60 latencies (tailed), in `hiccups` of which every latency is 5 times as long. */
  function blocks(seed: number, hiccups: number): number[][] {
    const all = tailed(72 * 60, seed);
    return Array.from({ length: 72 }, (_, i) => all.slice(i * 60, (i + 1) * 60).map((x) => (i < hiccups ? x * 5 : x)));
  }

  it('gives the point change of the samples taken together', () => {
    const a = blocks(7, 0);
    const b = blocks(99, 0);
    expect(blockPercentileChange(a, b)!.change).toBeCloseTo(percentileChange(a.flat(), b.flat())!.change, 10);
  });

  it('is wider than the sample bootstrap when the tail comes in clusters, and holds 0 for the same machine', () => {
    // The same distribution on both sides, each with two hiccup blocks: the tail is the clusters'.
    const a = blocks(7, 2);
    const b = blocks(99, 2);
    const byBlock = blockPercentileChange(a, b)!;
    const bySample = percentileChange(a.flat(), b.flat())!;
    expect(byBlock.high - byBlock.low).toBeGreaterThan(1.5 * (bySample.high - bySample.low));
    expect(byBlock.low).toBeLessThanOrEqual(0);
    expect(byBlock.high).toBeGreaterThanOrEqual(0);
  });

  it('still leaves 0 out when every latency is twice as long', () => {
    const a = blocks(7, 0);
    const b = blocks(99, 0).map((xs) => xs.map((x) => x * 2));
    const r = blockPercentileChange(a, b)!;
    expect(r.change).toBeGreaterThan(0.5);
    expect(r.low).toBeGreaterThan(0);
  });

  it('is the same for the same blocks, and null without any sample', () => {
    const a = blocks(11, 1);
    const b = blocks(12, 1);
    expect(blockPercentileChange(a, b)).toEqual(blockPercentileChange(a, b));
    expect(blockPercentileChange([], b)).toBeNull();
    expect(blockPercentileChange(a, [[], []])).toBeNull();
  });

  it('claims no interval from a single block', () => {
    const a = blocks(7, 0);
    const one = blockPercentileChange(a.slice(0, 1), a.slice(1, 2))!;
    expect(one.low).toBe(-Infinity);
    expect(one.high).toBe(Infinity);
    expect(Number.isFinite(one.change)).toBe(true);
  });
});
