// The soak's isolation slices (test/bench/soak.ts): which condition holds at a soak time before
// t = 0. Its own module because two processes need the same answer: the soak, which charges its
// samples and CPU to a condition, and the second tenant (test/bench/soak-tenant.ts), which
// decides what to send.

export type Condition = 'none' | 'control' | 'dead';

export interface SliceClock {
  /** The length of the slices in all, before t = 0. */
  mixMs: number;
  sliceMs: number;
  conditions: readonly Condition[];
  /** The first part of each slice left out (the previous slice's requests finishing). */
  guardMs: number;
  /**
   * Leading slices left out whole: the ramp from the warm-up's load to the slices' (the jobs go
   * from their soak rate to the slices' at the first slice, and the lanes' queues take a few
   * seconds to settle). Without it the ramp landed in the first condition's first slice: in a
   * full soak, 7 of the 43 DNS lookups above the main tenant alone's p99 came from that one slice
   * of 24, which made "alone" slower and every change against it look better.
   */
  rampSlices: number;
}

/**
 * The slice at soak time t (before t = 0): its index from the first, its condition, and whether t
 * is left out (`guard`: in its slice's first guardMs, or in a ramp slice).
 */
export function sliceAt(clock: SliceClock, t: number): { index: number; condition: Condition; guard: boolean } {
  const into = t + clock.mixMs;
  const index = Math.floor(into / clock.sliceMs);
  return {
    index,
    condition: clock.conditions[index % clock.conditions.length]!,
    guard: index < clock.rampSlices || into % clock.sliceMs < clock.guardMs,
  };
}
