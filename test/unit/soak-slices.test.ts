// The soak's isolation slices (test/bench/soak-slices.ts): which condition a soak time falls in,
// and which times are left out (each slice's guard, and the whole first round: the ramp).
import { describe, expect, it } from 'vitest';
import { sliceAt, type SliceClock } from '../bench/soak-slices.ts';

const clock: SliceClock = {
  mixMs: 90_000,
  sliceMs: 10_000,
  conditions: ['none', 'control', 'dead'],
  guardMs: 2500,
  rampSlices: 3,
};
/** Soak time (negative: before t = 0) of `ms` into slice `index`. */
const at = (index: number, ms: number) => -clock.mixMs + index * clock.sliceMs + ms;

describe('sliceAt', () => {
  it('takes the conditions in turn, slice by slice', () => {
    expect([0, 1, 2, 3, 4, 5, 8].map((i) => sliceAt(clock, at(i, 5000)))).toEqual([
      { index: 0, condition: 'none', guard: true },
      { index: 1, condition: 'control', guard: true },
      { index: 2, condition: 'dead', guard: true },
      { index: 3, condition: 'none', guard: false },
      { index: 4, condition: 'control', guard: false },
      { index: 5, condition: 'dead', guard: false },
      { index: 8, condition: 'dead', guard: false },
    ]);
  });

  it("leaves out each slice's first guardMs, and the whole of the ramp's slices", () => {
    expect(sliceAt(clock, at(4, 0)).guard).toBe(true);
    expect(sliceAt(clock, at(4, 2499)).guard).toBe(true);
    expect(sliceAt(clock, at(4, 2500)).guard).toBe(false);
    expect(sliceAt(clock, at(4, 9999)).guard).toBe(false);
    // The ramp: every moment of the first round, guard or not.
    for (const ms of [0, 2500, 9999]) expect(sliceAt(clock, at(2, ms)).guard).toBe(true);
    expect(sliceAt({ ...clock, rampSlices: 0 }, at(2, 5000)).guard).toBe(false);
  });
});
