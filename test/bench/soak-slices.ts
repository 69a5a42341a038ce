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
}

/** The slice at soak time t (before t = 0): its index from the first, its condition, and whether t is in its guard. */
export function sliceAt(clock: SliceClock, t: number): { index: number; condition: Condition; guard: boolean } {
  const into = t + clock.mixMs;
  const index = Math.floor(into / clock.sliceMs);
  return {
    index,
    condition: clock.conditions[index % clock.conditions.length]!,
    guard: into % clock.sliceMs < clock.guardMs,
  };
}
